//! A root killed while its children wait in the queue (issue 38 item 4): each child's
//! instruction is in the root's store before its job is published, so `session
//! continue --tree` runs every child on its own instruction; the dead root's jobs are
//! dropped by the first worker that fetches them (nobody answers on the root's alive
//! subject), never run for nobody.

use std::sync::Arc;

use serde_json::Value;

use super::*;
use crate::support::nats::NatsServer;
use crate::support::worker_proc::WorkerProc;

const CHILDREN: usize = 5;

/// The root's bundle: the task tool allowing all the children at once.
const BUNDLE: &str = "---
bundle: {name: dead-root}
session:
  orchestrator: {module: loop-streaming}
  context: {module: context-simple}
tools:
  - module: tool-task
    config: {max_recursion_depth: 1, max_parallel: 6}
agents: all
---
You are the root of the dead-root test.
";

/// A worker model answering `ANSWER <last user message>`.
fn echo_model() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last_user = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(content_text)
            .unwrap_or_default();
        let reply = Reply::Sse(sse_text(&format!("ANSWER {last_user}")));
        Box::pin(async move { reply })
    }))
}

#[test]
fn a_root_killed_with_queued_children_leaves_their_instructions_and_no_job_runs_for_nobody() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let model = parts_model(CHILDREN, "all parts answered");
    let root = root_env(&model.base_url, &nats.url, "late");
    let bundle = root.dir.path().join("bundle.md");
    std::fs::write(&bundle, BUNDLE).unwrap();
    let mut run = root
        .std_cmd()
        .arg("run")
        .arg("--bundle")
        .arg(&bundle)
        .args(["--yes", "Delegate five parts"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(
        60,
        "the five jobs were never dispatched",
        || log_of(&root),
        || {
            log_of(&root)
                .matches("remote sub-session dispatched")
                .count()
                == CHILDREN
        },
    );
    run.kill().unwrap();
    run.wait().unwrap();

    // A worker joins the pool: the dead root's jobs are dropped, not run.
    let worker_model = echo_model();
    let worker = WorkerProc::start(&nats.url, &worker_model.base_url, &["--pool", "late"]);
    wait_until(
        60,
        "the dead root's jobs were not all dropped",
        || worker.output(),
        || worker.output().matches("its root is gone").count() == CHILDREN,
    );
    assert!(worker_model.requests().is_empty(), "a job ran for nobody");

    // `session continue --tree`: every child runs on its own instruction.
    let root_id = root_session_of(&root);
    let bundle = bundle.display().to_string();
    let out = spawn_arbor(
        &root,
        &[
            "--bundle", &bundle, "session", "continue", &root_id, "--tree", "--yes",
        ],
    );
    let out = finish(out, 120, || worker.output());
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{stderr}\nworker:\n{}",
        worker.output()
    );
    let mut asked: Vec<String> = worker_model
        .requests()
        .iter()
        .map(|r| {
            let messages = r["messages"].as_array().cloned().unwrap_or_default();
            messages
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .map(content_text)
                .unwrap_or_default()
        })
        .collect();
    asked.sort();
    let parts: Vec<String> = (1..=CHILDREN).map(|i| format!("Part {i}")).collect();
    assert_eq!(asked, parts, "each child ran once, on its own instruction");
    for dir in root.session_dirs(AGENT) {
        let transcript = read_jsonl(&dir.join("transcript.jsonl"));
        let texts: Vec<String> = transcript.iter().map(content_text).collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert_eq!(texts[1], format!("ANSWER {}", texts[0]), "{texts:?}");
    }
}
