//! The engine end to end with a scripted provider and temp dirs: a turn's transcript,
//! metadata and events, tool calls run concurrently, max_iterations, provider errors and
//! retries, transcript repair, resume errors, confinement, root creation. Delegation is
//! in `engine_delegation.rs`. Nothing touches the real home (see `engine/fixture.rs`).

use crate::support::fixture;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor::config::ArborConfig;
use arbor::engine::testing::{Drive, Step, after_tool_results};
use arbor::engine::{EngineError, TurnError};
use arbor::provider::{ProviderError, ProviderErrorKind};
use arbor::session::message::Message;
use arbor::session::{SessionStatus, StoreError};
use arbor::tool::{Tool, ToolContext, ToolOutput, ToolSpec};
use fixture::*;
use futures::future::BoxFuture;
use serde_json::{Value, json};

#[tokio::test]
async fn text_turn_persists_transcript_metadata_and_events() {
    let fx = Fixture::new(plan(json!({})), &[], |_| {
        vec![
            Step::Thinking("hmm".into()),
            Step::text("Hello"),
            Step::text(" world"),
        ]
    });
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str(), out.turn_count),
        (SessionStatus::Completed, "Hello world", 1)
    );
    assert_eq!(out.agent, "test-bundle");

    let t = fx.transcript(&id);
    assert_eq!(t.len(), 2);
    assert_eq!(
        (t[0]["role"].as_str(), t[0]["content"].as_str()),
        (Some("user"), Some("hi"))
    );
    assert_eq!(t[1]["content"][0]["text"], "Hello world");
    assert_eq!(t[1]["metadata"]["author"], "test-bundle");
    assert_eq!(t[1]["metadata"]["usage"]["input_tokens"], 10);

    let m = fx.metadata(&id);
    assert_eq!(m["status"], "completed");
    assert_eq!(m["turn_count"], 1);
    assert_eq!(m["depth"], 0);
    assert_eq!(m["parent_id"], Value::Null);
    assert_eq!(m["usage"]["output_tokens"], 5);
    assert_eq!(m["model"], "scripted/scripted-model");
    assert_eq!(m["config"]["instruction"], ROOT);
    assert_eq!(m["working_dir"], fx.paths.cwd.display().to_string());

    let logged = fx.logged_events(&id);
    let want = [
        "session:start",
        "prompt:submit",
        "provider:request",
        "provider:response",
        "orchestrator:complete",
        "session:end",
    ];
    let mut at = 0;
    for name in want {
        at += logged[at..]
            .iter()
            .position(|e| e == name)
            .unwrap_or_else(|| panic!("{name} missing or out of order in {logged:?}"));
    }
    assert!(!logged.iter().any(|e| e == "content_block:delta"));

    let bus = drain(&mut rx);
    assert!(
        bus.iter()
            .all(|e| e.session_id == id && e.parent_id.is_none())
    );
    let deltas: Vec<(String, String)> = find(&bus, "content_block:delta", &id)
        .iter()
        .map(|e| {
            (
                data(e)["kind"].as_str().unwrap().to_string(),
                data(e)["delta"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        deltas,
        [
            ("thinking".into(), "hmm".into()),
            ("text".into(), "Hello".into()),
            ("text".into(), " world".into())
        ]
    );
    let statuses: Vec<String> = find(&bus, "session:status", &id)
        .iter()
        .map(|e| data(e)["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["idle", "running", "completed"]);
    assert_eq!(find(&bus, "message:appended", &id).len(), 2);
    let complete = data(find(&bus, "orchestrator:complete", &id)[0]);
    assert_eq!(
        (complete["status"].as_str(), complete["turn_count"].as_u64()),
        (Some("completed"), Some(1))
    );

    let req = &fx.provider.requests()[0];
    assert_eq!(req.system, ROOT);
    assert_eq!(req.messages.len(), 1);
    assert_eq!(
        tool_names(req),
        [
            "read_file",
            "list_directory",
            "write_file",
            "edit_file",
            "glob",
            "grep",
            "task"
        ]
    );
    assert!(!fx.all_session_text().contains(SECRET));
}

/// A tool that waits at a shared barrier; call 1 then waits for call 2 to finish, so
/// the calls complete in reverse order.
struct BarrierTool {
    barrier: Arc<tokio::sync::Barrier>,
    second_done: Arc<tokio::sync::Notify>,
    finished: Arc<Mutex<Vec<u64>>>,
}

impl Tool for BarrierTool {
    fn module(&self) -> &str {
        "tool-test"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "wait_barrier".into(),
            description: "test".into(),
            input_schema: json!({"type": "object"}),
        }
    }
    fn call(&self, input: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let (barrier, second_done, finished) = (
            self.barrier.clone(),
            self.second_done.clone(),
            self.finished.clone(),
        );
        Box::pin(async move {
            let n = input["n"].as_u64().unwrap_or(0);
            barrier.wait().await;
            if n == 1 {
                second_done.notified().await;
            }
            finished.lock().unwrap().push(n);
            if n == 2 {
                second_done.notify_one();
            }
            ToolOutput::ok(format!("result {n}"))
        })
    }
}

#[tokio::test]
async fn tool_calls_run_concurrently_and_results_keep_call_order() {
    let fx = Fixture::new(plan(json!({})), &[], |r| {
        if after_tool_results(r) {
            vec![Step::text("done")]
        } else {
            vec![
                Step::call("c1", "wait_barrier", json!({"n": 1})),
                Step::call("c2", "wait_barrier", json!({"n": 2})),
                Step::call("c3", "bash", json!({})),
            ]
        }
    });
    let finished = Arc::new(Mutex::new(Vec::new()));
    let tool = BarrierTool {
        barrier: Arc::new(tokio::sync::Barrier::new(2)),
        second_done: Arc::default(),
        finished: finished.clone(),
    };
    let rt = fx.engine_with(vec![Arc::new(tool)]);
    let id = rt.create_root(None).unwrap();
    let out = tokio::time::timeout(GUARD, rt.run_turn(&id, "go".into()))
        .await
        .expect("calls did not run concurrently")
        .unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(*finished.lock().unwrap(), [2, 1]);
    let t = fx.transcript(&id);
    let tools: Vec<(&str, &str)> = t
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(tools[..2], [("c1", "result 1"), ("c2", "result 2")]);
    assert_eq!(tools[2].0, "c3");
    assert!(
        tools[2]
            .1
            .starts_with("Unknown tool 'bash'. Available tools: read_file"),
        "{}",
        tools[2].1
    );
    assert_eq!(tool_result(&t, "c3")["is_error"], true);
    assert!(fx.logged_events(&id).iter().any(|e| e == "tool:error"));
}

#[tokio::test]
async fn max_iterations_stops_a_tool_loop() {
    let n = AtomicUsize::new(0);
    let fx = Fixture::new(
        plan(json!({"session": {"orchestrator": {"config": {"max_iterations": 3}}}})),
        &[],
        move |_| {
            vec![Step::call(
                format!("c{}", n.fetch_add(1, Ordering::SeqCst)),
                "list_directory",
                json!({}),
            )]
        },
    );
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "loop".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Failed);
    let error = out.error.unwrap();
    assert!(
        matches!(error, TurnError::MaxIterations { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("max_iterations"));
    assert_eq!(fx.provider.requests().len(), 3);
    assert_eq!(fx.transcript(&id).len(), 7);
    assert_eq!(fx.metadata(&id)["status"], "failed");
}

#[tokio::test]
async fn provider_error_keeps_partial_text_and_the_session_resumes() {
    let n = AtomicUsize::new(0);
    let fx = Fixture::new(plan(json!({})), &[], move |_| {
        match n.fetch_add(1, Ordering::SeqCst) {
            0 => vec![
                Step::text("partial "),
                Step::Fail(ProviderError::new(
                    ProviderErrorKind::Stream,
                    "scripted",
                    "boom",
                )),
            ],
            _ => vec![Step::text("recovered")],
        }
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Failed, "partial ")
    );
    assert!(out.error.unwrap().to_string().contains("boom"));
    let t = fx.transcript(&id);
    assert_eq!(
        (
            t[1]["content"][0]["text"].as_str(),
            t[1]["metadata"]["partial"].as_bool()
        ),
        (Some("partial "), Some(true))
    );
    assert!(fx.logged_events(&id).iter().any(|e| e == "provider:error"));
    drop(rt);

    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let out = rt.run_turn(&id, "again".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str(), out.turn_count),
        (SessionStatus::Completed, "recovered", 2)
    );
    let texts: Vec<String> = fx.provider.requests()[1]
        .messages
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["hi", "partial ", "again"]);
    assert_eq!(find(&drain(&mut rx), "session:resume", &id).len(), 1);
}

#[tokio::test]
async fn retryable_errors_before_output_are_retried() {
    let n = AtomicUsize::new(0);
    let fx = Fixture::new(plan(json!({})), &[], move |_| {
        match n.fetch_add(1, Ordering::SeqCst) {
            // The server's retry-after (1 ms) replaces the backoff: no real wait.
            0 => vec![Step::Fail(ProviderError {
                retry_after: Some(Duration::from_millis(1)),
                ..ProviderError::new(ProviderErrorKind::Server, "scripted", "overloaded")
            })],
            _ => vec![Step::text("ok")],
        }
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "ok")
    );
    assert_eq!(fx.provider.requests().len(), 2);
    assert_eq!(
        fx.logged_events(&id)
            .iter()
            .filter(|e| *e == "provider:request")
            .count(),
        1
    );
}

#[tokio::test]
async fn resume_repairs_an_orphaned_tool_call_without_rewriting_lines() {
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![Step::text("fine")]);
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "first".into()).await.unwrap();
    drop(rt);
    let path = fx.session_dir(&id).join("transcript.jsonl");
    let orphan = json!({"role": "assistant", "content": [{"type": "tool_call", "id": "orphan1", "name": "read_file", "input": {"path": "x"}}], "tool_calls": [{"id": "orphan1", "tool": "read_file", "arguments": {"path": "x"}}]});
    let mut before = std::fs::read_to_string(&path).unwrap();
    before.push_str(&format!("{orphan}\n"));
    std::fs::write(&path, &before).unwrap();

    let rt = fx.engine();
    let out = rt.run_turn(&id, "next".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(after.starts_with(&before), "existing lines were rewritten");
    let t = fx.transcript(&id);
    assert_eq!(t[3]["role"], "tool");
    assert_eq!(
        (
            t[3]["tool_call_id"].as_str(),
            t[3]["content"].as_str(),
            t[3]["is_error"].as_bool()
        ),
        (
            Some("orphan1"),
            Some("cancelled: no result was recorded"),
            Some(true)
        )
    );
    assert_eq!(t[4]["content"], "next");
    let roles: Vec<&str> = fx.provider.requests()[1]
        .messages
        .iter()
        .map(Message::role)
        .collect();
    assert_eq!(roles, ["user", "assistant", "assistant", "tool", "user"]);
}

#[tokio::test]
async fn resume_errors_are_exact_and_touch_nothing() {
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![Step::text("x")]);
    let rt = fx.engine();
    let err = rt.run_turn("missing-id", "x".into()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Sub-session 'missing-id' not found. It may have expired or was never created."
    );
    let err = rt.run_turn("../etc", "x".into()).await.unwrap_err();
    assert!(
        matches!(err, EngineError::Store(StoreError::InvalidId { .. })),
        "{err}"
    );
    assert!(!fx.paths.sessions_dir().join("../etc").exists());

    let dir = fx.session_dir("broken-1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("metadata.json"),
        // A sub-session without `config` (a root would be rebuilt from its bundle).
        r#"{"session_id": "broken-1", "parent_id": "some-root", "agent_name": "x"}"#,
    )
    .unwrap();
    let err = rt.run_turn("broken-1", "x".into()).await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Corrupted session metadata for 'broken-1': "),
        "{err}"
    );

    let id = rt.create_root(None).unwrap();
    let other = fx.engine();
    let err = other.run_turn(&id, "x".into()).await.unwrap_err();
    assert!(
        err.to_string().contains("is open in another process"),
        "{err}"
    );
}

