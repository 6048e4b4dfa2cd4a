//! The typed protocol between the engine and its front ends (SPEC §7 "Events",
//! STYLE "One typed protocol").
//!
//! Owns: [`EngineEvent`] — one variant per event a session publishes, each with a
//! payload struct (`lifecycle`, `model`, `tools`, `approvals`, `prompts`); the
//! envelope every event travels in ([`Event`]: `session_id`, `parent_id`,
//! `timestamp`); [`EngineCommand`], what a front end asks of the engine, and
//! [`EngineQuery`], what it asks to read; the process-wide [`EventBus`]; and the JSON
//! forms an event takes when it leaves the process (`wire`): the `events.jsonl` line
//! and the `arbor run --output-format jsonl` object.
//!
//! Does not own: writing `events.jsonl` (`store`), deciding when an event happens
//! (`engine`), or what a front end does with it (`tui`, `cli`).
//!
//! Inside the process nothing here is JSON: publishers build payload structs, front
//! ends match on variants, and a new event is a new variant the compiler makes every
//! `match` handle. Event names and data keys are Amplifier's where Amplifier has the
//! event (its kernel's event names, `hooks-logging`'s log line, `tool-delegate`'s
//! `sub_session_id`/`parent_session_id`); arbor's own events and keys are marked as
//! such on each payload.
//!
//! Coming events (SPEC §11–§13) get their own variants here: transfers
//! (`transfer_to_agent`, §11) and budget pauses (§13).

use crate::session::ids::SessionId;

mod approvals;
mod bus;
mod calls;
mod command;
mod context;
mod event;
mod hooks;
mod lifecycle;
mod model;
mod prompts;
mod query;
mod tools;
mod wire;

#[cfg(test)]
mod tests;

pub use approvals::{
    AllowScope, ApprovalDecision, ApprovalDeniedEvent, ApprovalGrantedEvent, ApprovalRequiredEvent,
    DecisionKind,
};
pub use bus::EventBus;
pub use calls::{TaskInput, TaskResult, TodoItem, TodoStatus, ToolEffect};
pub use command::EngineCommand;
pub use context::{ContextCompactingEvent, ContextCompactionEvent, ContextUsageEvent};
pub use event::EngineEvent;
pub use hooks::{HookOutcome, HookRanEvent};
pub use lifecycle::SessionRebuiltEvent;
pub use lifecycle::{
    CancelCompletedEvent, CancelRequestedEvent, MessageAppendedEvent, OrchestratorCompleteEvent,
    PromptSubmitEvent, SessionBudgetEvent, SessionEndEvent, SessionForkEvent, SessionNoticeEvent,
    SessionRenamedEvent, SessionResumeEvent, SessionStartEvent, SessionStatusEvent,
};
pub use model::{
    ContentBlockDeltaEvent, DeltaKind, ProviderEndpointChangedEvent, ProviderErrorEvent,
    ProviderErrorKind, ProviderRequestEvent, ProviderResponseEvent, ProviderWarningEvent,
    ResolvedModel, Via,
};
pub use prompts::{
    PromptMode, PromptQueuedEvent, PromptSentEvent, PromptUnqueuedEvent, UnqueueReason,
};
pub use query::{EngineQuery, ExportFormat};
pub use tools::{
    AgentTransferEvent, McpServerFailedEvent, TaskAgentCompletedEvent, TaskAgentResumedEvent,
    TaskAgentSpawnedEvent, TaskCallFields, ToolErrorEvent, ToolPostEvent, ToolPreEvent,
};
pub use tools::{ToolResponse, ToolResponseError};
pub use wire::{LogLine, StoredEvent};

/// One event of one session: the envelope every [`EngineEvent`] travels in on the bus.
///
/// Leaves the process in two JSON forms (`wire`): `--output-format jsonl` writes
/// `{"event","session_id","parent_id","timestamp","data"}` (its `Serialize`), and
/// `events.jsonl` gets Amplifier's log line ([`Event::to_log_line`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The publishing session.
    pub session_id: SessionId,
    /// Its parent session, `None` for a root.
    pub parent_id: Option<SessionId>,
    /// When it was published: RFC 3339, UTC.
    pub timestamp: String,
    /// What happened.
    pub msg: EngineEvent,
}

impl Event {
    /// `msg` from session `session_id` (child of `parent_id`), stamped with the
    /// current time.
    pub fn new(session_id: &str, parent_id: Option<&str>, msg: EngineEvent) -> Self {
        Self {
            session_id: session_id.into(),
            parent_id: parent_id.map(SessionId::from),
            timestamp: super::message::now_rfc3339(),
            msg,
        }
    }

    /// Whether this event goes to `events.jsonl`: everything but the live-only
    /// `content_block:delta`, `message:appended` (the message itself is in
    /// `transcript.jsonl`), `context:compacting` (progress; the compaction itself is
    /// logged) and `context:usage` (sent before every model call; the latest value is
    /// in `metadata.json` `context`).
    pub fn is_logged(&self) -> bool {
        // Every variant listed, so a new event is a decision here too.
        match self.msg {
            EngineEvent::ContentBlockDelta(_)
            | EngineEvent::MessageAppended(_)
            | EngineEvent::ContextCompacting(_)
            | EngineEvent::ContextUsage(_) => false,
            EngineEvent::SessionStart(_)
            | EngineEvent::SessionFork(_)
            | EngineEvent::SessionResume(_)
            | EngineEvent::ProviderEndpointChanged(_)
            | EngineEvent::SessionRebuilt(_)
            | EngineEvent::SessionEnd(_)
            | EngineEvent::PromptSubmit(_)
            | EngineEvent::ProviderRequest(_)
            | EngineEvent::ProviderResponse(_)
            | EngineEvent::ProviderError(_)
            | EngineEvent::ProviderWarning(_)
            | EngineEvent::ToolPre(_)
            | EngineEvent::ToolPost(_)
            | EngineEvent::ToolError(_)
            | EngineEvent::TaskAgentSpawned(_)
            | EngineEvent::TaskAgentResumed(_)
            | EngineEvent::TaskAgentCompleted(_)
            | EngineEvent::CancelRequested(_)
            | EngineEvent::CancelCompleted(_)
            | EngineEvent::OrchestratorComplete(_)
            | EngineEvent::ApprovalRequired(_)
            | EngineEvent::ApprovalGranted(_)
            | EngineEvent::ApprovalDenied(_)
            | EngineEvent::SessionStatus(_)
            | EngineEvent::SessionRenamed(_)
            | EngineEvent::PromptQueued(_)
            | EngineEvent::PromptSent(_)
            | EngineEvent::PromptUnqueued(_)
            | EngineEvent::SessionBudget(_)
            | EngineEvent::AgentTransfer(_)
            | EngineEvent::McpServerFailed(_)
            | EngineEvent::SessionNotice(_)
            | EngineEvent::HookRan(_)
            | EngineEvent::ContextCompaction(_) => true,
        }
    }
}
