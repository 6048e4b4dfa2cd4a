//! Replays captured provider streams (`../shared/fixtures/sse`) through the real
//! clients over a loopback HTTP server, whole and re-chunked, and checks error
//! mapping, request bodies, model listing and provider setup.
//!
//! Not replayed: `openai-responses-*` (the OpenAI Responses API, which arbor does not
//! speak), `gemini-*` (Gemini's own API) and `*.ndjson` (Ollama's native API; arbor
//! uses Ollama's OpenAI-compatible endpoint).

mod expected;
mod expected_anthropic;
mod expected_openai;
mod requests;
pub(crate) mod server;
mod setup;
use crate::support::shared;

use std::path::Path;
use std::time::Duration;

use arbor::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use arbor::provider::openai::{OpenAiConfig, OpenAiProvider};
use arbor::provider::{
    ChatRequest, Provider, ProviderError, ProviderErrorKind, ProviderResponse, StreamEvent,
};
use arbor::session::message::Message;
use expected::{Api, Expect, check};
use futures::StreamExt;
use serde_json::{Value, json};
use server::{Mode, Reply, Server};

/// What a provider stream produced.
#[derive(Debug, Default)]
struct Outcome {
    text: String,
    thinking: String,
    started: Vec<(String, String)>,
    /// The `ToolCallDelta` pieces joined per call id, in first-seen order.
    arguments: Vec<(String, String)>,
    completed: Option<ProviderResponse>,
    error: Option<ProviderError>,
    /// (text deltas seen) at the time the error arrived.
    order: Vec<&'static str>,
}

async fn run(provider: &dyn Provider, request: ChatRequest) -> Outcome {
    let mut out = Outcome::default();
    let mut stream = provider.stream(request);
    while let Some(item) = stream.next().await {
        assert!(
            out.completed.is_none() && out.error.is_none(),
            "nothing may follow Completed or an error: {item:?}"
        );
        match item {
            Ok(StreamEvent::TextDelta(t)) => {
                out.order.push("text");
                out.text.push_str(&t);
            }
            Ok(StreamEvent::ThinkingDelta(t)) => {
                out.order.push("thinking");
                out.thinking.push_str(&t);
            }
            Ok(StreamEvent::ToolCallStarted { id, name }) => {
                out.order.push("tool");
                out.started.push((id, name));
            }
            Ok(StreamEvent::ToolCallDelta { id, arguments }) => {
                match out.arguments.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, text)) => text.push_str(&arguments),
                    None => out.arguments.push((id, arguments)),
                }
            }
            Ok(StreamEvent::Completed(r)) => {
                out.order.push("completed");
                out.completed = Some(r);
            }
            Err(e) => {
                out.order.push("error");
                out.error = Some(e);
            }
        }
    }
    out
}

fn request(model: &str) -> ChatRequest {
    ChatRequest {
        model: model.to_string(),
        system: "Be brief.".into(),
        messages: vec![Message::user("hi")].into(),
        tools: Vec::new(),
        max_tokens: None,
        max_time: None,
        config: Value::Null,
    }
}

fn openai_at(server: &Server, key: Option<&str>, model: Option<&str>) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig {
        id: "openai".into(),
        module: "provider-openai".into(),
        base_url: server.url("/v1"),
        api_key: key.map(str::to_string),
        default_model: model.map(str::to_string),
        headers: Vec::new(),
    })
}

fn anthropic_at(server: &Server, key: Option<&str>) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig {
        id: "anthropic".into(),
        module: "provider-anthropic".into(),
        base_url: server.url(""),
        api_key: key.map(str::to_string),
        default_model: "claude-test".into(),
        headers: Vec::new(),
    })
}

