//! How engine commands end: [`TurnOutcome`] for a turn that ran (with its
//! [`TurnError`] when it failed), [`EngineError`] for a command stopped before its
//! turn.
//!
//! Owns: those two types (and [`ExportError`], the export file's failures), shared by `handle`, `runtime`, `turn`, `spawn`, `providers`
//! and `root_plan`. Does not own: producing them (those files) or showing them (`cli`,
//! `tui`).

use std::path::{Path, PathBuf};

use super::panics::Panic;
use crate::provider::ProviderError;
use crate::session::ids::{IdShape, SessionId, ToolCallId};
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
    /// Why the turn failed, when `status` is `Failed` (carried whole; its text is what
    /// `orchestrator:complete` `data.error` and the front ends show).
    pub error: Option<TurnError>,
}

/// Why a turn that ran ended `failed` (SPEC §8): the turn's own failure, never one
/// that kept it from starting ([`EngineError`]). Its text is the wire's
/// `orchestrator:complete` `data.error`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TurnError {
    /// A model call failed for good (after its retries).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The turn loop panicked (a bug; the session is left resumable).
    #[error("internal error: the turn panicked: {0}")]
    Panicked(Panic),
    /// Tool calls of the turn panicked: each one's `<what>: <message>`.
    #[error("internal error: {}", .0.join("; "))]
    ToolsPanicked(Vec<String>),
    /// A `UserPromptSubmit` hook blocked the turn's prompt (issue 29); `reason` is
    /// the hook's (its stderr, or JSON `reason`).
    #[error("blocked by a UserPromptSubmit hook: {reason}")]
    HookBlocked { reason: String },
    /// A remote sub-session's run failed on its worker or on the way there (issue 27):
    /// the text says which ("remote sub-session: cannot reach NATS at <url>: …").
    #[error("{0}")]
    Remote(String),
    /// The turn made `max_iterations` model calls without a final answer.
    #[error(
        "stopped after {max_iterations} model calls (max_iterations) without a final \
         answer; raise session.orchestrator.config.max_iterations or send another \
         message to continue"
    )]
    MaxIterations { max_iterations: u32 },
    /// The agent the turn was handed to (`agent:transfer`) could not be set up.
    /// The request could not be fitted to the context limit (issue 26: the newest
    /// turn alone is too large, or the summary call failed); `reason` names which.
    #[error("{reason}")]
    ContextLimit { reason: String },
    #[error("agent '{name}' cannot answer: {reason}")]
    AgentUnavailable { name: String, reason: String },
    /// The session's files could not be written during the turn (`persist`, the
    /// store's error text), after the turn's own failure when there was one.
    #[error("{}{persist}", failure.as_ref().map(|e| format!("{e}; ")).unwrap_or_default())]
    NotSaved {
        failure: Option<Box<TurnError>>,
        persist: String,
    },
}

/// Engine failures that stop a command before a turn runs.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A worktree operation failed (`git` could not run or answered an error).
    #[error(transparent)]
    Isolation(#[from] crate::isolation::IsolationError),
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
    /// A file the engine writes for a front end (`/export`) could not be written.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// A background task of `what` ended without an answer (cancelled or panicked
    /// before it could reply).
    #[error("{what} failed: {message}")]
    TaskFailed { what: &'static str, message: String },
    /// A person's model choice (`--model`, `/model`, `SetModel`) cannot be used.
    #[error(transparent)]
    Model(#[from] ModelChoiceError),
    /// A title with no visible character (`Runtime::rename`).
    #[error("a session title needs at least one visible character")]
    EmptyTitle,
    /// `Runtime::unqueue` of a message that no longer waits.
    #[error("message {id} of session '{session_id}' no longer waits (already sent or removed)")]
    NotWaiting { session_id: String, id: u64 },
    /// A turn was asked of a session already running one.
    #[error("session '{session_id}' is already running a turn; wait for it or cancel it")]
    Busy { session_id: SessionId },
    /// No session of project `project` (its sessions under `sessions`) has the id or
    /// prefix `id` a person typed (`EngineQuery::ResolveSession`, issue 23 item 10):
    /// the text is [`not_found_text`].
    #[error("{}", not_found_text(id, project, sessions))]
    SessionNotFound {
        id: String,
        project: PathBuf,
        sessions: PathBuf,
    },
    #[error("{0}")]
    Other(String),
    /// A bug: `what` panicked with `message` (also in the log).
    #[error("internal error: {what} panicked: {message}")]
    Panicked { what: String, message: Panic },
}

/// A missing session said in full: the SPEC §7 sentence for a sub-session id (the
/// store's), else that no root or no session has that id or prefix; either way which
/// project was searched (`project`, its sessions under `sessions`) and how to look in
/// the others.
pub fn not_found_text(id: &str, project: &Path, sessions: &Path) -> String {
    let first = match IdShape::of(id) {
        IdShape::Sub { .. } => StoreError::NotFound(id.to_string()).to_string(),
        IdShape::Root { .. } => format!("Root session '{id}' not found."),
        IdShape::Other => format!("No session id or short id starts with '{id}'."),
    };
    format!(
        "{first} Looked among the sessions of project {} ({}); for every project's \
         sessions: arbor session list --all-projects",
        project.display(),
        sessions.display()
    )
}

/// Why an export file could not be written (nothing is left behind then).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// No temp file could be made in the target directory.
    #[error("cannot write in {}: {source}", dir.display())]
    Dir {
        dir: std::path::PathBuf,
        source: std::io::Error,
    },
    /// Writing or syncing the temp file failed.
    #[error("cannot write the export: {0}")]
    Write(std::io::Error),
    /// The finished file could not be put under its name.
    #[error("cannot write {}: {source}", path.display())]
    Persist {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// `arbor-export-<short>.md` and its 998 numbered variants all exist.
    #[error("{}: every arbor-export-{short}*.md name is taken", dir.display())]
    NamesTaken {
        dir: std::path::PathBuf,
        short: String,
    },
}

/// Why a model choice (`MODEL`, `PROVIDER/MODEL` or a glob; `engine::model_choice`)
/// cannot be used; each message starts with the choice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelChoiceError {
    /// The choice is empty.
    #[error("a model choice needs a model name (MODEL or PROVIDER/MODEL)")]
    Empty,
    /// A glob's provider mount is not in the plan.
    #[error("model {choice}: no provider {mount}")]
    NoProvider { choice: String, mount: String },
    /// The chosen provider is not configured (not in the session's plan).
    #[error("model {choice}: provider {provider} is not configured")]
    NotConfigured { choice: String, provider: String },
    /// The provider cannot be built (`reason`: the provider's error text).
    #[error("model {choice}: {reason}")]
    Build { choice: String, reason: String },
    /// A glob needs the provider's model list, which failed (`reason`).
    #[error("model {choice}: cannot list models ({reason})")]
    CannotList { choice: String, reason: String },
    /// A glob matches none of the `listed` models of `mount`.
    #[error(
        "model {choice}: no match among the {} {mount} lists",
        if *listed == 1 { "1 model".to_string() } else { format!("{listed} models") }
    )]
    NoMatch {
        choice: String,
        mount: String,
        listed: usize,
    },
}
