//! The command line through the real binary (assert_cmd), one test per command and per
//! bad input. Every run is isolated: temp HOME, AMPLIFIER_HOME and ARBOR_CONFIG.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use predicates::prelude::*;
use serde_json::Value;
use support::*;

mod run;
mod sessions;

fn copy_md(from: &Path, to: &Path) -> usize {
    std::fs::create_dir_all(to).unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            n += 1;
        }
    }
    n
}

fn json_out(cmd: &mut assert_cmd::Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn text_server(text: &'static str) -> ScriptedServer {
    ScriptedServer::start(Arc::new(move |_| {
        async move { Reply::Sse(sse_text(text)) }.boxed()
    }))
}

#[test]
fn help_and_completions() {
    let env = TestEnv::new();
    env.cmd()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("session"));
    env.cmd()
        .args(["completions", "bash"])
        .assert()
        .success()
        .stdout(predicate::str::contains("arbor"));
}

#[test]
fn agent_list_json_loads_every_amplifier_agent() {
    let Some(fx) = shared::fixtures("amplifier") else {
        return;
    };
    let env = TestEnv::new();
    let n = copy_md(&fx.join("agents"), &env.amplifier_home.join("agents"));
    assert_eq!(n, 17);
    let list = json_out(env.cmd().args(["agent", "list", "--json"]));
    let users: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["source"] == "user")
        .collect();
    assert_eq!(users.len(), 17);
    for a in &users {
        assert_eq!(a["valid"], true, "{a}");
        for key in [
            "name",
            "path",
            "description",
            "errors",
            "warnings",
            "shadows",
        ] {
            assert!(a.get(key).is_some(), "{key} missing in {a}");
        }
    }
    // The user's zen-architect shadows the built-in one.
    let zen = users.iter().find(|a| a["name"] == "zen-architect").unwrap();
    assert_eq!(zen["shadows"][0]["source"], "bundle");
    // Built-in agents are still listed.
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "reviewer" && a["source"] == "bundle")
    );
}

