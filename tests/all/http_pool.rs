//! One HTTP client per provider endpoint per process: a root turn that spawns N
//! sub-sessions, all with real OpenAI clients against one loopback server, builds one
//! client (one connection pool, one read of the system certificates) and hands it to
//! every session's provider.

use crate::support;
use crate::support::fixture;

use std::sync::Arc;

use arbor::engine::RuntimeHooks;
use arbor::engine::testing::Drive;
use arbor::session::SessionStatus;
use fixture::{Fixture, HELPER, plan};
use serde_json::{Value, json};
use support::{Reply, ScriptedServer, last_role, sse_text, sse_tool_calls};

const TASKS: usize = 6;

/// The root asks for `TASKS` helpers in one message, then answers; each helper
/// answers with text.
fn server() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let reply = if system.contains(HELPER) {
            sse_text("helped")
        } else if last_role(&body) == "tool" {
            sse_text("root done")
        } else {
            let calls: Vec<(String, Value)> = (1..=TASKS)
                .map(|n| {
                    let args = json!({"agent": "helper", "instruction": format!("part {n}")});
                    (format!("t{n}"), args)
                })
                .collect();
            let calls: Vec<(&str, &str, Value)> = calls
                .iter()
                .map(|(id, args)| (id.as_str(), "task", args.clone()))
                .collect();
            sse_tool_calls(&calls)
        };
        Box::pin(async move { Reply::Sse(reply) })
    }))
}

#[tokio::test]
async fn every_sub_session_shares_the_one_client_of_its_endpoint() {
    let server = server();
    let mut fx = Fixture::new(
        plan(json!({"tools": [{"module": "tool-task", "config": {"max_parallel": TASKS}}]})),
        &[("helper", HELPER)],
        |_| Vec::new(),
    );
    fx.config.providers[0].config = json!({
        "api_key": fixture::SECRET,
        "base_url": server.base_url,
        "default_model": "scripted-model",
    });
    let (_tx, registry) = tokio::sync::watch::channel(fx.registry.clone());
    // No provider factory: the real `provider-openai` client, as in use.
    let rt = fx.engine_with_hooks(registry, RuntimeHooks::default());
    let root = rt.create_root(None).unwrap();
    let out = tokio::time::timeout(fixture::GUARD, rt.run_turn(&root, "go".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "root done"),
        "{:?}",
        out.error
    );
    assert_eq!(server.requests().len(), 2 + TASKS);
    let stats = rt.http_pool().stats();
    assert_eq!(stats.clients_built, 1, "{stats:?}");
    assert!(
        stats.clients_handed_out > TASKS,
        "the root and every sub-session build their provider through the pool: {stats:?}"
    );
}
