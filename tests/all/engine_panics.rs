//! A panic in the engine's background work — a provider stream polled by the turn
//! task, a tool call's task, a sub-session's turn — becomes a failed session with an
//! error (the usual `session:status` / `orchestrator:complete` events, an error cell in
//! the TUI), never a crash: the runtime and the session carry on.

use crate::support::fixture;
use crate::support::harness;

use std::sync::Arc;

use arbor::engine::TurnError;
use arbor::engine::testing::{Drive, Step, after_tool_results};
use arbor::session::{Event, SessionStatus};
use arbor::tool::{Tool, ToolContext, ToolOutput, ToolSpec};
use arbor::tui::executor::RuntimeExecutor;
use arbor::tui::runloop::Executor;
use arbor::tui::{EngineCommand, EngineReply};
use fixture::*;
use futures::future::BoxFuture;
use serde_json::{Value, json};

const TURN_PANIC: &str = "internal error: the turn panicked: provider bug";

/// The `orchestrator:complete` data of `id`'s turns, in order.
fn completions(events: &[Arc<Event>], id: &str) -> Vec<Value> {
    find(events, "orchestrator:complete", id)
        .into_iter()
        .map(|e| data(e))
        .collect()
}

fn statuses(events: &[Arc<Event>], id: &str) -> Vec<String> {
    find(events, "session:status", id)
        .into_iter()
        .map(|e| data(e)["status"].as_str().unwrap().to_string())
        .collect()
}

/// A fixture whose root first streams a little and then panics, and answers
/// `recovered` to every later request.
fn panicking_provider() -> Fixture {
    Fixture::new(plan(json!({})), &[], |r| {
        if last_user_text(r) == "hi" {
            vec![Step::text("partial "), Step::Panic("provider bug".into())]
        } else {
            vec![Step::text("recovered")]
        }
    })
}

fn last_user_text(r: &arbor::provider::ChatRequest) -> String {
    arbor::engine::testing::last_user_text(r)
}

#[tokio::test]
async fn a_panicking_provider_fails_the_turn_and_the_session_carries_on() {
    let fx = panicking_provider();
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Failed);
    assert!(matches!(out.error, Some(TurnError::Panicked(_))), "{out:?}");
    assert_eq!(
        out.error.as_ref().map(ToString::to_string).as_deref(),
        Some(TURN_PANIC)
    );

    let events = drain(&mut rx);
    assert_eq!(statuses(&events, &id), ["idle", "running", "failed"]);
    let done = completions(&events, &id);
    assert_eq!(
        (&done[0]["status"], &done[0]["error"]),
        (&json!("failed"), &json!(TURN_PANIC))
    );
    assert!(
        fx.logged_events(&id)
            .contains(&"orchestrator:complete".to_string())
    );
    assert_eq!(fx.metadata(&id)["status"], "failed");

    // The same runtime and session go on.
    let out = rt.run_turn(&id, "again".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "recovered")
    );
    assert!(!rt.is_running(&id));
}

#[tokio::test]
async fn the_tui_shows_a_panicked_turn_as_an_error_cell() {
    let fx = panicking_provider();
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let loaded = rt.load_session(&id).await.unwrap();
    let (mut app, _commands) = harness::app_for(&id, "scripted/scripted-model", loaded);

    // Through the TUI's own executor and stream, as a submitted prompt runs.
    let (executor, mut stream) = RuntimeExecutor::connect(&rt);
    executor.submit(EngineCommand::Submit {
        session_id: Some(id.clone()),
        agent: None,
        prompt: "hi".into(),
        cleared: false,
    });
    harness::pump(&mut app, &mut stream, |reply| {
        let EngineReply::TurnFinished(outcome) = reply else {
            return false;
        };
        assert_eq!(
            (
                outcome.status,
                outcome.error.as_ref().map(ToString::to_string).as_deref()
            ),
            (SessionStatus::Failed, Some(TURN_PANIC))
        );
        true
    })
    .await;
    let screen = harness::screen(&mut app, 80, 24);
    assert_eq!(
        screen.matches("internal error: the turn panicked").count(),
        1,
        "{screen}"
    );
}

