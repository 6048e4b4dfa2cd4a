//! Floods and hangs from a provider (issue 8 item 5): a response is cut at
//! `response.max_bytes` of streamed text and after `response.max_time`, with an error
//! naming the limit and the text that came kept; malformed stream events are counted,
//! shown as a warning, and fail the call when nothing else came.
//!
//! Through the real binary against a loopback OpenAI-compatible server
//! (`support::ScriptedServer`), and through the engine with a scripted provider (the
//! byte limit; the time limit is kept by the provider, see `provider::body`'s tests).
//! Nothing touches the real home.

use crate::support;

use crate::support::fixture;

use std::time::{Duration, Instant};

use arbor::engine::testing::{Drive, Step};
use arbor::session::SessionStatus;
use serde_json::{Value, json};
use support::{Reply, ScriptedServer, TestEnv, jsonl_lines, read_jsonl, sse_text};

/// `env`'s config pointing at `server`, plus `extra` YAML (a `response:` section).
fn configure(env: &TestEnv, server: &ScriptedServer, extra: &str) {
    env.use_openai(&server.base_url, "sk-test");
    env.append_config(extra);
}

/// An answer of `total` bytes of text in words of `word` bytes: `sse_text` streams
/// each word as one delta.
fn big_answer(total: usize, word: usize) -> String {
    let words: Vec<String> = (0..total / word)
        .map(|i| {
            let c = char::from(b'a' + (i % 26) as u8);
            c.to_string().repeat(word - 1)
        })
        .collect();
    sse_text(&words.join(" "))
}

/// The only session of `env` and its transcript.
fn only_session(env: &TestEnv) -> (String, Vec<Value>) {
    let dirs = env.session_dirs("");
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let id = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
    let transcript = read_jsonl(&dirs[0].join("transcript.jsonl"));
    (id, transcript)
}

/// The assistant message a failed call kept (`metadata.partial`).
fn partial_text(transcript: &[Value]) -> String {
    let kept: Vec<&Value> = transcript
        .iter()
        .filter(|m| m["metadata"]["partial"] == true)
        .collect();
    assert_eq!(kept.len(), 1, "{transcript:?}");
    kept[0]["content"][0]["text"].as_str().unwrap().to_string()
}