#[tokio::test]
async fn read_file_through_a_turn_is_confined_to_the_working_dir() {
    let fx = Fixture::new(plan(json!({})), &[], |r| {
        if after_tool_results(r) {
            vec![Step::text("read")]
        } else {
            vec![
                Step::call("in", "read_file", json!({"path": "inside.txt"})),
                Step::call("out", "read_file", json!({"path": "../outside.txt"})),
            ]
        }
    });
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        fx.dir.path().join("outside.txt"),
        fx.paths.cwd.join("link.txt"),
    )
    .unwrap();
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "read".into()).await.unwrap();
    let t = fx.transcript(&id);
    assert_eq!(tool_result(&t, "in")["content"], "     1\tinside\n");
    let out = tool_result(&t, "out");
    assert_eq!(out["is_error"], true);
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .contains("outside the working directory")
    );
}

#[tokio::test]
async fn create_root_with_agent_unknown_agent_and_no_provider() {
    let fx = Fixture::new(plan(json!({})), &[("helper", HELPER)], |_| {
        vec![Step::text("hi")]
    });
    let rt = fx.engine();
    let id = rt.create_root(Some("helper")).unwrap();
    rt.run_turn(&id, "x".into()).await.unwrap();
    assert_eq!(fx.provider.requests()[0].system, HELPER);
    let m = fx.metadata(&id);
    assert_eq!(
        (m["agent_name"].as_str(), m["depth"].as_u64()),
        (Some("helper"), Some(0))
    );
    assert_eq!(m["agent_overlay"]["meta"]["name"], "helper");
    match rt.create_root(Some("nope")) {
        Err(EngineError::UnknownAgent { name, available }) => assert_eq!(
            (name.as_str(), available),
            ("nope", vec!["helper".to_string()])
        ),
        other => panic!("{other:?}"),
    }
    let (child, _) = rt.routed_child_mount_plan("helper").await.unwrap();
    assert_eq!(child.instruction(), HELPER);
    assert_eq!(rt.root_mount_plan(None).unwrap().instruction(), ROOT);

    let mut bare = Fixture::new(plan(json!({})), &[], |_| vec![]);
    bare.config = ArborConfig::default();
    match bare.engine().create_root(None) {
        Err(EngineError::NoProvider(text)) => assert!(!text.is_empty()),
        other => panic!("{other:?}"),
    }
}
