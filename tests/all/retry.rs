//! Retries of a model call, on paused tokio time: a 429 then 200 waits exactly the
//! server's `retry-after` (and not a millisecond less), backoff grows exponentially
//! within its jitter bounds, at most 4 attempts, never after output, a cancel during
//! the wait ends the turn, every retry is a visible `provider:error` event, and a
//! failed turn shows an error cell in the TUI (snapshots at 80×24 and 40 columns).

use crate::support::fixture;
use crate::support::harness;
use crate::support::shared;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor::engine::Engine;
use arbor::engine::testing::{Drive, Step};
use arbor::provider::http_error::{kind_for_status, retry_after};
use arbor::provider::{ProviderError, ProviderErrorKind};
use arbor::session::{Event, SessionStatus};
use arbor::tui::{AppEvent, EngineReply};
use fixture::*;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::time::Instant;

/// A fixture whose provider answers request `n` (0-based) with `script(n)` and records
/// the (virtual) instant of every request.
fn timed(
    script: impl Fn(usize) -> Vec<Step> + Send + Sync + 'static,
) -> (Fixture, Arc<Mutex<Vec<Instant>>>) {
    let times: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let log = times.clone();
    let n = AtomicUsize::new(0);
    let fx = Fixture::new(plan(json!({})), &[], move |_| {
        log.lock().unwrap().push(Instant::now());
        script(n.fetch_add(1, Ordering::SeqCst))
    });
    (fx, times)
}

fn error(kind: ProviderErrorKind, status: u16, wait: Option<Duration>) -> ProviderError {
    ProviderError {
        status: Some(status),
        retry_after: wait,
        ..ProviderError::new(kind, "scripted", format!("scripted {status}"))
    }
}

fn gaps(times: &Mutex<Vec<Instant>>) -> Vec<Duration> {
    let t = times.lock().unwrap();
    t.windows(2).map(|w| w[1] - w[0]).collect()
}

fn provider_errors(events: &[Arc<Event>], id: &str) -> Vec<Value> {
    find(events, "provider:error", id)
        .into_iter()
        .map(|e| data(e))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_429_then_200_retries_once_after_exactly_the_retry_after() {
    // The 429 as the HTTP layer builds it from `retry-after-ms: 1500`.
    let mut headers = HeaderMap::new();
    headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
    headers.insert("retry-after", HeaderValue::from_static("1"));
    let wait = retry_after(&headers);
    assert_eq!(wait, Some(Duration::from_millis(1500)));
    let (fx, times) = timed(move |n| match n {
        0 => vec![Step::Fail(error(ProviderErrorKind::RateLimit, 429, wait))],
        _ => vec![Step::text("ok")],
    });
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "ok")
    );
    assert_eq!(fx.provider.requests().len(), 2, "exactly one retry");
    assert_eq!(gaps(&times), [Duration::from_millis(1500)]);

    let errors = provider_errors(&drain(&mut rx), &id);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    assert_eq!(
        (&e["kind"], &e["status"], &e["retrying"], &e["attempt"]),
        (&json!("rate_limit"), &json!(429), &json!(true), &json!(1))
    );
    assert_eq!(
        (&e["wait_ms"], &e["retry_after_ms"], &e["max_attempts"]),
        (&json!(1500), &json!(1500), &json!(4))
    );
    assert_eq!(
        (&e["provider"], &e["message"]),
        (&json!("scripted"), &json!("scripted 429"))
    );
    // The retry is in the session's event log too.
    assert!(fx.logged_events(&id).iter().any(|e| e == "provider:error"));
}

