//! Provider error handling end to end: in-stream error objects take the kind their
//! `code`/`type`/`status` names (so the engine retries a 429/5xx that arrives before
//! any output), Anthropic's `x-should-retry` overrides the kind, and OpenRouter's
//! `x-ratelimit-reset` gives the wait when no `retry-after` does, a `retry-after` of
//! `1e30` fails the turn at once with an error naming the wait (no panic), and an
//! unusable one falls back to backoff. Real captures from `../shared/fixtures/sse/`
//! where they exist; loopback servers only.

use crate::provider_replay::server;
use crate::support::fixture;
use crate::support::shared;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use arbor::engine::RuntimeHooks;
use arbor::engine::testing::Drive;
use arbor::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use arbor::provider::http_error::{error_from_parts, retry_after_at};
use arbor::provider::openai::{OpenAiConfig, OpenAiProvider};
use arbor::provider::{
    ChatRequest, Provider, ProviderError, ProviderErrorKind, ProviderResponse, StreamEvent,
};
use arbor::session::SessionStatus;
use arbor::session::message::Message;
use fixture::{Fixture, data, drain, find, plan};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use server::{Mode, Reply, Server};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A `.headers` capture: the status from its first line and the `Name: value` lines.
fn captured_headers(path: &Path) -> (u16, HeaderMap) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap();
    let mut headers = HeaderMap::new();
    for (name, value) in lines.filter_map(|l| l.split_once(':')) {
        headers.append(
            HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
            HeaderValue::from_str(value.trim()).unwrap(),
        );
    }
    (status, headers)
}

/// The capture's own `Date` header, as the clock.
fn date_of(headers: &HeaderMap) -> jiff::Timestamp {
    let date = headers.get("date").unwrap().to_str().unwrap();
    jiff::fmt::rfc2822::parse(date).unwrap().timestamp()
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        system: "Be brief.".into(),
        messages: vec![Message::user("hi")].into(),
        tools: Vec::new(),
        max_tokens: None,
        max_time: None,
        config: Value::Null,
    }
}

fn openai_at(addr: std::net::SocketAddr) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig {
        id: "openrouter".into(),
        module: "provider-openai".into(),
        base_url: format!("http://{addr}/v1"),
        api_key: Some("sk-test".into()),
        default_model: Some("m".into()),
        ..Default::default()
    })
}

fn anthropic_at(server: &Server) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig {
        id: "anthropic".into(),
        module: "provider-anthropic".into(),
        base_url: server.url(""),
        api_key: Some("sk-ant-test".into()),
        default_model: "claude-test".into(),
        ..Default::default()
    })
}

/// The text deltas of a stream and how it ended.
async fn run(provider: &dyn Provider) -> (String, Result<ProviderResponse, ProviderError>) {
    let mut text = String::new();
    let mut stream = provider.stream(request());
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent::TextDelta(t)) => text.push_str(&t),
            Ok(StreamEvent::Completed(r)) => return (text, Ok(r)),
            Ok(_) => {}
            Err(e) => return (text, Err(e)),
        }
    }
    panic!("the stream ended with neither Completed nor an error");
}

fn chunk(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]})
    )
}

const DONE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// OpenRouter's shape of a mid-stream error: an `error` object in a chunk.
fn error_chunk(code: Value, message: &str) -> String {
    format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"object":"chat.completion.chunk","error":{"code":code,"message":message},
               "choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]})
    )
}

// ---- captured HTTP errors -------------------------------------------------------

