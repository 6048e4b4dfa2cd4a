//! In-flight streamed replies of every session, kept whether or not its thread is open,
//! so opening a running session shows what streamed before it was opened (the
//! transcript on disk holds only finished messages).
//!
//! Bus events read: `content_block:delta` (appends text or thinking);
//! `message:appended` of an assistant message, `session:status` other than `running`,
//! `orchestrator:complete` and `session:end` (clear the session's entry).
//!
//! Owns: that bounded buffer. Does not own: the open thread's stream (`stream`) or
//! seeding it (`thread::Thread::seed_stream`, called by the `App`).

use std::collections::HashMap;

use crate::session::protocol::{
    ContentBlockDeltaEvent, DeltaKind, MessageAppendedEvent, SessionStatusEvent,
};
use crate::session::{EngineEvent, Event, Message, SessionId};

/// Most bytes of streamed text (and, separately, thinking) kept per session; older
/// whole lines are dropped first.
pub const MAX_INFLIGHT_BYTES: usize = 256 * 1024;
/// Most sessions tracked at once (a delta for a new session beyond this is ignored).
pub const MAX_INFLIGHT_SESSIONS: usize = 256;

/// The reply a session is streaming since its last assistant message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inflight {
    /// Streamed text (may have lost its oldest lines past [`MAX_INFLIGHT_BYTES`]).
    pub text: String,
    /// Streamed thinking.
    pub thinking: String,
}

/// In-flight replies by session id.
#[derive(Debug, Clone, Default)]
pub struct InflightStreams {
    sessions: HashMap<SessionId, Inflight>,
}

impl InflightStreams {
    /// Applies one bus event of any session.
    pub fn apply(&mut self, event: &Event) {
        match &event.msg {
            EngineEvent::ContentBlockDelta(ContentBlockDeltaEvent { delta, kind }) => {
                if delta.is_empty()
                    || (!self.sessions.contains_key(&event.session_id)
                        && self.sessions.len() >= MAX_INFLIGHT_SESSIONS)
                {
                    return;
                }
                let entry = self.sessions.entry(event.session_id.clone()).or_default();
                let buf = match kind {
                    DeltaKind::Thinking => &mut entry.thinking,
                    DeltaKind::Text => &mut entry.text,
                };
                buf.push_str(delta);
                bound(buf);
            }
            EngineEvent::MessageAppended(MessageAppendedEvent {
                message: Message::Assistant(_),
            }) => {
                self.sessions.remove(&event.session_id);
            }
            EngineEvent::SessionStatus(SessionStatusEvent { status })
                if !status.turn_in_progress() =>
            {
                self.sessions.remove(&event.session_id);
            }
            EngineEvent::OrchestratorComplete(_) | EngineEvent::SessionEnd(_) => {
                self.sessions.remove(&event.session_id);
            }
            // Neither a streamed piece nor the end of a turn's stream: nothing to keep or drop.
            EngineEvent::SessionStart(_)
            | EngineEvent::SessionFork(_)
            | EngineEvent::SessionResume(_)
            | EngineEvent::ProviderEndpointChanged(_)
            | EngineEvent::SessionRebuilt(_)
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
            | EngineEvent::ApprovalRequired(_)
            | EngineEvent::ApprovalGranted(_)
            | EngineEvent::ApprovalDenied(_)
            | EngineEvent::SessionStatus(_)
            | EngineEvent::SessionRenamed(_)
            | EngineEvent::MessageAppended(_)
            | EngineEvent::PromptQueued(_)
            | EngineEvent::PromptSent(_)
            | EngineEvent::PromptUnqueued(_)
            | EngineEvent::SessionBudget(_)
            | EngineEvent::AgentTransfer(_)
            | EngineEvent::McpServerFailed(_)
            | EngineEvent::SessionNotice(_)
            | EngineEvent::HookRan(_)
            | EngineEvent::ContextCompaction(_)
            | EngineEvent::ContextUsage(_) => {}
        }
    }

    /// What session `id` has streamed since its last assistant message.
    pub fn get(&self, id: &str) -> Option<&Inflight> {
        self.sessions.get(id)
    }

    /// Number of sessions with buffered text.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

/// Drops the oldest bytes of `buf` beyond [`MAX_INFLIGHT_BYTES`], at a line start when
/// one follows within 4 KiB, else at a char boundary.
fn bound(buf: &mut String) {
    if buf.len() <= MAX_INFLIGHT_BYTES {
        return;
    }
    let mut cut = buf.len() - MAX_INFLIGHT_BYTES;
    while !buf.is_char_boundary(cut) {
        cut += 1;
    }
    let end = (cut + 4096).min(buf.len());
    if let Some(nl) = buf.as_bytes()[cut..end].iter().position(|b| *b == b'\n') {
        cut += nl + 1;
    }
    buf.drain(..cut);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionStatus;
    use crate::session::protocol::OrchestratorCompleteEvent;
    use serde_json::json;

    fn ev(id: &str, msg: EngineEvent) -> Event {
        Event::new(id, None, msg)
    }

    fn text(delta: &str) -> EngineEvent {
        EngineEvent::delta(DeltaKind::Text, delta)
    }

    fn appended(message: serde_json::Value) -> EngineEvent {
        EngineEvent::appended(serde_json::from_value(message).unwrap())
    }

    #[test]
    fn keeps_text_until_the_assistant_message_or_the_end_of_the_turn() {
        let mut s = InflightStreams::default();
        s.apply(&ev("a", text("Hello ")));
        s.apply(&ev("a", EngineEvent::delta(DeltaKind::Thinking, "hmm")));
        s.apply(&ev("a", text("world")));
        s.apply(&ev("b", text("other")));
        assert_eq!(
            s.get("a"),
            Some(&Inflight {
                text: "Hello world".into(),
                thinking: "hmm".into()
            })
        );
        // A user or tool message does not end the reply; an assistant message does.
        s.apply(&ev("a", appended(json!({"role": "user", "content": "x"}))));
        assert!(s.get("a").is_some());
        s.apply(&ev(
            "a",
            appended(json!({"role": "assistant", "content": "Hello world"})),
        ));
        assert!(s.get("a").is_none());
        s.apply(&ev("b", EngineEvent::status(SessionStatus::Running)));
        assert!(s.get("b").is_some());
        s.apply(&ev("b", EngineEvent::status(SessionStatus::Cancelled)));
        assert!(s.is_empty());
        s.apply(&ev("a", text("again")));
        s.apply(&ev(
            "a",
            EngineEvent::OrchestratorComplete(OrchestratorCompleteEvent {
                status: SessionStatus::Completed,
                ..Default::default()
            }),
        ));
        assert!(s.is_empty());
    }

    #[test]
    fn text_is_bounded_dropping_whole_old_lines() {
        let mut s = InflightStreams::default();
        let line = format!("{}é\n", "x".repeat(99));
        for _ in 0..(MAX_INFLIGHT_BYTES / line.len() + 50) {
            s.apply(&ev("a", text(&line)));
        }
        let text_a = &s.get("a").unwrap().text;
        assert!(text_a.len() <= MAX_INFLIGHT_BYTES);
        assert!(text_a.len() > MAX_INFLIGHT_BYTES - 2 * line.len());
        assert!(text_a.starts_with('x'), "cut at a line start");
        for i in 0..MAX_INFLIGHT_SESSIONS + 10 {
            s.apply(&ev(&format!("s{i}"), text("y")));
        }
        assert_eq!(s.len(), MAX_INFLIGHT_SESSIONS);
    }
}
