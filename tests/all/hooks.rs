//! Hooks (issue 29) through the real binary and a scripted loopback provider: a
//! `PreToolUse` hook in the user's config blocks a `bash` call with exit 2 — its
//! stderr reaches the model, the command never runs and nobody is asked — and a
//! `PostToolUse` hook gets the call (input and response) as JSON on stdin; both runs
//! are `hook:ran` lines in `events.jsonl`. An untrusted project's hooks never run.

use crate::support;

use serde_json::{Value, json};
use support::*;

const SHELL_AGENT: &str = "---\nmeta:\n  name: shell\n  description: Runs commands.\n\
tools:\n  - module: tool-bash\n---\nYou run commands.\n";

/// An environment whose user agent `shell` has `bash`, with `hooks_yaml` appended to
/// the config.
pub(crate) fn env_with(server: &ScriptedServer, hooks_yaml: &str) -> TestEnv {
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test");
    env.append_config(hooks_yaml);
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("shell.md"), SHELL_AGENT).unwrap();
    env
}

pub(crate) fn run(env: &TestEnv, yes: bool) -> (String, std::process::Output) {
    let mut args = vec!["run", "--agent", "shell", "--output-format", "json"];
    if yes {
        args.push("--yes");
    }
    args.push("go");
    let out = env.cmd().args(&args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    (result["session_id"].as_str().unwrap().to_string(), out)
}

fn tool_result(server: &ScriptedServer, id: &str) -> String {
    server.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .map(content_text)
        .unwrap()
}

pub(crate) fn events(env: &TestEnv, id: &str) -> Vec<Value> {
    read_jsonl(&env.sessions_dir().join(id).join("events.jsonl"))
}

#[test]
fn a_pre_tool_use_hook_blocks_with_its_reason_reaching_the_model() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": "touch should-not-exist"}),
        )])),
        Reply::Sse(sse_text("understood")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("check.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat > \"$(dirname \"$0\")/pre.json\"\necho 'touching files is not allowed here' >&2\nexit 2\n",
    )
    .unwrap();
    let hooks = format!(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{{type: command, command: \"sh {}\", timeout: 30}}]\n",
        script.display()
    );
    let env = env_with(&server, &hooks);
    // No --yes: a blocked call is refused before anyone would be asked.
    let (id, _) = run(&env, false);

    let result = tool_result(&server, "b1");
    assert!(
        result.contains("blocked by a PreToolUse hook")
            && result.contains("touching files is not allowed here"),
        "{result}"
    );
    assert!(!env.project.join("should-not-exist").exists());
    let pre: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("pre.json")).unwrap())
            .unwrap();
    assert_eq!(pre["hook_event_name"], "PreToolUse");
    assert_eq!(pre["tool_name"], "bash");
    assert_eq!(pre["tool_input"]["command"], "touch should-not-exist");
    assert_eq!(pre["session_id"], id.as_str());
    assert!(
        pre["transcript_path"]
            .as_str()
            .unwrap()
            .ends_with("transcript.jsonl")
    );

    let events = events(&env, &id);
    let ran: Vec<&Value> = events.iter().filter(|e| e["event"] == "hook:ran").collect();
    assert_eq!(ran.len(), 1, "{events:?}");
    assert_eq!(ran[0]["data"]["outcome"], "blocked");
    assert_eq!(ran[0]["data"]["exit_code"], 2);
    assert_eq!(ran[0]["data"]["source"], "user");
    assert_eq!(ran[0]["data"]["tool_call_id"], "b1");
    assert!(
        !events.iter().any(|e| e["event"] == "approval:required"),
        "a blocked call never asks"
    );
}

#[test]
fn a_post_tool_use_hook_receives_the_call_as_json() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": "echo hi-from-bash"}),
        )])),
        Reply::Sse(sse_text("done")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("post.json");
    let hooks = format!(
        "hooks:\n  PostToolUse:\n    - matcher: \"bash|Bash\"\n      hooks:\n        - type: command\n          command: \"cat > {}; echo '{{\\\"additionalContext\\\": \\\"post hook saw it\\\"}}'\"\n",
        seen.display()
    );
    let env = env_with(&server, &hooks);
    let (id, _) = run(&env, true);

    let post: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_name"], "bash");
    assert_eq!(post["tool_use_id"], "b1");
    assert_eq!(post["tool_input"]["command"], "echo hi-from-bash");
    assert_eq!(post["tool_response"]["stdout"], "hi-from-bash\n");
    assert_eq!(post["cwd"], env.project.to_string_lossy().as_ref());
    let result = tool_result(&server, "b1");
    assert!(
        result.contains("hi-from-bash") && result.contains("post hook saw it"),
        "{result}"
    );
    let ran: Vec<Value> = events(&env, &id)
        .into_iter()
        .filter(|e| e["event"] == "hook:ran")
        .collect();
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0]["data"]["hook_event_name"], "PostToolUse");
    assert_eq!(ran[0]["data"]["outcome"], "passed");
}

