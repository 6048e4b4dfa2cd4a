//! `provider-openai` (and `provider-ollama`): the OpenAI Chat Completions client.
//!
//! Owns: the request (`POST {base_url}/chat/completions`, `stream: true`,
//! `stream_options.include_usage`), converting a [`ChatRequest`] into Chat Completions
//! messages and tools, `GET {base_url}/models`, and resolving the model lazily for
//! local servers. Works with any OpenAI-compatible server through `base_url`
//! (Ollama at `http://127.0.0.1:11434/v1`, llama.cpp, vLLM, LM Studio, OpenRouter,
//! Azure's `/openai/v1` endpoint). Does not own: decoding the stream
//! (`openai_stream`), HTTP error mapping (`transport`), or where the key comes from
//! (`routing::setup`).
//!
//! Message conversion: the system prompt first; transcript `system` messages in
//! place; user text; assistant text + `tool_calls` `[{id, type: "function",
//! function: {name, arguments: "<json string>"}}]` (from the message's `tool_calls`,
//! plus any `tool_call` content block not listed there); tool results as
//! `{role: "tool", tool_call_id, content}`. Thinking blocks are dropped: Chat
//! Completions has no way to send them back.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::sync::OnceCell;

use super::openai_stream::ChatAssembler;
use super::transport::{HttpClient, HttpPool, body_error, drive, fetch_model_ids, send_json};
use super::{ChatRequest, Provider, ProviderError, ProviderErrorKind, StreamEvent};

mod body;

pub use body::request_bytes;

/// OpenAI's official endpoint.
pub const DEFAULT_BASE_URL: &str = crate::config::modules::OPENAI.default_base_url;
/// A local Ollama's OpenAI-compatible endpoint (`provider-ollama`).
pub const OLLAMA_BASE_URL: &str = crate::config::modules::OLLAMA.default_base_url;

/// Settings of one OpenAI-compatible endpoint. `Debug` never shows the key.
#[derive(Clone, Default)]
pub struct OpenAiConfig {
    /// Provider id in the mount plan (`openai`, `ollama`, or the entry's `id`).
    pub id: String,
    /// Module name (`provider-openai`, `provider-ollama`).
    pub module: String,
    /// Base URL up to and including `/v1` (trailing `/` ignored).
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<String>,
    /// The model for requests that name none; `None` resolves it on first use to the
    /// first id `GET {base_url}/models` lists (cached for the provider's life).
    pub default_model: Option<String>,
    /// Extra request headers (config `headers: {name: value}`), e.g. OpenRouter's
    /// `HTTP-Referer`.
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
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

/// The Chat Completions client. Cheap to clone (shared inner state).
#[derive(Clone)]
pub struct OpenAiProvider {
    inner: Arc<Inner>,
}

struct Inner {
    config: OpenAiConfig,
    base_url: String,
    client: HttpClient,
    resolved_model: OnceCell<String>,
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("config", &self.inner.config)
            .field("resolved_model", &self.inner.resolved_model.get())
            .finish()
    }
}

impl OpenAiProvider {
    /// A client for `config` (an empty `base_url` means [`DEFAULT_BASE_URL`]) with an
    /// HTTP client of its own; see [`OpenAiProvider::with_pool`] to share one.
    pub fn new(config: OpenAiConfig) -> Self {
        Self::with_pool(config, &HttpPool::new())
    }

    /// [`OpenAiProvider::new`] with the HTTP client `pool` keeps for the base URL, so
    /// every provider of that endpoint built through `pool` shares its connections.
    pub fn with_pool(config: OpenAiConfig, pool: &HttpPool) -> Self {
        super::error::register_credentials(config.api_key.as_deref(), &config.headers);
        let base = config.base_url.trim().trim_end_matches('/');
        let base_url = if base.is_empty() {
            DEFAULT_BASE_URL.to_string()
        } else {
            base.to_string()
        };
        Self {
            inner: Arc::new(Inner {
                client: pool.client(&base_url),
                config,
                base_url,
                resolved_model: OnceCell::new(),
            }),
        }
    }

