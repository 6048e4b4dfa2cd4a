//! The error-code vocabulary of the provider APIs, for HTTP error bodies and for
//! error objects that arrive inside a stream.
//!
//! Owns: which kind a string `code`/`type`/`status` names (Anthropic, OpenAI, Azure,
//! OpenRouter, Groq, Google), and the kind and status of an in-stream error object.
//! Does not own: reading messages or headers, or the HTTP status mapping (the parent
//! `http_error`).

use serde_json::Value;

use super::{is_context_length, kind_for_status};
use crate::provider::ProviderErrorKind;

/// The kind a string error `code`, `type` or `status` names, in the vocabulary of
/// Anthropic, OpenAI, Azure, OpenRouter, Groq and Google (case-insensitive):
///
/// - `RateLimit`: `rate_limit_error`, `rate_limit_exceeded`, `rate_limited`,
///   `RateLimitReached`, `too_many_requests`, `RESOURCE_EXHAUSTED`;
/// - `Overloaded`: `overloaded_error`, `overloaded`, `server_overloaded`,
///   `engine_overloaded`, `model_overloaded`;
/// - `Server`: `api_error`, `server_error`, `internal_error`, `internal_server_error`,
///   `INTERNAL`, `service_unavailable`, `UNAVAILABLE`, `bad_gateway`,
///   `gateway_timeout`, `timeout`, `DEADLINE_EXCEEDED`;
/// - `Auth`: `authentication_error`, `permission_error`, `invalid_api_key`,
///   `unauthorized`, `UNAUTHENTICATED`, `PERMISSION_DENIED`;
/// - `ContextTooLong`: `context_length_exceeded`, `context_window_exceeded`, and any
///   invalid-request code whose `message` speaks of the context length;
/// - `InvalidRequest`: `insufficient_quota`, `billing_hard_limit_reached`,
///   `invalid_request_error`, `invalid_request`, `INVALID_ARGUMENT`, `bad_request`,
///   `not_found_error`, `not_found`, `model_not_found`, `request_too_large`,
///   `tool_use_failed`.
///
/// `None` for anything else (the caller decides: a status, or `Stream`).
pub fn kind_for_error_code(code: &str, message: &str) -> Option<ProviderErrorKind> {
    use ProviderErrorKind::*;
    let code = code.trim().to_ascii_lowercase();
    let kind = match code.as_str() {
        "rate_limit_error"
        | "rate_limit_exceeded"
        | "rate_limited"
        | "ratelimitreached"
        | "too_many_requests"
        | "resource_exhausted" => RateLimit,
        "overloaded_error" | "overloaded" | "server_overloaded" | "engine_overloaded"
        | "model_overloaded" => Overloaded,
        "api_error"
        | "server_error"
        | "internal_error"
        | "internal_server_error"
        | "internal"
        | "service_unavailable"
        | "unavailable"
        | "bad_gateway"
        | "gateway_timeout"
        | "timeout"
        | "deadline_exceeded" => Server,
        "authentication_error"
        | "permission_error"
        | "invalid_api_key"
        | "unauthorized"
        | "unauthenticated"
        | "permission_denied" => Auth,
        "context_length_exceeded" | "context_window_exceeded" => ContextTooLong,
        c if is_quota_code(c) => InvalidRequest,
        "invalid_request_error"
        | "invalid_request"
        | "invalid_argument"
        | "bad_request"
        | "not_found_error"
        | "not_found"
        | "model_not_found"
        | "request_too_large"
        | "tool_use_failed" => {
            if is_context_length(message, None) {
                ContextTooLong
            } else {
                InvalidRequest
            }
        }
        _ => return None,
    };
    Some(kind)
}

/// The account has no quota or credit left: a retry cannot help.
pub(super) fn is_quota_code(code: &str) -> bool {
    ["insufficient_quota", "billing_hard_limit_reached"]
        .iter()
        .any(|c| code.eq_ignore_ascii_case(c))
}

/// The kind of an error object that arrived inside a stream (an `error` field of a
/// chunk, or the data of an `event: error`), and the HTTP-like status it carries.
///
/// `json` is the chunk or event data; its `error` object is read when present, else
/// `json` itself. String `code`, then `type`, then `status` are looked up with
/// [`kind_for_error_code`]; failing that, a numeric `code`/`status`/`status_code`
/// (a number or a numeric string, 100–599) is mapped with [`kind_for_status`]; failing
/// that the kind is `Stream`. The status is the first numeric one found (OpenRouter
/// `{"code": 400}`, Groq `{"status_code": 400}`, Google `{"code": 429}`).
pub fn kind_for_stream_error(json: &Value, message: &str) -> (ProviderErrorKind, Option<u16>) {
    let err = json.get("error").filter(|e| e.is_object()).unwrap_or(json);
    let fields = ["code", "type", "status", "status_code"];
    let status = fields
        .iter()
        .filter_map(|f| err.get(*f))
        .find_map(http_status);
    let words: Vec<&str> = fields
        .iter()
        .filter_map(|f| err.get(*f).and_then(Value::as_str))
        .filter(|s| s.trim().parse::<u16>().is_err())
        .collect();
    if let Some(kind) = words.iter().find_map(|w| kind_for_error_code(w, message)) {
        return (kind, status);
    }
    match status {
        Some(s) => (kind_for_status(s, message, words.first().copied()), status),
        None => (ProviderErrorKind::Stream, None),
    }
}

