//! Turning a provider's HTTP error into a [`ProviderError`].
//!
//! Owns: reading the API's own message from an error body (OpenAI, Anthropic, Azure,
//! OpenRouter, vLLM and FastAPI shapes), mapping status and error type to a
//! [`ProviderErrorKind`], and the `retry-after-ms` / `retry-after` headers. Does not
//! own: sending requests (`transport`) or deciding to retry (a later layer; it reads
//! `ProviderError::retry_after`).

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::{ProviderError, ProviderErrorKind};

/// Builds the error for a non-2xx response: reads the body for the API's message
/// (`error.message`, `error` string, `message`, `detail`), maps the status (and an
/// `error.type` such as `overloaded_error`) to a kind, and reads `retry-after-ms` /
/// `retry-after`.
pub(crate) async fn error_from_response(
    provider: &str,
    response: reqwest::Response,
) -> ProviderError {
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let body = response.text().await.unwrap_or_default();
    let json: Option<Value> = serde_json::from_str(&body).ok();
    let message = json
        .as_ref()
        .and_then(api_error_message)
        .or_else(|| {
            let trimmed = body.trim();
            (!trimmed.is_empty()).then(|| trimmed.chars().take(500).collect())
        })
        .unwrap_or_else(|| {
            format!(
                "HTTP {} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("error")
            )
        });
    let error_type = json.as_ref().and_then(api_error_type);
    let kind = kind_for_status(status.as_u16(), &message, error_type.as_deref());
    tracing::debug!(
        provider,
        status = status.as_u16(),
        ?kind,
        "provider HTTP error"
    );
    ProviderError {
        kind,
        provider: provider.to_string(),
        status: Some(status.as_u16()),
        message,
        retry_after,
    }
}

/// The API's own error message from an error body or in-stream error object.
pub(crate) fn api_error_message(json: &Value) -> Option<String> {
    let err = json.get("error");
    let candidates = [
        err.and_then(|e| e.get("message")),
        err.filter(|e| e.is_string()),
        json.get("message"),
        json.get("detail"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_string))
}

/// `error.type` (Anthropic, OpenAI) or a string `error.code` (Azure, OpenAI).
pub(crate) fn api_error_type(json: &Value) -> Option<String> {
    let err = json.get("error")?;
    err.get("type")
        .and_then(Value::as_str)
        .or_else(|| err.get("code").and_then(Value::as_str))
        .map(str::to_string)
}

/// Maps an HTTP status (plus the API's error type and message) to an error kind.
///
/// 401/403 → `Auth`, 429 → `RateLimit`, 529 or `overloaded_error` → `Overloaded`,
/// 400/413 whose message or code speaks of the context length → `ContextTooLong`,
/// other 4xx → `InvalidRequest`, 5xx (and anything else) → `Server`.
pub fn kind_for_status(status: u16, message: &str, error_type: Option<&str>) -> ProviderErrorKind {
    if error_type == Some("overloaded_error") {
        return ProviderErrorKind::Overloaded;
    }
    match status {
        401 | 403 => ProviderErrorKind::Auth,
        429 => ProviderErrorKind::RateLimit,
        529 => ProviderErrorKind::Overloaded,
        400 | 413 if is_context_length(message, error_type) => ProviderErrorKind::ContextTooLong,
        400..=499 => ProviderErrorKind::InvalidRequest,
        _ => ProviderErrorKind::Server,
    }
}

/// The kind an Anthropic-style error `type` names (`overloaded_error`, …), if known.
pub(crate) fn kind_for_error_type(error_type: &str, message: &str) -> Option<ProviderErrorKind> {
    Some(match error_type {
        "overloaded_error" => ProviderErrorKind::Overloaded,
        "rate_limit_error" => ProviderErrorKind::RateLimit,
        "authentication_error" | "permission_error" => ProviderErrorKind::Auth,
        "api_error" => ProviderErrorKind::Server,
        "invalid_request_error" if is_context_length(message, Some(error_type)) => {
            ProviderErrorKind::ContextTooLong
        }
        "invalid_request_error" | "not_found_error" | "request_too_large" => {
            ProviderErrorKind::InvalidRequest
        }
        _ => return None,
    })
}

fn is_context_length(message: &str, error_type: Option<&str>) -> bool {
    if error_type == Some("context_length_exceeded") {
        return true;
    }
    let m = message.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "prompt is too long",
        "too many tokens",
        "reduce the length",
        "input is too long",
    ]
    .iter()
    .any(|needle| m.contains(needle))
}

/// How long the server asks the client to wait: `retry-after-ms` (milliseconds, used
/// when > 0), else `retry-after` as seconds or as an HTTP date (time from now;
/// a past date gives zero). `None` when neither header is usable.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms > 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    let wait = when.duration_since(jiff::Timestamp::now());
    Some(Duration::try_from(wait).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_prefers_positive_ms_then_seconds_then_date() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("1"));
        h.insert("retry-after-ms", HeaderValue::from_static("0"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(1)));
        h.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        let future = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(120);
        let date = jiff::fmt::rfc2822::DateTimePrinter::new()
            .timestamp_to_rfc9110_string(&future)
            .unwrap();
        h.insert("retry-after", HeaderValue::from_str(&date).unwrap());
        let got = retry_after(&h).unwrap();
        assert!(
            got > Duration::from_secs(100) && got <= Duration::from_secs(120),
            "{got:?}"
        );
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn status_and_type_map_to_kinds() {
        use ProviderErrorKind::*;
        assert_eq!(kind_for_status(401, "x", None), Auth);
        assert_eq!(kind_for_status(403, "x", None), Auth);
        assert_eq!(kind_for_status(429, "x", None), RateLimit);
        assert_eq!(kind_for_status(529, "x", None), Overloaded);
        assert_eq!(
            kind_for_status(500, "x", Some("overloaded_error")),
            Overloaded
        );
        assert_eq!(
            kind_for_status(
                400,
                "This model's maximum context length is 8192 tokens",
                None
            ),
            ContextTooLong
        );
        assert_eq!(
            kind_for_status(400, "prompt is too long: 210000 tokens", None),
            ContextTooLong
        );
        assert_eq!(
            kind_for_status(400, "x", Some("context_length_exceeded")),
            ContextTooLong
        );
        assert_eq!(
            kind_for_status(400, "bad tool schema", None),
            InvalidRequest
        );
        assert_eq!(kind_for_status(404, "no such model", None), InvalidRequest);
        assert_eq!(kind_for_status(502, "bad gateway", None), Server);
        assert_eq!(kind_for_error_type("rate_limit_error", ""), Some(RateLimit));
        assert_eq!(kind_for_error_type("something_new", ""), None);
    }

    #[test]
    fn api_messages_from_the_common_shapes() {
        let m = |s: &str| api_error_message(&serde_json::from_str(s).unwrap());
        assert_eq!(
            m(r#"{"error":{"message":"bad key"}}"#).as_deref(),
            Some("bad key")
        );
        assert_eq!(m(r#"{"error":"plain"}"#).as_deref(), Some("plain"));
        assert_eq!(
            m(r#"{"object":"error","message":"vllm"}"#).as_deref(),
            Some("vllm")
        );
        assert_eq!(m(r#"{"detail":"fastapi"}"#).as_deref(), Some("fastapi"));
        assert_eq!(m(r#"{"ok":true}"#), None);
    }
}
