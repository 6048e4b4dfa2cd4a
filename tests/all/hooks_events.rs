//! The session hook events (issue 29) through the real binary and a scripted
//! loopback provider: `SessionStart` runs before a root's first model call with
//! `source: "startup"`, and again with `source: "resume"` when it is resumed — its
//! stdout reaches the model, an exit 2 stops nothing; `SubagentStart` runs in a spawned
//! sub-session before its first model call with its agent and session ids, its
//! `additionalContext` reaching the child's model; `Notification` runs when a call
//! needs approval, naming the tool — headless, and while an editor (`arbor acp`) is
//! asked. Each run is a `hook:ran` line in `events.jsonl`.

use crate::support;

use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};
use support::*;

use super::hooks::{env_with, events, run};

fn ran(env: &TestEnv, id: &str, event: &str) -> Vec<Value> {
    events(env, id)
        .into_iter()
        .filter(|e| e["event"] == "hook:ran" && e["data"]["hook_event_name"] == event)
        .collect()
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn session_start_runs_on_startup_and_on_resume_and_its_stdout_reaches_the_model() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_text("hello")),
        Reply::Sse(sse_text("again")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("start.jsonl");
    let script = dir.path().join("start.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat >> {0}\necho >> {0}\necho 'Branch main is frozen.'\n",
            seen.display()
        ),
    )
    .unwrap();
    let hooks = format!(
        "hooks:\n  SessionStart:\n    - matcher: \"startup|resume\"\n      hooks:\n        - {{command: \"sh {}\"}}\n        - {{command: \"echo 'cannot stop a start' >&2; exit 2\"}}\n    - matcher: clear\n      hooks: [{{command: \"touch {}\"}}]\n",
        script.display(),
        dir.path().join("clear-ran").display()
    );
    let env = env_with(&server, &hooks);
    let (id, _) = run(&env, false);
    let first = server.requests()[0].to_string();
    assert!(
        first.contains("[SessionStart hook] Branch main is frozen."),
        "{first}"
    );
    let out = env
        .cmd()
        .args(["session", "resume", &id, "more", "--output-format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests().len(), 2, "exit 2 stops no session");

    let inputs = lines(&seen);
    let sources: Vec<&str> = inputs
        .iter()
        .map(|i| i["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["startup", "resume"]);
    assert_eq!(inputs[0]["hook_event_name"], "SessionStart");
    assert_eq!(inputs[0]["session_id"], id.as_str());
    assert_eq!(inputs[0]["agent_type"], "shell");
    assert!(!dir.path().join("clear-ran").exists(), "matched on source");
    let runs = ran(&env, &id, "SessionStart");
    let outcomes: Vec<&str> = runs
        .iter()
        .map(|r| r["data"]["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["passed", "blocked", "passed", "blocked"]);
    assert!(runs[0]["data"].get("tool_name").is_none_or(Value::is_null));
}

#[test]
fn subagent_start_runs_in_the_child_before_its_first_model_call() {
    let server = ScriptedServer::start(Arc::new(|body: Value| {
        async move {
            if last_role(&body) == "tool" {
                return Reply::Sse(sse_text("parent done"));
            }
            if last_user_text(&body).contains("Design a cache layer") {
                return Reply::Sse(sse_text("child done"));
            }
            Reply::Sse(sse_tool_calls(&[(
                "call_1",
                "task",
                json!({"agent": "zen-architect", "instruction": "Design a cache layer"}),
            )]))
        }
        .boxed()
    }));
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("sub.json");
    let script = dir.path().join("sub.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat > {}\necho '{{\"hookSpecificOutput\": {{\"hookEventName\": \"SubagentStart\", \"additionalContext\": \"Prefer Rust.\"}}}}'\n",
            seen.display()
        ),
    )
    .unwrap();
    let hooks = format!(
        "hooks:\n  SubagentStart:\n    - matcher: zen-architect\n      hooks: [{{command: \"sh {}\"}}]\n  SessionStart:\n    - hooks: [{{command: \"echo root-start\"}}]\n",
        script.display()
    );
    let env = env_with(&server, &hooks);
    let out = env
        .cmd()
        .args(["run", "--output-format", "json", "Plan the work"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root_id = result["session_id"].as_str().unwrap().to_string();
    let children = env.session_dirs("_zen-architect");
    assert_eq!(children.len(), 1, "{children:?}");
    let child_id = children[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();

    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "SubagentStart");
    assert_eq!(input["agent_type"], "zen-architect");
    assert_eq!(input["session_id"], child_id.as_str());
    assert_eq!(input["agent_id"], child_id.as_str());
    assert_eq!(input["parent_session_id"], root_id.as_str());
    let child_request = server
        .requests()
        .into_iter()
        .find(|r| last_user_text(r).contains("Design a cache layer"))
        .unwrap();
    let text = child_request.to_string();
    assert!(text.contains("[SubagentStart hook] Prefer Rust."), "{text}");
    assert!(
        !text.contains("root-start"),
        "the root's SessionStart is not the child's"
    );
    assert_eq!(ran(&env, &child_id, "SubagentStart").len(), 1);
    assert!(ran(&env, &child_id, "SessionStart").is_empty());
    assert_eq!(ran(&env, &root_id, "SessionStart").len(), 1);
}

#[test]
fn a_notification_hook_runs_when_a_call_needs_approval() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": "echo hi"}),
        )])),
        Reply::Sse(sse_text("done")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("note.json");
    let hooks = format!(
        "hooks:\n  Notification:\n    - matcher: permission_prompt\n      hooks: [{{command: \"cat > {}\"}}]\n",
        seen.display()
    );
    let env = env_with(&server, &hooks);
    let (id, _) = run(&env, true);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Notification");
    assert_eq!(input["notification_type"], "permission_prompt");
    assert_eq!(input["session_id"], id.as_str());
    assert!(
        input["message"].as_str().unwrap().contains("bash"),
        "{input}"
    );
    let runs = ran(&env, &id, "Notification");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["data"]["outcome"], "passed");
    assert_eq!(runs[0]["data"]["tool_name"], "bash");
}

#[test]
fn notification_hooks_run_while_an_editor_is_asked() {
    let server = ScriptedServer::start(super::acp::responder());
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("notes.jsonl");
    let hooks = format!(
        "hooks:\n  Notification:\n    - hooks: [{{command: \"cat >> {0}; echo >> {0}\"}}]\n",
        seen.display()
    );
    let env = env_with(&server, &hooks);
    let summary = super::acp::drive(&env, &["Write the note and show it"]);
    assert_eq!(summary["turns"][0]["stopReason"], "end_turn", "{summary:#}");
    let asked = summary["log"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "permission")
        .count();
    let inputs = lines(&seen);
    assert_eq!(inputs.len(), asked, "one Notification per approval asked");
    let tools: Vec<&str> = inputs
        .iter()
        .map(|i| i["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["write_file", "bash"]);
    assert!(inputs[1]["message"].as_str().unwrap().contains("bash"));
    assert!(
        env.project.join("note.txt").exists(),
        "the approved calls ran"
    );
}

/// `/clear` in the TUI, then a message: the new root's `SessionStart` hooks get
/// `source: "clear"` (the first root's got `startup`), and the matcher reads it.
#[cfg(unix)]
#[test]
fn session_start_after_clear_in_the_tui_has_source_clear() {
    use std::time::Duration;
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_text("first answer")),
        Reply::Sse(sse_text("second answer")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("start.jsonl");
    let hooks = format!(
        "hooks:\n  SessionStart:\n    - hooks: [{{command: \"cat >> {0}; echo >> {0}\"}}]\n    - matcher: clear\n      hooks: [{{command: \"echo 'A clean slate.'\"}}]\n",
        seen.display()
    );
    let env = env_with(&server, &hooks);
    let tui = env.tui();
    let wait = |text: &str| {
        assert!(
            tui.wait_text(text, Duration::from_secs(30)).is_some(),
            "{text}: {}",
            tui.screen()
        );
    };
    tui.send(b"hello\r");
    wait("first answer");
    tui.send(b"/clear\r");
    wait("fresh session");
    tui.send(b"again\r");
    wait("second answer");
    let sources: Vec<Value> = lines(&seen).iter().map(|l| l["source"].clone()).collect();
    assert_eq!(sources, ["startup", "clear"]);
    let requests = server.requests();
    assert!(!requests[0].to_string().contains("A clean slate."));
    assert!(
        requests[1]
            .to_string()
            .contains("[SessionStart hook] A clean slate."),
        "{}",
        requests[1]
    );
    drop(tui);
}