/// A status code as a JSON number or numeric string, when it is 100–599.
fn http_status(v: &Value) -> Option<u16> {
    let n = match v {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.trim().parse::<u64>().ok()?,
        _ => return None,
    };
    u16::try_from(n).ok().filter(|n| (100..=599).contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_code_maps_to_its_kind() {
        use ProviderErrorKind::*;
        let table = [
            (
                RateLimit,
                "rate_limit_error rate_limit_exceeded rate_limited RateLimitReached too_many_requests RESOURCE_EXHAUSTED",
            ),
            (
                Overloaded,
                "overloaded_error overloaded server_overloaded engine_overloaded model_overloaded",
            ),
            (
                Server,
                "api_error server_error internal_error internal_server_error INTERNAL service_unavailable UNAVAILABLE bad_gateway gateway_timeout timeout DEADLINE_EXCEEDED",
            ),
            (
                Auth,
                "authentication_error permission_error invalid_api_key unauthorized UNAUTHENTICATED PERMISSION_DENIED",
            ),
            (
                ContextTooLong,
                "context_length_exceeded context_window_exceeded",
            ),
            (
                InvalidRequest,
                "insufficient_quota billing_hard_limit_reached invalid_request_error invalid_request INVALID_ARGUMENT bad_request not_found_error not_found model_not_found request_too_large tool_use_failed",
            ),
        ];
        for (kind, codes) in table {
            for code in codes.split(' ') {
                assert_eq!(kind_for_error_code(code, "x"), Some(kind), "{code}");
            }
        }
        assert_eq!(
            kind_for_error_code("invalid_request_error", "prompt is too long: 210000 tokens"),
            Some(ContextTooLong)
        );
        assert_eq!(
            kind_for_error_code("bad_request", "This model's maximum context length is 8192"),
            Some(ContextTooLong)
        );
        assert_eq!(kind_for_error_code("error", "x"), None);
    }

    #[test]
    fn stream_error_objects_in_every_shape() {
        use ProviderErrorKind::*;
        let k = |s: &str| kind_for_stream_error(&serde_json::from_str(s).unwrap(), "m");
        // Numeric code (OpenRouter), as a number or a string; status_code (Groq).
        assert_eq!(k(r#"{"error":{"code":429}}"#), (RateLimit, Some(429)));
        assert_eq!(k(r#"{"error":{"code":"502"}}"#), (Server, Some(502)));
        assert_eq!(k(r#"{"error":{"status_code":500}}"#), (Server, Some(500)));
        assert_eq!(k(r#"{"error":{"code":401}}"#), (Auth, Some(401)));
        assert_eq!(k(r#"{"error":{"code":404}}"#), (InvalidRequest, Some(404)));
        // A string code beats the numeric status.
        assert_eq!(
            k(r#"{"error":{"code":429,"type":"insufficient_quota"}}"#),
            (InvalidRequest, Some(429))
        );
        // Google: numeric code plus a status word.
        assert_eq!(
            k(r#"{"error":{"code":503,"status":"UNAVAILABLE"}}"#),
            (Server, Some(503))
        );
        // Code before type (OpenAI).
        assert_eq!(
            k(r#"{"error":{"type":"invalid_request_error","code":"context_length_exceeded"}}"#),
            (ContextTooLong, None)
        );
        // No `error` object: the event itself (Anthropic's nested one is read first).
        assert_eq!(k(r#"{"type":"overloaded_error"}"#), (Overloaded, None));
        assert_eq!(
            k(r#"{"type":"error","error":{"type":"api_error"}}"#),
            (Server, None)
        );
        // Unknown, out-of-range or absent codes stay Stream.
        assert_eq!(k(r#"{"error":{"code":"brand_new"}}"#), (Stream, None));
        assert_eq!(k(r#"{"error":{"code":42}}"#), (Stream, None));
        assert_eq!(k(r#"{"error":"plain"}"#), (Stream, None));
        assert_eq!(k(r#"{"error":{"message":"m"}}"#), (Stream, None));
    }
}
