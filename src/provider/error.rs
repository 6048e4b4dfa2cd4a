//! Provider errors: one taxonomy for both APIs.

use std::time::Duration;

/// What kind of failure a provider call had (drives retry and the TUI's hint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderErrorKind {
    /// 401/403: bad or missing key.
    Auth,
    /// 429.
    RateLimit,
    /// 529 / `overloaded_error`.
    Overloaded,
    /// The prompt is longer than the model's context.
    ContextTooLong,
    /// Other 4xx: the request was refused.
    InvalidRequest,
    /// 5xx.
    Server,
    /// Connection refused/reset, timeouts, a stream cut mid-way.
    Network,
    /// An `error` event or error object inside an otherwise good stream.
    Stream,
    /// The call was cancelled.
    Cancelled,
    /// No provider is configured / usable.
    NotConfigured,
}

/// A provider failure, naming the provider, the HTTP status and the API's own message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{provider}: {message}{}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
pub struct ProviderError {
    pub kind: ProviderErrorKind,
    /// Provider id (`openai`, `anthropic`, …).
    pub provider: String,
    pub status: Option<u16>,
    /// The API's own message where it sent one, else a description of the failure.
    pub message: String,
    /// From `retry-after-ms` / `retry-after` headers, when present.
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    pub fn new(kind: ProviderErrorKind, provider: &str, message: impl Into<String>) -> Self {
        Self {
            kind,
            provider: provider.to_string(),
            status: None,
            message: message.into(),
            retry_after: None,
        }
    }

    /// Whether a fresh attempt may succeed (connection errors, 408/409/429/5xx/529).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ProviderErrorKind::RateLimit
                | ProviderErrorKind::Overloaded
                | ProviderErrorKind::Server
                | ProviderErrorKind::Network
        ) || matches!(self.status, Some(408 | 409))
    }
}