#[tokio::test]
async fn every_fixture_replays_whole_and_rechunked() {
    let Some(dir) = shared::fixtures("sse") else {
        return;
    };
    // Every fixture of the two APIs has an entry (a new capture cannot be skipped).
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sse"))
        .collect();
    names.sort();
    let all = || {
        expected_anthropic::ANTHROPIC
            .iter()
            .chain(expected_openai::OPENAI)
    };
    for name in &names {
        let ours = name.starts_with("anthropic-")
            || expected::OPENAI_PREFIXES
                .iter()
                .any(|p| name.starts_with(p));
        if ours {
            assert!(
                all().any(|e: &Expect| e.file == name),
                "no expectation for {name}"
            );
        } else {
            println!("note: not replayed (not an API arbor speaks): {name}");
        }
    }
    let modes = [
        Mode::Whole,
        Mode::Rechunked { seed: 1, max: 9 },
        Mode::Rechunked { seed: 2, max: 100 },
        Mode::Rechunked { seed: 3, max: 1500 },
    ];
    for expect in all() {
        let body = std::fs::read(dir.join(expect.file)).unwrap();
        for mode in modes {
            let server = Server::always(Reply::sse(body.clone(), mode)).await;
            let out = match expect.api {
                Api::OpenAi => {
                    run(&openai_at(&server, Some("sk-test"), Some("m")), request("")).await
                }
                Api::Anthropic => {
                    run(&anthropic_at(&server, Some("sk-ant-test")), request("")).await
                }
            };
            check(expect, &out, mode);
            let path = &server.captured()[0].path;
            match expect.api {
                Api::OpenAi => assert_eq!(path, "/v1/chat/completions"),
                Api::Anthropic => assert_eq!(path, "/v1/messages"),
            }
        }
    }
}

/// A captured error response: `NAME.json` body, status and headers from `NAME.headers`.
fn captured_error(dir: &Path, name: &str) -> Reply {
    let body = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
    let head = std::fs::read_to_string(dir.join(format!("{name}.headers"))).unwrap();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .filter(|(k, _)| {
            !["transfer-encoding", "content-length", "connection"]
                .contains(&k.to_ascii_lowercase().as_str())
        })
        .collect();
    Reply {
        status,
        headers,
        body: body.into_bytes(),
        mode: Mode::Whole,
    }
}

#[tokio::test]
async fn captured_http_errors_map_to_kind_message_and_retry_after() {
    let Some(dir) = shared::fixtures("sse") else {
        return;
    };
    let server = Server::always(captured_error(&dir, "anthropic-401-authentication-error")).await;
    let out = run(&anthropic_at(&server, Some("sk-ant-bad")), request("")).await;
    let e = out.error.unwrap();
    assert_eq!((e.kind, e.status), (ProviderErrorKind::Auth, Some(401)));
    assert_eq!(e.message, "invalid x-api-key");
    assert_eq!(e.retry_after, None);
    assert!(out.order == ["error"], "no deltas: {:?}", out.order);

    let server = Server::always(captured_error(&dir, "azure-429-rate-limit")).await;
    let e = run(&openai_at(&server, Some("k"), Some("m")), request(""))
        .await
        .error
        .unwrap();
    assert_eq!(
        (e.kind, e.status),
        (ProviderErrorKind::RateLimit, Some(429))
    );
    assert!(
        e.message
            .starts_with("Your requests to grok-4-1-fast-non-reasoning for"),
        "{}",
        e.message
    );
    // `Retry-After-Ms: 0` is not a usable hint; `Retry-After: 1` is.
    assert_eq!(e.retry_after, Some(Duration::from_secs(1)));
    assert!(e.is_retryable());

    let server = Server::always(captured_error(&dir, "openrouter-429-rate-limit")).await;
    let e = run(&openai_at(&server, Some("k"), Some("m")), request(""))
        .await
        .error
        .unwrap();
    assert_eq!(e.kind, ProviderErrorKind::RateLimit);
    assert!(
        e.message
            .starts_with("Rate limit exceeded: limit_rpm/meta-llama/llama-3.2-3b-instruct")
    );
    assert_eq!(e.retry_after, None);
}

