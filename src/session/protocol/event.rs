//! [`EngineEvent`]: every event a session publishes, by its wire name.
//!
//! Owns: the variant list, each variant's name (`session:start`, …) and which payload
//! it carries. Does not own: the payload fields (`lifecycle`, `model`, `tools`,
//! `approvals`) or the
//! JSON envelopes (`wire`).

use serde::{Deserialize, Serialize};

use crate::session::message::Message;
use crate::session::metadata::SessionStatus;

use super::approvals::{ApprovalDeniedEvent, ApprovalGrantedEvent, ApprovalRequiredEvent};
use super::context::{ContextCompactingEvent, ContextCompactionEvent, ContextUsageEvent};
use super::hooks::HookRanEvent;
use super::lifecycle::SessionRebuiltEvent;
use super::lifecycle::{
    CancelCompletedEvent, CancelRequestedEvent, MessageAppendedEvent, OrchestratorCompleteEvent,
    PromptSubmitEvent, SessionBudgetEvent, SessionEndEvent, SessionForkEvent, SessionNoticeEvent,
    SessionRenamedEvent, SessionResumeEvent, SessionStartEvent, SessionStatusEvent,
};
use super::model::{
    ContentBlockDeltaEvent, DeltaKind, ProviderEndpointChangedEvent, ProviderErrorEvent,
    ProviderRequestEvent, ProviderResponseEvent, ProviderWarningEvent,
};
use super::prompts::{PromptQueuedEvent, PromptSentEvent, PromptUnqueuedEvent};
use super::tools::{
    AgentTransferEvent, McpServerFailedEvent, TaskAgentCompletedEvent, TaskAgentResumedEvent,
    TaskAgentSpawnedEvent, ToolErrorEvent, ToolPostEvent, ToolPreEvent,
};

/// Declares [`EngineEvent`] from one `"name" => Variant(Payload)` line per event, so
/// the name, the variant and the payload are written once: the enum (its serde tag is
/// the name), [`EngineEvent::name`], [`EngineEvent::NAMES`] and [`Data`] (the payload
/// alone, as `data` in both JSON forms).
macro_rules! engine_events {
    ($( $(#[$doc:meta])* $name:literal => $variant:ident($payload:ty), )+) => {
        /// Everything a session publishes on the [`EventBus`](super::EventBus), one
        /// variant per event (SPEC §7; names as Amplifier writes them, arbor's own
        /// marked). Each carries its payload; the session, parent and time are on the
        /// [`Event`](super::Event) envelope.
        ///
        /// `Deserialize` reads `{"event": name, "data": {…}}` (both wire forms contain
        /// it), so stored lines can be read back; unknown data keys are ignored.
        #[derive(Debug, Clone, PartialEq, Deserialize)]
        #[serde(tag = "event", content = "data")]
        pub enum EngineEvent {
            $( $(#[$doc])* #[serde(rename = $name)] $variant($payload), )+
        }

        impl EngineEvent {
            /// Every event name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// The event's name as written to `events.jsonl` and jsonl output
            /// (`session:start`, `tool:pre`, …).
            pub fn name(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => $name, )+
                }
            }
        }

        impl Serialize for Data<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self.0 {
                    $( EngineEvent::$variant(payload) => payload.serialize(s), )+
                }
            }
        }
    };
}

/// An event's payload alone: the `data` object of both JSON forms.
pub(super) struct Data<'a>(pub &'a EngineEvent);

