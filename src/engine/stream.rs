//! One model call of a turn: streaming deltas to the bus, retries, cancellation.
//!
//! Owns: consuming a provider stream until `Completed`, an error or cancellation
//! (`tokio::select!` on the turn's token, so a cancel stops the stream at once —
//! dropping it closes the connection); publishing `content_block:delta`
//! (`{delta, kind: "text"|"thinking"}`); retrying retryable errors with exponential
//! backoff and jitter (honouring `retry_after`), at most 4 attempts, and only while the
//! attempt has shown no output. Does not own: what is done with the response (`turn`).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rand::Rng;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::live::LiveSession;
use crate::provider::{
    ChatRequest, Provider, ProviderError, ProviderErrorKind, ProviderResponse, StreamEvent,
};
use crate::session::events::names;

/// Attempts per model call (the first plus three retries).
pub const MAX_ATTEMPTS: u32 = 4;
/// First backoff delay; doubles per attempt.
const BASE_DELAY: Duration = Duration::from_millis(1000);
/// Longest wait between attempts, including a server's `retry-after`.
const MAX_DELAY: Duration = Duration::from_secs(60);

/// How a model call ended.
#[derive(Debug)]
pub(crate) enum CallEnd {
    Done(ProviderResponse),
    /// The text streamed before the error is in `partial`.
    Failed {
        error: ProviderError,
        partial: String,
    },
    Cancelled {
        partial: String,
    },
}

/// Streams `request` through `provider`, publishing deltas on `live`.
pub(crate) async fn call_model(
    live: &LiveSession,
    provider: &Arc<dyn Provider>,
    request: &ChatRequest,
    token: &CancellationToken,
) -> CallEnd {
    let mut attempt = 1;
    loop {
        let (end, shown_output) = attempt_once(live, provider, request, token).await;
        match end {
            CallEnd::Failed { error, partial }
                if !shown_output && error.is_retryable() && attempt < MAX_ATTEMPTS =>
            {
                let wait = backoff(attempt, error.retry_after);
                tracing::warn!(
                    session = %live.id, attempt, wait_ms = wait.as_millis() as u64,
                    "retrying the model call after: {error}"
                );
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = token.cancelled() => return CallEnd::Cancelled { partial },
                }
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// The delay before attempt `attempt + 1`: the server's `retry_after` when given,
/// else 1 s · 2^(attempt-1) with ±20 % jitter; at most 60 s.
pub(crate) fn backoff(attempt: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(wait) = retry_after {
        return wait.min(MAX_DELAY);
    }
    let exp = BASE_DELAY.saturating_mul(1u32 << attempt.saturating_sub(1).min(6));
    let jitter = rand::rng().random_range(0.8..1.2);
    exp.mul_f64(jitter).min(MAX_DELAY)
}

/// One attempt; the flag says whether any delta reached the bus.
async fn attempt_once(
    live: &LiveSession,
    provider: &Arc<dyn Provider>,
    request: &ChatRequest,
    token: &CancellationToken,
) -> (CallEnd, bool) {
    let mut stream = provider.stream(request.clone());
    let mut partial = String::new();
    let mut shown = false;
    loop {
        let item = tokio::select! {
            biased;
            _ = token.cancelled() => return (CallEnd::Cancelled { partial }, shown),
            item = stream.next() => item,
        };
        match item {
            Some(Ok(StreamEvent::TextDelta(delta))) => {
                shown = true;
                partial.push_str(&delta);
                live.emit(
                    names::CONTENT_BLOCK_DELTA,
                    json!({"delta": delta, "kind": "text"}),
                );
            }
            Some(Ok(StreamEvent::ThinkingDelta(delta))) => {
                shown = true;
                live.emit(
                    names::CONTENT_BLOCK_DELTA,
                    json!({"delta": delta, "kind": "thinking"}),
                );
            }
            Some(Ok(StreamEvent::ToolCallStarted { .. })) => shown = true,
            Some(Ok(StreamEvent::Completed(response))) => return (CallEnd::Done(response), shown),
            Some(Err(error)) => return (CallEnd::Failed { error, partial }, shown),
            None => {
                let error = ProviderError::new(
                    ProviderErrorKind::Network,
                    provider.id(),
                    "the response stream ended before the response was complete",
                );
                return (CallEnd::Failed { error, partial }, shown);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_honours_retry_after() {
        let first = backoff(1, None);
        assert!(first >= Duration::from_millis(800) && first <= Duration::from_millis(1200));
        let third = backoff(3, None);
        assert!(third >= Duration::from_millis(3200) && third <= Duration::from_millis(4800));
        assert_eq!(
            backoff(1, Some(Duration::from_millis(1500))),
            Duration::from_millis(1500)
        );
        assert_eq!(backoff(1, Some(Duration::from_secs(600))), MAX_DELAY);
        assert!(backoff(40, None) <= MAX_DELAY);
    }
}
