//! A hosted ACP node (issue 37 item 3) steered and cancelled through the engine
//! handle, with the scripted agent `tests/hosted/fake_agent.mjs` as the child of a
//! scripted root: a steer sent while the agent works becomes its next prompt, in the
//! same ACP session of the same process; a cancel reaches the agent as
//! `session/cancel` and the node ends cancelled with what it streamed; its
//! permission request waits for the person (the TUI's ⚑ prompt answers through the
//! same `approval:required` and `resolve_approval`) and gets their answer. Nothing
//! touches the real home (the agent gets the fixture's `HOME`).

use crate::support::fixture;

use std::path::Path;
use std::sync::Arc;

use arbor::engine::testing::{Drive, Step};
use arbor::engine::{ApprovalMode, Engine, EngineError, RuntimeHooks, TurnOutcome};
use arbor::session::protocol::{AllowScope, ApprovalDecision};
use arbor::session::{EngineEvent, Event, SessionStatus};
use fixture::*;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

/// A fixture whose root delegates `work` to `helper`, an ACP agent running the
/// scripted agent in `mode`; the engine over it (approvals as with `--yes`).
fn hosted_helper(mode: &str) -> (Fixture, Engine) {
    hosted_helper_in(mode, ApprovalMode::Headless { yes: true })
}

/// [`hosted_helper`] answering approvals in `approvals`.
fn hosted_helper_in(mode: &str, approvals: ApprovalMode) -> (Fixture, Engine) {
    let fx = Fixture::new(plan(json!({})), &[], |r| {
        if r.messages
            .iter()
            .any(|m| matches!(m, arbor::session::message::Message::Tool(_)))
        {
            vec![Step::text("root done")]
        } else {
            vec![Step::call(
                "t1",
                "task",
                json!({"agent": "helper", "instruction": "work"}),
            )]
        }
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hosted/fake_agent.mjs");
    std::fs::write(
        fx.dir.path().join("amp/agents/helper.md"),
        format!(
            "---\nmeta:\n  name: helper\n  description: hosted\nacp:\n  command: node\n  args: [{:?}, {mode:?}]\n---\nHosted.\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(fx.load_registry());
    let hooks = RuntimeHooks {
        provider_factory: Some(fx.provider.factory()),
        extra_tools: Vec::new(),
    };
    let rt = fx.engine_in(approvals, rx, hooks);
    (fx, rt)
}

/// Starts the root's turn and waits for the child's first streamed text containing
/// `needle`: `(root, child, turn)`.
async fn start_until(
    rt: &Engine,
    needle: &str,
) -> (String, String, JoinHandle<Result<TurnOutcome, EngineError>>) {
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap().into_string();
    let turn = {
        let (rt, root) = (rt.clone(), root.clone());
        tokio::spawn(async move { rt.run_turn(&root, "go".into()).await })
    };
    let child = wait_for(&mut rx, |e| {
        matches!(&e.msg, EngineEvent::ContentBlockDelta(d) if d.delta.contains(needle))
            && e.parent_id.as_deref() == Some(root.as_str())
    })
    .await
    .session_id
    .to_string();
    (root, child, turn)
}

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

/// The texts of the child's stored messages, `role: text`.
fn lines(fx: &Fixture, id: &str) -> Vec<String> {
    fx.transcript(id)
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<String>(),
                _ => String::new(),
            };
            format!("{}: {text}", m["role"].as_str().unwrap_or_default())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_while_the_agent_works_is_its_next_prompt_in_the_same_session() {
    let (fx, rt) = hosted_helper("slow");
    let (_root, child, turn) = start_until(&rt, "working on: work").await;
    assert_eq!(rt.steer(&child, "also this".into()).await.unwrap(), None);
    std::fs::write(fx.paths.cwd.join("release"), "").unwrap();
    let outcome = tokio::time::timeout(GUARD, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(
        lines(&fx, &child),
        [
            "user: work",
            "assistant: working on: work. done: work (sessions opened: 1)",
            "user: also this",
            "assistant: working on: also this. done: also this (sessions opened: 1)",
        ]
    );
    let result = task_result(&fx.transcript(&outcome.session_id), "t1");
    assert!(
        result
            .to_string()
            .contains("done: also this (sessions opened: 1)"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_reaches_the_agent_as_session_cancel() {
    let (fx, rt) = hosted_helper("hold");
    let (root, child, turn) = start_until(&rt, "holding").await;
    rt.cancel(&root);
    let outcome = tokio::time::timeout(GUARD, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, SessionStatus::Cancelled);
    assert_eq!(fx.metadata(&child)["status"], "cancelled");
    // The agent answered the cancel itself (a killed agent streams nothing more).
    assert_eq!(
        lines(&fx, &child).last().unwrap(),
        "assistant: holding. stopped by cancel"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_permission_request_waits_for_the_persons_answer() {
    let (fx, rt) = hosted_helper_in("permission", ApprovalMode::Interactive);
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap().into_string();
    let turn = {
        let (rt, root) = (rt.clone(), root.clone());
        tokio::spawn(async move { rt.run_turn(&root, "go".into()).await })
    };
    let asked = wait_for(
        &mut rx,
        |e| matches!(&e.msg, EngineEvent::ApprovalRequired(a) if a.tool_name == "bash"),
    )
    .await;
    let child = asked.session_id.to_string();
    let EngineEvent::ApprovalRequired(required) = &asked.msg else {
        unreachable!()
    };
    assert_eq!(required.command.as_deref(), Some("rm -rf build"));
    assert_eq!(fx.metadata(&child)["status"], "waiting");
    let once = ApprovalDecision::Allow {
        scope: AllowScope::Once,
    };
    rt.resolve_approval(&child, "p1", once).unwrap();
    let outcome = tokio::time::timeout(GUARD, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert!(
        lines(&fx, &child)
            .last()
            .unwrap()
            .contains("\"optionId\":\"yes-once\""),
        "{:?}",
        lines(&fx, &child)
    );
}