engine_events! {
    /// A root session was created (Amplifier `session:start`).
    "session:start" => SessionStart(SessionStartEvent),
    /// A sub-session was created by a task call; published by the child (Amplifier
    /// `session:fork`, `{parent}`).
    "session:fork" => SessionFork(SessionForkEvent),
    /// A stored session was loaded to run again (Amplifier `session:resume`).
    "session:resume" => SessionResume(SessionResumeEvent),
    /// arbor's own: a resumed session's provider endpoint follows the current config
    /// or environment, away from the one stored with it.
    "provider:endpoint_changed" => ProviderEndpointChanged(ProviderEndpointChangedEvent),
    /// arbor's own: a stored root without `config` (an Amplifier root) was rebuilt
    /// from its recorded bundle, or from the active one standing in (with a note).
    "session:rebuilt" => SessionRebuilt(SessionRebuiltEvent),
    /// A turn ended (Amplifier `session:end`; arbor treats each turn as one Amplifier
    /// run of the session, so a session can end many times).
    "session:end" => SessionEnd(SessionEndEvent),
    /// The user message of a turn was appended (Amplifier `prompt:submit`).
    "prompt:submit" => PromptSubmit(PromptSubmitEvent),
    /// A model call is about to be sent (Amplifier `provider:request`).
    "provider:request" => ProviderRequest(ProviderRequestEvent),
    /// A model call completed, with its usage (Amplifier `provider:response`).
    "provider:response" => ProviderResponse(ProviderResponseEvent),
    /// A model call failed: a retry is pending (`retrying: true`) or it failed for
    /// good (Amplifier `provider:error`).
    "provider:error" => ProviderError(ProviderErrorEvent),
    /// arbor's own: a model call completed but skipped malformed pieces of its stream.
    "provider:warning" => ProviderWarning(ProviderWarningEvent),
    /// Streamed text or thinking (Amplifier `content_block:delta`). Live only: never
    /// written to `events.jsonl`.
    "content_block:delta" => ContentBlockDelta(ContentBlockDeltaEvent),
    /// A tool call is about to run (Amplifier `tool:pre`).
    "tool:pre" => ToolPre(ToolPreEvent),
    /// A tool call returned a result (Amplifier `tool:post`).
    "tool:post" => ToolPost(ToolPostEvent),
    /// A tool call returned an error result (Amplifier `tool:error`).
    "tool:error" => ToolError(ToolErrorEvent),
    /// The task tool spawned a sub-session; published by the parent (Amplifier
    /// `task:agent_spawned`; `tool-delegate` writes `delegate:agent_spawned`).
    "task:agent_spawned" => TaskAgentSpawned(TaskAgentSpawnedEvent),
    /// The task tool resumed a sub-session; published by the parent (Amplifier
    /// `task:agent_resumed`).
    "task:agent_resumed" => TaskAgentResumed(TaskAgentResumedEvent),
    /// A sub-session's turn ended; published by the parent (Amplifier
    /// `task:agent_completed`).
    "task:agent_completed" => TaskAgentCompleted(TaskAgentCompletedEvent),
    /// A cancel reached a session with a running turn (Amplifier `cancel:requested`).
    "cancel:requested" => CancelRequested(CancelRequestedEvent),
    /// A turn ended cancelled (Amplifier `cancel:completed`).
    "cancel:completed" => CancelCompleted(CancelCompletedEvent),
    /// The turn loop finished (Amplifier `orchestrator:complete`).
    "orchestrator:complete" => OrchestratorComplete(OrchestratorCompleteEvent),
    /// A tool call waits for a person's approval (Amplifier `approval:required`).
    "approval:required" => ApprovalRequired(ApprovalRequiredEvent),
    /// A waiting (or policy-checked) tool call was allowed (Amplifier
    /// `approval:granted`).
    "approval:granted" => ApprovalGranted(ApprovalGrantedEvent),
    /// A tool call was denied and does not run (Amplifier `approval:denied`).
    "approval:denied" => ApprovalDenied(ApprovalDeniedEvent),
    /// arbor's own: the session's status changed.
    "session:status" => SessionStatus(SessionStatusEvent),
    /// arbor's own: the session got a title (metadata `name`).
    "session:renamed" => SessionRenamed(SessionRenamedEvent),
    /// arbor's own: a note for people about the session (see [`SessionNoticeEvent`]).
    "session:notice" => SessionNotice(SessionNoticeEvent),
    /// arbor's own: a whole message was appended to the transcript. Live only.
    "message:appended" => MessageAppended(MessageAppendedEvent),
    /// arbor's own: a message for the session's running turn waits in its inbox (a
    /// steer for the next model call, or a queued turn).
    "prompt:queued" => PromptQueued(PromptQueuedEvent),
    /// arbor's own: a steered or queued message was appended as a user message.
    "prompt:sent" => PromptSent(PromptSentEvent),
    /// arbor's own: a steered or queued message left the inbox unsent (removed by a
    /// person, or returned when its turn was cancelled or failed).
    "prompt:unqueued" => PromptUnqueued(PromptUnqueuedEvent),
    /// arbor's own: the session's budget was set or granted again (issue 14).
    "session:budget" => SessionBudget(SessionBudgetEvent),
    /// arbor's own: `transfer_to_agent` handed the session to another agent of its
    /// tree (SPEC §11).
    "agent:transfer" => AgentTransfer(AgentTransferEvent),
    /// arbor's own: an MCP server the session mounts is not available (it could
    /// not start or answer `initialize`); the turn goes on without its tools.
    "mcp:server_failed" => McpServerFailed(McpServerFailedEvent),
    /// arbor's own: a configured hook command ran (or was refused), with its outcome
    /// (issue 29, Claude Code's hook contract).
    "hook:ran" => HookRan(HookRanEvent),
    /// The session's request view was compacted to fit its context limit (Amplifier
    /// `context:compaction`, `context-simple`'s keys plus arbor's own; issue 26).
    "context:compaction" => ContextCompaction(ContextCompactionEvent),
    /// arbor's own: a compaction started its summary call. Live only.
    "context:compacting" => ContextCompacting(ContextCompactingEvent),
    /// arbor's own: how full the session's context is before a model call. Live only.
    "context:usage" => ContextUsage(ContextUsageEvent),
}

impl EngineEvent {
    /// `session:status` with `status`.
    pub fn status(status: SessionStatus) -> Self {
        Self::SessionStatus(SessionStatusEvent { status })
    }

    /// `content_block:delta` streaming `delta` as `kind`.
    pub fn delta(kind: DeltaKind, delta: impl Into<String>) -> Self {
        Self::ContentBlockDelta(ContentBlockDeltaEvent {
            delta: delta.into(),
            kind,
        })
    }

    /// `message:appended` with `message`.
    pub fn appended(message: Message) -> Self {
        Self::MessageAppended(MessageAppendedEvent { message })
    }
}