#[test]
fn agent_show_zen_architect_round_trips_its_fields() {
    let Some(fx) = shared::fixtures("amplifier") else {
        return;
    };
    let env = TestEnv::new();
    copy_md(&fx.join("agents"), &env.amplifier_home.join("agents"));
    let show = json_out(
        env.cmd()
            .args(["agent", "show", "zen-architect", "--format", "json"]),
    );
    assert_eq!(show["name"], "zen-architect");
    assert_eq!(show["source"], "user");
    assert_eq!(
        show["model_role"],
        serde_json::json!(["reasoning", "general"])
    );
    assert_eq!(show["provider_preferences"].as_array().unwrap().len(), 7);
    assert_eq!(show["provider_preferences"][0]["model"], "claude-opus-*");
    let tools: Vec<&str> = show["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["module"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["tool-filesystem", "tool-search", "tool-lsp"]);
    assert!(
        show["warnings"].to_string().contains("tool-lsp"),
        "{}",
        show["warnings"]
    );
    assert!(
        show["instruction"]
            .as_str()
            .unwrap()
            .starts_with("You are the Zen Architect")
    );
    // YAML is the default format.
    env.cmd()
        .args(["agent", "show", "zen-architect"])
        .assert()
        .success()
        .stdout(predicate::str::contains("model_role"));
}

#[test]
fn agent_show_merged_gives_the_child_mount_plan() {
    let env = TestEnv::new();
    std::fs::write(&env.config, "providers:\n  - module: provider-openai\n    config: {base_url: 'http://127.0.0.1:9/v1', api_key: sk-merged-secret}\n").unwrap();
    let out = env
        .cmd()
        .args(["agent", "show", "reviewer", "--merged", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("sk-merged-secret"));
    let v: Value = serde_json::from_str(&text).unwrap();
    let merged = &v["merged"];
    assert_eq!(
        merged["instruction"].as_str().unwrap(),
        v["instruction"].as_str().unwrap()
    );
    assert_eq!(merged["providers"][0]["config"]["api_key"], "[REDACTED]");
    assert!(
        merged["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["module"] == "tool-filesystem")
    );
    // The reviewer's role is resolved against the mounted provider (the loopback
    // listing fails, so the routing falls back to the parent's provider, with a reason).
    let resolved = &v["resolved_model"];
    assert_eq!(resolved["provider"], "openai", "{resolved}");
    assert!(resolved["via"].is_string(), "{resolved}");
}

#[test]
fn project_bundles_load_as_project_agents() {
    let Some(fx) = shared::fixtures("amplifier") else {
        return;
    };
    for bundle in ["anchors", "build-up"] {
        let env = TestEnv::new();
        let n = copy_md(
            &fx.join("bundles").join(bundle).join("agents"),
            &env.project.join(".amplifier/agents"),
        );
        let list = json_out(env.cmd().args(["agent", "list", "--json"]));
        let project: Vec<&Value> = list
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["source"] == "project")
            .collect();
        assert_eq!(project.len(), n, "{bundle}");
        assert!(
            project.iter().all(|a| a["valid"] == true),
            "{bundle}: {project:?}"
        );
    }
}

#[test]
fn agent_validate_reports_path_line_col_and_fails() {
    let env = TestEnv::new();
    let good = env.dir.path().join("good.md");
    std::fs::write(&good, "---\nname: good\ndescription: fine\n---\nDo good.\n").unwrap();
    env.cmd()
        .args(["agent", "validate"])
        .arg(&good)
        .assert()
        .success();
    let bad = env.dir.path().join("bad.md");
    std::fs::write(&bad, "---\nname: bad\ndescription: [unclosed\n---\nBody\n").unwrap();
    env.cmd()
        .args(["agent", "validate"])
        .arg(&good)
        .arg(&bad)
        .assert()
        .failure()
        .stdout(predicate::str::contains(format!("{}:", bad.display())))
        .stdout(predicate::str::contains("1 invalid"));
}

#[test]
fn unknown_agent_lists_the_valid_ones() {
    let server = text_server("unused");
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    env.cmd()
        .args(["run", "--agent", "nope", "hi"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("unknown agent 'nope'"))
        .stderr(predicate::str::contains("zen-architect"));
    env.cmd()
        .args(["agent", "show", "nope"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("reviewer"));
}

#[test]
fn models_lists_what_each_provider_offers() {
    let server = text_server("unused");
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-models-secret");
    env.cmd()
        .arg("models")
        .assert()
        .success()
        .stdout(predicate::str::contains("scripted-model"));
    let v = json_out(env.cmd().args(["models", "--json", "--provider", "openai"]));
    assert_eq!(v[0]["provider"], "openai");
    assert_eq!(v[0]["models"], serde_json::json!(["scripted-model"]));
    env.cmd()
        .args(["models", "--provider", "nope"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "no configured provider named 'nope'",
        ));
}

#[test]
fn doctor_reports_without_printing_keys() {
    let server = text_server("unused");
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-doctor-secret");
    let bad = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("broken.md"), "---\nname: [unclosed\n---\nx\n").unwrap();
    let out = env.cmd().arg("doctor").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "an invalid agent is a problem: {stdout}"
    );
    assert!(!stdout.contains("sk-doctor-secret"));
    assert!(stdout.contains("present (config file)"), "{stdout}");
    assert!(stdout.contains("reachable, 1 model listed"), "{stdout}");
    assert!(stdout.contains("broken.md:2:"), "{stdout}");
    assert!(stdout.contains("routing   matrix balanced"), "{stdout}");
    std::fs::remove_file(bad.join("broken.md")).unwrap();
    env.cmd()
        .arg("doctor")
        .assert()
        .success()
        .stdout(predicate::str::contains("no problems found"));
}

#[test]
fn bundle_flag_replaces_the_built_in_bundle() {
    let Some(fx) = shared::fixtures("amplifier") else {
        return;
    };
    let env = TestEnv::new();
    let bundle = fx.join("bundles/anchors/bundle.md");
    let list = json_out(
        env.cmd()
            .arg("--bundle")
            .arg(&bundle)
            .args(["agent", "list", "--json"]),
    );
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["source"] == "bundle")
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    for name in [
        "architect",
        "builder",
        "debugger",
        "explorer",
        "git-ops",
        "researcher",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    assert!(
        !names.contains(&"zen-architect"),
        "the built-in bundle is replaced: {names:?}"
    );
    // The same through the config file's `bundle:`.
    std::fs::write(&env.config, format!("bundle: {}\n", bundle.display())).unwrap();
    let list = json_out(env.cmd().args(["agent", "list", "--json"]));
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "debugger")
    );
    // A bundle that does not exist is a clear error.
    env.cmd()
        .args(["--bundle", "/nonexistent/bundle.md", "agent", "list"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "arbor: cannot load the bundle: cannot read bundle /nonexistent/bundle.md: No such file or directory (os error 2)\n",
        ))
        .stderr(predicate::str::contains("BACKTRACE").not());
}

