//! Steer and queue (SPEC §13) through the runtime with a scripted provider: a steer
//! reaches the running turn's next model call (after the tool results, in the same
//! turn) — for a root waiting on a delegation and for the child itself; a steer the
//! turn ended before starts the next turn at once; queued messages are turns of their
//! own afterwards, in order; removed ones are never sent; a cancel returns what
//! waits. Each model call that must be in flight while the test steers waits on a
//! barrier the test releases. Nothing touches the real home (see `engine/fixture.rs`).

use crate::support::fixture;

use std::sync::Arc;

use arbor::engine::testing::{Drive, Step, last_user_text};
use arbor::engine::{Engine, EngineError, TurnOutcome};
use arbor::provider::ChatRequest;
use arbor::session::message::Message;
use arbor::session::{Event, SessionStatus};
use fixture::*;
use serde_json::{Value, json};
use tokio::sync::Barrier;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

/// Waits (bounded) for the first bus event `pred` accepts.
async fn wait_for(
    rx: &mut UnboundedReceiver<Arc<Event>>,
    pred: impl Fn(&Event) -> bool,
) -> Arc<Event> {
    tokio::time::timeout(GUARD, async {
        loop {
            let e = rx.recv().await.unwrap();
            if pred(&e) {
                return e;
            }
        }
    })
    .await
    .expect("event in time")
}

/// Runs the turn `go` of `root` in the background.
fn start(rt: &Engine, root: &str) -> JoinHandle<Result<TurnOutcome, EngineError>> {
    let (rt, root) = (rt.clone(), root.to_string());
    tokio::spawn(async move { rt.run_turn(&root, "go".into()).await })
}

/// The outcome of a turn started by [`start`] (bounded wait).
async fn ended(turn: JoinHandle<Result<TurnOutcome, EngineError>>) -> TurnOutcome {
    tokio::time::timeout(GUARD, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
}

/// Answers `go` with `first` once `held` is released, anything else with `re: <it>`.
fn held_then_echo(held: Arc<Barrier>, first: &'static str) -> impl Fn(&ChatRequest) -> Vec<Step> {
    move |r| match last_user_text(r).as_str() {
        "go" => vec![Step::Barrier(held.clone()), Step::text(first)],
        other => vec![Step::text(format!("re: {other}"))],
    }
}

/// Root delegates `work` to `helper` once (until a tool result is in its request: a
/// steer may follow the result), then answers `root done`; `helper` answers the
/// helper's requests.
fn delegating_to(
    helper: impl Fn(&ChatRequest) -> Vec<Step> + Send + Sync + 'static,
) -> impl Fn(&ChatRequest) -> Vec<Step> + Send + Sync + 'static {
    move |r| match (is_root(r), has_tool_result(r)) {
        (true, false) => vec![Step::call(
            "t1",
            "task",
            json!({"agent": "helper", "instruction": "work"}),
        )],
        (true, true) => vec![Step::text("root done")],
        (false, _) => helper(r),
    }
}

/// Starts the turn `go` of a new root and waits until its child's first model call
/// is in flight (held at the test's barrier): `(runtime, root, child, turn)`.
async fn start_delegation(
    fx: &Fixture,
) -> (
    Engine,
    String,
    String,
    JoinHandle<Result<TurnOutcome, EngineError>>,
) {
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let turn = start(&rt, &root);
    let child = wait_for(&mut rx, |e| {
        e.msg.name() == "provider:request" && e.parent_id.as_deref() == Some(root.as_str())
    })
    .await
    .session_id
    .clone();
    (rt, root.into_string(), child.into_string(), turn)
}

/// Whether `request` holds a tool result (the model already called its tools; a
/// steered message may come after the result).
fn has_tool_result(request: &ChatRequest) -> bool {
    request
        .messages
        .iter()
        .any(|m| matches!(m, Message::Tool(_)))
}

/// The user messages of `request`, in order.
fn user_texts(request: &ChatRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => Some(u.content.to_string()),
            _ => None,
        })
        .collect()
}

