//! Issue 39 item 1 through the real binary: trust is live. A project whose
//! `.claude/settings.json` holds a `PreToolUse` hook that blocks `rm`: the TUI asks
//! whether to trust it, naming the settings file and its hooks (not agents it does
//! not have); right after `y` the next turn runs the hook, in the same TUI. `arbor
//! trust` lists exactly the project's power files and what each gains, and `arbor
//! doctor` lists every hook, active or skipped with why.

use std::time::Duration;

use crate::support;
use serde_json::json;
use support::*;

/// The project hook: it records that it ran, and blocks every `rm` (exit 2).
const SETTINGS: &str = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat > hook-ran.json; if grep -q '\"rm ' hook-ran.json; then echo 'rm is not allowed in this project' >&2; exit 2; fi"}]}]}}"#;

/// A project holding `.claude/settings.json` with [`SETTINGS`] and a `build/`
/// directory, the model scripted to run `rm -rf build` and then answer; `bash` is
/// allowed by the config, so only the hook stands between the model and the files.
fn project_with_a_hook() -> (TestEnv, ScriptedServer) {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": "rm -rf build"}),
        )])),
        Reply::Sse(sse_text("the hook said no")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test");
    env.append_config("approvals: {bash: allow}\n");
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    std::fs::write(env.project.join(".claude/settings.json"), SETTINGS).unwrap();
    std::fs::create_dir_all(env.project.join("build")).unwrap();
    std::fs::write(env.project.join("build/out.o"), "object").unwrap();
    (env, server)
}

/// What the model was told of call `b1`.
fn result_of_b1(server: &ScriptedServer) -> String {
    server.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "b1")
        .map(content_text)
        .unwrap_or_default()
}

#[cfg(unix)]
#[test]
fn a_project_hook_blocks_right_after_y_on_the_trust_prompt() {
    let (env, server) = project_with_a_hook();
    let tui = env.tui();
    assert!(
        tui.wait_text("Trust this project?", Duration::from_secs(20))
            .is_some(),
        "no trust prompt: {}",
        tui.screen()
    );
    let screen = tui.screen();
    assert!(screen.contains(".claude/settings.json"), "{screen}");
    assert!(screen.contains("PreToolUse"), "{screen}");
    assert!(!screen.contains(".amplifier/agents/"), "{screen}");
    tui.send(b"y");
    assert!(
        tui.wait_for(Duration::from_secs(20), |s| !s
            .contains("Trust this project?"))
            .is_some(),
        "{}",
        tui.screen()
    );
    tui.send(b"clean up\r");
    assert!(
        tui.wait_text("the hook said no", Duration::from_secs(60))
            .is_some(),
        "{}",
        tui.screen()
    );
    let result = result_of_b1(&server);
    assert!(
        result.contains("blocked by a PreToolUse hook")
            && result.contains("rm is not allowed in this project"),
        "the hook did not run: {result}"
    );
    assert!(env.project.join("build/out.o").exists(), "rm ran");
    assert!(env.project.join("hook-ran.json").exists());
    drop(tui);
}

#[test]
fn arbor_trust_lists_exactly_the_power_files_and_what_each_gains() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    std::fs::write(env.project.join(".claude/settings.json"), SETTINGS).unwrap();
    std::fs::write(
        env.project.join(".mcp.json"),
        r#"{"mcpServers": {"calc": {"command": "calc-server"}}}"#,
    )
    .unwrap();
    let out = env.cmd().arg("trust").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(".claude/settings.json") && text.contains("hooks: PreToolUse (1)"),
        "{text}"
    );
    assert!(
        text.contains(".mcp.json") && text.contains("calc"),
        "{text}"
    );
    assert!(!text.contains(".amplifier/agents"), "{text}");
}

