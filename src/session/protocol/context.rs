//! Payloads of the context events (issue 26): `context:compaction`,
//! `context:compacting` and `context:usage`.
//!
//! Owns: their typed fields and JSON keys. Does not own: deciding when a session
//! compacts or how (`engine::compact`), nor how front ends show it (`tui`, `cli`).

use serde::{Deserialize, Serialize};

/// `context:compaction` (Amplifier's name; `context-simple` emits it with the same
/// `before_tokens`, `after_tokens`, `before_messages`, `after_messages`,
/// `messages_removed`, `messages_truncated`, `strategy_level`, `budget` and
/// `target_tokens` keys). arbor's own keys: `summary`, `covers`, `stubbed_before`,
/// `at_message`, `trigger`, `focus`, `summary_tokens`, `duration_ms`.
///
/// The event is also the record a resumed session reads back to send the same
/// compacted request view (`engine::compact::record`): the request view is
/// `[summary as a user message] + transcript[covers..]`, with the bodies of tool
/// results at transcript index `< stubbed_before` replaced by a one-line stub.
/// `transcript.jsonl` itself is never changed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContextCompactionEvent {
    /// Estimated tokens of the request view before this compaction.
    pub before_tokens: u64,
    /// Estimated tokens of the request view after it.
    pub after_tokens: u64,
    /// Messages in the request view before.
    pub before_messages: u64,
    /// Messages in the request view after (the summary counts as one).
    pub after_messages: u64,
    /// Transcript messages replaced by the summary in this compaction.
    #[serde(default)]
    pub messages_removed: u64,
    /// Tool results whose bodies were replaced by a stub in this compaction.
    #[serde(default)]
    pub messages_truncated: u64,
    /// 1: tool-result bodies stubbed only; 2: the oldest part also summarised.
    #[serde(default)]
    pub strategy_level: u32,
    /// The context limit (`max_tokens`) the view was fitted to.
    #[serde(default)]
    pub budget: u64,
    /// What the compaction aimed at: `target_usage` (0.5, `context-simple`'s default)
    /// × `budget`.
    #[serde(default)]
    pub target_tokens: u64,
    /// arbor's own: the summary standing in for `transcript[..covers]` (`None` at
    /// level 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// arbor's own: how many transcript messages, from the first, the summary covers.
    #[serde(default)]
    pub covers: u64,
    /// arbor's own: tool results at transcript index below this are sent as stubs.
    #[serde(default)]
    pub stubbed_before: u64,
    /// arbor's own: the transcript's length when the compaction was made (provider
    /// usage of an earlier call measured another view).
    #[serde(default)]
    pub at_message: u64,
    /// arbor's own: `auto` (the threshold was crossed) or `manual` (`/compact`).
    #[serde(default)]
    pub trigger: String,
    /// arbor's own: the focus a person gave `/compact`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// arbor's own: tokens the summary model calls used (input + output; 0 at level 1).
    #[serde(default)]
    pub summary_tokens: u64,
    /// arbor's own: how long the compaction took, in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
}

/// `context:compacting` (arbor's own, live only): a compaction has started writing
/// its summary — a model call that can take tens of seconds on a local model — so
/// front ends say so until `context:compaction` arrives (issue 39 item 6).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContextCompactingEvent {
    /// `auto`, `manual` (`/compact`) or `overflow`.
    pub trigger: String,
    /// Transcript messages the summary will stand in for.
    pub messages: u64,
}

impl ContextCompactingEvent {
    /// One line for people: `compacting the context: summarising 42 messages…`.
    pub fn note(&self) -> String {
        format!(
            "compacting the context: summarising {} messages…",
            self.messages
        )
    }
}

impl ContextCompactionEvent {
    /// One line for people: `context compacted: 3,900 → 1,200 tokens (12 messages
    /// summarised, 3 tool results stubbed)`.
    pub fn note(&self) -> String {
        let mut parts = Vec::new();
        if self.messages_removed > 0 {
            parts.push(format!("{} messages summarised", self.messages_removed));
        }
        if self.messages_truncated > 0 {
            parts.push(format!("{} tool results stubbed", self.messages_truncated));
        }
        let what = if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        };
        format!(
            "context compacted: {} → {} tokens{what}",
            self.before_tokens, self.after_tokens
        )
    }
}

/// `context:usage` (arbor's own, live only): how full the session's context is, sent
/// before each model call: `{tokens, max_tokens, compact_threshold}`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ContextUsageEvent {
    /// Tokens of the request about to be sent (measured usage of the last call plus an
    /// estimate of what was added since, or an estimate of the whole view).
    pub tokens: u64,
    /// The session's context limit.
    pub max_tokens: u64,
    /// The fraction of `max_tokens` at which the session compacts (0.0–1.0).
    pub compact_threshold: f64,
}
