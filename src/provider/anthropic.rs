//! `provider-anthropic`: the Anthropic Messages API client.
//!
//! Owns: the request (`POST {base_url}/v1/messages`, headers `x-api-key` and
//! `anthropic-version: 2023-06-01`, `stream: true`), converting a [`ChatRequest`] into
//! Messages blocks and tools, and `GET {base_url}/v1/models`. Does not own: decoding
//! the stream (`anthropic_stream`), HTTP error mapping (`transport`), or where the key
//! comes from (`routing::setup`).
//!
//! Message conversion: `system` is the system prompt (transcript `system` messages are
//! appended to it, separated by a blank line); user text; assistant blocks in order —
//! `text` (empty ones dropped), `thinking` with its `signature` (thinking without a
//! signature, e.g. from another provider, is dropped: the API rejects it),
//! `redacted_thinking`, `tool_use` (plus any call in `tool_calls` missing from the
//! blocks); tool results as user `tool_result` blocks (`is_error` when set), with
//! consecutive results — and a user text right after them — grouped into one user
//! message, as the API requires.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

use super::anthropic_stream::MessagesAssembler;
use super::transport::{HttpClient, HttpPool, body_error, drive, fetch_model_ids, send_json};
use super::{ChatRequest, Provider, ProviderError, StreamEvent};

mod body;

pub use body::request_bytes;

/// Anthropic's official endpoint (without `/v1`).
pub const DEFAULT_BASE_URL: &str = crate::config::modules::ANTHROPIC.default_base_url;
/// The `anthropic-version` header value sent.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the request sets none (the API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Settings of one Messages endpoint. `Debug` never shows the key.
#[derive(Clone, Default)]
pub struct AnthropicConfig {
    /// Provider id in the mount plan (`anthropic` or the entry's `id`).
    pub id: String,
    /// Module name (`provider-anthropic`).
    pub module: String,
    /// Base URL without `/v1` (a trailing `/v1` or `/` is tolerated).
    pub base_url: String,
    /// Sent as `x-api-key` when set.
    pub api_key: Option<String>,
    /// The model for requests that name none.
    pub default_model: String,
    /// Extra request headers (config `headers`), e.g. `anthropic-beta`.
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("id", &self.id)
            .field("module", &self.module)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("default_model", &self.default_model)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// The Messages client. Cheap to clone.
#[derive(Clone)]
pub struct AnthropicProvider {
    inner: Arc<Inner>,
}

struct Inner {
    config: AnthropicConfig,
    /// Base URL including `/v1`.
    api_url: String,
    client: HttpClient,
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl AnthropicProvider {
    /// A client for `config` (an empty `base_url` means [`DEFAULT_BASE_URL`]) with an
    /// HTTP client of its own; see [`AnthropicProvider::with_pool`] to share one.
    pub fn new(config: AnthropicConfig) -> Self {
        Self::with_pool(config, &HttpPool::new())
    }

    /// [`AnthropicProvider::new`] with the HTTP client `pool` keeps for the API URL, so
    /// every provider of that endpoint built through `pool` shares its connections.
    pub fn with_pool(config: AnthropicConfig, pool: &HttpPool) -> Self {
        super::error::register_credentials(config.api_key.as_deref(), &config.headers);
        let base = config.base_url.trim().trim_end_matches('/');
        let base = if base.is_empty() {
            DEFAULT_BASE_URL
        } else {
            base
        };
        let api_url = if base.ends_with("/v1") {
            base.to_string()
        } else {
            format!("{base}/v1")
        };
        Self {
            inner: Arc::new(Inner {
                client: pool.client(&api_url),
                config,
                api_url,
            }),
        }
    }

    /// The URL prefix requests go to (`…/v1`).
    pub fn api_url(&self) -> &str {
        &self.inner.api_url
    }
}

impl Inner {
    fn request(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let mut builder = builder.header("anthropic-version", API_VERSION);
        if let Some(key) = self.config.api_key.as_deref().filter(|k| !k.is_empty()) {
            builder = builder.header("x-api-key", key);
        }
        for (name, value) in &self.config.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder
    }
}

impl Provider for AnthropicProvider {
    fn id(&self) -> &str {
        &self.inner.config.id
    }

    fn module(&self) -> &str {
        &self.inner.config.module
    }

    fn default_model(&self) -> &str {
        &self.inner.config.default_model
    }

    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let inner = Arc::clone(&self.inner);
        let id = inner.config.id.clone();
        let max_time = request.max_time;
        let send = async move {
            let model = if request.model.is_empty() {
                inner.config.default_model.clone()
            } else {
                request.model.clone()
            };
            let body =
                request_bytes(&request, &model).map_err(|e| body_error(&inner.config.id, &e))?;
            // The bytes are all that is sent: the transcript is not kept alive while
            // the request is out and the response streams.
            drop(request);
            let url = format!("{}/messages", inner.api_url);
            tracing::debug!(provider = %inner.config.id, %url, %model, bytes = body.len(), "messages request");
            send_json(
                &inner.config.id,
                inner.request(inner.client.post(&inner.config.id, url)?),
                body,
            )
            .await
        }
        .boxed();
        drive(id.clone(), send, MessagesAssembler::new(&id), max_time)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ProviderError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            let url = format!("{}/models?limit=1000", inner.api_url);
            fetch_model_ids(
                &inner.config.id,
                inner.request(inner.client.get(&inner.config.id, url)?),
            )
            .await
        }
        .boxed()
    }
}

/// The JSON body of a streamed Messages call for `request` with `model`. Passes
/// `max_tokens` (default [`DEFAULT_MAX_TOKENS`]) and from `request.config`:
/// `temperature`, `top_p`, `top_k`, `thinking`, `stop_sequences`. The same JSON as the
/// bytes sent ([`request_bytes`]); `Null` only if serde_json refused a value (it has
/// none to refuse).
pub fn request_body(request: &ChatRequest, model: &str) -> Value {
    body::request_value(request, model).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_variants_and_debug_hides_key() {
        let p = AnthropicProvider::new(AnthropicConfig::default());
        assert_eq!(p.api_url(), "https://api.anthropic.com/v1");
        let p = AnthropicProvider::new(AnthropicConfig {
            base_url: "http://proxy:8080/v1/".into(),
            api_key: Some("sk-ant-secret".into()),
            ..Default::default()
        });
        assert_eq!(p.api_url(), "http://proxy:8080/v1");
        assert!(!format!("{p:?}").contains("sk-ant-secret"));
    }
}
