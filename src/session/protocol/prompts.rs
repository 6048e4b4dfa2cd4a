//! Payloads of the steer and queue events (arbor's own, SPEC §13 "Steer and queue"):
//! a message a person sent to a session whose turn runs waits in that session's
//! inbox (`prompt:queued`) until it is appended to the transcript as a plain user
//! message (`prompt:sent`) or taken back unsent (`prompt:unqueued`).
//!
//! Field order is the key order of the JSON `data` object.

use serde::{Deserialize, Serialize};

/// How a waiting message reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptMode {
    /// Appended before the running turn's next model call (after pending tool
    /// results), so the model sees it in the same turn; when the turn ends first it
    /// starts the next turn at once.
    #[default]
    Steer,
    /// Sent as a turn of its own, in order, after the running turn ends.
    Queue,
}

impl PromptMode {
    /// `steer` or `queue`, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptMode::Steer => "steer",
            PromptMode::Queue => "queue",
        }
    }
}

/// Why a waiting message was taken back without being sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnqueueReason {
    /// A person removed it (or took it back into the composer to edit it).
    #[default]
    Removed,
    /// The turn it waited for ended cancelled or failed: nothing more is sent on its
    /// own, and the front end gives the text back to the person.
    Returned,
}

/// `prompt:queued` (arbor's own): `{id, mode, prompt}` — a message waits in the
/// session's inbox for its running turn.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PromptQueuedEvent {
    /// Its number in this session's inbox (from 1, unique per session for the life of
    /// the process): what `EngineCommand::Unqueue` names.
    pub id: u64,
    /// Steer (this turn) or queue (a turn of its own).
    pub mode: PromptMode,
    /// The text, verbatim.
    pub prompt: String,
    /// Its place among the queued messages (0 = sent next); absent for a steer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
}

/// `prompt:sent` (arbor's own): `{id, mode, prompt}` — a waiting message was appended
/// to the transcript as a plain user message (a steer before a model call of the
/// running turn; a queued message, or a steer the turn ended before, as the first
/// message of a new turn, followed by that turn's `prompt:submit`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PromptSentEvent {
    /// Its inbox number (`prompt:queued` `id`).
    pub id: u64,
    /// How it was sent.
    pub mode: PromptMode,
    /// The text, verbatim.
    pub prompt: String,
}

/// `prompt:unqueued` (arbor's own): `{id, mode, prompt, reason}` — a waiting message
/// left the inbox unsent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PromptUnqueuedEvent {
    /// Its inbox number (`prompt:queued` `id`).
    pub id: u64,
    /// How it would have been sent.
    pub mode: PromptMode,
    /// The text, verbatim (a front end gives a `returned` one back to the person).
    pub prompt: String,
    /// `removed` or `returned`.
    pub reason: UnqueueReason,
}