#[test]
fn doctor_lists_every_hook_active_or_skipped_with_why() {
    let env = TestEnv::new();
    std::fs::write(
        &env.config,
        "hooks:\n  PostToolUse:\n    - matcher: write_file\n      hooks: [{type: command, command: \"cargo fmt\"}]\n",
    )
    .unwrap();
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    std::fs::write(env.project.join(".claude/settings.json"), SETTINGS).unwrap();
    let doctor = |env: &TestEnv| {
        let out = env.cmd().arg("doctor").output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = doctor(&env);
    assert!(text.contains("hooks"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("active") && l.contains("PostToolUse") && l.contains("cargo fmt")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.contains("skipped")
            && l.contains("PreToolUse")
            && l.contains("not trusted")),
        "{text}"
    );
    env.cmd().arg("trust").assert().success();
    let text = doctor(&env);
    assert!(
        text.lines().any(|l| l.contains("active")
            && l.contains("PreToolUse")
            && l.contains(".claude/settings.json")),
        "{text}"
    );
}

/// `arbor trust` in another shell while the TUI runs (its prompt answered `n`): the
/// `/hooks` view lists the project's hook as skipped, then — refreshed after the
/// trust — as active, and the next turn runs it.
#[cfg(unix)]
#[test]
fn arbor_trust_in_another_shell_turns_the_hooks_on_in_a_running_tui() {
    let (env, server) = project_with_a_hook();
    let tui = env.tui();
    assert!(
        tui.wait_text("Trust this project?", Duration::from_secs(20))
            .is_some(),
        "{}",
        tui.screen()
    );
    tui.send(b"n");
    // Each key once the screen shows the one before took effect (a loaded machine
    // must not lose the `/` to the closing prompt).
    assert!(
        tui.wait_for(Duration::from_secs(20), |s| !s
            .contains("Trust this project?"))
            .is_some(),
        "{}",
        tui.screen()
    );
    tui.send(b"/hooks");
    assert!(
        tui.wait_text("/hooks", Duration::from_secs(20)).is_some(),
        "{}",
        tui.screen()
    );
    tui.send(b"\r");
    // The view itself (the status bar's "not now" note says "not trusted" too).
    assert!(
        tui.wait_for(Duration::from_secs(20), |s| s.contains("PreToolUse [Bash]")
            && s.contains("skipped")
            && s.contains("not trusted"))
            .is_some(),
        "{}",
        tui.screen()
    );
    env.cmd().arg("trust").assert().success();
    tui.send(b"r");
    assert!(
        tui.wait_for(Duration::from_secs(20), |s| s.contains("active")
            && !s.contains("not trusted"))
            .is_some(),
        "{}",
        tui.screen()
    );
    tui.send(b"q");
    assert!(
        tui.wait_for(Duration::from_secs(20), |s| !s.contains("Hooks ━"))
            .is_some(),
        "{}",
        tui.screen()
    );
    tui.send(b"clean up\r");
    assert!(
        tui.wait_text("the hook said no", Duration::from_secs(60))
            .is_some(),
        "{}",
        tui.screen()
    );
    let result = result_of_b1(&server);
    assert!(result.contains("blocked by a PreToolUse hook"), "{result}");
    assert!(env.project.join("build/out.o").exists(), "rm ran");
}

/// Trust starts and stops a project's `.mcp.json` servers in a running process: an
/// untrusted project's server is not listed and its tools reach no request; trusted
/// (the store written as `arbor trust` would), the next turn starts it and the model
/// sees its tools; revoked, the next turn has none and the server is stopped.
#[tokio::test]
async fn trusting_and_untrusting_starts_and_stops_the_projects_mcp_servers() {
    use crate::support::fixture::{Fixture, plan, tool_names};
    use arbor::config::trust::TrustStore;
    use arbor::engine::testing::{Drive, Step};
    use arbor::tool::mcp::ServerState;

    let fx = Fixture::new(plan(json!({})), &[], |_| vec![Step::text("ok")]);
    let work = fx.paths.cwd.clone();
    let scratch = fx.dir.path().join("mcp-scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::write(
        work.join(".mcp.json"),
        json!({"mcpServers": {"calc": {"command": support::mcp::mcp_test_server(), "env": {"MCP_TEST_DIR": scratch}}}}).to_string(),
    )
    .unwrap();
    let rt = fx.engine();
    let calc_tools = |n: usize| {
        let requests = fx.provider.requests();
        tool_names(&requests[n])
            .into_iter()
            .filter(|t| t.starts_with("mcp__calc__"))
            .count()
    };
    assert!(
        rt.mcp_status().await.iter().all(|s| s.name != "calc"),
        "an untrusted project's server"
    );
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "one".into()).await.unwrap();
    assert_eq!(calc_tools(0), 0);

    TrustStore::load(&fx.paths.trust_file())
        .unwrap()
        .trust(&work)
        .unwrap();
    rt.run_turn(&id, "two".into()).await.unwrap();
    assert!(
        calc_tools(1) > 0,
        "trusted, the next turn has the server's tools"
    );
    let running = async |rt: &arbor::engine::Engine| {
        rt.mcp_status()
            .await
            .iter()
            .any(|s| s.name == "calc" && matches!(s.state, ServerState::Running { .. }))
    };
    assert!(running(&rt).await);

    TrustStore::load(&fx.paths.trust_file())
        .unwrap()
        .revoke(&work)
        .unwrap();
    rt.run_turn(&id, "three".into()).await.unwrap();
    assert_eq!(calc_tools(2), 0, "revoked, the next turn has none");
    assert!(!running(&rt).await, "the server was not stopped");
    assert!(rt.mcp_status().await.iter().all(|s| s.name != "calc"));
}
