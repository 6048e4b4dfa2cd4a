//! One model call of a turn: streaming deltas to the bus, retries, cancellation.
//!
//! Owns: consuming a provider stream until `Completed`, an error or cancellation
//! (`tokio::select!` on the turn's token, so a cancel stops the stream at once —
//! dropping it closes the connection); publishing `content_block:delta`
//! (`{delta, kind: "text"|"thinking"}`); retrying retryable errors (connection errors,
//! 408/409/429/5xx/529: [`ProviderError::is_retryable`]) with exponential backoff and
//! jitter, or exactly the server's `retry-after`/`retry-after-ms`, at most
//! [`MAX_ATTEMPTS`] attempts, and only while the attempt has shown no output (a text,
//! thinking or tool-call delta). A server asking to wait longer than the config's
//! `retry.max_wait` ([`RetryPolicy`], default 60 s) is not retried: the error reaches
//! the user at once, its message naming the wait asked for and the limit. Cancelling
//! during a wait ends the call as cancelled. Does not own: what is done with the
//! response (`turn`), reading the limit (`config::retry`).
//!
//! Every retry is visible: before waiting, `provider:error` is published
//! ([`error_event`], `retrying: true`); the turn publishes the final one
//! (`retrying: false`) when the call fails for good.
//!
//! Limits on one response (one attempt; `config::response`, [`ResponseLimits`]): its
//! streamed text — answer, thinking and tool-call arguments — may not pass
//! `max_bytes`. A response passing it is cut there (the stream dropped, closing the
//! connection) and the call fails with an error naming the limit, not retried; the
//! answer text that came, up to the limit, is the partial the turn keeps. The time
//! limit, `max_time`, travels in the request (`ChatRequest::max_time`, set by the
//! turn) and is kept by the provider on its own clock, as the connection's timeouts
//! are; its error reaches here like any other. A completed response that skipped
//! malformed stream pieces publishes `provider:warning` ([`warning_event`]).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rand::Rng;
use tokio_util::sync::CancellationToken;

use super::live::LiveSession;
use crate::config::response::ResponseLimits;
use crate::config::retry::{RetryPolicy, describe_wait};
use crate::provider::{
    ChatRequest, Malformed, Provider, ProviderError, ProviderErrorKind, ProviderResponse,
    StreamEvent,
};
use crate::session::EngineEvent;
use crate::session::protocol::{DeltaKind, ProviderErrorEvent, ProviderWarningEvent};
use crate::session::store::bytes_text;

/// Attempts per model call (the first plus three retries).
pub const MAX_ATTEMPTS: u32 = 4;
/// First backoff delay; doubles per attempt (never beyond `retry.max_wait`).
pub const BASE_DELAY: Duration = Duration::from_millis(1000);
/// Backoff jitter: the delay is multiplied by a uniform factor in `1 ± JITTER`.
pub const JITTER: f64 = 0.2;

/// How a model call ended.
#[derive(Debug)]
pub(crate) enum CallEnd {
    Done(ProviderResponse),
    /// The text streamed before the error is in `partial`; `attempts` were made.
    Failed {
        error: ProviderError,
        partial: String,
        attempts: u32,
    },
    Cancelled {
        partial: String,
    },
}

/// Streams `request` through `provider`, publishing deltas on `live`, retrying within
/// `policy` and holding each response within `limits`, per the module docs.
pub(crate) async fn call_model(
    live: &LiveSession,
    provider: &Arc<dyn Provider>,
    request: &ChatRequest,
    token: &CancellationToken,
    policy: &RetryPolicy,
    limits: &ResponseLimits,
) -> CallEnd {
    let mut attempt = 1;
    loop {
        let (end, shown_output) = attempt_once(live, provider, request, token, limits).await;
        let CallEnd::Failed { error, partial, .. } = end else {
            return end;
        };
        let Some(wait) = retry_wait(&error, attempt, shown_output, policy.max_wait) else {
            return CallEnd::Failed {
                error: explain_refused_wait(error, shown_output, policy.max_wait),
                partial,
                attempts: attempt,
            };
        };
        tracing::warn!(
            session = %live.id, attempt, wait_ms = millis(wait),
            "retrying the model call after: {error}"
        );
        live.emit(EngineEvent::ProviderError(error_event(
            provider.as_ref(),
            &request.model,
            &error,
            attempt,
            Some(wait),
        )));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = token.cancelled() => return CallEnd::Cancelled { partial },
        }
        attempt += 1;
    }
}