#[test]
fn an_untrusted_projects_hooks_never_run() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": "echo ok"}),
        )])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = env_with(&server, "");
    let claude = env.project.join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "touch hook-ran; exit 2"}]}]}}"#,
    )
    .unwrap();
    let (id, _) = run(&env, true);
    assert!(!env.project.join("hook-ran").exists());
    assert!(tool_result(&server, "b1").contains("ok"));
    assert!(!events(&env, &id).iter().any(|e| e["event"] == "hook:ran"));

    // Trusted, the same hook runs (sandboxed: it may write in the project) and blocks.
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": "echo ok"}),
        )])),
        Reply::Sse(sse_text("done")),
    ]);
    env.use_openai(&server.base_url, "sk-test");
    env.cmd().args(["trust"]).assert().success();
    let (id, out) = run(&env, true);
    let ran: Vec<Value> = events(&env, &id)
        .into_iter()
        .filter(|e| e["event"] == "hook:ran")
        .collect();
    assert!(
        env.project.join("hook-ran").exists(),
        "{ran:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0]["data"]["source"], "project");
    assert_eq!(ran[0]["data"]["outcome"], "blocked");
}

#[test]
fn user_prompt_submit_adds_context_or_blocks_and_stop_runs_after_the_turn() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("noted"))]);
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop.json");
    let hooks = format!(
        "hooks:\n  UserPromptSubmit:\n    - hooks: [{{command: \"grep -q forbidden && {{ echo 'that word is not allowed' >&2; exit 2; }}; echo 'The deploy freeze is on.'\"}}]\n  Stop:\n    - hooks: [{{command: \"cat > {}\"}}]\n",
        stop.display()
    );
    let env = env_with(&server, &hooks);
    let (id, _) = run(&env, false);
    let request = &server.requests()[0];
    assert!(
        request
            .to_string()
            .contains("[UserPromptSubmit hook] The deploy freeze is on."),
        "{request}"
    );
    let stopped: Value = serde_json::from_str(&std::fs::read_to_string(&stop).unwrap()).unwrap();
    assert_eq!(stopped["hook_event_name"], "Stop");
    assert_eq!(stopped["session_id"], id.as_str());
    assert_eq!(stopped["status"], "completed");

    // A blocked prompt never reaches the model; the run fails with the reason.
    let out = env
        .cmd()
        .args(["run", "--agent", "shell", "say forbidden things"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("blocked by a UserPromptSubmit hook: that word is not allowed"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1);
    // ... and is not stored: the failed run's transcript has no user message.
    let stored: Vec<String> = std::fs::read_dir(env.sessions_dir())
        .unwrap()
        .map(|e| e.unwrap().path().join("transcript.jsonl"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    assert_eq!(stored.len(), 2, "two sessions: {stored:?}");
    assert!(
        stored.iter().all(|t| !t.contains("forbidden")),
        "a blocked prompt was stored: {stored:?}"
    );
}

#[test]
fn a_stop_hook_that_blocks_continues_the_turn_with_its_reason() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_text("done, I think")),
        Reply::Sse(sse_text("tests run too")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("once");
    let inputs = dir.path().join("inputs.jsonl");
    // Blocks the first stop only; every input is kept.
    let hooks = format!(
        "hooks:\n  Stop:\n    - hooks: [{{command: \"cat >> {inputs}; echo >> {inputs}; test -f {marker} || {{ touch {marker}; echo 'run the tests too' >&2; exit 2; }}\"}}]\n",
        inputs = inputs.display(),
        marker = marker.display()
    );
    let env = env_with(&server, &hooks);
    let (id, out) = run(&env, false);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["response"], "tests run too", "{result}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1]
            .to_string()
            .contains("[Stop hook] run the tests too"),
        "{}",
        requests[1]
    );
    let runs: Vec<Value> = read_jsonl(&inputs);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["stop_hook_active"], false);
    assert_eq!(runs[1]["stop_hook_active"], true);
    assert_eq!(runs[1]["session_id"], id.as_str());
}