#[tokio::test]
async fn http_errors_name_provider_status_and_api_message() {
    let server = Server::always(Reply::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-bad","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    ))
    .await;
    let e = run(&openai_at(&server, Some("sk-bad"), Some("m")), request(""))
        .await
        .error
        .unwrap();
    assert_eq!(e.kind, ProviderErrorKind::Auth);
    assert_eq!(
        e.to_string(),
        "openai: Incorrect API key provided: sk-bad (HTTP 401)"
    );

    let server = Server::always(Reply::json(
        500,
        r#"{"error":{"message":"The server had an error"}}"#,
    ))
    .await;
    let e = run(&openai_at(&server, None, Some("m")), request(""))
        .await
        .error
        .unwrap();
    assert_eq!((e.kind, e.status), (ProviderErrorKind::Server, Some(500)));
    assert_eq!(e.to_string(), "openai: The server had an error (HTTP 500)");
    assert!(e.is_retryable());

    let mut plain = Reply::json(502, "upstream crashed\n");
    plain.headers = vec![("Retry-After-Ms".into(), "250".into())];
    let server = Server::always(plain).await;
    let e = run(&openai_at(&server, None, Some("m")), request(""))
        .await
        .error
        .unwrap();
    assert_eq!(e.message, "upstream crashed");
    assert_eq!(e.retry_after, Some(Duration::from_millis(250)));

    let server = Server::always(Reply::json(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
    ))
    .await;
    let e = run(&anthropic_at(&server, Some("k")), request(""))
        .await
        .error
        .unwrap();
    assert_eq!(e.kind, ProviderErrorKind::ContextTooLong);
    assert!(e.to_string().starts_with("anthropic: prompt is too long"));

    let server = Server::always(Reply::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ))
    .await;
    let e = run(&anthropic_at(&server, Some("k")), request(""))
        .await
        .error
        .unwrap();
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ProviderErrorKind::Overloaded, "Overloaded")
    );
}

fn openai_text_chunk(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]})
    )
}

#[tokio::test]
async fn midstream_error_event_comes_after_the_deltas() {
    let body = format!(
        "{}{}event: error\ndata: {}\n\n",
        openai_text_chunk("Hel"),
        openai_text_chunk("lo"),
        json!({"error":{"message":"upstream model crashed","type":"server_error"}})
    );
    for mode in [Mode::Whole, Mode::Rechunked { seed: 7, max: 5 }] {
        let server = Server::always(Reply::sse(body.clone().into_bytes(), mode)).await;
        let out = run(&openai_at(&server, None, Some("m")), request("")).await;
        assert_eq!(out.order, ["text", "text", "error"]);
        assert_eq!(out.text, "Hello");
        let e = out.error.unwrap();
        assert_eq!(
            (e.kind, e.message.as_str()),
            // `type: server_error` names the kind.
            (ProviderErrorKind::Server, "upstream model crashed")
        );
    }
}

#[tokio::test]
async fn connection_closed_mid_stream_yields_partial_text_then_network_error() {
    let head = format!(
        "{}{}",
        openai_text_chunk("Partial "),
        openai_text_chunk("answer")
    );
    let body = format!(
        "{head}{}data: {}\n\ndata: [DONE]\n\n",
        openai_text_chunk(" never sent"),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})
    );
    let reply = Reply::sse(body.into_bytes(), Mode::Truncated { sent: head.len() });
    let server = Server::always(reply).await;
    let out = run(&openai_at(&server, None, Some("m")), request("")).await;
    assert_eq!(out.text, "Partial answer");
    assert_eq!(out.order, ["text", "text", "error"]);
    let e = out.error.unwrap();
    assert_eq!(e.kind, ProviderErrorKind::Network, "{e}");

    // Nothing listening at all: a Network error before any delta.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let p = OpenAiProvider::new(OpenAiConfig {
        id: "local".into(),
        base_url: format!("http://{closed}/v1"),
        default_model: Some("m".into()),
        ..Default::default()
    });
    let out = run(&p, request("")).await;
    assert_eq!(out.order, ["error"]);
    let e = out.error.unwrap();
    assert_eq!(e.kind, ProviderErrorKind::Network);
    assert!(e.to_string().starts_with("local: "), "{e}");
}
