//! Many at once (issue 14) through the real binary and a scripted loopback provider:
//! `providers[].config.max_concurrent: 1` keeps two children's model requests from
//! overlapping at the server; an agent with `budget: {tokens: 10}` makes one model
//! call, ends `paused`, its parent's answer says so, `session list` / `session tree`
//! show it with the spend, and a headless resume grants one more budget.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};
use support::*;

const SPENDER: &str = "You are spender.";
const WORKER: &str = "You are worker.";

fn system_text(body: &Value) -> String {
    body["messages"][0]
        .get("content")
        .map(|_| content_text(&body["messages"][0]))
        .unwrap_or_default()
}

fn write_config(env: &TestEnv, base_url: &str) {
    let yaml = format!(
        "providers:\n  - module: provider-openai\n    config:\n      base_url: \"{base_url}\"\n      api_key: sk-test-1234\n      default_model: scripted-model\n      max_concurrent: 1\nprices:\n  openai/scripted-model: {{input: 1000, output: 2000}}\n"
    );
    std::fs::write(&env.config, yaml).unwrap();
}

fn write_agent(env: &TestEnv, name: &str, extra: &str, instruction: &str) {
    let dir = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    let text = format!(
        "---\nmeta:\n  name: {name}\n  description: The {name} agent.\n{extra}---\n{instruction}\n"
    );
    std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
}

/// `arbor run --yes --output-format json PROMPT`, which must succeed; its final object.
fn run_json(env: &TestEnv, prompt: &str) -> Value {
    let out = env
        .cmd()
        .args(["run", "--yes", "--output-format", "json", prompt])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

#[test]
fn max_concurrent_one_keeps_model_requests_from_overlapping_at_the_server() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (now, peak) = (in_flight.clone(), most.clone());
    let server = ScriptedServer::start(Arc::new(move |body: Value| {
        let (now, peak) = (now.clone(), peak.clone());
        async move {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(n, Ordering::SeqCst);
            // Long enough for a second request to arrive if nothing held it back.
            tokio::time::sleep(Duration::from_millis(300)).await;
            now.fetch_sub(1, Ordering::SeqCst);
            if system_text(&body).contains(WORKER) {
                return Reply::Sse(sse_text("worker done"));
            }
            if last_role(&body) == "tool" {
                return Reply::Sse(sse_text("both workers done"));
            }
            Reply::Sse(sse_tool_calls(&[
                (
                    "c1",
                    "task",
                    json!({"agent": "worker", "instruction": "one"}),
                ),
                (
                    "c2",
                    "task",
                    json!({"agent": "worker", "instruction": "two"}),
                ),
            ]))
        }
        .boxed()
    }));
    let env = TestEnv::new();
    write_config(&env, &server.base_url);
    write_agent(&env, "worker", "", WORKER);
    let result = run_json(&env, "split it");
    assert_eq!(result["response"], "both workers done");
    assert_eq!(server.requests().len(), 4);
    assert_eq!(most.load(Ordering::SeqCst), 1, "two requests overlapped");
}

#[test]
fn a_child_at_its_budget_pauses_and_its_parent_says_so() {
    let server = ScriptedServer::start(Arc::new(|body: Value| {
        async move {
            if system_text(&body).contains(SPENDER) {
                return Reply::Sse(sse_tool_calls(&[("s1", "no_such_tool", json!({}))]));
            }
            if last_role(&body) == "tool" {
                let result = body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .map(content_text)
                    .unwrap_or_default();
                let first = result.lines().next().unwrap_or_default().to_string();
                return Reply::Sse(sse_text(&format!("The spender stopped: {first}")));
            }
            Reply::Sse(sse_tool_calls(&[(
                "t1",
                "task",
                json!({"agent": "spender", "instruction": "spend freely"}),
            )]))
        }
        .boxed()
    }));
    let env = TestEnv::new();
    write_config(&env, &server.base_url);
    write_agent(&env, "spender", "budget: {tokens: 10}\n", SPENDER);
    let result = run_json(&env, "spend");
    assert_eq!(result["response"], "The spender stopped: status: paused");
    let spender_calls = |server: &ScriptedServer| {
        server
            .requests()
            .iter()
            .filter(|b| system_text(b).contains(SPENDER))
            .count()
    };
    assert_eq!(spender_calls(&server), 1, "one model call, then paused");
    let child_dir = env.session_dirs("_spender");
    assert_eq!(child_dir.len(), 1);
    let child = child_dir[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert_eq!(env.metadata(&child)["status"], "paused");

    let list = env
        .cmd()
        .args(["session", "list", "--json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == child.as_str())
        .unwrap();
    assert_eq!(entry["status"], "paused");

    let tree = env.cmd().args(["session", "tree"]).output().unwrap();
    let tree = String::from_utf8_lossy(&tree.stdout);
    // The spender: 20 + 9 tokens at $1000/$2000 per million; the root: two calls.
    let spender_row = tree.lines().find(|l| l.contains(&child)).unwrap();
    assert!(spender_row.contains("[paused] 1 turn"), "{tree}");
    assert!(
        spender_row.contains("· 29 tok $0.0380 · budget 29/10 tokens"),
        "{tree}"
    );
    let root_row = tree.lines().next().unwrap();
    assert!(
        root_row.contains("· 48 tok $0.0640 · subtree 77 tok $0.1020"),
        "{tree}"
    );

    // A headless resume grants one more budget of the same size: one more call.
    let out = env
        .cmd()
        .args(["session", "resume", &child, "go on", "--yes"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "paused again is not a success");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("paused at its budget"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(spender_calls(&server), 2);
}