#[test]
fn captured_http_errors_carry_kind_wait_and_retry_advice() {
    let Some(dir) = shared::fixtures("sse") else {
        return;
    };
    let body = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();

    // Anthropic 401 with `X-Should-Retry: false`.
    let (status, headers) =
        captured_headers(&dir.join("anthropic-401-authentication-error.headers"));
    let e = error_from_parts(
        "anthropic",
        status,
        &headers,
        &body("anthropic-401-authentication-error.json"),
        date_of(&headers),
    );
    assert_eq!(
        (e.kind, e.status, e.message.as_str(), e.should_retry),
        (
            ProviderErrorKind::Auth,
            Some(401),
            "invalid x-api-key",
            Some(false)
        )
    );
    assert!(!e.is_retryable());

    // OpenRouter 429: no Retry-After, `X-Ratelimit-Reset: 1754667660000` (epoch ms,
    // 15:41:00 UTC), captured at `Date: … 15:40:34 GMT`: 26 s to wait.
    let (status, headers) = captured_headers(&dir.join("openrouter-429-rate-limit.headers"));
    assert!(headers.get("retry-after").is_none());
    let now = date_of(&headers);
    let e = error_from_parts(
        "openrouter",
        status,
        &headers,
        &body("openrouter-429-rate-limit.json"),
        now,
    );
    assert_eq!(
        (e.kind, e.status, e.retry_after, e.should_retry),
        (
            ProviderErrorKind::RateLimit,
            Some(429),
            Some(Duration::from_secs(26)),
            None
        )
    );
    assert!(
        e.message.starts_with("Rate limit exceeded: limit_rpm/"),
        "{e}"
    );
    assert!(e.is_retryable());
    // The same headers read just after the reset: retry at once; two hours early or
    // late (a wrong clock, a stale capture): ignored, so the engine backs off.
    let later = now + jiff::SignedDuration::from_secs(60);
    assert_eq!(retry_after_at(&headers, later), Some(Duration::ZERO));
    for hours in [-2, 2] {
        let off = now + jiff::SignedDuration::from_hours(hours);
        assert_eq!(retry_after_at(&headers, off), None, "{hours} h");
    }

    // Azure 429: `Retry-After-Ms: 0` is ignored, `Retry-After: 1` used.
    let (status, headers) = captured_headers(&dir.join("azure-429-rate-limit.headers"));
    let e = error_from_parts(
        "azure",
        status,
        &headers,
        &body("azure-429-rate-limit.json"),
        date_of(&headers),
    );
    assert_eq!(
        (e.kind, e.retry_after),
        (ProviderErrorKind::RateLimit, Some(Duration::from_secs(1)))
    );
}

// ---- through the real clients over loopback ------------------------------------

#[tokio::test]
async fn x_should_retry_reaches_the_error_through_the_anthropic_client() {
    let body =
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    for (status, advice, retryable) in [
        (401, Some("false"), false),
        (401, Some("true"), true),
        (401, None, false),
        (500, Some("false"), false),
        (500, None, true),
    ] {
        let mut reply = Reply::json(status, body);
        if let Some(v) = advice {
            reply.headers.push(("X-Should-Retry".into(), v.into()));
        }
        let server = Server::always(reply).await;
        let (_, r) = run(&anthropic_at(&server)).await;
        let e = r.unwrap_err();
        assert_eq!(e.status, Some(status));
        assert_eq!(
            e.should_retry,
            advice.map(|v| v == "true"),
            "{status} {advice:?}"
        );
        assert_eq!(e.is_retryable(), retryable, "{status} {advice:?}");
    }
}

#[tokio::test]
async fn x_ratelimit_reset_reaches_the_error_through_the_openai_client() {
    let reset = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(30);
    let mut reply = Reply::json(
        429,
        r#"{"error":{"message":"Rate limit exceeded: limit_rpm","code":429}}"#,
    );
    reply.headers.push((
        "X-Ratelimit-Reset".into(),
        reset.as_millisecond().to_string(),
    ));
    let server = Server::always(reply).await;
    let (_, r) = run(&openai_at(server.addr)).await;
    let e = r.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::RateLimit);
    let wait = e.retry_after.unwrap();
    assert!(
        wait > Duration::from_secs(20) && wait <= Duration::from_secs(30),
        "{wait:?}"
    );
}