    /// The base URL requests go to (no trailing `/`).
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// The model a request without one uses: the configured default, else the first
    /// id of `GET {base_url}/models` (fetched once, then cached). Errors when neither
    /// gives a model.
    pub async fn resolve_model(&self) -> Result<String, ProviderError> {
        self.inner.resolve_model().await
    }
}

impl Inner {
    fn id(&self) -> &str {
        &self.config.id
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let mut request = request;
        if let Some(key) = self.config.api_key.as_deref().filter(|k| !k.is_empty()) {
            request = request.bearer_auth(key);
        }
        for (name, value) in &self.config.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request
    }

    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        let url = format!("{}/models", self.base_url);
        fetch_model_ids(self.id(), self.authorized(self.client.get(self.id(), url)?)).await
    }

    async fn resolve_model(&self) -> Result<String, ProviderError> {
        if let Some(model) = self.config.default_model.as_ref().filter(|m| !m.is_empty()) {
            return Ok(model.clone());
        }
        self.resolved_model
            .get_or_try_init(|| async {
                let models = self.list_models().await?;
                let first = models.into_iter().next().ok_or_else(|| {
                    ProviderError::new(
                        ProviderErrorKind::NotConfigured,
                        self.id(),
                        format!(
                            "no model configured and {}/models lists none; set `default_model` in the provider's config",
                            self.base_url
                        ),
                    )
                })?;
                tracing::info!(provider = self.id(), model = %first, "using the server's first model");
                Ok(first)
            })
            .await
            .cloned()
    }
}

impl Provider for OpenAiProvider {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn module(&self) -> &str {
        &self.inner.config.module
    }

    /// The configured model, else the lazily resolved one once known, else `""`
    /// (a request with an empty `model` triggers the resolution).
    fn default_model(&self) -> &str {
        self.inner
            .config
            .default_model
            .as_deref()
            .or_else(|| self.inner.resolved_model.get().map(String::as_str))
            .unwrap_or("")
    }

    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let inner = Arc::clone(&self.inner);
        let max_time = request.max_time;
        let send = async move {
            let model = if request.model.is_empty() {
                inner.resolve_model().await?
            } else {
                request.model.clone()
            };
            let body = request_bytes(&request, &model).map_err(|e| body_error(inner.id(), &e))?;
            // The bytes are all that is sent: the transcript is not kept alive while
            // the request is out and the response streams.
            drop(request);
            let url = format!("{}/chat/completions", inner.base_url);
            tracing::debug!(provider = inner.id(), %url, %model, bytes = body.len(), "chat completions request");
            send_json(
                inner.id(),
                inner.authorized(inner.client.post(inner.id(), url)?),
                body,
            )
            .await
        }
        .boxed();
        drive(
            self.inner.id().to_string(),
            send,
            ChatAssembler::new(self.inner.id()),
            max_time,
        )
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ProviderError>> {
        let inner = Arc::clone(&self.inner);
        async move { inner.list_models().await }.boxed()
    }
}

/// The JSON body of a streamed Chat Completions call for `request` with `model`.
/// Passes `max_tokens`, and from `request.config`: `temperature`, `top_p`,
/// `reasoning_effort`, `seed`, `stop`. The same JSON as the bytes sent
/// ([`request_bytes`]); `Null` only if serde_json refused a value (it has none to refuse).
pub fn request_body(request: &ChatRequest, model: &str) -> Value {
    body::request_value(request, model).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_key_and_base_url_defaults() {
        let p = OpenAiProvider::new(OpenAiConfig {
            id: "openai".into(),
            api_key: Some("sk-secret-123".into()),
            ..Default::default()
        });
        let shown = format!("{p:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("[REDACTED]"));
        assert_eq!(p.base_url(), DEFAULT_BASE_URL);
        let p = OpenAiProvider::new(OpenAiConfig {
            base_url: "http://h:1/v1/".into(),
            ..Default::default()
        });
        assert_eq!(p.base_url(), "http://h:1/v1");
        assert_eq!(p.default_model(), "");
    }
}