/// `(role, text)` of each stored transcript line (the text of a user message, the
/// first text block of an assistant message, empty otherwise).
fn roles(fx: &Fixture, id: &str) -> Vec<(String, String)> {
    fx.transcript(id)
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) if m["role"] == "user" => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .find_map(|b| b["text"].as_str())
                    .unwrap_or_default()
                    .to_string(),
                _ => String::new(),
            };
            (m["role"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test]
async fn a_steer_during_a_delegation_reaches_the_roots_next_model_call_of_the_same_turn() {
    let gate = Arc::new(Barrier::new(2));
    let held = gate.clone();
    let fx = Fixture::new(
        plan(json!({})),
        &[("helper", HELPER)],
        delegating_to(move |_| vec![Step::Barrier(held.clone()), Step::text("helper done")]),
    );
    let (rt, root, child, turn) = start_delegation(&fx).await;

    let steered = rt.steer(&root, "also check the README".into()).await;
    assert_eq!(steered.unwrap(), None, "the running turn takes it");
    gate.wait().await;
    let out = ended(turn).await;
    assert_eq!(
        (out.status, out.turn_count, out.response.as_str()),
        (SessionStatus::Completed, 1, "root done")
    );

    let root_requests: Vec<ChatRequest> =
        fx.provider.requests().into_iter().filter(is_root).collect();
    assert_eq!(root_requests.len(), 2);
    assert_eq!(user_texts(&root_requests[0]), ["go"]);
    // After the task's result, before the model's next answer: verbatim.
    let last = root_requests[1].messages.last().unwrap();
    assert!(
        matches!(last, Message::User(u) if u.content == "also check the README"),
        "{last:?}"
    );
    assert!(matches!(
        root_requests[1].messages.iter().rev().nth(1),
        Some(Message::Tool(_))
    ));
    assert_eq!(
        roles(&fx, &root),
        pairs(&[
            ("user", "go"),
            ("assistant", ""),
            ("tool", ""),
            ("user", "also check the README"),
            ("assistant", "root done"),
        ])
    );
    // The child never saw it.
    assert!(
        fx.transcript(&child)
            .iter()
            .all(|m| m["content"] != "also check the README")
    );
    let logged = fx.lines(&root, "events.jsonl");
    let sent: Vec<&Value> = logged
        .iter()
        .filter(|e| e["event"] == "prompt:queued" || e["event"] == "prompt:sent")
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(
        (
            &sent[0]["data"]["id"],
            &sent[0]["data"]["mode"],
            &sent[0]["data"]["prompt"]
        ),
        (&json!(1), &json!("steer"), &json!("also check the README"))
    );
    assert_eq!(sent[1]["event"], "prompt:sent");
    assert_eq!(sent[1]["data"]["id"], 1);
}

#[tokio::test]
async fn a_child_running_under_a_delegation_can_be_steered() {
    let gate = Arc::new(Barrier::new(2));
    let held = gate.clone();
    // The helper reads a file first (held until the test steered), then answers.
    let helper = move |r: &ChatRequest| {
        if has_tool_result(r) {
            vec![Step::text(format!("helper saw: {}", last_user_text(r)))]
        } else {
            vec![
                Step::Barrier(held.clone()),
                Step::call("r1", "read_file", json!({"path": "inside.txt"})),
            ]
        }
    };
    let fx = Fixture::new(
        plan(json!({})),
        &[("helper", HELPER)],
        delegating_to(helper),
    );
    let (rt, root, child, turn) = start_delegation(&fx).await;
    assert_eq!(
        rt.steer(&child, "only the tests".into()).await.unwrap(),
        None
    );
    gate.wait().await;
    let out = ended(turn).await;
    assert_eq!(out.status, SessionStatus::Completed);
    let result = task_result(&fx.transcript(&root), "t1");
    assert_eq!(result["response"], "helper saw: only the tests");
    assert_eq!(result["turn_count"], 1, "the same turn of the child");
    let child_roles = roles(&fx, &child);
    assert_eq!(child_roles[2].0, "tool");
    assert_eq!(
        child_roles[3],
        ("user".to_string(), "only the tests".to_string())
    );
}

#[tokio::test]
async fn queued_messages_are_turns_of_their_own_afterwards_in_order() {
    let gate = Arc::new(Barrier::new(2));
    let fx = Fixture::new(plan(json!({})), &[], held_then_echo(gate.clone(), "first"));
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let turn = start(&rt, &root);
    wait_for(&mut rx, |e| e.msg.name() == "provider:request").await;
    assert_eq!(rt.queue(&root, "third".into(), None).await.unwrap(), None);
    // Put in front of "third"; a removed one is never sent.
    assert_eq!(
        rt.queue(&root, "second".into(), Some(0)).await.unwrap(),
        None
    );
    assert_eq!(rt.queue(&root, "never".into(), None).await.unwrap(), None);
    assert_eq!(rt.unqueue(&root, 3).unwrap(), "never");
    assert!(rt.unqueue(&root, 3).is_err(), "removed once");
    gate.wait().await;
    let out = ended(turn).await;
    assert_eq!(
        (out.status, out.turn_count, out.response.as_str()),
        (SessionStatus::Completed, 3, "re: third")
    );
    let requests = fx.provider.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(user_texts(&requests[0]), ["go"]);
    assert_eq!(user_texts(&requests[1]), ["go", "second"]);
    assert_eq!(user_texts(&requests[2]), ["go", "second", "third"]);
    assert_eq!(
        roles(&fx, &root),
        pairs(&[
            ("user", "go"),
            ("assistant", "first"),
            ("user", "second"),
            ("assistant", "re: second"),
            ("user", "third"),
            ("assistant", "re: third"),
        ])
    );
    let events = fx.logged_events(&root);
    let count = |name: &str| events.iter().filter(|e| *e == name).count();
    assert_eq!(count("orchestrator:complete"), 3);
    assert_eq!(count("prompt:submit"), 3);
    assert_eq!(count("prompt:sent"), 2);
    assert_eq!(count("prompt:unqueued"), 1);
    assert!(!rt.is_running(&root));
    assert_eq!(fx.metadata(&root)["turn_count"], 3);
}

#[tokio::test]
async fn a_steer_the_turn_ended_before_starts_the_next_turn_at_once() {
    let gate = Arc::new(Barrier::new(2));
    let fx = Fixture::new(
        plan(json!({})),
        &[],
        held_then_echo(gate.clone(), "final answer"),
    );
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let turn = start(&rt, &root);
    wait_for(&mut rx, |e| e.msg.name() == "provider:request").await;
    assert_eq!(rt.steer(&root, "one more".into()).await.unwrap(), None);
    assert_eq!(rt.steer(&root, "and this".into()).await.unwrap(), None);
    gate.wait().await;
    let out = ended(turn).await;
    assert_eq!((out.turn_count, out.response.as_str()), (2, "re: and this"));
    assert_eq!(
        user_texts(&fx.provider.requests()[1]),
        ["go", "one more", "and this"]
    );
    // An idle session: the steer is a turn of its own right away.
    let out = rt.steer(&root, "later".into()).await.unwrap().unwrap();
    assert_eq!((out.turn_count, out.response.as_str()), (3, "re: later"));
}

#[tokio::test]
async fn a_cancel_returns_what_waits_unsent() {
    let fx = Fixture::new(plan(json!({})), &[], |r| match last_user_text(r).as_str() {
        "go" => vec![Step::text("partial"), Step::Hang],
        other => vec![Step::text(format!("re: {other}"))],
    });
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let turn = start(&rt, &root);
    wait_for(&mut rx, |e| e.msg.name() == "content_block:delta").await;
    rt.queue(&root, "after".into(), None).await.unwrap();
    rt.steer(&root, "now".into()).await.unwrap();
    rt.cancel(&root);
    let out = ended(turn).await;
    assert_eq!((out.status, out.turn_count), (SessionStatus::Cancelled, 1));
    let returned: Vec<Value> = fx
        .lines(&root, "events.jsonl")
        .into_iter()
        .filter(|e| e["event"] == "prompt:unqueued")
        .map(|e| {
            let d = &e["data"];
            json!([d["id"], d["mode"], d["prompt"], d["reason"]])
        })
        .collect();
    assert_eq!(
        returned,
        [
            json!([2, "steer", "now", "returned"]),
            json!([1, "queue", "after", "returned"]),
        ]
    );
    assert_eq!(fx.provider.requests().len(), 1);
    assert!(!rt.is_running(&root));
}