#[tokio::test]
async fn captured_midstream_errors_get_their_precise_kind() {
    let Some(dir) = shared::fixtures("sse") else {
        return;
    };
    for (file, kind, status, message) in [
        (
            "openrouter-chat-midstream-error.sse",
            ProviderErrorKind::InvalidRequest,
            Some(400),
            "Token limit reached",
        ),
        (
            "groq-chat-midstream-error-event.sse",
            ProviderErrorKind::InvalidRequest,
            Some(400),
            "Tool call validation failed: tool call validation failed: parameters for tool get_something_by_name did not match schema: errors: [missing properties: 'name', additionalProperties 'invalid_param' not allowed]",
        ),
    ] {
        let body = std::fs::read(dir.join(file)).unwrap();
        let server = Server::always(Reply::sse(body, Mode::Rechunked { seed: 3, max: 64 })).await;
        let (_, r) = run(&openai_at(server.addr)).await;
        let e = r.unwrap_err();
        assert_eq!(
            (e.kind, e.status, e.message.as_str()),
            (kind, status, message),
            "{file}"
        );
        assert!(!e.is_retryable(), "{file}");
    }
}

#[tokio::test]
async fn midstream_error_codes_map_to_retryable_kinds() {
    let processing = ": OPENROUTER PROCESSING\n\n";
    let cases = [
        (
            error_chunk(json!(429), "slow down"),
            ProviderErrorKind::RateLimit,
            true,
        ),
        (
            error_chunk(json!(502), "upstream died"),
            ProviderErrorKind::Server,
            true,
        ),
        (
            error_chunk(json!("overloaded"), "busy"),
            ProviderErrorKind::Overloaded,
            true,
        ),
        (
            format!(
                "event: error\ndata: {}\n\n",
                json!({"error":{"type":"server_error","message":"boom"}})
            ),
            ProviderErrorKind::Server,
            true,
        ),
        (
            format!(
                "event: error\ndata: {}\n\n",
                json!({"error":{"code":"insufficient_quota","message":"quota"}})
            ),
            ProviderErrorKind::InvalidRequest,
            false,
        ),
        (
            error_chunk(json!("context_length_exceeded"), "too long"),
            ProviderErrorKind::ContextTooLong,
            false,
        ),
        (
            error_chunk(json!("mystery"), "???"),
            ProviderErrorKind::Stream,
            false,
        ),
    ];
    for (tail, kind, retryable) in cases {
        let body = format!("{processing}{tail}");
        let server = Server::always(Reply::sse(body.into_bytes(), Mode::Whole)).await;
        let (text, r) = run(&openai_at(server.addr)).await;
        assert_eq!(text, "");
        let e = r.unwrap_err();
        assert_eq!((e.kind, e.is_retryable()), (kind, retryable), "{tail}");
        assert!(e.to_string().starts_with("openrouter: "), "{e}");
    }
}

// ---- through the engine ----------------------------------------------------------

/// Runs a real [`OpenAiProvider`] on a separate, real-time runtime and forwards its
/// stream: the engine's runtime can then have paused time (its retry waits are
/// instant) while the loopback HTTP exchange runs on real time.
#[derive(Debug)]
struct OffClock {
    inner: Arc<OpenAiProvider>,
    rt: tokio::runtime::Handle,
}

impl Provider for OffClock {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn module(&self) -> &str {
        self.inner.module()
    }

    fn default_model(&self) -> &str {
        self.inner.default_model()
    }

    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let inner = self.inner.clone();
        self.rt.spawn(async move {
            let mut stream = inner.stream(request);
            while let Some(item) = stream.next().await {
                if tx.send(item).is_err() {
                    break;
                }
            }
        });
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|i| (i, rx)) })
            .boxed()
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ProviderError>> {
        let inner = self.inner.clone();
        let task = self.rt.spawn(async move { inner.list_models().await });
        Box::pin(async move { task.await.unwrap() })
    }
}

/// A real-time runtime on its own threads, shut down without blocking on drop.
struct RealTime(Option<tokio::runtime::Runtime>);

impl RealTime {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        Self(Some(rt))
    }

    fn handle(&self) -> tokio::runtime::Handle {
        self.0.as_ref().unwrap().handle().clone()
    }
}

