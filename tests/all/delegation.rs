//! Delegation end to end through the real binary and a scripted loopback provider:
//! the root calls `task` → a zen-architect sub-session answers → the root answers with
//! the child's text; then the child is resumed headless. A second test issues two
//! `task` calls in one message and shows both children ran concurrently.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};
use support::*;

const SECRET: &str = "sk-test-SUPERSECRET-4242";
const CHILD_TEXT: &str = "Design: put an LRU cache in front of the API.";

fn delegating_responder() -> Responder {
    Arc::new(|body: Value| {
        async move {
            if last_role(&body) == "tool" {
                let tool_text = body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .map(content_text)
                    .unwrap_or_default();
                let child: Value = serde_json::from_str(&tool_text).unwrap_or(Value::Null);
                let reply = format!(
                    "Parent summary: {}",
                    child["response"].as_str().unwrap_or("?")
                );
                return Reply::Sse(sse_text(&reply));
            }
            let user = last_user_text(&body);
            if user.contains("Design a cache layer") {
                if user.contains("Now add eviction") {
                    return Reply::Sse(sse_text("Eviction: least recently used entries go first."));
                }
                return Reply::Sse(sse_text(CHILD_TEXT));
            }
            if user.contains("Now add eviction") {
                return Reply::Sse(sse_text("Eviction: least recently used entries go first."));
            }
            Reply::Sse(sse_tool_calls(&[(
                "call_1",
                "task",
                json!({"agent": "zen-architect", "instruction": "Design a cache layer"}),
            )]))
        }
        .boxed()
    })
}

#[test]
fn task_delegation_persists_the_child_and_resume_continues_it() {
    let server = ScriptedServer::start(delegating_responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, SECRET);

    let out = env
        .cmd()
        .args(["run", "--output-format", "json", "Plan the work"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(result["status"], "success");
    assert_eq!(result["response"], format!("Parent summary: {CHILD_TEXT}"));
    let root_id = result["session_id"].as_str().unwrap().to_string();

    // The child's directory, beside the root's.
    let children = env.session_dirs("_zen-architect");
    assert_eq!(children.len(), 1, "{children:?}");
    let child_dir = &children[0];
    let child_id = child_dir.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        child_id.starts_with(&root_id.replace('-', "")[..16]),
        "lineage in id: {child_id}"
    );

    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(child_dir.join("metadata.json")).unwrap())
            .unwrap();
    assert_eq!(meta["parent_id"], root_id.as_str());
    assert_eq!(meta["agent_name"], "zen-architect");
    assert_eq!(meta["depth"], 1);
    let providers = meta["config"]["providers"].as_array().unwrap();
    assert_eq!(providers[0]["config"]["api_key"], "[REDACTED]");

    let transcript = read_jsonl(&child_dir.join("transcript.jsonl"));
    assert_eq!(transcript[0]["role"], "user");
    assert!(
        transcript[0]["content"]
            .as_str()
            .unwrap()
            .contains("Design a cache layer")
    );
    assert_eq!(transcript.last().unwrap()["content"][0]["text"], CHILD_TEXT);

    let child_events = read_jsonl(&child_dir.join("events.jsonl"));
    assert!(child_events.iter().any(|e| e["event"] == "session:fork"));
    let root_events = read_jsonl(&env.sessions_dir().join(&root_id).join("events.jsonl"));
    assert!(
        root_events
            .iter()
            .any(|e| e["event"] == "task:agent_spawned")
    );
    for name in ["tool:pre", "tool:post"] {
        let e = root_events
            .iter()
            .find(|e| e["event"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(
            e["data"]["sub_session_id"],
            child_id.as_str(),
            "{name}: {e}"
        );
    }

    // The key reached no file under AMPLIFIER_HOME.
    assert_eq!(
        files_containing(&env.amplifier_home, SECRET),
        Vec::<std::path::PathBuf>::new()
    );

    // Resume the child headless: full history + the new instruction, same transcript.
    let before = transcript.len();
    let requests_before = server.requests().len();
    let out = env
        .cmd()
        .args([
            "session",
            "resume",
            &child_id,
            "Now add eviction",
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
    let resumed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(resumed["session_id"], child_id.as_str());
    assert_eq!(
        resumed["response"],
        "Eviction: least recently used entries go first."
    );
    let sent = &server.requests()[requests_before];
    let texts: Vec<String> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(content_text)
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("Design a cache layer")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == CHILD_TEXT), "{texts:?}");
    assert!(texts.last().unwrap().contains("Now add eviction"));
    let after = read_jsonl(&child_dir.join("transcript.jsonl"));
    assert_eq!(after.len(), before + 2);
    assert_eq!(after[..before], transcript[..]);
    assert_eq!(
        files_containing(&env.amplifier_home, SECRET),
        Vec::<std::path::PathBuf>::new()
    );
}

#[test]
fn two_task_calls_in_one_message_run_concurrently() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (flight, top) = (in_flight.clone(), peak.clone());
    let responder: Responder = Arc::new(move |body: Value| {
        let (flight, top) = (flight.clone(), top.clone());
        async move {
            if last_role(&body) == "tool" {
                return Reply::Sse(sse_text("Both children answered."));
            }
            let user = last_user_text(&body);
            if user.contains("child task") {
                let now = flight.fetch_add(1, Ordering::SeqCst) + 1;
                top.fetch_max(now, Ordering::SeqCst);
                // Hold this child until its sibling is in flight too (or give up).
                for _ in 0..200 {
                    if flight.load(Ordering::SeqCst) >= 2 || top.load(Ordering::SeqCst) >= 2 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                let reply = sse_text(&format!("done: {user}"));
                flight.fetch_sub(1, Ordering::SeqCst);
                return Reply::Sse(reply);
            }
            Reply::Sse(sse_tool_calls(&[
                (
                    "call_a",
                    "task",
                    json!({"agent": "researcher", "instruction": "child task A"}),
                ),
                (
                    "call_b",
                    "task",
                    json!({"agent": "reviewer", "instruction": "child task B"}),
                ),
            ]))
        }
        .boxed()
    });
    let server = ScriptedServer::start(responder);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, SECRET);
    let out = env
        .cmd()
        .args(["run", "--output-format", "json", "Fan out"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        peak.load(Ordering::SeqCst),
        2,
        "both children were in flight at once"
    );
    assert_eq!(env.session_dirs("_researcher").len(), 1);
    assert_eq!(env.session_dirs("_reviewer").len(), 1);
    // The root's tool results come back in call order.
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = env
        .sessions_dir()
        .join(result["session_id"].as_str().unwrap());
    let tools: Vec<Value> = read_jsonl(&root.join("transcript.jsonl"))
        .into_iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tools[0]["tool_call_id"], "call_a");
    assert_eq!(tools[1]["tool_call_id"], "call_b");
}