/// A tool whose call panics inside its task.
struct Panicky;

impl Tool for Panicky {
    fn module(&self) -> &str {
        "tool-test"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "panicky".into(),
            description: "panics".into(),
            input_schema: json!({"type": "object"}),
        }
    }

    fn call(&self, _input: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            panic!("tool bug");
        })
    }
}

#[tokio::test]
async fn a_panicking_tool_call_fails_the_turn_with_its_result_recorded() {
    let fx = Fixture::new(plan(json!({})), &[], |r| {
        if after_tool_results(r) {
            vec![Step::text("not reached")]
        } else {
            vec![
                Step::call("c1", "panicky", json!({})),
                Step::call("c2", "read_file", json!({"path": "inside.txt"})),
            ]
        }
    });
    let rt = fx.engine_with(vec![Arc::new(Panicky)]);
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "go".into()).await.unwrap();
    let expected = "internal error: tool `panicky` (call c1) panicked: tool bug";
    assert_eq!(
        (
            out.status,
            out.error.as_ref().map(ToString::to_string).as_deref()
        ),
        (SessionStatus::Failed, Some(expected))
    );
    assert_eq!(fx.provider.requests().len(), 1, "no model call after it");

    // Every call has its result: the panicked one as an error, the other as usual.
    let transcript = fx.transcript(&id);
    let c1 = tool_result(&transcript, "c1");
    assert_eq!(c1["content"], "the tool panicked: tool bug");
    assert_eq!(
        tool_result(&transcript, "c2")["content"],
        "     1\tinside\n"
    );
    let events = drain(&mut rx);
    let errors = find(&events, "tool:error", &id);
    assert_eq!(errors.len(), 1);
    assert_eq!(data(errors[0])["tool_call_id"], "c1");
    assert_eq!(completions(&events, &id)[0]["error"], json!(expected));
    assert_eq!(fx.metadata(&id)["status"], "failed");
}

#[tokio::test]
async fn a_panicking_sub_session_fails_alone() {
    let fx = Fixture::new(
        plan(json!({})),
        &[("helper", HELPER)],
        delegating(
            json!({"agent": "helper", "instruction": "work"}),
            vec![Step::Panic("provider bug".into())],
        ),
    );
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let out = rt.run_turn(&root, "delegate".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "root done")
    );
    let result: Value = task_result(&fx.transcript(&root), "t1");
    assert_eq!(
        (&result["status"], &result["error"]),
        (&json!("failed"), &json!(TURN_PANIC))
    );
    let child = result["session_id"].as_str().unwrap().to_string();
    assert_eq!(fx.metadata(&child)["status"], "failed");
    assert_eq!(fx.metadata(&root)["status"], "completed");

    // The child's thread open in the TUI (loaded after the fact: its user message)
    // shows the error its turn ended with.
    let events = drain(&mut rx);
    let ended: Vec<Arc<Event>> = find(&events, "orchestrator:complete", &child)
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(data(&ended[0])["error"], json!(TURN_PANIC));
    let loaded = rt.load_session(&child).await.unwrap();
    let (mut app, _commands) = harness::app_for(&child, "scripted/scripted-model", loaded);
    harness::feed(&mut app, &ended);
    let screen = harness::screen(&mut app, 80, 24);
    assert!(screen.contains(TURN_PANIC), "{screen}");
}

#[tokio::test]
async fn a_panic_before_the_turn_loop_is_an_error_of_run_turn() {
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![Step::text("fine")]);
    let id = fx.engine().create_root(None).unwrap();
    // A fresh runtime (a new process) resumes the session from disk and builds its
    // provider through a factory that panics.
    let (_tx, registry) = tokio::sync::watch::channel(fx.registry.clone());
    let hooks = arbor::engine::RuntimeHooks {
        provider_factory: Some(Arc::new(|_| panic!("factory bug"))),
        extra_tools: Vec::new(),
    };
    let rt = fx.engine_with_hooks(registry, hooks);
    let err = rt.run_turn(&id, "hi".into()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("internal error: the turn of session '{id}' panicked: factory bug")
    );
    assert!(!rt.is_running(&id));
}
