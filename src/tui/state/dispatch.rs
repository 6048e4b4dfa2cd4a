//! The TUI's one dispatcher over the engine's events (issue 36 item 2, codex's
//! `dispatch_event_msg`): a single exhaustive `match` over [`EngineEvent`], no
//! wildcard, whose arms call the typed handlers of the states that care — the session
//! tree, the in-flight streams, the waiting messages, the open thread, the approval
//! prompts and the wall. A new event is one arm here, which the compiler asks for; no
//! state keeps a list of the events it ignores.
//!
//! Owns: which state hears which event, and in which order (the tree first, since
//! the wall reads it). Does not own: what a state does with an event (its handlers),
//! or what the `App` does besides ([`Heard`]: a message given back, a model learned).

use jiff::Timestamp;

use super::approvals::ApprovalQueue;
use super::error_card::ProviderFailure;
use super::inflight::InflightStreams;
use super::pending::{PendingPrompts, Unqueued};
use super::thread::Thread;
use super::tree::SessionTree;
use super::wall::Wall;
use crate::session::protocol::DeltaKind;
use crate::session::{EngineEvent, Event};
use crate::tui::clock::parse_ts;
use crate::tui::theme::Theme;

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

/// Hands `event` to the states in `to` that care; what the `App` does besides.
pub fn dispatch(event: &Event, to: Listeners<'_>) -> Heard {
    let Listeners {
        tree,
        mut inflight,
        mut pending,
        thread,
        mut approvals,
        mut wall,
    } = to;
    let id = &event.session_id;
    let at = parse_ts(&event.timestamp);
    let mut heard = Heard::default();
    tree.seen(event);
    // The open thread when the event is its session's (`own`), else the thread whose
    // task cards may show the session (`other`).
    let (mut own, mut other) = match thread {
        Some(OpenThread { thread, theme }) if thread.session_id.as_deref() == Some(id.as_str()) => {
            (Some((thread, theme)), None)
        }
        Some(OpenThread { thread, .. }) => (None, Some(thread)),
        None => (None, None),
    };
    match &event.msg {
        EngineEvent::SessionStart(start) => {
            tree.on_start(id, start);
            if let Some((t, _)) = own.as_mut() {
                t.on_start(start);
            }
        }
        EngineEvent::SessionFork(fork) => tree.on_fork(id, fork),
        EngineEvent::SessionResume(resume) => tree.on_resume(id, resume),
        EngineEvent::ProviderEndpointChanged(changed) => notice(&mut own, &changed.note()),
        EngineEvent::SessionRebuilt(rebuilt) => notice(&mut own, &rebuilt.note()),
        EngineEvent::ProviderWarning(warning) => {
            notice(
                &mut own,
                &format!("{} ({})", warning.message, warning.provider),
            );
        }
        EngineEvent::McpServerFailed(failed) => notice(&mut own, &failed.note()),
        EngineEvent::SessionNotice(session_notice) => notice(&mut own, &session_notice.message),
        EngineEvent::HookRan(ran) => notice(&mut own, &ran.note()),
        EngineEvent::SessionEnd(_) => {
            if let Some(s) = inflight.as_deref_mut() {
                s.end(id);
            }
            if let Some((q, now)) = approvals.as_mut() {
                heard.approvals_changed |= q.on_turn_ended(id, *now);
            }
        }
        // Shown nowhere: a turn's own start, its model requests (their response
        // counts), a delegation's end (its `tool:post` carries the result), a cancel
        // asked for (its `cancel:completed` ends the turn).
        EngineEvent::PromptSubmit(_)
        | EngineEvent::ProviderRequest(_)
        | EngineEvent::TaskAgentCompleted(_)
        | EngineEvent::CancelRequested(_) => {}
        EngineEvent::ProviderResponse(response) => {
            tree.on_response(id, response);
            if event.parent_id.is_none() || own.is_some() {
                heard.model = Some((response.provider.clone(), response.model.clone()));
            }
        }
        EngineEvent::ProviderError(error) => {
            if let Some((t, _)) = own.as_mut() {
                t.push_failure(ProviderFailure::from(error));
            }
        }
        EngineEvent::ContentBlockDelta(d) => {
            heard.streamed = true;
            if let Some(s) = inflight.as_deref_mut() {
                s.on_delta(id, d.kind, &d.delta);
            }
            if let Some((t, theme)) = own.as_mut() {
                t.on_delta(d.kind, &d.delta, theme);
            }
            if let Some(w) = wall.as_deref_mut()
                && d.kind == DeltaKind::Text
            {
                w.on_text(id, &d.delta, tree);
            }
        }
        EngineEvent::ToolPre(pre) => {
            if let Some((t, _)) = own.as_mut() {
                t.on_tool_pre(pre);
            }
            if let Some(w) = wall.as_deref_mut() {
                w.on_tool(id, &pre.tool_name, tree);
            }
        }
        EngineEvent::ToolPost(post) => {
            tree.on_tool_post(id, post.effect.as_ref());
            if let Some((t, _)) = own.as_mut() {
                t.on_tool_post(post);
            }
        }
        EngineEvent::ToolError(error) => {
            if let Some((t, _)) = own.as_mut() {
                t.on_tool_error(error);
            }
        }
        EngineEvent::TaskAgentSpawned(spawned) => {
            if let Some((t, _)) = own.as_mut() {
                t.on_sub_session(&spawned.tool_call_id, &spawned.sub_session_id);
            }
        }
        EngineEvent::TaskAgentResumed(resumed) => {
            if let Some((t, _)) = own.as_mut() {
                t.on_sub_session(&resumed.tool_call_id, &resumed.sub_session_id);
            }
        }
        EngineEvent::CancelCompleted(_) => {
            if let Some((q, now)) = approvals.as_mut() {
                heard.approvals_changed |= q.on_turn_ended(id, *now);
            }
            if let Some((t, _)) = own.as_mut() {
                t.on_cancelled();
            }
        }
        EngineEvent::OrchestratorComplete(done) => {
            tree.on_status(id, done.status, at);
            if let Some(s) = inflight.as_deref_mut() {
                s.end(id);
            }
            if let Some((q, now)) = approvals.as_mut() {
                heard.approvals_changed |= q.on_turn_ended(id, *now);
            }
            match (own.as_mut(), other.as_deref_mut()) {
                (Some((t, _)), _) => t.on_complete(done),
                (None, Some(t)) => {
                    t.set_child_status(id, done.status);
                }
                (None, None) => {}
            }
        }
        EngineEvent::ApprovalRequired(request) => {
            if let Some((q, now)) = approvals.as_mut() {
                heard.approvals_changed |= q.on_required(id, request, *now);
            }
        }
        EngineEvent::ApprovalGranted(granted) => {
            if let Some((q, now)) = approvals.as_mut() {
                heard.approvals_changed |= q.on_answered(id, &granted.tool_call_id, *now);
            }
        }
        EngineEvent::ApprovalDenied(denied) => {
            if let Some((q, now)) = approvals.as_mut() {
                heard.approvals_changed |= q.on_answered(id, &denied.tool_call_id, *now);
            }
        }
        EngineEvent::SessionStatus(s) => {
            tree.on_status(id, s.status, at);
            if let Some(streams) = inflight.as_deref_mut() {
                streams.on_status(id, s.status);
            }
            match (own.as_mut(), other) {
                (Some((t, _)), _) => t.on_status(s.status),
                (None, Some(t)) => {
                    t.set_child_status(id, s.status);
                }
                (None, None) => {}
            }
        }
        EngineEvent::SessionRenamed(renamed) => tree.set_title(id, &renamed.name),
        EngineEvent::MessageAppended(appended) => {
            tree.on_appended(id, &appended.message);
            if let Some(s) = inflight {
                s.on_appended(id, &appended.message);
            }
            if let Some((t, _)) = own.as_mut() {
                t.append_live(&appended.message);
            }
        }
        EngineEvent::PromptQueued(queued) => {
            if let Some(p) = pending.as_deref_mut() {
                p.on_queued(id, queued);
            }
        }
        EngineEvent::PromptSent(sent) => {
            if let Some(p) = pending.as_deref_mut() {
                p.on_sent(id, sent);
            }
        }
        EngineEvent::PromptUnqueued(unqueued) => {
            heard.unqueued = pending.map(|p| p.on_unqueued(id, unqueued));
        }
        EngineEvent::SessionBudget(budget) => tree.on_budget(id, *budget),
        EngineEvent::AgentTransfer(transfer) => {
            if let Some((t, _)) = own.as_mut() {
                t.on_transfer(transfer);
            }
        }
        EngineEvent::ContextCompaction(compaction) => {
            tree.on_compaction(id, compaction);
            if let Some((t, _)) = own.as_mut() {
                t.push_compaction(compaction);
            }
        }
        EngineEvent::ContextUsage(usage) => tree.on_context_usage(id, usage),
    }
    if heard.approvals_changed
        && let Some((q, _)) = &approvals
    {
        tree.set_waiting(q.waiting_sessions());
    }
    // Any event of a running session below the wall's gives it a tile (after the
    // tree took the event: its status may have just changed).
    if let Some(w) = wall {
        w.join(id, tree);
    }
    heard
}

/// A notice in the open thread, when the event is its session's.
fn notice(own: &mut Option<(&mut Thread, &Theme)>, text: &str) {
    if let Some((t, _)) = own.as_mut() {
        t.push_notice(text);
    }
}
