//! How engine commands end: [`TurnOutcome`] for a turn that ran, [`EngineError`] for a
//! command stopped before its turn.
//!
//! Owns: those two types, shared by `runtime`, `turn`, `spawn`, `providers` and
//! `root_plan`. Does not own: producing them (those files) or showing them (`cli`,
//! `tui`).

use crate::session::ids::SessionId;
use crate::session::ids::ToolCallId;
use crate::session::{SessionStatus, StoreError};

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub session_id: SessionId,
    pub agent: String,
    pub status: SessionStatus,
    /// The final assistant text of the turn (partial text when failed/cancelled).
    pub response: String,
    pub turn_count: u32,
    /// The error text when `status` is `Failed`.
    pub error: Option<String>,
}

/// Engine failures that stop a command before a turn runs.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("unknown agent '{name}'. Available agents: {}", available.join(", "))]
    UnknownAgent {
        name: String,
        available: Vec<String>,
    },
    #[error("agent '{name}' is invalid: {reason}")]
    InvalidAgent { name: String, reason: String },
    /// No usable provider; the message says what was looked for and how to configure one.
    #[error("{0}")]
    NoProvider(String),
    /// `Runtime::resolve_approval` for a tool call that does not wait for an answer.
    #[error(
        "no pending approval for tool call '{tool_call_id}' of session '{session_id}' \
         (already answered, cancelled, or never asked)"
    )]
    NoPendingApproval {
        session_id: SessionId,
        tool_call_id: ToolCallId,
    },
    #[error("{0}")]
    Other(String),
    /// A bug: `what` panicked with `message` (also in the log).
    #[error("internal error: {what} panicked: {message}")]
    Panicked { what: String, message: String },
}