/// How long to wait before attempt `attempt + 1`, or `None` when the call must not be
/// retried: output was shown, the error is not retryable, `attempt` was the last, or
/// the server asks for a wait longer than `max_wait`.
pub(crate) fn retry_wait(
    error: &ProviderError,
    attempt: u32,
    shown_output: bool,
    max_wait: Duration,
) -> Option<Duration> {
    if shown_output || !error.is_retryable() || attempt >= MAX_ATTEMPTS {
        return None;
    }
    if error.retry_after.is_some_and(|w| w > max_wait) {
        return None;
    }
    Some(backoff(attempt, error.retry_after, max_wait))
}

/// The delay before attempt `attempt + 1`: the server's `retry_after` when given
/// (at most `max_wait`), else [`BASE_DELAY`] · 2^(attempt-1) × (1 ± [`JITTER`]) in
/// whole milliseconds, at most `max_wait`.
pub(crate) fn backoff(attempt: u32, retry_after: Option<Duration>, max_wait: Duration) -> Duration {
    if let Some(wait) = retry_after {
        return wait.min(max_wait);
    }
    let exp = BASE_DELAY.saturating_mul(1u32 << attempt.saturating_sub(1).min(6));
    let jitter = rand::rng().random_range((1.0 - JITTER)..(1.0 + JITTER));
    // Whole milliseconds: what `wait_ms` announces is what the timer waits.
    Duration::from_millis(millis(exp.mul_f64(jitter))).min(max_wait)
}

/// `error` with its message extended by why it was not retried when the only reason
/// is a server-requested wait longer than `max_wait` (`…; the server asks to wait
/// 2h00m before a retry, longer than arbor waits (retry.max_wait: 1m00s)`); any
/// other error unchanged.
fn explain_refused_wait(
    error: ProviderError,
    shown_output: bool,
    max_wait: Duration,
) -> ProviderError {
    let Some(asked) = error.retry_after.filter(|w| *w > max_wait) else {
        return error;
    };
    if shown_output || !error.is_retryable() {
        return error;
    }
    tracing::warn!(
        provider = %error.provider,
        asked_ms = millis(asked),
        max_wait_ms = millis(max_wait),
        "not retrying: the server asks for a longer wait than retry.max_wait"
    );
    let message = format!(
        "{}; the server asks to wait {} before a retry, longer than arbor waits \
         (retry.max_wait: {} in config.yaml)",
        error.message,
        describe_wait(asked),
        describe_wait(max_wait)
    );
    ProviderError { message, ..error }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The `provider:error` of `attempt` (1-based) of a call to `model` that failed with
/// `error`: `retry_in` is the wait before the next attempt while retrying, `None` in
/// the final event. Shape: [`ProviderErrorEvent`].
pub fn error_event(
    provider: &dyn Provider,
    model: &str,
    error: &ProviderError,
    attempt: u32,
    retry_in: Option<Duration>,
) -> ProviderErrorEvent {
    ProviderErrorEvent {
        provider: error.provider.clone(),
        module: provider.module().to_string(),
        model: model.to_string(),
        kind: error.kind,
        status: error.status,
        message: error.message.clone(),
        error: error.to_string(),
        retryable: error.is_retryable(),
        retrying: retry_in.is_some(),
        attempt,
        max_attempts: MAX_ATTEMPTS,
        wait_ms: retry_in.map(millis),
        retry_after_ms: error.retry_after.map(millis),
    }
}

/// The `provider:warning` of a response from `provider` (asked for `model`) that
/// skipped `malformed` stream pieces; `None` when it skipped none. Shape:
/// [`ProviderWarningEvent`].
pub fn warning_event(
    provider: &str,
    model: &str,
    malformed: &Malformed,
) -> Option<ProviderWarningEvent> {
    (malformed.count > 0).then(|| ProviderWarningEvent {
        provider: provider.to_string(),
        model: model.to_string(),
        message: format!("{} skipped", malformed.count_text()),
        malformed_events: malformed.count,
        first_malformed: malformed.first.clone(),
    })
}

/// The error of a response cut at `max_bytes` of streamed text.
fn too_large(provider: &str, max_bytes: usize) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Stream,
        provider,
        format!(
            "the response was too large: it passed the limit of {} of text \
             (response.max_bytes in config.yaml) and was cut there",
            bytes_text(max_bytes)
        ),
    )
}

