//! [`Delivery`]: one event on its way to the states that care, with a typed handler
//! per kind of event that reaches more than one state (or that needs the open
//! thread): the dispatcher's arms each call one of these, or one state's handler.
//!
//! Owns: which states a handler hands its event to, and what the `App` hears from it.
//! Does not own: which handler an event goes to (the dispatcher's one `match`), or
//! what a state does with it (the states' own handlers).

use jiff::Timestamp;

use super::{Heard, Listeners, OpenThread};
use crate::session::message::Message;
use crate::session::protocol::{
    AgentTransferEvent, ApprovalRequiredEvent, ContentBlockDeltaEvent, ContextCompactingEvent,
    ContextCompactionEvent, DeltaKind, OrchestratorCompleteEvent, PromptQueuedEvent,
    PromptSentEvent, PromptUnqueuedEvent, ProviderErrorEvent, ProviderResponseEvent,
    SessionStartEvent, ToolErrorEvent, ToolPostEvent, ToolPreEvent,
};
use crate::session::{SessionId, SessionStatus};
use crate::tui::state::approvals::ApprovalQueue;
use crate::tui::state::error_card::ProviderFailure;
use crate::tui::state::inflight::InflightStreams;
use crate::tui::state::pending::PendingPrompts;
use crate::tui::state::thread::Thread;
use crate::tui::state::tree::SessionTree;
use crate::tui::state::wall::Wall;
use crate::tui::theme::Theme;

/// An event of session `id` being handed out: the states it may change, the open
/// thread split by whether the event is its session's, and what the `App` hears.
pub(super) struct Delivery<'e, 'a> {
    /// The session the event is about.
    pub id: &'e SessionId,
    /// The session tree (every event names a session it learns of).
    pub tree: &'a mut SessionTree,
    inflight: Option<&'a mut InflightStreams>,
    pending: Option<&'a mut PendingPrompts>,
    /// The open thread when the event is its session's.
    own: Option<(&'a mut Thread, &'a Theme)>,
    /// Else the open thread, whose task cards may show the session.
    other: Option<&'a mut Thread>,
    approvals: Option<(&'a mut ApprovalQueue, Timestamp)>,
    wall: Option<&'a mut Wall>,
    heard: Heard,
}

impl<'e, 'a> Delivery<'e, 'a> {
    /// The delivery of an event of session `id` to `to`.
    pub fn new(id: &'e SessionId, to: Listeners<'a>) -> Self {
        let Listeners {
            tree,
            inflight,
            pending,
            thread,
            approvals,
            wall,
        } = to;
        let (own, other) = match thread {
            Some(OpenThread { thread, theme })
                if thread.session_id.as_deref() == Some(id.as_str()) =>
            {
                (Some((thread, theme)), None)
            }
            Some(OpenThread { thread, .. }) => (None, Some(thread)),
            None => (None, None),
        };
        Self {
            id,
            tree,
            inflight,
            pending,
            own,
            other,
            approvals,
            wall,
            heard: Heard::default(),
        }
    }

    /// The open thread, when the event is its session's.
    pub fn own(&mut self) -> Option<&mut Thread> {
        self.own.as_mut().map(|(thread, _)| &mut **thread)
    }

    /// A notice in the open thread, when the event is its session's.
    pub fn notice(&mut self, text: &str) {
        if let Some(t) = self.own() {
            t.push_notice(text);
        }
    }

    /// `provider:error`: the open thread's error card.
    pub fn provider_error(&mut self, error: &ProviderErrorEvent) {
        if let Some(t) = self.own() {
            t.push_failure(ProviderFailure::from(error));
        }
    }

    /// `tool:error`: the open thread's tool cell.
    pub fn tool_error(&mut self, error: &ToolErrorEvent) {
        if let Some(t) = self.own() {
            t.on_tool_error(error);
        }
    }

    /// `agent:transfer`: the open thread's note of the new agent.
    pub fn transfer(&mut self, transfer: &AgentTransferEvent) {
        if let Some(t) = self.own() {
            t.on_transfer(transfer);
        }
    }

    /// `session:start`: the tree's new node, the open thread's header.
    pub fn start(&mut self, start: &SessionStartEvent) {
        self.tree.on_start(self.id, start);
        if let Some(t) = self.own() {
            t.on_start(start);
        }
    }

    /// `session:end`: the session's streams end; its approvals stop waiting.
    pub fn ended(&mut self) {
        if let Some(s) = self.inflight.as_deref_mut() {
            s.end(self.id);
        }
        self.turn_ended();
    }

    /// `provider:response`: the tree's tokens and cost; the model the status bar
    /// learns, when the session is a root (`is_root`) or the open thread's.
    pub fn response(&mut self, response: &ProviderResponseEvent, is_root: bool) {
        self.tree.on_response(self.id, response);
        if is_root || self.own.is_some() {
            self.heard.model = Some((response.provider.clone(), response.model.clone()));
        }
    }

    /// `content_block:delta`: the streams, the open thread's tail and the wall's tile.
    pub fn delta(&mut self, d: &ContentBlockDeltaEvent) {
        self.heard.streamed = true;
        if let Some(s) = self.inflight.as_deref_mut() {
            s.on_delta(self.id, d.kind, &d.delta);
        }
        if let Some((t, theme)) = self.own.as_mut() {
            t.on_delta(d.kind, &d.delta, theme);
        }
        if let Some(w) = self.wall.as_deref_mut()
            && d.kind == DeltaKind::Text
        {
            w.on_text(self.id, &d.delta, self.tree);
        }
    }