impl Drop for RealTime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// What one engine turn against a loopback server answering request `n` with
/// `bodies[n]` (the last one repeated) did.
struct EngineRun {
    status: SessionStatus,
    response: String,
    error: Option<String>,
    requests: usize,
    provider_errors: Vec<Value>,
    elapsed: Duration,
}

async fn engine_turn(bodies: Vec<String>) -> EngineRun {
    let real = RealTime::new();
    let n = Arc::new(AtomicUsize::new(0));
    let counter = n.clone();
    let server = real
        .handle()
        .spawn(Server::start(move |_| {
            let i = counter.fetch_add(1, Ordering::SeqCst).min(bodies.len() - 1);
            Reply::sse(bodies[i].clone().into_bytes(), Mode::Whole)
        }))
        .await
        .unwrap();
    let mut run = engine_turn_at(&real, server.addr).await;
    run.requests = server.captured().len();
    run
}

/// One engine turn on this test's (paused) clock whose provider is a real OpenAI
/// client of the server at `addr`, its HTTP exchange running on `real`'s clock.
/// `requests` is left 0 for the caller, who knows the server.
async fn engine_turn_at(real: &RealTime, addr: std::net::SocketAddr) -> EngineRun {
    let provider: Arc<dyn Provider> = Arc::new(OffClock {
        inner: Arc::new(openai_at(addr)),
        rt: real.handle(),
    });
    let fx = Fixture::new(plan(json!({})), &[], |_| Vec::new());
    let (_tx, registry) = tokio::sync::watch::channel(fx.registry.clone());
    let hooks = RuntimeHooks {
        provider_factory: Some(Arc::new(move |_| Ok(provider.clone()))),
        extra_tools: Vec::new(),
    };
    let rt = fx.engine_with_hooks(registry, hooks);
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let start = tokio::time::Instant::now();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    let elapsed = start.elapsed();
    let events = drain(&mut rx);
    let provider_errors = find(&events, "provider:error", &id)
        .into_iter()
        .map(|e| data(e))
        .collect();
    EngineRun {
        status: out.status,
        response: out.response,
        error: out.error.map(|e| e.to_string()),
        requests: 0,
        provider_errors,
        elapsed,
    }
}

/// A wiremock server (on `real`'s clock) answering every chat request with
/// `first` at most `times` times, then with a one-word `ok` stream.
async fn mock_chat(real: &RealTime, first: ResponseTemplate, times: u64) -> MockServer {
    real.handle()
        .spawn(async move {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .and(path("/v1/chat/completions"))
                .respond_with(first)
                .up_to_n_times(times)
                .with_priority(1)
                .mount(&server)
                .await;
            Mock::given(method("POST"))
                .and(path("/v1/chat/completions"))
                .respond_with(
                    ResponseTemplate::new(200)
                        .insert_header("content-type", "text/event-stream")
                        .set_body_string(format!("{}{DONE}", chunk("ok"))),
                )
                .mount(&server)
                .await;
            server
        })
        .await
        .unwrap()
}

fn rate_limited(retry_after: &str) -> ResponseTemplate {
    ResponseTemplate::new(429)
        .insert_header("retry-after", retry_after)
        .set_body_json(
            json!({"error": {"message": "Rate limit exceeded", "type": "rate_limit_error"}}),
        )
}

