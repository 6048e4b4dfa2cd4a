//! The TUI's one dispatcher over the engine's events (issue 36 item 2, codex's
//! `dispatch_event_msg`): a single exhaustive `match` over [`EngineEvent`], no
//! wildcard, whose arms call the typed handlers of the states that care — the session
//! tree, the in-flight streams, the waiting messages, the open thread, the approval
//! prompts and the wall. A new event is one arm here, which the compiler asks for; no
//! state keeps a list of the events it ignores.
//!
//! Owns: which state hears which event, and in which order (the tree first, since
//! the wall reads it; `delivery` hands an event to several states). Does not own:
//! what a state does with an event (its handlers), or what the `App` does besides
//! ([`Heard`]: a message given back, a model learned).

use jiff::Timestamp;

use super::approvals::ApprovalQueue;
use super::inflight::InflightStreams;
use super::pending::{PendingPrompts, Unqueued};
use super::thread::Thread;
use super::tree::SessionTree;
use super::wall::Wall;
use crate::session::{EngineEvent, Event};
use crate::tui::clock::parse_ts;
use crate::tui::theme::Theme;
use delivery::Delivery;

mod delivery;

/// The open thread and the theme its cells are laid out with.
pub struct OpenThread<'a> {
    /// The thread (it hears its own session's events; a task card hears its child's
    /// status).
    pub thread: &'a mut Thread,
    /// The theme streamed text is laid out with.
    pub theme: &'a Theme,
}

/// The states an event may change. `None`: not there (the wall is closed, no thread
/// is open, or a test feeds one state alone).
pub struct Listeners<'a> {
    /// The session tree: every event names a session it learns of.
    pub tree: &'a mut SessionTree,
    /// What running sessions streamed since their last assistant message.
    pub inflight: Option<&'a mut InflightStreams>,
    /// The steered and queued messages waiting in sessions' inboxes.
    pub pending: Option<&'a mut PendingPrompts>,
    /// The open thread.
    pub thread: Option<OpenThread<'a>>,
    /// The approval prompts waiting, and now (a prompt's answer grace starts when it
    /// comes to the front).
    pub approvals: Option<(&'a mut ApprovalQueue, Timestamp)>,
    /// The wall's tiles, while it is open.
    pub wall: Option<&'a mut Wall>,
}

impl<'a> Listeners<'a> {
    /// `tree` alone.
    pub fn tree(tree: &'a mut SessionTree) -> Self {
        Self {
            tree,
            inflight: None,
            pending: None,
            thread: None,
            approvals: None,
            wall: None,
        }
    }
}

/// What the `App` does with an event beyond the states: its own follow-ups.
#[derive(Debug, Default)]
pub struct Heard {
    /// A message a `prompt:unqueued` took out of an inbox unsent (the `App` gives it
    /// back to the composer).
    pub unqueued: Option<Unqueued>,
    /// `(provider, model)` a `provider:response` of a root or of the open thread's
    /// session named (the status bar's label learns it).
    pub model: Option<(String, String)>,
    /// The approval queue changed (the tree's waiting marks already follow it).
    pub approvals_changed: bool,
    /// A streamed piece (`content_block:delta`): who needs the person cannot have
    /// changed.
    pub streamed: bool,
}

/// Hands `event` to the states in `to` that care; what the `App` does besides. One
/// arm per event, each one handler: a state's own, or the [`Delivery`]'s for an
/// event more than one state (or the open thread) hears.
pub fn dispatch(event: &Event, to: Listeners<'_>) -> Heard {
    let id = &event.session_id;
    let at = parse_ts(&event.timestamp);
    let mut d = Delivery::new(id, to);
    d.tree.seen(event);
    match &event.msg {
        EngineEvent::SessionStart(start) => d.start(start),
        EngineEvent::SessionFork(fork) => d.tree.on_fork(id, fork),
        EngineEvent::SessionResume(resume) => d.tree.on_resume(id, resume),
        EngineEvent::ProviderEndpointChanged(changed) => d.notice(&changed.note()),
        EngineEvent::SessionRebuilt(rebuilt) => d.notice(&rebuilt.note()),
        EngineEvent::ProviderWarning(w) => d.notice(&format!("{} ({})", w.message, w.provider)),
        EngineEvent::McpServerFailed(failed) => d.notice(&failed.note()),
        EngineEvent::SessionNotice(notice) => d.notice(&notice.message),
        EngineEvent::HookRan(ran) => d.notice(&ran.note()),
        EngineEvent::SessionEnd(_) => d.ended(),
        // Shown nowhere: a turn's own start, its model requests (their response
        // counts), a delegation's end (its `tool:post` carries the result), a cancel
        // asked for (its `cancel:completed` ends the turn).
        EngineEvent::PromptSubmit(_)
        | EngineEvent::ProviderRequest(_)
        | EngineEvent::TaskAgentCompleted(_)
        | EngineEvent::CancelRequested(_) => {}
        EngineEvent::ProviderResponse(response) => d.response(response, event.parent_id.is_none()),
        EngineEvent::ProviderError(error) => d.provider_error(error),
        EngineEvent::ContentBlockDelta(delta) => d.delta(delta),
        EngineEvent::ToolPre(pre) => d.tool_pre(pre),
        EngineEvent::ToolPost(post) => d.tool_post(post),
        EngineEvent::ToolError(error) => d.tool_error(error),
        EngineEvent::TaskAgentSpawned(s) => {
            d.sub_session(&s.tool_call_id, &s.sub_session_id, &s.agent)
        }
        EngineEvent::TaskAgentResumed(r) => {
            d.sub_session(&r.tool_call_id, &r.sub_session_id, &r.agent)
        }
        EngineEvent::CancelCompleted(_) => d.cancelled(),
        EngineEvent::OrchestratorComplete(done) => d.complete(done, at),
        EngineEvent::ApprovalRequired(request) => d.approval_required(request),
        EngineEvent::ApprovalGranted(granted) => d.approval_answered(&granted.tool_call_id),
        EngineEvent::ApprovalDenied(denied) => d.approval_answered(&denied.tool_call_id),
        EngineEvent::SessionStatus(s) => d.status(s.status, at),
        EngineEvent::SessionRenamed(renamed) => d.tree.set_title(id, &renamed.name),
        EngineEvent::MessageAppended(appended) => d.appended(&appended.message),
        EngineEvent::PromptQueued(queued) => d.queued(queued),
        EngineEvent::PromptSent(sent) => d.sent(sent),
        EngineEvent::PromptUnqueued(unqueued) => d.unqueued(unqueued),
        EngineEvent::SessionBudget(budget) => d.tree.on_budget(id, *budget),
        EngineEvent::AgentTransfer(transfer) => d.transfer(transfer),
        EngineEvent::ContextCompaction(compaction) => d.compaction(compaction),
        EngineEvent::ContextCompacting(compacting) => d.compacting(compacting),
        EngineEvent::ContextUsage(usage) => d.tree.on_context_usage(id, usage),
    }
    d.finish()
}