#[test]
fn a_30_mb_answer_stops_at_the_configured_cap_and_keeps_what_came() {
    let env = TestEnv::new();
    let server = ScriptedServer::sequence(vec![Reply::Sse(big_answer(30 << 20, 4096))]);
    configure(&env, &server, "response:\n  max_bytes: 65536\n");
    let out = env
        .cmd()
        .args(["run", "--output-format", "json", "write a lot"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = result["error"].as_str().unwrap();
    assert_eq!(result["status"], "error");
    assert!(
        error.contains("too large")
            && error.contains("64 KiB")
            && error.contains("response.max_bytes"),
        "{error}"
    );
    let (id, transcript) = only_session(&env);
    let kept = partial_text(&transcript);
    assert_eq!(kept.len(), 65536, "the text up to the cap is kept");
    assert!(kept.starts_with(&"a".repeat(4095)));
    assert_eq!(result["response"].as_str(), Some(kept.as_str()));
    assert_eq!(env.metadata(&id)["status"], "failed");
    // Nothing near 30 MB reached the disk.
    let stored: u64 = std::fs::read_dir(env.sessions_dir().join(&id))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(stored < 1 << 20, "{stored} bytes stored");
}

#[test]
fn at_the_default_8_mib_cap_a_30_mb_answer_fails_with_a_clear_error() {
    let env = TestEnv::new();
    let server = ScriptedServer::sequence(vec![Reply::Sse(big_answer(30 << 20, 64 << 10))]);
    configure(&env, &server, "");
    let out = env.cmd().args(["run", "write a lot"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the response was too large")
            && stderr.contains("8 MiB")
            && stderr.contains("response.max_bytes"),
        "{stderr}"
    );
    assert_eq!(
        out.stdout.len(),
        (8 << 20) + 1,
        "the streamed text and a newline"
    );
    let (_, transcript) = only_session(&env);
    assert_eq!(partial_text(&transcript).len(), 8 << 20);
}

#[test]
fn a_stream_that_never_ends_is_cut_at_the_total_time_limit() {
    let env = TestEnv::new();
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": "tick "}}]});
    let server = ScriptedServer::sequence(vec![Reply::Endless {
        chunk: format!("data: {chunk}\n\n"),
        every: Duration::from_millis(20),
    }]);
    configure(&env, &server, "response:\n  max_time: 0.5\n");
    let started = Instant::now();
    let out = env
        .cmd()
        .args(["run", "--output-format", "json", "go"])
        .output()
        .unwrap();
    // Never idle for 300 s, the stream is cut by the total limit alone.
    assert!(started.elapsed() < Duration::from_secs(30));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("took too long")
            && error.contains("0.5 s")
            && error.contains("response.max_time"),
        "{error}"
    );
    let (_, transcript) = only_session(&env);
    let kept = partial_text(&transcript);
    assert!(kept.starts_with("tick tick "), "{kept}");
}

/// An OpenAI stream answering `text`, with `garbage` SSE pieces between its events.
fn with_garbage(text: &str, garbage: &[&str]) -> String {
    let body = sse_text(text);
    let events: Vec<&str> = body.split_inclusive("\n\n").collect();
    let mut out = String::new();
    for (i, event) in events.iter().enumerate() {
        out.push_str(event);
        if let Some(g) = garbage.get(i) {
            out.push_str(g);
        }
    }
    out
}

#[test]
fn garbage_between_valid_events_is_counted_and_shown_as_a_warning() {
    let env = TestEnv::new();
    let garbage = ["data: {\"choices\": [\n\n", "<html>proxy error</html>\n\n"];
    let server =
        ScriptedServer::sequence(vec![Reply::Sse(with_garbage("all good here", &garbage))]);
    configure(&env, &server, "");
    let out = env.cmd().args(["run", "hi"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "all good here\n");
    assert!(
        stderr.contains("warning: 2 malformed stream events skipped (openai)"),
        "{stderr}"
    );

    // The same as an event of jsonl output and of events.jsonl.
    let out = env
        .cmd()
        .args(["run", "--output-format", "jsonl", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines = jsonl_lines(&out.stdout);
    let warnings: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "provider:warning")
        .collect();
    assert_eq!(warnings.len(), 1, "{lines:?}");
    assert_eq!(
        (
            &warnings[0]["data"]["malformed_events"],
            &warnings[0]["data"]["first_malformed"]
        ),
        (&json!(2), &json!("{\"choices\": ["))
    );
    assert_eq!(lines.last().unwrap()["status"], "success");
    let logged = env.session_dirs("").iter().any(|dir| {
        read_jsonl(&dir.join("events.jsonl"))
            .iter()
            .any(|e| e["event"] == "provider:warning")
    });
    assert!(logged);
}

#[test]
fn a_stream_of_only_garbage_fails_the_turn() {
    let env = TestEnv::new();
    let garbage = "data: {oops\n\nnot sse\n\ndata: [1, 2]\n\ndata: [DONE]\n\n";
    let server = ScriptedServer::sequence(vec![Reply::Sse(garbage.into())]);
    configure(&env, &server, "");
    let out = env
        .cmd()
        .args(["run", "--output-format", "json", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("no usable event") && error.contains("3 malformed stream events"),
        "{error}"
    );
    // Not retried: the server saw one request.
    assert_eq!(server.requests().len(), 1);
    let (id, _) = only_session(&env);
    assert_eq!(env.metadata(&id)["status"], "failed");
}

// The limits in the engine, with a scripted provider and paused time.

fn fixture_with(
    response: Value,
    script: impl Fn(&arbor::provider::ChatRequest) -> Vec<Step> + Send + Sync + 'static,
) -> fixture::Fixture {
    let mut fx = fixture::Fixture::new(fixture::plan(json!({})), &[], script);
    fx.config.extra.insert("response".into(), response);
    fx
}

#[tokio::test]
async fn every_request_carries_the_time_limit_the_provider_keeps() {
    for (response, want) in [
        (json!({}), Duration::from_secs(600)),
        (json!({"max_time": 2.5}), Duration::from_millis(2500)),
    ] {
        let fx = fixture_with(response, |_| vec![Step::text("ok")]);
        let rt = fx.engine();
        let id = rt.create_root(None).unwrap();
        rt.run_turn(&id, "hi".into()).await.unwrap();
        assert_eq!(fx.provider.requests()[0].max_time, Some(want));
    }
}

#[tokio::test]
async fn text_thinking_and_tool_arguments_share_the_byte_limit() {
    let fx = fixture_with(json!({"max_bytes": 10}), |_| {
        vec![
            Step::Thinking("think".into()),
            Step::text("héllo"),
            Step::text(" world"),
        ]
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    // 5 bytes of thinking leave 5: "héll" is 5 bytes, "héllo" 6.
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Failed, "héll")
    );
    assert!(out.error.unwrap().to_string().contains("10 bytes"));

    let fx = fixture_with(json!({"max_bytes": 64}), |_| {
        vec![Step::call(
            "c1",
            "grep",
            json!({"pattern": "x".repeat(100)}),
        )]
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Failed);
    assert!(out.error.unwrap().to_string().contains("too large"));
    assert!(
        fx.logged_events(&id).iter().all(|e| e != "tool:pre"),
        "a cut response runs no tool call"
    );

    // Exactly at the limit is within it.
    let fx = fixture_with(json!({"max_bytes": 11}), |_| {
        vec![Step::text("hello"), Step::text(" world")]
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "hello world")
    );
}