/// A reader that takes one line and closes the pipe (`arbor session list | head -1`)
/// ends the command quietly: no panic, nothing on stderr, exit 0 or 141 (SIGPIPE's).
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::io::{BufRead, BufReader};
    let env = TestEnv::new();
    let sessions = env.sessions_dir();
    // Far more than a pipe buffer (64 KiB) of listing, so the writer must block.
    for n in 0..1500 {
        let id = format!("00000000-0000-4000-8000-{n:012}");
        let dir = sessions.join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("metadata.json"),
            format!(r#"{{"session_id":"{id}","agent_name":"a-rather-long-agent-name","created":"2025-01-01T00:00:00Z","last_updated":"2025-01-01T00:00:00Z"}}"#),
        )
        .unwrap();
    }
    for args in [&["session", "list"][..], &["session", "list", "--json"][..]] {
        let mut child = env
            .std_cmd()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(!first.is_empty());
        // The pipe's read end is closed here (dropped); the process must notice.
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
        assert!(
            matches!(out.status.code(), Some(0 | 141)),
            "{args:?}: {:?}",
            out.status
        );
    }
}

/// Issue 23 item 10: `--agent`, `--model` and `--bundle` are offered only by the
/// commands they apply to, and still work where they do.
#[test]
fn flags_show_only_where_they_apply() {
    let env = TestEnv::new();
    let help = |args: &[&str]| {
        let out = env.cmd().args(args).arg("--help").output().unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    for args in [&["trust"][..], &["completions"][..]] {
        let text = help(args);
        for flag in ["--agent", "--model", "--bundle"] {
            assert!(!text.contains(flag), "{args:?} offers {flag}:\n{text}");
        }
    }
    for args in [
        &["session", "list"][..],
        &["agent", "list"][..],
        &["doctor"][..],
    ] {
        let text = help(args);
        assert!(text.contains("--bundle"), "{args:?}:\n{text}");
        assert!(
            !text.contains("--agent") && !text.contains("--model"),
            "{args:?}:\n{text}"
        );
    }
    let run = help(&["run"]);
    for flag in ["--agent", "--model", "--bundle"] {
        assert!(run.contains(flag), "run lacks {flag}:\n{run}");
    }
    let resume = help(&["session", "resume"]);
    assert!(
        resume.contains("--model") && !resume.contains("--agent"),
        "{resume}"
    );
    // Given to a group, `--bundle` reaches its subcommands.
    env.cmd()
        .args(["agent", "list", "--bundle", "/nonexistent/bundle.md"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("/nonexistent/bundle.md"));
}

/// Issue 23 item 10: the text `agent list` warns about an untrusted project's agents
/// as `--json` does; counts are singular for one.
#[test]
fn agent_list_text_warns_about_an_untrusted_project() {
    let env = TestEnv::new();
    let agents = env.project.join(".amplifier/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("helper.md"),
        "---\nmeta:\n  name: helper\n  description: helps\ntools:\n  - module: tool-bash\n---\nHelp.\n",
    )
    .unwrap();
    let out = env.cmd().args(["agent", "list"]).output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("helps (1 warning)"), "{stdout}");
    assert!(
        stderr.contains("warning: agent helper: project") && stderr.contains("is not trusted"),
        "{stderr}"
    );
    let out = env
        .cmd()
        .args(["agent", "validate"])
        .arg(agents.join("helper.md"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 agent, 0 invalid"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
