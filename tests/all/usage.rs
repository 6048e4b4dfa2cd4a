//! Usage and cost: tokens per model call, per turn and per session from a scripted
//! provider; the config's price table giving cost (assistant `metadata.usage.cost`,
//! `provider:response`, `orchestrator:complete`, session `metadata.usage.cost`, summed
//! across turns and processes); no price → no cost anywhere and no failure; and the
//! TUI rolling tokens and cost up the tree and showing them in the status bar.

use crate::support::fixture;
use crate::support::harness;

use std::sync::Arc;

use arbor::config::ArborConfig;
use arbor::engine::testing::{Drive, Step, after_tool_results};
use arbor::session::SessionStatus;
use arbor::tui::state::tree::{SessionTree, Spend};
use arbor::tui::testing::to_tree;
use fixture::*;
use serde_json::{Value, json};

/// Every scripted call reports 10 input and 5 output tokens: at $3 / $15 per million
/// that is (10·3 + 5·15) / 1e6 = $0.000105.
const CALL_COST: f64 = 0.000105;

fn priced(config: &mut ArborConfig, prices: Value) {
    config.extra.insert("prices".into(), prices);
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-12)
}

/// One tool call, then a final answer: two model calls per turn.
fn two_calls() -> impl Fn(&arbor::provider::ChatRequest) -> Vec<Step> + Send + Sync {
    |r| {
        if after_tool_results(r) {
            vec![Step::text("done")]
        } else {
            vec![Step::call("c1", "list_directory", json!({}))]
        }
    }
}

#[tokio::test]
async fn a_priced_model_writes_cost_per_call_turn_and_session() {
    let mut fx = Fixture::new(plan(json!({})), &[], two_calls());
    priced(
        &mut fx.config,
        json!({
            // The most specific key wins over the catch-all.
            "*": {"input": 1000, "output": 1000},
            "scripted/SCRIPTED-*": {"input": 3, "output": 15},
            "other/scripted-model": {"input": 99, "output": 99},
        }),
    );
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "go".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);

    let assistants: Vec<Value> = fx
        .transcript(&id)
        .into_iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistants.len(), 2);
    for m in &assistants {
        let u = &m["metadata"]["usage"];
        assert_eq!(
            (&u["input_tokens"], &u["output_tokens"]),
            (&json!(10), &json!(5))
        );
        assert!(close(&u["cost"], CALL_COST), "{u}");
    }
    let m = fx.metadata(&id);
    assert_eq!(
        (&m["usage"]["input_tokens"], &m["usage"]["output_tokens"]),
        (&json!(20), &json!(10))
    );
    assert!(
        close(&m["usage"]["cost"], 2.0 * CALL_COST),
        "{}",
        m["usage"]
    );

    let events = drain(&mut rx);
    let responses = find(&events, "provider:response", &id);
    assert_eq!(responses.len(), 2);
    assert!(close(&data(responses[0])["usage"]["cost"], CALL_COST));
    let complete = find(&events, "orchestrator:complete", &id);
    let turn = &data(complete[0])["usage"];
    assert_eq!(turn["input_tokens"], 20);
    assert!(close(&turn["cost"], 2.0 * CALL_COST), "{turn}");

    // A second turn in a new process keeps adding to the stored cost.
    drop(rt);
    let rt = fx.engine();
    rt.run_turn(&id, "again".into()).await.unwrap();
    let m = fx.metadata(&id);
    assert_eq!(m["usage"]["input_tokens"], 40);
    assert!(
        close(&m["usage"]["cost"], 4.0 * CALL_COST),
        "{}",
        m["usage"]
    );
}

#[tokio::test]
async fn without_a_price_there_is_no_cost_field_and_no_failure() {
    for prices in [
        None,
        Some(json!({"anthropic/claude-*": {"input": 3, "output": 15}})),
        // Malformed tables and entries are ignored, never fatal.
        Some(json!("cheap")),
        Some(json!({"scripted/*": {"output": 1}})),
    ] {
        let mut fx = Fixture::new(plan(json!({})), &[], two_calls());
        if let Some(p) = &prices {
            priced(&mut fx.config, p.clone());
        }
        let rt = fx.engine();
        let mut rx = rt.subscribe();
        let id = rt.create_root(None).unwrap();
        let out = rt.run_turn(&id, "go".into()).await.unwrap();
        assert_eq!(out.status, SessionStatus::Completed, "{prices:?}");
        let m = fx.metadata(&id);
        assert_eq!(m["usage"]["input_tokens"], 20, "{prices:?}");
        assert!(
            m["usage"].get("cost").is_none(),
            "{prices:?}: {}",
            m["usage"]
        );
        for t in fx.transcript(&id) {
            if t["role"] == "assistant" {
                assert!(t["metadata"]["usage"].get("cost").is_none(), "{t}");
            }
        }
        let events = drain(&mut rx);
        for e in find(&events, "provider:response", &id) {
            assert!(data(e)["usage"].get("cost").is_none());
        }
        let complete = find(&events, "orchestrator:complete", &id);
        let turn = data(complete[0]);
        assert_eq!(turn["usage"]["output_tokens"], 10);
        assert!(turn["usage"].get("cost").is_none());
    }
}

