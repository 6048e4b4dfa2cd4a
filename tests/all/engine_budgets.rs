//! Many at once (issue 14) in the engine, with a scripted provider and temp dirs:
//! `providers[].config.max_concurrent` (requests beyond it wait in FIFO order and the
//! waiting session shows `queued`) and budgets (`budget:` in agent frontmatter and on
//! the task call → `paused` before the next model call; the parent's result says so;
//! resuming grants one more budget). Nothing touches the real home (`engine/fixture.rs`).

use crate::support::fixture;

use std::sync::Arc;

use arbor::engine::testing::{Drive, Step, after_tool_results, last_user_text};
use arbor::session::protocol::SessionStatusEvent;
use arbor::session::{EngineEvent, SessionStatus};
use fixture::*;
use serde_json::{Value, json};

const SPENDER: &str = "You are spender.";

/// The fixture with agent `spender` whose frontmatter sets `budget`.
fn with_spender(
    budget: &str,
    script: impl Fn(&arbor::provider::ChatRequest) -> Vec<Step> + Send + Sync + 'static,
) -> Fixture {
    let mut fx = Fixture::new(plan(json!({})), &[], script);
    let text = format!(
        "---\nmeta:\n  name: spender\n  description: Spends.\nbudget: {budget}\n---\n{SPENDER}\n"
    );
    std::fs::write(fx.dir.path().join("amp/agents/spender.md"), text).unwrap();
    fx.registry = fx.load_registry();
    fx
}

/// Root: delegates `args` on "go", resumes the child on "again <id>"; the spender
/// calls a tool on every model call (so it always wants another one).
fn spending(args: Value) -> impl Fn(&arbor::provider::ChatRequest) -> Vec<Step> + Send + Sync {
    move |r| {
        if r.system == SPENDER {
            return vec![
                Step::text("spending"),
                Step::call("s", "no_such_tool", json!({})),
            ];
        }
        if after_tool_results(r) {
            return vec![Step::text("root done")];
        }
        let said = last_user_text(r);
        match said.strip_prefix("again ") {
            Some(id) => vec![Step::call(
                "t2",
                "task",
                json!({"session_id": id, "instruction": "more"}),
            )],
            None => vec![Step::call("t1", "task", args.clone())],
        }
    }
}

fn spender_calls(fx: &Fixture) -> usize {
    fx.provider
        .requests()
        .iter()
        .filter(|r| r.system == SPENDER)
        .count()
}

