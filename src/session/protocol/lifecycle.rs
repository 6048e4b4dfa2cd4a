//! Payloads of the session lifecycle events: start, fork, resume, status, prompt,
//! the end of a turn, cancellation, appended messages.
//!
//! Field order is the key order of the JSON `data` object (`serde_json` keeps it), and
//! matches what arbor has always written.

use serde::{Deserialize, Serialize};

use super::model::ResolvedModel;
use crate::session::message::Message;
use crate::session::metadata::{SessionStatus, SessionUsage};

/// `session:start`: `{agent, depth, bundle, model, working_dir}` (`null` when unknown).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionStartEvent {
    /// The root agent's name (the bundle's name when no agent was chosen).
    pub agent: String,
    /// Always 0: a root.
    pub depth: u32,
    /// The bundle the session was built from.
    pub bundle: Option<String>,
    /// `provider/model` the session starts with.
    pub model: Option<String>,
    /// The directory its tools work in.
    pub working_dir: Option<String>,
}

/// `session:fork`: `{parent, agent, depth, resolved_model}`. `parent` is Amplifier's
/// key; `agent`, `depth` and `resolved_model` are arbor's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionForkEvent {
    /// The parent session id (also the envelope's `parent_id`).
    pub parent: String,
    /// The sub-session's agent.
    pub agent: String,
    /// Parent depth + 1.
    pub depth: u32,
    /// The model the sub-session got and why (SPEC §9 precedence). Absent (key
    /// omitted) when not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_model: Option<ResolvedModel>,
}

/// `session:resume`: `{agent, depth, turn_count, status}` as stored before the resume.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionResumeEvent {
    /// The session's agent.
    pub agent: String,
    /// 0 for a root, parent depth + 1 for a sub-session.
    pub depth: u32,
    /// Turns run so far.
    pub turn_count: u32,
    /// The stored status.
    pub status: SessionStatus,
}

/// `session:rebuilt` (arbor's own): a stored root without `config` (Amplifier never
/// writes one for roots) was rebuilt from its recorded `bundle` on resume.
/// `{bundle, note}`: the reference as stored (`null` when none), and — when the
/// bundle is not on this machine and arbor's active bundle stood in — why.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionRebuiltEvent {
    /// `metadata.bundle` as stored (`bundle:foundation`, a name, a URI).
    pub bundle: Option<String>,
    /// Why another bundle stood in; `None` when the recorded one was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SessionRebuiltEvent {
    /// The line front ends show in the thread: `rebuilt from bundle X (no stored
    /// config)`, or the stand-in note.
    pub fn note(&self) -> String {
        match (&self.note, &self.bundle) {
            (Some(note), _) => note.clone(),
            (None, Some(bundle)) => format!("rebuilt from bundle {bundle} (no stored config)"),
            (None, None) => "rebuilt from the active bundle (no stored config)".into(),
        }
    }
}

/// `session:end`: `{status}`, the turn's final status.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionEndEvent {
    /// `completed`, `failed` or `cancelled`.
    pub status: SessionStatus,
}

/// `session:status` (arbor's own): `{status}`, the session's new status.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionStatusEvent {
    /// The status now (as `metadata.json` has it).
    pub status: SessionStatus,
}

/// `session:budget` (arbor's own, issue 14): `{tokens?, cost_usd?, since_tokens,
/// since_cost_usd?}` — the session's budget (tokens are input + output, cost in USD)
/// and its own spend when the current grant started (a resume of a paused session
/// grants one more budget from there). Published when a budget is set or granted.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionBudgetEvent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub since_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_cost_usd: Option<f64>,
}

/// `session:renamed` (arbor's own): `{name}`, the session's new title (metadata
/// `name`): a root's first prompt gave it one, or a person renamed the session.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionRenamedEvent {
    /// The title now (`session::title::title_from` shape: one line, at most 60
    /// characters).
    pub name: String,
}

/// `session:notice` (arbor's own): `{message}`, something about the session a person
/// should know that is neither an error of its turn nor part of its transcript (a
/// remote sub-session's worker cannot see the parent's uncommitted changes; no live
/// worker in its pool). Front ends show it in the session's thread and, headless, on
/// stderr.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionNoticeEvent {
    /// One sentence, for people.
    pub message: String,
}

/// `prompt:submit`: `{prompt}`, the user message of the turn (Amplifier's key).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptSubmitEvent {
    /// The user message text.
    pub prompt: String,
}

/// `orchestrator:complete`: `{status, turn_count, usage, error?}` (Amplifier's `status`
/// and `turn_count`; `usage` and `error` are arbor's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OrchestratorCompleteEvent {
    /// How the turn ended: `completed`, `failed` or `cancelled`.
    pub status: SessionStatus,
    /// Turns run so far, this one included.
    pub turn_count: u32,
    /// The turn's total over its model calls: `{input_tokens, output_tokens,
    /// cache_read_tokens, cache_creation_tokens, cost?}` (`cost` in USD, present only
    /// when some call had a price).
    pub usage: SessionUsage,
    /// Why the turn failed (omitted unless it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `cancel:requested`: `{}`. Published on the session a cancel was aimed at, when it or
/// a descendant had a turn running.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CancelRequestedEvent {}

/// `cancel:completed`: `{}`. Published by every session whose turn ended cancelled.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CancelCompletedEvent {}

/// `message:appended` (arbor's own, live only): `{message}`, the message exactly as
/// appended to `transcript.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageAppendedEvent {
    /// The appended message (user, assistant, tool result or system).
    pub message: Message,
}