/// Root delegates once to `helper`, then answers: root makes 2 calls, the child 1.
async fn delegated_run() -> (Fixture, String, String, Vec<Arc<arbor::session::Event>>) {
    let mut fx = Fixture::new(
        plan(json!({})),
        &[("helper", HELPER)],
        delegating(
            json!({"agent": "helper", "instruction": "look around"}),
            vec![Step::text("helper")],
        ),
    );
    priced(
        &mut fx.config,
        json!({"scripted/*": {"input": 3, "output": 15}}),
    );
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let out = rt.run_turn(&root, "go".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    let events = drain(&mut rx);
    let child = events
        .iter()
        .find(|e| e.parent_id.as_deref() == Some(root.as_str()))
        .map(|e| e.session_id.clone())
        .unwrap();
    (fx, root.into_string(), child.into_string(), events)
}

#[tokio::test]
async fn tokens_and_cost_roll_up_the_tree() {
    let (fx, root, child, events) = delegated_run().await;
    assert!(close(&fx.metadata(&child)["usage"]["cost"], CALL_COST));
    assert!(close(&fx.metadata(&root)["usage"]["cost"], 2.0 * CALL_COST));

    // Live, from the bus.
    let mut tree = SessionTree::default();
    for e in &events {
        to_tree(&mut tree, e);
    }
    let total = tree.subtree_spend(&root);
    assert_eq!(total.tokens, 45);
    assert!((total.cost.unwrap() - 3.0 * CALL_COST).abs() < 1e-12);
    let rows = tree.rows();
    let row = rows.iter().find(|r| r.node.id == root).unwrap();
    assert_eq!(row.tokens, 45);
    assert!((row.cost.unwrap() - 3.0 * CALL_COST).abs() < 1e-12);
    assert_eq!(tree.root_of(&child), Some(root.as_str()));

    // From disk, as a fresh TUI lists stored sessions.
    let rt = fx.engine();
    let stored = rt.list_sessions().await.unwrap();
    let mut tree = SessionTree::default();
    tree.load(&stored);
    let spend = tree.subtree_spend(&root);
    assert_eq!(spend.tokens, 45);
    assert!((spend.cost.unwrap() - 3.0 * CALL_COST).abs() < 1e-12);
}

#[tokio::test]
async fn the_status_bar_shows_the_open_session_and_its_tree_total() {
    let (fx, root, child, events) = delegated_run().await;
    let rt = fx.engine();
    let (mut app, _commands) = harness::app_for(
        &child,
        "scripted/scripted-model",
        rt.load_session(&child).await.unwrap(),
    );
    harness::feed(&mut app, &events);
    let usage = app.status_usage().unwrap();
    assert_eq!(usage.session.tokens, 15);
    assert!((usage.session.cost.unwrap() - CALL_COST).abs() < 1e-12);
    let tree = usage.tree.unwrap();
    assert_eq!(tree.tokens, 45);
    assert!((tree.cost.unwrap() - 3.0 * CALL_COST).abs() < 1e-12);
    // Wide enough for the child's task title and its stats (a narrow pane drops the
    // stats before the title).
    let screen = harness::screen(&mut app, 160, 12);
    let status = screen.lines().last().unwrap();
    assert!(
        status.contains("│ 15 tok $0.0001 · tree 45 $0.0003 "),
        "{status}"
    );
    // The tree pane shows the root's rolled-up cost and the child's own.
    assert!(screen.contains("45 $0.0003"), "{screen}");
    assert!(screen.contains("15 $0.0001"), "{screen}");
    let _ = root;
}

#[tokio::test]
async fn a_session_without_cost_shows_tokens_only() {
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![Step::text("hi")]);
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let loaded = rt.load_session(&id).await.unwrap();
    rt.run_turn(&id, "go".into()).await.unwrap();
    let (mut app, _commands) = harness::app_for(&id, "scripted/scripted-model", loaded);
    harness::feed(&mut app, &drain(&mut rx));
    let usage = app.status_usage().unwrap();
    assert_eq!(
        (usage.session, usage.tree),
        (
            Spend {
                tokens: 15,
                cost: None
            },
            None
        )
    );
    let screen = harness::screen(&mut app, 80, 10);
    assert!(
        screen.lines().last().unwrap().contains("│ 15 tok "),
        "{screen}"
    );
    assert!(!screen.contains('$'), "{screen}");
}
