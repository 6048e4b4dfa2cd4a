//! The label of a new root session when a local OpenAI-compatible server decides the
//! model (`OPENAI_BASE_URL` set, no model configured): `ResolveProviderLabel`
//! lists the server's models once per process, the root session's requests then name
//! that model without listing again, and sub-session routing falls back to it (or, while
//! it is unknown, says the server resolves it). Loopback servers only (wiremock); nothing
//! touches the real home.

use crate::support;
use crate::support::fixture;

use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor::agent::{AgentDef, AgentSource, Registry};
use arbor::config::ArborConfig;
use arbor::engine::providers::Env;
use arbor::engine::testing::Drive;
use arbor::engine::{ApprovalMode, Engine, RuntimeOptions};
use arbor::session::{EventBus, SessionStatus};
use fixture::*;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// An agent whose `provider_preferences` name a provider nothing mounts, so its
/// sub-sessions fall back to the parent's provider and model.
fn picky() -> AgentDef {
    AgentDef {
        name: "picky".into(),
        namespace: None,
        source: AgentSource::User,
        path: None,
        description: "Prefers gemini.".into(),
        instruction: "You are picky.".into(),
        overlay: json!({"provider_preferences": [{"provider": "gemini", "model": "gemini-pro"}]}),
        errors: vec![],
        warnings: vec![],
        shadows: vec![],
    }
}

/// An engine with no config file providers and the environment of a local server at
/// `base_url` (plus `extra` variables); providers are built for real.
fn engine(fx: &Fixture, base_url: &str, extra: &[(&str, &str)]) -> Engine {
    let inner = env_of(fx.dir.path());
    let mut vars = vec![
        ("OPENAI_BASE_URL".to_string(), base_url.to_string()),
        ("OPENAI_API_KEY".to_string(), "local".to_string()),
    ];
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let env: Env = Arc::new(move |k: &str| {
        vars.iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
            .or_else(|| inner(k))
    });
    let (_tx, registry) = tokio::sync::watch::channel(Arc::new(Registry::from_defs(vec![picky()])));
    Engine::interactive(RuntimeOptions {
        paths: fx.paths.clone(),
        config: ArborConfig::default(),
        bundle: fx.bundle.clone(),
        registry,
        env,
        bus: EventBus::new(),
        approval_mode: ApprovalMode::Headless { yes: false },
    })
}

/// A server listing `local-7b` first and answering every chat request with text.
async fn local_server(list_calls: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [{"id": "local-7b", "object": "model"}, {"id": "local-1b", "object": "model"}],
        })))
        .expect(list_calls)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(support::sse_text("Hello from local"), "text/event-stream"),
        )
        .mount(&server)
        .await;
    server
}

async fn requests_to(server: &MockServer, method: &str, route: &str) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.method.as_str() == method && r.url.path() == route)
        .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
        .collect()
}

#[tokio::test]
async fn the_label_names_the_servers_model_and_the_server_is_listed_once() {
    let server = local_server(1).await;
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![]);
    let rt = engine(&fx, &format!("{}/v1", server.uri()), &[]);
    assert_eq!(rt.provider_label().unwrap(), "openai");

    // Before the model is known, a fallback to the parent says the server decides it.
    let before = rt.resolve_child_model("picky").await.unwrap();
    assert_eq!(before.label(), "openai");
    let reason = before.reason.unwrap();
    assert!(
        reason.ends_with("; used the parent's provider openai (model resolved by the server)"),
        "{reason}"
    );
    assert!(!reason.contains("openai/)"), "{reason}");

    assert_eq!(
        rt.resolve_provider_label().await.unwrap(),
        "openai/local-7b"
    );
    // Known for the rest of the process: the sync label and a second ask need no list.
    assert_eq!(rt.provider_label().unwrap(), "openai/local-7b");
    assert_eq!(
        rt.resolve_provider_label().await.unwrap(),
        "openai/local-7b"
    );
    let after = rt.resolve_child_model("picky").await.unwrap();
    assert_eq!(after.label(), "openai/local-7b");
    let reason = after.reason.unwrap();
    assert!(
        reason.ends_with("; used the parent's model (openai/local-7b)"),
        "{reason}"
    );

    // The root session records and requests that model without listing again.
    let id = rt.create_root(None).unwrap();
    assert_eq!(fx.metadata(&id)["model"], "openai/local-7b");
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "Hello from local"),
        "{:?}",
        out.error
    );
    let chats = requests_to(&server, "POST", "/v1/chat/completions").await;
    assert_eq!(chats.len(), 1);
    assert_eq!(chats[0]["model"], "local-7b");
    assert_eq!(requests_to(&server, "GET", "/v1/models").await.len(), 1);
    server.verify().await;
}

#[tokio::test]
async fn a_first_request_before_the_label_lists_once_and_teaches_the_label() {
    let server = local_server(1).await;
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![]);
    let rt = engine(&fx, &format!("{}/v1", server.uri()), &[]);
    let id = rt.create_root(None).unwrap();
    assert_eq!(fx.metadata(&id)["model"], "openai");
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{:?}", out.error);
    let chats = requests_to(&server, "POST", "/v1/chat/completions").await;
    assert_eq!(chats[0]["model"], "local-7b");
    assert_eq!(
        rt.resolve_provider_label().await.unwrap(),
        "openai/local-7b"
    );
    let second = rt.create_root(None).unwrap();
    assert_eq!(fx.metadata(&second)["model"], "openai/local-7b");
    rt.run_turn(&second, "again".into()).await.unwrap();
    assert_eq!(requests_to(&server, "GET", "/v1/models").await.len(), 1);
    server.verify().await;
}

#[tokio::test]
async fn a_configured_model_is_never_listed() {
    let server = local_server(0).await;
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![]);
    let rt = engine(
        &fx,
        &format!("{}/v1", server.uri()),
        &[("OPENAI_MODEL", "chosen-3b")],
    );
    assert_eq!(
        rt.resolve_provider_label().await.unwrap(),
        "openai/chosen-3b"
    );
    server.verify().await;
}

#[tokio::test]
async fn a_server_that_is_down_keeps_the_bare_label() {
    // A port that was just free: connections are refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![]);
    let rt = engine(&fx, &format!("http://127.0.0.1:{port}/v1"), &[]);
    let started = Instant::now();
    assert_eq!(rt.resolve_provider_label().await.unwrap(), "openai");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_is_given_up_after_the_label_timeout() {
    // Accepts connections (the OS backlog) but never replies.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![]);
    let rt = engine(&fx, &format!("http://127.0.0.1:{port}/v1"), &[]);
    let started = tokio::time::Instant::now();
    assert_eq!(rt.resolve_provider_label().await.unwrap(), "openai");
    assert_eq!(started.elapsed(), arbor::engine::LABEL_TIMEOUT);
    drop(listener);
}