    /// `tool:pre`: the open thread's tool cell, the wall's tile.
    pub fn tool_pre(&mut self, pre: &ToolPreEvent) {
        if let Some(t) = self.own() {
            t.on_tool_pre(pre);
        }
        if let Some(w) = self.wall.as_deref_mut() {
            w.on_tool(self.id, &pre.tool_name, self.tree);
        }
    }

    /// `tool:post`: the tree learns the call's effect; the open thread its result.
    pub fn tool_post(&mut self, post: &ToolPostEvent) {
        self.tree.on_tool_post(self.id, post.effect.as_ref());
        if let Some(t) = self.own() {
            t.on_tool_post(post);
        }
    }

    /// `task:agent_spawned` / `task:agent_resumed`: the open thread's task card of
    /// call `tool_call_id` shows `child` (of `agent`).
    pub fn sub_session(&mut self, tool_call_id: &str, child: &SessionId, agent: &str) {
        let order = self.own().map(|t| {
            t.on_sub_session(tool_call_id, child, agent);
            t.task_children()
        });
        // The tree lists the children as the thread shows their calls.
        if let Some(order) = order {
            self.tree.set_thread_order(self.id, &order);
        }
    }

    /// `cancel:completed`: the session's approvals stop waiting; the open thread
    /// says it was cancelled.
    pub fn cancelled(&mut self) {
        self.turn_ended();
        if let Some(t) = self.own() {
            t.on_cancelled();
        }
    }

    /// `orchestrator:complete`: the tree's status, the streams end, approvals stop
    /// waiting, and the open thread (or its task card of the session) says how.
    pub fn complete(&mut self, done: &OrchestratorCompleteEvent, at: Option<Timestamp>) {
        self.tree.on_status(self.id, done.status, at);
        if let Some(s) = self.inflight.as_deref_mut() {
            s.end(self.id);
        }
        self.turn_ended();
        if let Some(t) = self.own() {
            t.on_complete(done);
        } else if let Some(t) = self.other.as_deref_mut() {
            t.set_child_status(self.id, done.status);
        }
    }

    /// `session:status`: the tree, the streams, and the open thread (or its task card
    /// of the session).
    pub fn status(&mut self, status: SessionStatus, at: Option<Timestamp>) {
        self.tree.on_status(self.id, status, at);
        if let Some(streams) = self.inflight.as_deref_mut() {
            streams.on_status(self.id, status);
        }
        if let Some(t) = self.own() {
            t.on_status(status);
        } else if let Some(t) = self.other.as_deref_mut() {
            t.set_child_status(self.id, status);
        }
    }

    /// `approval:required`: the queue gets the request.
    pub fn approval_required(&mut self, request: &ApprovalRequiredEvent) {
        if let Some((q, now)) = self.approvals.as_mut() {
            self.heard.approvals_changed |= q.on_required(self.id, request, *now);
        }
    }

    /// `approval:granted` / `approval:denied` of `tool_call_id`: its prompt goes.
    pub fn approval_answered(&mut self, tool_call_id: &str) {
        if let Some((q, now)) = self.approvals.as_mut() {
            self.heard.approvals_changed |= q.on_answered(self.id, tool_call_id, *now);
        }
    }

    /// `message:appended`: the tree, the streams (the message replaces what
    /// streamed) and the open thread.
    pub fn appended(&mut self, message: &Message) {
        self.tree.on_appended(self.id, message);
        if let Some(s) = self.inflight.as_deref_mut() {
            s.on_appended(self.id, message);
        }
        if let Some(t) = self.own() {
            t.append_live(message);
        }
    }

    /// `prompt:queued`: a waiting message more.
    pub fn queued(&mut self, queued: &PromptQueuedEvent) {
        if let Some(p) = self.pending.as_deref_mut() {
            p.on_queued(self.id, queued);
        }
    }

    /// `prompt:sent`: a waiting message less.
    pub fn sent(&mut self, sent: &PromptSentEvent) {
        if let Some(p) = self.pending.as_deref_mut() {
            p.on_sent(self.id, sent);
        }
    }

    /// `prompt:unqueued`: out of the waiting messages, and given back to the `App`.
    pub fn unqueued(&mut self, unqueued: &PromptUnqueuedEvent) {
        let id = self.id;
        self.heard.unqueued = self
            .pending
            .as_deref_mut()
            .map(|p| p.on_unqueued(id, unqueued));
    }

    /// `context:compacting`: the open thread says a summary is being written.
    pub fn compacting(&mut self, compacting: &ContextCompactingEvent) {
        if let Some(t) = self.own() {
            t.push_compacting(compacting);
        }
    }

    /// `context:compaction`: the tree's context figures, the open thread's note.
    pub fn compaction(&mut self, compaction: &ContextCompactionEvent) {
        self.tree.on_compaction(self.id, compaction);
        if let Some(t) = self.own() {
            t.push_compaction(compaction);
        }
    }

    /// What the `App` hears, once the tree knows who waits for an approval and the
    /// wall has a tile for a running session below it (after the tree took the event:
    /// its status may have just changed).
    pub fn finish(self) -> Heard {
        if self.heard.approvals_changed
            && let Some((q, _)) = &self.approvals
        {
            self.tree.set_waiting(q.waiting_sessions());
        }
        if let Some(w) = self.wall {
            w.join(self.id, self.tree);
        }
        self.heard
    }

    /// The session's turn ended: its approval prompts stop waiting.
    fn turn_ended(&mut self) {
        if let Some((q, now)) = self.approvals.as_mut() {
            self.heard.approvals_changed |= q.on_turn_ended(self.id, *now);
        }
    }
}
