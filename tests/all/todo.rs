//! The `todo` tool (issue 29) through the real binary and a scripted loopback
//! provider: the built-in bundle's root has it without asking, the list is kept in
//! the session's metadata (`todos`, for the tree's `3/7`), and a resumed session
//! lists what it wrote before.

use crate::support;

use serde_json::{Value, json};
use support::*;

fn tool_result(body: &Value, id: &str) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .map(content_text)
        .unwrap()
}

#[test]
fn the_root_keeps_a_checklist_that_survives_resume() {
    let todos = json!([
        {"content": "Read the code", "activeForm": "Reading the code", "status": "completed"},
        {"content": "Fix the bug", "activeForm": "Fixing the bug", "status": "in_progress"},
        {"content": "Run tests", "activeForm": "Running tests", "status": "pending"}
    ]);
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "t1",
            "todo",
            json!({"action": "create", "todos": todos}),
        )])),
        Reply::Sse(sse_text("planned")),
        Reply::Sse(sse_tool_calls(&[("t2", "todo", json!({"action": "list"}))])),
        Reply::Sse(sse_text("still there")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test");
    // No --yes: todo is allowed without asking.
    let out = env
        .cmd()
        .args(["run", "--output-format", "json", "plan it"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = serde_json::from_str::<Value>(stdout.trim()).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let requests = server.requests();
    let created: Value = serde_json::from_str(&tool_result(&requests[1], "t1")).unwrap();
    assert_eq!(created["status"], "created");
    assert_eq!(created["count"], 3);
    assert_eq!(env.metadata(&id)["todos"], todos);
    // The call's `tool:post` carries the list it set as its effect (`todos`).
    let events =
        std::fs::read_to_string(env.sessions_dir().join(&id).join("events.jsonl")).unwrap();
    let post = events
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "tool:post" && e["data"]["tool_call_id"] == "t1")
        .unwrap();
    assert_eq!(post["data"]["todos"], todos);

    let out = env
        .cmd()
        .args([
            "session",
            "resume",
            &id,
            "where are we",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    let listed: Value = serde_json::from_str(&tool_result(&requests[3], "t2")).unwrap();
    assert_eq!(listed["status"], "listed");
    assert_eq!(listed["todos"], todos);
}