/// How much streamed text a response may still carry.
struct Budget {
    left: usize,
}

impl Budget {
    /// `piece` as far as the budget allows (cut at a character boundary) and whether
    /// it had to be cut: the response passed the limit.
    fn take(&mut self, mut piece: String) -> (String, bool) {
        if piece.len() <= self.left {
            self.left -= piece.len();
            return (piece, false);
        }
        piece.truncate(piece.floor_char_boundary(self.left));
        self.left = 0;
        (piece, true)
    }
}

/// One attempt; the flag says whether any delta reached the bus.
async fn attempt_once(
    live: &LiveSession,
    provider: &Arc<dyn Provider>,
    request: &ChatRequest,
    token: &CancellationToken,
    limits: &ResponseLimits,
) -> (CallEnd, bool) {
    let mut stream = provider.stream(request.clone());
    let mut budget = Budget {
        left: limits.max_bytes,
    };
    let mut partial = String::new();
    let mut shown = false;
    let failed = |error, partial| CallEnd::Failed {
        error,
        partial,
        attempts: 1,
    };
    loop {
        let item = tokio::select! {
            biased;
            _ = token.cancelled() => return (CallEnd::Cancelled { partial }, shown),
            item = stream.next() => item,
        };
        let piece = match item {
            Some(Ok(StreamEvent::TextDelta(delta))) => Some((DeltaKind::Text, delta)),
            Some(Ok(StreamEvent::ThinkingDelta(delta))) => Some((DeltaKind::Thinking, delta)),
            Some(Ok(StreamEvent::ToolCallDelta { arguments, .. })) => {
                shown = true;
                if budget.take(arguments).1 {
                    return (
                        failed(too_large(provider.id(), limits.max_bytes), partial),
                        shown,
                    );
                }
                None
            }
            Some(Ok(StreamEvent::ToolCallStarted { .. })) => {
                shown = true;
                None
            }
            Some(Ok(StreamEvent::Completed(response))) => {
                if let Some(warning) =
                    warning_event(provider.id(), &request.model, &response.malformed)
                {
                    live.emit(EngineEvent::ProviderWarning(warning));
                }
                return (CallEnd::Done(response), shown);
            }
            Some(Err(error)) => return (failed(error, partial), shown),
            None => {
                let error = ProviderError::new(
                    ProviderErrorKind::Network,
                    provider.id(),
                    "the response stream ended before the response was complete",
                );
                return (failed(error, partial), shown);
            }
        };
        let Some((kind, delta)) = piece else {
            continue;
        };
        shown = true;
        let (delta, over) = budget.take(delta);
        if !delta.is_empty() {
            if kind == DeltaKind::Text {
                partial.push_str(&delta);
            }
            live.emit(EngineEvent::delta(kind, delta));
        }
        if over {
            return (
                failed(too_large(provider.id(), limits.max_bytes), partial),
                shown,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: Duration = crate::config::retry::DEFAULT_MAX_WAIT;

    #[test]
    fn backoff_grows_and_honours_retry_after() {
        let first = backoff(1, None, MAX);
        assert!(first >= Duration::from_millis(800) && first <= Duration::from_millis(1200));
        let third = backoff(3, None, MAX);
        assert!(third >= Duration::from_millis(3200) && third <= Duration::from_millis(4800));
        assert_eq!(
            backoff(1, Some(Duration::from_millis(1500)), MAX),
            Duration::from_millis(1500)
        );
        assert_eq!(backoff(1, Some(Duration::from_secs(600)), MAX), MAX);
        assert!(backoff(40, None, MAX) <= MAX);
    }

    #[test]
    fn retry_policy_by_kind_output_attempt_and_server_wait() {
        let err = |kind, retry_after| ProviderError {
            retry_after,
            ..ProviderError::new(kind, "p", "m")
        };
        use ProviderErrorKind::*;
        for kind in [RateLimit, Overloaded, Server, Network] {
            assert!(
                retry_wait(&err(kind, None), 1, false, MAX).is_some(),
                "{kind:?}"
            );
        }
        for kind in [
            Auth,
            ContextTooLong,
            InvalidRequest,
            Stream,
            Cancelled,
            NotConfigured,
        ] {
            assert!(
                retry_wait(&err(kind, None), 1, false, MAX).is_none(),
                "{kind:?}"
            );
        }
        let timeout = ProviderError {
            status: Some(408),
            ..err(InvalidRequest, None)
        };
        assert!(retry_wait(&timeout, 1, false, MAX).is_some());
        let conflict = ProviderError {
            status: Some(409),
            ..err(InvalidRequest, None)
        };
        assert!(retry_wait(&conflict, 3, false, MAX).is_some());
        assert!(
            retry_wait(&err(RateLimit, None), 1, true, MAX).is_none(),
            "after output"
        );
        assert!(retry_wait(&err(RateLimit, None), MAX_ATTEMPTS, false, MAX).is_none());
        let two = Some(Duration::from_secs(2));
        assert_eq!(retry_wait(&err(RateLimit, two), 2, false, MAX), two);
        let long = Some(MAX + Duration::from_secs(1));
        assert!(retry_wait(&err(RateLimit, long), 1, false, MAX).is_none());
        // The limit is the caller's (config `retry.max_wait`).
        let short = Duration::from_secs(1);
        assert!(retry_wait(&err(RateLimit, two), 1, false, short).is_none());
        let backed_off = retry_wait(&err(Server, None), 3, false, short);
        assert_eq!(
            backed_off,
            Some(short),
            "own backoff stays within the limit"
        );
    }

    #[test]
    fn a_refused_long_wait_is_named_in_the_error() {
        let err = |retry_after| ProviderError {
            status: Some(429),
            retry_after,
            ..ProviderError::new(ProviderErrorKind::RateLimit, "openai", "slow down")
        };
        let refused = explain_refused_wait(err(Some(Duration::MAX)), false, MAX);
        assert_eq!(
            refused.message,
            "slow down; the server asks to wait over 584 billion years before a retry, \
             longer than arbor waits (retry.max_wait: 1m00s in config.yaml)"
        );
        assert_eq!(refused.retry_after, Some(Duration::MAX));
        let two_hours = explain_refused_wait(err(Some(Duration::from_secs(7200))), false, MAX);
        assert!(
            two_hours.message.contains("wait 2h00m before"),
            "{}",
            two_hours.message
        );
        // Not refused for its wait: unchanged.
        for (e, shown) in [
            (err(Some(MAX)), false),
            (err(None), false),
            (err(Some(Duration::MAX)), true),
        ] {
            assert_eq!(explain_refused_wait(e.clone(), shown, MAX), e);
        }
    }
}