#[test]
fn a_pre_compact_hook_runs_before_the_context_is_compacted() {
    let server = ScriptedServer::start(std::sync::Arc::new(|body: Value| {
        let system = body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let text = if system.starts_with("You compact") {
            "Summary: long turns."
        } else {
            "ok"
        };
        // Usage reports the request's size (≈ characters / 4), as a real server would.
        let prompt = (body["messages"].to_string().len() as u64).div_ceil(4);
        let chunk = |delta: Value, finish: Option<&str>| {
            let c = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
                "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            format!("data: {c}\n\n")
        };
        let usage = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
            "model": "m", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 2, "total_tokens": prompt + 2}});
        let sse = chunk(
            serde_json::json!({"role": "assistant", "content": text}),
            None,
        ) + &chunk(serde_json::json!({}), Some("stop"))
            + &format!("data: {usage}\n\ndata: [DONE]\n\n");
        Box::pin(async move { Reply::Sse(sse) })
    }));
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("compact.json");
    let env = env_with(
        &server,
        &format!(
            "hooks:\n  PreCompact:\n    - hooks: [{{command: \"cat > {}\"}}]\n  SessionStart:\n    - matcher: compact\n      hooks: [{{command: \"echo 'The freeze is still on.'\"}}]\n",
            seen.display()
        ),
    );
    let bundle = env.dir.path().join("bundle.md");
    std::fs::write(
        &bundle,
        "---\nbundle: {name: small, version: 0.1.0}\nsession:\n  orchestrator: {module: loop-streaming}\n  context:\n    module: context-simple\n    config: {max_tokens: 4000, compact_threshold: 0.8}\ntools: []\nagents: none\n---\n\nYou answer briefly.\n",
    )
    .unwrap();
    let long = |i: usize| format!("turn {i}: {}", "lorem ipsum ".repeat(400));
    let first = env
        .cmd()
        .arg("--bundle")
        .arg(&bundle)
        .args(["run", "--output-format", "json", &long(1)])
        .output()
        .unwrap();
    let out: Value = serde_json::from_slice(&first.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&first.stderr)));
    let id = out["session_id"].as_str().unwrap().to_string();
    let mut stderr = String::new();
    for i in 2..=4 {
        let next = env
            .cmd()
            .args([
                "session",
                "resume",
                &id,
                &long(i),
                "--output-format",
                "json",
            ])
            .output()
            .unwrap();
        assert!(
            next.status.success(),
            "{}",
            String::from_utf8_lossy(&next.stderr)
        );
        stderr.push_str(&String::from_utf8_lossy(&next.stderr));
    }
    // The summary call is announced before it runs, the compaction after it.
    let compacting = stderr
        .find("compacting the context: summarising ")
        .unwrap_or_else(|| panic!("{stderr}"));
    let compacted = stderr
        .find("context compacted: ")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(compacting < compacted, "{stderr}");
    let names: Vec<Value> = events(&env, &id)
        .into_iter()
        .map(|e| e["event"].clone())
        .collect();
    let input: Value = serde_json::from_str(
        &std::fs::read_to_string(&seen).unwrap_or_else(|_| panic!("{names:?}")),
    )
    .unwrap();
    assert_eq!(input["hook_event_name"], "PreCompact");
    assert_eq!(input["trigger"], "auto");
    assert_eq!(input["session_id"], id.as_str());
    let events = events(&env, &id);
    let ran = events
        .iter()
        .position(|e| e["event"] == "hook:ran")
        .unwrap();
    let compacted = events
        .iter()
        .position(|e| e["event"] == "context:compaction")
        .unwrap();
    assert!(ran < compacted, "the hook runs before the compaction");
    // SessionStart with source `compact` runs after it; its note is in the very
    // request that follows the summary call (and in no request before).
    let requests = server.requests();
    let summary = requests
        .iter()
        .position(|r| {
            r["messages"][0]["content"]
                .as_str()
                .is_some_and(|s| s.starts_with("You compact"))
        })
        .expect("a summary call");
    let note = "[SessionStart hook] The freeze is still on.";
    assert!(
        requests[summary + 1].to_string().contains(note),
        "{}",
        requests[summary + 1]
    );
    assert!(
        requests[..summary]
            .iter()
            .all(|r| !r.to_string().contains(note))
    );
    let start = events
        .iter()
        .rposition(|e| e["event"] == "hook:ran" && e["data"]["hook_event_name"] == "SessionStart")
        .unwrap_or_else(|| panic!("{names:?}"));
    assert!(start > compacted);
    // Reopened in the TUI, the thread shows the stored compaction (issue 39 item 6).
    #[cfg(unix)]
    {
        let term_env = support::term::Env {
            home: &env.home,
            amplifier_home: &env.amplifier_home,
            config: &env.config,
            cwd: &env.project,
        };
        let tui =
            support::term::Pty::spawn(env!("CARGO_BIN_EXE_arbor"), &["--resume", &id], &term_env);
        assert!(
            tui.wait_text("lorem", std::time::Duration::from_secs(30))
                .is_some(),
            "{}",
            tui.screen()
        );
        // Page up (ESC [ 5 ~) through the thread until the compaction cell shows.
        let mut seen = false;
        for _ in 0..40 {
            if tui.screen().contains("context compacted") {
                seen = true;
                break;
            }
            tui.send(b"\x1b[5~");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(seen, "no compaction cell: {}", tui.screen());
        drop(tui);
    }
}