async fn request_count(real: &RealTime, server: MockServer) -> usize {
    real.handle()
        .spawn(async move { server.received_requests().await.unwrap_or_default().len() })
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_429_asking_to_wait_1e30_seconds_fails_at_once_naming_the_wait() {
    let real = RealTime::new();
    let server = mock_chat(&real, rate_limited("1e30"), 1).await;
    let mut run = engine_turn_at(&real, *server.address()).await;
    run.requests = request_count(&real, server).await;
    assert_eq!((run.status, run.requests), (SessionStatus::Failed, 1));
    assert_eq!(
        run.elapsed,
        Duration::ZERO,
        "no wait at all on the paused clock"
    );
    let error = run.error.unwrap();
    assert!(
        error.contains("Rate limit exceeded; the server asks to wait over 584 billion years")
            && error.contains("retry.max_wait: 1m00s"),
        "{error}"
    );
    let e = run.provider_errors.last().unwrap();
    assert_eq!(
        (&e["kind"], &e["retrying"], &e["retry_after_ms"]),
        (&json!("rate_limit"), &json!(false), &json!(u64::MAX))
    );
    assert_eq!(e["error"], json!(error));
}

#[tokio::test(start_paused = true)]
async fn unusable_retry_after_values_fall_back_to_backoff() {
    for junk in ["-5", "NaN", "inf", "soon"] {
        let real = RealTime::new();
        let server = mock_chat(&real, rate_limited(junk), 1).await;
        let mut run = engine_turn_at(&real, *server.address()).await;
        run.requests = request_count(&real, server).await;
        assert_eq!(
            (run.status, run.response.as_str(), run.requests),
            (SessionStatus::Completed, "ok", 2),
            "{junk}"
        );
        let e = &run.provider_errors[0];
        assert_eq!(e["retry_after_ms"], Value::Null, "{junk}");
        // The first backoff: 1 s ± 20 %.
        let wait = e["wait_ms"].as_u64().unwrap();
        assert!((800..=1200).contains(&wait), "{junk}: {wait} ms");
    }
}

#[tokio::test(start_paused = true)]
async fn the_engine_retries_an_in_stream_429_that_came_before_any_output() {
    let first = format!(
        ": OPENROUTER PROCESSING\n\n{}",
        error_chunk(json!(429), "Rate limit exceeded: upstream")
    );
    let second = format!("{}{DONE}", chunk("ok"));
    let run = engine_turn(vec![first, second]).await;
    assert_eq!(
        (run.status, run.response.as_str(), run.requests),
        (SessionStatus::Completed, "ok", 2)
    );
    assert_eq!(run.provider_errors.len(), 1, "{:?}", run.provider_errors);
    let e = &run.provider_errors[0];
    assert_eq!(
        (&e["kind"], &e["status"], &e["message"]),
        (
            &json!("rate_limit"),
            &json!(429),
            &json!("Rate limit exceeded: upstream")
        )
    );
    assert_eq!(
        (&e["retryable"], &e["retrying"], &e["attempt"]),
        (&json!(true), &json!(true), &json!(1))
    );
    // The backoff (1 s ± 20 %) passed on the paused clock, announced as `wait_ms`.
    let wait = Duration::from_millis(e["wait_ms"].as_u64().unwrap());
    assert!(
        wait >= Duration::from_millis(800) && wait <= Duration::from_millis(1200),
        "{wait:?}"
    );
    assert!(run.elapsed >= wait, "{:?} < {wait:?}", run.elapsed);
}

#[tokio::test(start_paused = true)]
async fn the_engine_does_not_retry_after_output_or_a_non_retryable_kind() {
    // A 503 after text reached the user: the partial reply stands, one request.
    let after_output = format!(
        "{}{}",
        chunk("Hel"),
        error_chunk(json!(503), "upstream died")
    );
    let run = engine_turn(vec![after_output, format!("{}{DONE}", chunk("never"))]).await;
    assert_eq!(
        (run.status, run.response.as_str(), run.requests),
        (SessionStatus::Failed, "Hel", 1)
    );
    assert_eq!(run.provider_errors.last().unwrap()["kind"], json!("server"));

    // A 400 before any output: not retryable, one request.
    let invalid = error_chunk(json!(400), "Token limit reached");
    let run = engine_turn(vec![invalid, format!("{}{DONE}", chunk("never"))]).await;
    assert_eq!((run.status, run.requests), (SessionStatus::Failed, 1));
    let e = run.provider_errors.last().unwrap();
    assert_eq!(
        (&e["kind"], &e["status"], &e["retrying"]),
        (&json!("invalid_request"), &json!(400), &json!(false))
    );
}