#[tokio::test]
async fn a_child_at_its_budget_pauses_and_a_resume_grants_one_more() {
    let fx = with_spender(
        "{tokens: 10}",
        spending(json!({"agent": "spender", "instruction": "spend"})),
    );
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    let out = rt.run_turn(&root, "go".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    // One model call (10 in + 5 out tokens) uses the budget up: no second call.
    assert_eq!(spender_calls(&fx), 1);
    let content = tool_result(&fx.transcript(&root), "t1")["content"]
        .as_str()
        .unwrap()
        .to_string();
    let mut lines = content.lines();
    assert_eq!(lines.next(), Some("status: paused"));
    let child = lines
        .next()
        .unwrap()
        .strip_prefix("session_id: ")
        .unwrap()
        .to_string();
    assert_eq!(lines.next(), Some("spent: 15/10 tokens"));
    let json_line = content.lines().last().unwrap();
    let result: Value = serde_json::from_str(json_line).unwrap();
    assert_eq!(
        (&result["status"], &result["session_id"], &result["budget"]),
        (&json!("paused"), &json!(child), &json!("15/10 tokens"))
    );
    let meta = fx.metadata(&child);
    assert_eq!(meta["status"], "paused");
    assert_eq!(
        meta["budget"],
        json!({"tokens": 10, "since": {"tokens": 0}})
    );
    // Everything is kept: the tool call got its result before the pause.
    let transcript = fx.transcript(&child);
    assert_eq!(transcript.last().unwrap()["role"], "tool");

    // The parent's task `session_id` resumes it with one more budget of the same size.
    let out = rt.run_turn(&root, format!("again {child}")).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(spender_calls(&fx), 2);
    let result = tool_result(&fx.transcript(&root), "t2")["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.starts_with("status: paused\n"), "{result}");
    assert!(result.contains("spent: 15/10 tokens"), "{result}");
    assert_eq!(fx.metadata(&child)["budget"]["since"]["tokens"], 15);

    // So does a resume from the CLI or the TUI (a turn of the session itself).
    let out = rt.run_turn(&child, "go on".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Paused);
    assert_eq!(spender_calls(&fx), 3);
}

#[tokio::test]
async fn a_call_budget_only_tightens_the_agents() {
    let fx = with_spender(
        "{tokens: 1000, cost_usd: 2}",
        spending(
            json!({"agent": "spender", "instruction": "spend", "budget": {"tokens": 20000, "cost_usd": 0.5}}),
        ),
    );
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    rt.run_turn(&root, "go".into()).await.unwrap();
    let result = task_result_of(&fx, &root, "t1");
    let child = result["session_id"].as_str().unwrap();
    assert_eq!(
        fx.metadata(child)["budget"],
        json!({"tokens": 1000, "cost_usd": 0.5, "since": {"tokens": 0}})
    );
}

/// The result JSON of a task call, paused ones included (their JSON is the last line).
fn task_result_of(fx: &Fixture, session: &str, call: &str) -> Value {
    let content = tool_result(&fx.transcript(session), call)["content"]
        .as_str()
        .unwrap()
        .to_string();
    serde_json::from_str(content.lines().last().unwrap()).unwrap()
}

#[tokio::test]
async fn a_bad_task_budget_is_an_error_result() {
    let fx = with_spender(
        "{tokens: 10}",
        spending(json!({"agent": "spender", "instruction": "spend", "budget": {"tokens": "many"}})),
    );
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    rt.run_turn(&root, "go".into()).await.unwrap();
    let result = tool_result(&fx.transcript(&root), "t1");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("'budget.tokens' must be a positive integer"),
        "{result}"
    );
    assert_eq!(spender_calls(&fx), 0);
}

#[tokio::test]
async fn max_concurrent_makes_requests_wait_in_turn_and_shows_queued() {
    let gate = Arc::new(tokio::sync::Barrier::new(2));
    let script_gate = gate.clone();
    let mut fx = Fixture::new(plan(json!({})), &[("helper", HELPER)], move |r| {
        if is_root(r) {
            if after_tool_results(r) {
                return vec![Step::text("root done")];
            }
            return vec![
                Step::call(
                    "a",
                    "task",
                    json!({"agent": "helper", "instruction": "one"}),
                ),
                Step::call(
                    "b",
                    "task",
                    json!({"agent": "helper", "instruction": "two"}),
                ),
            ];
        }
        // Each helper's reply waits for the test to let it finish.
        vec![Step::text("half"), Step::Barrier(script_gate.clone())]
    });
    fx.config.providers[0].config["max_concurrent"] = json!(1);
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let turn = tokio::spawn({
        let (rt, root) = (rt.clone(), root.clone());
        async move { rt.run_turn(&root, "go".into()).await }
    });
    let is_status = |e: &arbor::session::Event, s: SessionStatus| matches!(&e.msg, EngineEvent::SessionStatus(SessionStatusEvent { status }) if *status == s);
    // One helper streams; the other waits, queued, and has sent no request.
    let queued = tokio::time::timeout(GUARD, async {
        loop {
            let e = rx.recv().await.unwrap();
            if is_status(&e, SessionStatus::Queued) {
                return e.session_id.clone();
            }
        }
    })
    .await
    .unwrap();
    let helper_requests = |fx: &Fixture| {
        fx.provider
            .requests()
            .iter()
            .filter(|r| !is_root(r))
            .count()
    };
    // Let the root's request slot pass to the first helper, which then waits here.
    tokio::time::timeout(GUARD, async {
        while helper_requests(&fx) < 1 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    assert_eq!(helper_requests(&fx), 1, "the queued helper sent nothing");
    assert_eq!(fx.metadata(&queued)["status"], "queued");
    gate.wait().await;
    // The first reply ended: the queued helper runs now, alone.
    tokio::time::timeout(GUARD, async {
        loop {
            let e = rx.recv().await.unwrap();
            if e.session_id == queued && is_status(&e, SessionStatus::Running) {
                return;
            }
        }
    })
    .await
    .unwrap();
    gate.wait().await;
    let out = tokio::time::timeout(GUARD, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(helper_requests(&fx), 2);
    for call in ["a", "b"] {
        assert_eq!(
            task_result(&fx.transcript(&root), call)["status"],
            "completed"
        );
    }
}
