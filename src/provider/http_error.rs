//! Turning a provider's HTTP error, or an error object inside a stream, into a
//! [`ProviderError`].
//!
//! Owns: reading the API's own message from an error body (OpenAI, Anthropic, Azure,
//! OpenRouter, vLLM and FastAPI shapes) and mapping status and error type to a
//! [`ProviderErrorKind`]; in `codes`, the error-code vocabulary shared with in-stream
//! error objects; in `headers`, the retry advice in the response headers
//! (`retry-after-ms`, `retry-after`, `x-ratelimit-reset`, `x-should-retry`). Does not
//! own: sending requests (`transport`) or deciding to retry (`engine::stream`, which
//! reads `ProviderError::retry_after` and `ProviderError::is_retryable`).

mod codes;
mod headers;

use reqwest::header::HeaderMap;
use serde_json::Value;

pub use codes::{kind_for_error_code, kind_for_stream_error};
pub use headers::{
    MAX_RESET_WAIT, ratelimit_reset_wait, retry_after, retry_after_at, should_retry,
};

use super::{ProviderError, ProviderErrorKind};
use codes::is_quota_code;

/// Builds the error for a non-2xx response with the real clock; see
/// [`error_from_parts`].
pub(crate) async fn error_from_response(
    provider: &str,
    response: reqwest::Response,
) -> ProviderError {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.unwrap_or_default();
    error_from_parts(provider, status, &headers, &body, jiff::Timestamp::now())
}

/// The error for a non-2xx response with `status`, `headers` and `body`, as of `now`:
/// the API's message from the body (`error.message`, `error` string, `message`,
/// `detail`; else the body's first 500 characters; else the status line), the kind
/// from the status and the body's error type ([`kind_for_status`]), the wait from
/// [`retry_after_at`] and the server's advice from [`should_retry`].
pub fn error_from_parts(
    provider: &str,
    status: u16,
    headers: &HeaderMap,
    body: &str,
    now: jiff::Timestamp,
) -> ProviderError {
    // Scrubbed whole, before any cut: a key split at the 500-character cut would no
    // longer match.
    let body = super::error::scrubbed(body);
    let json: Option<Value> = serde_json::from_str(&body).ok();
    let message = json
        .as_ref()
        .and_then(api_error_message)
        .or_else(|| {
            let trimmed = body.trim();
            (!trimmed.is_empty()).then(|| trimmed.chars().take(500).collect())
        })
        .unwrap_or_else(|| {
            let reason = reqwest::StatusCode::from_u16(status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("error");
            format!("HTTP {status} {reason}")
        });
    let error_type = json.as_ref().and_then(api_error_type);
    let kind = kind_for_status(status, &message, error_type.as_deref());
    let should_retry = should_retry(headers);
    tracing::debug!(
        provider,
        status,
        ?kind,
        ?should_retry,
        "provider HTTP error"
    );
    ProviderError {
        status: Some(status),
        retry_after: retry_after_at(headers, now),
        should_retry,
        ..ProviderError::new(kind, provider, message)
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

/// `error.type` (Anthropic, OpenAI) or a string `error.code` (Azure, OpenAI); a
/// `code` that [`kind_for_error_code`] knows comes first, since it is the more precise
/// (OpenAI: `type: invalid_request_error`, `code: context_length_exceeded`).
pub(crate) fn api_error_type(json: &Value) -> Option<String> {
    let err = json.get("error")?;
    let field = |k: &str| err.get(k).and_then(Value::as_str);
    field("code")
        .filter(|c| kind_for_error_code(c, "").is_some())
        .or_else(|| field("type"))
        .or_else(|| field("code"))
        .map(str::to_string)
}

/// Maps an HTTP status (plus the API's error type and message) to an error kind.
///
/// 401/403 → `Auth`, 429 → `RateLimit`, 529 or an overloaded type → `Overloaded`,
/// 400/413 whose message or code speaks of the context length (or any status with
/// `context_length_exceeded`) → `ContextTooLong`, `insufficient_quota` (OpenAI sends
/// it as a 429 that no retry fixes) and other 4xx → `InvalidRequest`, 5xx (and
/// anything else) → `Server`.
pub fn kind_for_status(status: u16, message: &str, error_type: Option<&str>) -> ProviderErrorKind {
    // Codes more precise than the status win over it.
    match error_type.and_then(|t| kind_for_error_code(t, message)) {
        Some(kind @ (ProviderErrorKind::Overloaded | ProviderErrorKind::ContextTooLong)) => {
            return kind;
        }
        _ if error_type.is_some_and(is_quota_code) => return ProviderErrorKind::InvalidRequest,
        _ => {}
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(kind_for_error_code("rate_limit_error", ""), Some(RateLimit));
        assert_eq!(kind_for_error_code("something_new", ""), None);
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

    #[test]
    fn precise_codes_win_over_the_http_status() {
        use ProviderErrorKind::*;
        assert_eq!(
            kind_for_status(
                429,
                "You exceeded your current quota",
                Some("insufficient_quota")
            ),
            InvalidRequest
        );
        assert_eq!(
            kind_for_status(500, "x", Some("context_length_exceeded")),
            ContextTooLong
        );
        assert_eq!(kind_for_status(503, "x", Some("overloaded")), Overloaded);
        assert_eq!(
            kind_for_status(429, "x", Some("RateLimitReached")),
            RateLimit
        );
        assert_eq!(
            kind_for_status(400, "x", Some("invalid_request_error")),
            InvalidRequest
        );
        let body: Value = serde_json::from_str(
            r#"{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"m"}}"#,
        )
        .unwrap();
        assert_eq!(
            api_error_type(&body).as_deref(),
            Some("context_length_exceeded")
        );
        let body: Value =
            serde_json::from_str(r#"{"error":{"type":"invalid_request_error","code":"weird"}}"#)
                .unwrap();
        assert_eq!(
            api_error_type(&body).as_deref(),
            Some("invalid_request_error")
        );
    }

    #[test]
    fn error_from_parts_reads_body_status_and_headers() {
        use reqwest::header::HeaderValue;
        let now: jiff::Timestamp = "2025-08-08T15:40:34Z".parse().unwrap();
        let mut h = HeaderMap::new();
        h.insert("x-should-retry", HeaderValue::from_static("true"));
        h.insert(
            "x-ratelimit-reset",
            HeaderValue::from_static("1754667660000"),
        );
        let e = error_from_parts(
            "anthropic",
            400,
            &h,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"flaky"}}"#,
            now,
        );
        assert_eq!(
            (e.kind, e.status, e.message.as_str(), e.should_retry),
            (
                ProviderErrorKind::InvalidRequest,
                Some(400),
                "flaky",
                Some(true)
            )
        );
        assert_eq!(e.retry_after, Some(std::time::Duration::from_secs(26)));
        assert!(e.is_retryable());
        let e = error_from_parts("openai", 502, &HeaderMap::new(), "", now);
        assert_eq!(e.message, "HTTP 502 Bad Gateway");
        assert_eq!((e.should_retry, e.retry_after), (None, None));
        assert!(e.is_retryable());
    }
}
