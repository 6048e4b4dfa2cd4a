//! Model providers: the trait the turn loop calls, and the wire clients behind it.
//!
//! Owns: the provider-neutral request/stream/response types, the streaming decoders
//! (SSE), the OpenAI Chat Completions and Anthropic Messages clients, retries and HTTP
//! error mapping (`transport`, `http_error`), and the loopback Ollama probe (`probe`).
//! Wire clients only: it reads no config file and encodes `session` messages, so it
//! sits above `session` and below `routing`. Does not own: building providers from
//! config + environment or choosing a model (`routing`), the turn loop (`engine`),
//! transcripts or token counts (`session`).

pub mod anthropic;
mod anthropic_stream;
mod body;
pub mod error;
pub mod http_error;
mod image_parts;
pub mod openai;
pub mod openai_stream;
pub mod probe;
pub mod sse;
#[cfg(test)]
mod test_fixtures;
mod transport;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use error::{ProviderError, ProviderErrorKind};
pub use transport::{HttpPool, PoolStats};

use crate::session::Usage;
use crate::session::message::{ContentBlock, Message, ToolCall};

/// A tool as offered to the model: name, description and JSON Schema of its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema (`{"type":"object","properties":{…},"required":[…]}`).
    pub input_schema: Value,
}

/// One model call: system prompt + transcript + tools.
///
/// Cloning is cheap for any transcript length: `messages` is shared, not copied.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// Model id as the API names it (`gpt-4o`, `claude-sonnet-4-5`, `qwen2.5-coder-0.5b`).
    pub model: String,
    /// The system prompt (the agent's instruction).
    pub system: String,
    /// The transcript so far, already repaired (no orphaned tool calls). Shared: the
    /// engine passes the live session's own transcript snapshot when no repair was
    /// needed (`engine::repair::request_view_shared`), so a request over a long
    /// history copies no message. Build one from a `Vec` with `Arc::new(vec)` or
    /// `vec.into()`.
    pub messages: Arc<Vec<Message>>,
    pub tools: Vec<ToolSpec>,
    /// Output token cap; providers use their default when `None`.
    pub max_tokens: Option<u32>,
    /// Longest the whole response may take, from sending the request to its last
    /// event (the engine sets config's `response.max_time`). A response still going
    /// then is cut: the stream ends with a `Stream` error naming the limit after the
    /// deltas that came. `None`: no limit but the connection's idle timeout (300 s).
    pub max_time: Option<Duration>,
    /// Provider config from the mount plan entry (`temperature`, …); unknown keys ignored.
    pub config: Value,
}

/// The assembled result of one streamed model call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProviderResponse {
    /// Blocks in stream order (text, thinking, redacted thinking, tool calls).
    pub content: Vec<ContentBlock>,
    /// The tool calls, arguments parsed as JSON (`{}` when the stream sent none).
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// `stop`/`end_turn`/`tool_use`/`tool_calls`/`length`/`max_tokens`/… as the API said.
    pub stop_reason: Option<String>,
    /// The model id the API reported, if any.
    pub model: Option<String>,
    /// What the stream held that could not be read and was skipped (none: count 0).
    pub malformed: Malformed,
}

/// Pieces of a response stream that were skipped because they could not be read: SSE
/// events whose `data` is not the JSON object the API sends, and lines that are not
/// SSE at all (`sse::SseDecoder::ignored_lines`). A response with some is still used
/// when anything else arrived; one with nothing else fails (`transport::drive`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Malformed {
    /// How many were skipped.
    pub count: u64,
    /// The first one, cut to [`MALFORMED_SAMPLE_CHARS`] characters and scrubbed of
    /// credentials; empty when none was skipped.
    pub first: String,
}

impl Malformed {
    /// The count for people: `1 malformed stream event`, `3 malformed stream events`.
    pub fn count_text(&self) -> String {
        let s = if self.count == 1 { "" } else { "s" };
        format!("{} malformed stream event{s}", self.count)
    }
}

/// The longest sample of a malformed stream piece kept in [`Malformed::first`].
pub const MALFORMED_SAMPLE_CHARS: usize = 100;

impl ProviderResponse {
    /// Text blocks joined.
    pub fn text(&self) -> String {
        crate::session::message::blocks_text(&self.content)
    }
}

/// What a provider stream yields: live deltas for display, then exactly one
/// `Completed` with the assembled response (unless an error ends the stream first).
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Visible text.
    TextDelta(String),
    /// Reasoning/thinking text (Anthropic `thinking_delta`, OpenAI-compatible
    /// `reasoning`/`reasoning_content`).
    ThinkingDelta(String),
    /// A tool call began (name known, arguments still streaming).
    ToolCallStarted { id: String, name: String },
    /// A piece of a tool call's arguments (JSON text as streamed; the pieces of one
    /// call joined are its arguments). `id` is empty when the API has not named the
    /// call yet.
    ToolCallDelta { id: String, arguments: String },
    /// The whole response.
    Completed(ProviderResponse),
}

/// A model provider. Implementations: [`openai::OpenAiProvider`],
/// [`anthropic::AnthropicProvider`].
///
/// Cancellation is by dropping the stream: the HTTP connection closes with it.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The provider's id in the mount plan (`openai`, `anthropic`, `ollama`, or an
    /// entry's explicit `id`).
    fn id(&self) -> &str;
    /// The module name (`provider-openai`, `provider-anthropic`).
    fn module(&self) -> &str;
    /// The model used when a request does not name one (`default_model` in config).
    fn default_model(&self) -> &str;
    /// Streams one model call. Errors before the first delta are retryable by the
    /// caller; an `Err` item after deltas ends the stream (partial text is the caller's
    /// to keep).
    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>>;
    /// The model ids the provider offers (`GET {base}/models`).
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ProviderError>>;
}
