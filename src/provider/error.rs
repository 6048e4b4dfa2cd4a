//! Provider errors: one taxonomy for both APIs, and keeping credentials out of them.
//!
//! Every error text a server or the network hands us passes [`scrubbed`] (in
//! [`ProviderError::new`]) before it becomes a [`ProviderError`] message, so an API that echoes the key (or the header
//! it came in) never gets it to the screen, an event, the store or the log. Clients
//! register the credentials they attach ([`register_credentials`]).

use std::borrow::Cow;
use std::time::Duration;

use crate::session::redact::{is_secret_key, register_secrets, scrub};

/// `text` without the process's registered secrets or credential echoes (see
/// `session::redact::scrub`).
pub(crate) fn scrubbed(text: &str) -> String {
    match scrub(text) {
        Cow::Borrowed(same) => same.to_string(),
        Cow::Owned(clean) => clean,
    }
}

/// Registers what a client attaches to its requests as process secrets: the API key
/// and the values of secret-named extra headers (`Authorization`, `x-api-key`, …;
/// `session::redact::is_secret_key`).
pub(crate) fn register_credentials(api_key: Option<&str>, headers: &[(String, String)]) {
    let header_values = headers
        .iter()
        .filter(|(name, _)| is_secret_key(name))
        .map(|(_, value)| value.as_str());
    register_secrets(api_key.into_iter().chain(header_values));
}

/// Defined with the protocol (events carry it): `provider:error` `data.kind`.
pub use crate::session::protocol::ProviderErrorKind;

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
    /// From `retry-after-ms` / `retry-after` headers, when present, else from
    /// OpenRouter's `x-ratelimit-reset` (see `http_error::retry_after_at`).
    pub retry_after: Option<Duration>,
    /// The server's own retry advice (Anthropic's and OpenAI's `x-should-retry:
    /// true|false`); when set it overrides the kind-based decision of
    /// [`ProviderError::is_retryable`]. `None` when the server gave none.
    pub should_retry: Option<bool>,
}

impl ProviderError {
    /// An error of `kind` from `provider` with `message` [`scrubbed`] of credentials
    /// (every constructor of a server's or the network's text goes through here), no
    /// status and no retry advice.
    pub fn new(kind: ProviderErrorKind, provider: &str, message: impl Into<String>) -> Self {
        Self {
            kind,
            provider: provider.to_string(),
            status: None,
            message: scrubbed(&message.into()),
            retry_after: None,
            should_retry: None,
        }
    }

    /// Whether a fresh attempt may succeed: the server's `x-should-retry` advice when
    /// it gave one, else by kind and status (connection errors, 408/409/429/5xx/529).
    pub fn is_retryable(&self) -> bool {
        if let Some(advice) = self.should_retry {
            return advice;
        }
        matches!(
            self.kind,
            ProviderErrorKind::RateLimit
                | ProviderErrorKind::Overloaded
                | ProviderErrorKind::Server
                | ProviderErrorKind::Network
        ) || matches!(self.status, Some(408 | 409))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_retry_advice_overrides_the_kind() {
        let auth = ProviderError {
            status: Some(401),
            ..ProviderError::new(ProviderErrorKind::Auth, "anthropic", "invalid x-api-key")
        };
        assert!(!auth.is_retryable());
        let advised = ProviderError {
            should_retry: Some(true),
            ..auth.clone()
        };
        assert!(advised.is_retryable());
        let server = ProviderError::new(ProviderErrorKind::Server, "anthropic", "boom");
        assert!(server.is_retryable());
        let refused = ProviderError {
            should_retry: Some(false),
            ..server
        };
        assert!(!refused.is_retryable());
        let conflict = ProviderError {
            status: Some(409),
            ..ProviderError::new(ProviderErrorKind::InvalidRequest, "openai", "conflict")
        };
        assert!(conflict.is_retryable());
    }
}
