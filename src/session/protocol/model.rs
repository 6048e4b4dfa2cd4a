//! Payloads of the model-call events (`provider:*`, `content_block:delta`) and the
//! record they carry that a layer above produces: [`ProviderErrorKind`] (made by the
//! provider clients). [`ResolvedModel`] (made by routing) is metadata's
//! (`session::metadata`), re-exported here because events carry it.
//!
//! These live at the bottom because events carry them; `provider` and `routing`
//! re-export them where they are made.

use serde::{Deserialize, Serialize};

use crate::session::metadata::SessionUsage;
pub use crate::session::metadata::{ResolvedModel, Via};

/// What kind of failure a provider call had (drives retry and the TUI's hint).
/// Serialized in snake case (`rate_limit`, …) as `provider:error` `data.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Other 4xx, or an account without quota/credit (`insufficient_quota`): the
    /// request was refused and resending it unchanged fails again.
    InvalidRequest,
    /// 5xx.
    Server,
    /// Connection refused/reset, timeouts, a stream cut mid-way.
    Network,
    /// An `error` event or error object inside an otherwise good stream whose
    /// `code`/`type`/`status` names no kind above (a known one maps to that kind).
    Stream,
    /// The call was cancelled.
    Cancelled,
    /// No provider is configured / usable.
    NotConfigured,
}

/// `provider:endpoint_changed` (arbor's own): `{provider, from, to}`. Published by a
/// session resumed from disk whose stored provider entry named another `base_url` than
/// the current config file or environment does: the session now talks to `to`
/// (SPEC §7 "Resume"). A note for the person; never sent to the model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProviderEndpointChangedEvent {
    /// Provider id (mount name) of the entry that moved.
    pub provider: String,
    /// The `base_url` stored in the session.
    pub from: String,
    /// The `base_url` it uses from now on.
    pub to: String,
}

impl ProviderEndpointChangedEvent {
    /// The note front ends show: `endpoint changed: openai http://a/v1 → http://b/v1`.
    pub fn note(&self) -> String {
        format!(
            "endpoint changed: {} {} → {}",
            self.provider, self.from, self.to
        )
    }
}

/// `provider:request`: `{provider, model, iteration, message_count, tools}` (arbor's
/// keys; Amplifier's event carries the request itself, which arbor does not log).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProviderRequestEvent {
    /// Provider id (mount name).
    pub provider: String,
    /// The model asked for.
    pub model: String,
    /// 1-based model call of the turn (bounded by `max_iterations`).
    pub iteration: u32,
    /// Messages sent.
    pub message_count: usize,
    /// Names of the tools offered.
    pub tools: Vec<String>,
}

/// `provider:response`: `{provider, model, response_model?, usage, stop_reason,
/// tool_calls}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProviderResponseEvent {
    /// Provider id.
    pub provider: String,
    /// The model asked for: the same name as the call's `provider:request` `model`
    /// (the resolved model, without the provider), or the one the API reported when
    /// none was resolved yet (a local server's first call). Empty: unknown.
    pub model: String,
    /// The model the API said answered, when it names one that differs from `model`
    /// (a dated version of an alias: `gpt-4o-2024-08-06` for `gpt-4o`). An arbor key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// The call's usage: `{input_tokens, output_tokens, cache_read_tokens,
    /// cache_creation_tokens, cost?}`, `cost` in USD only when the config's price table
    /// has the model.
    pub usage: SessionUsage,
    /// The API's stop reason (`end_turn`, `tool_use`, `stop`, …), when it sent one.
    pub stop_reason: Option<String>,
    /// How many tool calls the reply holds (a count: the calls follow as `tool:pre`).
    pub tool_calls: usize,
}

/// `provider:error`:
///
/// ```json
/// {"provider": "openai", "module": "provider-openai", "model": "gpt-4o",
///  "kind": "rate_limit", "status": 429, "message": "<the API's own message>",
///  "error": "openai: <message> (HTTP 429)", "retryable": true,
///  "retrying": true, "attempt": 1, "max_attempts": 4, "wait_ms": 1000,
///  "retry_after_ms": 1000}
/// ```
///
/// Amplifier's `provider:error` carries `error`; the other keys are arbor's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderErrorEvent {
    /// Provider id (`openai`, `anthropic`, …).
    pub provider: String,
    /// `provider-openai`, `provider-anthropic`, ….
    pub module: String,
    /// The model asked for.
    pub model: String,
    /// What failed, in snake case (`auth`, `rate_limit`, …).
    pub kind: ProviderErrorKind,
    /// The HTTP status; `null` without one (connection errors, in-stream errors).
    pub status: Option<u16>,
    /// The API's own message (else a description of the failure).
    pub message: String,
    /// The full error text: `provider: message (HTTP n)`.
    pub error: String,
    /// Whether a fresh attempt may succeed.
    pub retryable: bool,
    /// Whether a retry is pending (`false` in the final event of a failed call).
    pub retrying: bool,
    /// The attempt that failed, 1-based.
    pub attempt: u32,
    /// Most attempts per call.
    pub max_attempts: u32,
    /// While retrying: milliseconds before the next attempt; `null` in the final event.
    pub wait_ms: Option<u64>,
    /// The server's requested wait (`retry-after` / `retry-after-ms`) in milliseconds,
    /// or `null`.
    pub retry_after_ms: Option<u64>,
}

/// `provider:warning` (arbor's own event and keys): a model call completed, but its
/// stream held pieces that could not be read and were skipped (SSE events whose data
/// is not the API's JSON, lines that are not SSE):
///
/// ```json
/// {"provider": "openai", "model": "gpt-4o",
///  "message": "3 malformed stream events skipped",
///  "malformed_events": 3, "first_malformed": "{not json"}
/// ```
///
/// A call where nothing else arrived fails instead (`provider:error`, kind `stream`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProviderWarningEvent {
    /// Provider id (mount name).
    pub provider: String,
    /// The model asked for.
    pub model: String,
    /// The warning for people: `N malformed stream events skipped`.
    pub message: String,
    /// How many pieces were skipped.
    pub malformed_events: u64,
    /// The first of them (at most 100 characters, scrubbed of credentials).
    pub first_malformed: String,
}

/// What a `content_block:delta` streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeltaKind {
    /// Answer text.
    #[default]
    Text,
    /// Thinking (reasoning) text.
    Thinking,
}

/// `content_block:delta`: `{delta, kind}` — `kind` is `text` or `thinking`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContentBlockDeltaEvent {
    /// The streamed text piece.
    pub delta: String,
    /// `text` or `thinking`.
    pub kind: DeltaKind,
}