#[tokio::test(start_paused = true)]
async fn the_retry_does_not_happen_a_millisecond_early() {
    let wait = Duration::from_secs(2);
    let (fx, _) = timed(move |n| match n {
        0 => vec![Step::Fail(error(
            ProviderErrorKind::RateLimit,
            429,
            Some(wait),
        ))],
        _ => vec![Step::text("ok")],
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let turn = tokio::spawn({
        let rt = rt.clone();
        let id = id.clone();
        async move { rt.run_turn(&id, "hi".into()).await }
    });
    settle(|| fx.provider.requests().len() == 1).await;
    tokio::time::advance(wait - Duration::from_millis(1)).await;
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        fx.provider.requests().len(),
        1,
        "retried before retry-after"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    let out = turn.await.unwrap().unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(fx.provider.requests().len(), 2);
}

/// Yields (without letting virtual time move) until `done` holds.
async fn settle(done: impl Fn() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("condition not reached");
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_within_jitter_bounds_and_events_name_the_waits() {
    let (fx, times) = timed(|n| match n {
        0..=2 => vec![Step::Fail(error(ProviderErrorKind::Server, 503, None))],
        _ => vec![Step::text("finally")],
    });
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    let gaps = gaps(&times);
    assert_eq!(gaps.len(), 3);
    for (i, gap) in gaps.iter().enumerate() {
        let base = 1000.0 * f64::from(1u32 << i);
        let ms = gap.as_secs_f64() * 1000.0;
        assert!(
            ms >= base * 0.8 - 1.0 && ms <= base * 1.2 + 1.0,
            "wait {i}: {ms} ms, expected {base} ± 20 %"
        );
    }
    let errors = provider_errors(&drain(&mut rx), &id);
    let announced: Vec<u64> = errors
        .iter()
        .map(|e| e["wait_ms"].as_u64().unwrap())
        .collect();
    let waited: Vec<u64> = gaps.iter().map(|g| g.as_millis() as u64).collect();
    assert_eq!(announced, waited, "the events announce the real waits");
    let attempts: Vec<&Value> = errors.iter().map(|e| &e["attempt"]).collect();
    assert_eq!(attempts, [&json!(1), &json!(2), &json!(3)]);
}

#[tokio::test(start_paused = true)]
async fn at_most_four_attempts_then_the_error_names_kind_and_attempts() {
    let (fx, times) = timed(|_| {
        vec![Step::Fail(error(
            ProviderErrorKind::Overloaded,
            529,
            Some(Duration::from_millis(100)),
        ))]
    });
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Failed);
    assert!(out.error.unwrap().to_string().contains("scripted 529"));
    assert_eq!(fx.provider.requests().len(), 4);
    assert_eq!(gaps(&times), [Duration::from_millis(100); 3]);
    let errors = provider_errors(&drain(&mut rx), &id);
    let retrying: Vec<&Value> = errors.iter().map(|e| &e["retrying"]).collect();
    assert_eq!(
        retrying,
        [&json!(true), &json!(true), &json!(true), &json!(false)]
    );
    let last = errors.last().unwrap();
    assert_eq!(
        (&last["kind"], &last["attempt"], &last["wait_ms"]),
        (&json!("overloaded"), &json!(4), &Value::Null)
    );
}

#[tokio::test(start_paused = true)]
async fn no_retry_once_output_reached_the_user() {
    let (fx, _) = timed(|_| {
        vec![
            Step::text("half an ans"),
            Step::Fail(error(ProviderErrorKind::RateLimit, 429, None)),
        ]
    });
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Failed, "half an ans")
    );
    assert_eq!(fx.provider.requests().len(), 1);
    let errors = provider_errors(&drain(&mut rx), &id);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["retrying"], false);
    assert_eq!(
        errors[0]["retryable"], true,
        "retryable, but output was shown"
    );
}

#[tokio::test(start_paused = true)]
async fn non_retryable_and_overlong_waits_fail_at_once() {
    for (kind, status, wait) in [
        (ProviderErrorKind::Auth, 401, None),
        (ProviderErrorKind::ContextTooLong, 400, None),
        (ProviderErrorKind::InvalidRequest, 404, None),
        // The server asks for more than the 60 s cap: say so instead of waiting.
        (
            ProviderErrorKind::RateLimit,
            429,
            Some(Duration::from_secs(600)),
        ),
    ] {
        let (fx, _) = timed(move |_| vec![Step::Fail(error(kind, status, wait))]);
        let rt = fx.engine();
        let mut rx = rt.subscribe();
        let id = rt.create_root(None).unwrap();
        let start = Instant::now();
        let out = rt.run_turn(&id, "hi".into()).await.unwrap();
        assert_eq!(out.status, SessionStatus::Failed, "{kind:?}");
        assert_eq!(fx.provider.requests().len(), 1, "{kind:?}");
        assert_eq!(start.elapsed(), Duration::ZERO, "{kind:?} waited");
        let errors = provider_errors(&drain(&mut rx), &id);
        assert_eq!(errors.len(), 1);
        let expect_after = wait
            .map(|w| json!(w.as_millis() as u64))
            .unwrap_or(Value::Null);
        assert_eq!(errors[0]["retry_after_ms"], expect_after);
        let named = out
            .error
            .unwrap()
            .to_string()
            .contains("asks to wait 10m00s before a retry");
        assert_eq!(named, wait.is_some(), "{kind:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_configured_max_wait_is_the_limit() {
    let wait_of = |n: usize| Duration::from_secs(if n == 0 { 4 } else { 6 });
    let (mut fx, times) = timed(move |n| match n {
        0 | 2 => vec![Step::Fail(error(
            ProviderErrorKind::RateLimit,
            429,
            Some(wait_of(n)),
        ))],
        _ => vec![Step::text("ok")],
    });
    fx.config
        .extra
        .insert("retry".into(), json!({"max_wait": 5}));
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    // 4 s is within the limit: waited exactly.
    let out = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(gaps(&times), [Duration::from_secs(4)]);
    // 6 s is not: the turn fails at once, naming both.
    let start = Instant::now();
    let out = rt.run_turn(&id, "again".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Failed);
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(fx.provider.requests().len(), 3);
    let error = out.error.unwrap().to_string();
    assert!(
        error.contains("asks to wait 6s before a retry")
            && error.contains("(retry.max_wait: 5s in config.yaml)"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn cancelling_during_the_wait_ends_the_turn_without_another_attempt() {
    let (fx, _) = timed(|_| {
        vec![Step::Fail(error(
            ProviderErrorKind::RateLimit,
            429,
            Some(Duration::from_secs(30)),
        ))]
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let turn = tokio::spawn({
        let rt = rt.clone();
        let id = id.clone();
        async move { rt.run_turn(&id, "hi".into()).await }
    });
    settle(|| fx.provider.requests().len() == 1).await;
    tokio::time::advance(Duration::from_secs(5)).await;
    rt.cancel(&id);
    let out = turn.await.unwrap().unwrap();
    assert_eq!(out.status, SessionStatus::Cancelled);
    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(fx.provider.requests().len(), 1);
}

/// Headers of a captured response (`HTTP …` status line, then `Name: value` lines).
fn captured(dir: &std::path::Path, name: &str) -> (u16, HeaderMap, String) {
    let text = std::fs::read_to_string(dir.join(format!("{name}.headers"))).unwrap();
    let mut lines = text.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = HeaderMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(
                HeaderName::from_bytes(k.trim().as_bytes()).unwrap(),
                HeaderValue::from_str(v.trim()).unwrap(),
            );
        }
    }
    let body: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap())
            .unwrap();
    let message = body["error"]["message"].as_str().unwrap().to_string();
    (status, headers, message)
}

#[tokio::test(start_paused = true)]
async fn captured_429s_wait_their_retry_after_or_back_off() {
    let Some(dir) = shared::fixtures("sse") else {
        return;
    };
    // Azure: `Retry-After: 1` with `Retry-After-Ms: 0` → exactly 1 s.
    // OpenRouter: no retry-after (only X-Ratelimit-Reset) → backoff, 1 s ± 20 %.
    for (name, exact) in [
        ("azure-429-rate-limit", Some(Duration::from_secs(1))),
        ("openrouter-429-rate-limit", None),
    ] {
        let (status, headers, message) = captured(&dir, name);
        let err = ProviderError {
            kind: kind_for_status(status, &message, None),
            provider: "scripted".into(),
            status: Some(status),
            message,
            retry_after: retry_after(&headers),
            should_retry: None,
        };
        assert_eq!(err.retry_after, exact, "{name}");
        assert!(err.is_retryable(), "{name}");
        let (fx, times) = timed(move |n| match n {
            0 => vec![Step::Fail(err.clone())],
            _ => vec![Step::text("ok")],
        });
        let rt = fx.engine();
        let id = rt.create_root(None).unwrap();
        let out = rt.run_turn(&id, "hi".into()).await.unwrap();
        assert_eq!(out.status, SessionStatus::Completed, "{name}");
        let gap = gaps(&times)[0];
        match exact {
            Some(w) => assert_eq!(gap, w, "{name}"),
            None => assert!(
                gap >= Duration::from_millis(800) && gap <= Duration::from_millis(1200),
                "{name}: {gap:?}"
            ),
        }
    }
}

/// Runs `prompt` on `id`, returning the events it published.
async fn turn_events(rt: &Engine, id: &str, prompt: &str) -> Vec<Arc<Event>> {
    let mut rx = rt.subscribe();
    rt.run_turn(id, prompt.into()).await.unwrap();
    drain(&mut rx)
}

#[tokio::test(start_paused = true)]
async fn the_tui_shows_the_retry_and_an_error_cell_for_a_failed_turn() {
    let (fx, _) = timed(|n| match n {
        0 => vec![Step::Fail(ProviderError {
            retry_after: Some(Duration::from_secs(2)),
            ..ProviderError::new(
                ProviderErrorKind::RateLimit,
                "scripted",
                "Rate limit reached for requests. Please try again in 2s.",
            )
        })],
        1 => vec![Step::text("The README describes arbor.")],
        _ => vec![Step::Fail(ProviderError {
            status: Some(401),
            ..ProviderError::new(
                ProviderErrorKind::Auth,
                "scripted",
                "Incorrect API key provided: sk-xx***xx.",
            )
        })],
    });
    let rt = fx.engine();
    let mut start = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let loaded = rt.load_session(&id).await.unwrap();
    let (mut app, _commands) = harness::app_for(&id, "scripted/scripted-model", loaded);
    harness::feed(&mut app, &drain(&mut start));
    for prompt in ["Summarise the README.", "And the SPEC?"] {
        let events = turn_events(&rt, &id, prompt).await;
        harness::feed(&mut app, &events);
    }
    // The turn's outcome arrives too (after or before the events): no second cell.
    let outcome = arbor::engine::TurnOutcome {
        session_id: id.clone(),
        agent: "test-bundle".into(),
        status: SessionStatus::Failed,
        response: String::new(),
        turn_count: 2,
        error: Some(
            ProviderError {
                status: Some(401),
                ..ProviderError::new(
                    ProviderErrorKind::Auth,
                    "scripted",
                    "Incorrect API key provided: sk-xx***xx.",
                )
            }
            .into(),
        ),
    };
    app.handle(AppEvent::Reply(EngineReply::TurnFinished(outcome)));
    let wide = harness::screen(&mut app, 80, 24);
    assert!(
        wide.contains("Authentication failed") && wide.contains("check OPENAI_API_KEY"),
        "{wide}"
    );
    assert_eq!(wide.matches("Incorrect API key").count(), 1, "{wide}");
    assert!(
        wide.contains("↻ Rate limited · retry 2 of 4 in 2s"),
        "{wide}"
    );
    insta::assert_snapshot!("error_cell_80x24", wide);
    insta::assert_snapshot!("error_cell_40x24", harness::screen(&mut app, 40, 24));
}
