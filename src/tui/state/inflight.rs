//! In-flight streamed replies of every session, kept whether or not its thread is open,
//! so opening a running session shows what streamed before it was opened (the
//! transcript on disk holds only finished messages).
//!
//! Bus events it hears (from the TUI's dispatcher, `state::dispatch`):
//! `content_block:delta` (appends text or thinking); `message:appended` of an
//! assistant message, `session:status` of a turn no longer in progress,
//! `orchestrator:complete` and `session:end` (clear the session's entry).
//!
//! Owns: that bounded buffer. Does not own: the open thread's stream (`stream`) or
//! seeding it (`thread::Thread::seed_stream`, called by the `App`).

use std::collections::HashMap;

use crate::session::protocol::DeltaKind;
use crate::session::{Message, SessionId, SessionStatus};

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
    /// `content_block:delta` of session `id`: the text or thinking it streamed.
    pub fn on_delta(&mut self, id: &SessionId, kind: DeltaKind, delta: &str) {
        if delta.is_empty()
            || (!self.sessions.contains_key(id) && self.sessions.len() >= MAX_INFLIGHT_SESSIONS)
        {
            return;
        }
        let entry = self.sessions.entry(id.clone()).or_default();
        let buf = match kind {
            DeltaKind::Thinking => &mut entry.thinking,
            DeltaKind::Text => &mut entry.text,
        };
        buf.push_str(delta);
        bound(buf);
    }

    /// `message:appended` of session `id`: an assistant message ends the reply.
    pub fn on_appended(&mut self, id: &str, message: &Message) {
        if let Message::Assistant(_) = message {
            self.sessions.remove(id);
        }
    }

    /// `session:status` of session `id`: a turn no longer in progress ends the reply.
    pub fn on_status(&mut self, id: &str, status: SessionStatus) {
        if !status.turn_in_progress() {
            self.sessions.remove(id);
        }
    }

    /// Session `id`'s turn ended (`orchestrator:complete`, `session:end`).
    pub fn end(&mut self, id: &str) {
        self.sessions.remove(id);
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
    use crate::session::protocol::OrchestratorCompleteEvent;
    use crate::session::{EngineEvent, Event};
    use crate::tui::state::dispatch::{Listeners, dispatch};
    use crate::tui::state::tree::SessionTree;
    use serde_json::json;

    fn ev(id: &str, msg: EngineEvent) -> Event {
        Event::new(id, None, msg)
    }

    /// Hands `event` to `s` as the TUI's dispatcher does.
    fn apply(s: &mut InflightStreams, event: &Event) {
        let mut tree = SessionTree::default();
        let listeners = Listeners {
            inflight: Some(s),
            ..Listeners::tree(&mut tree)
        };
        dispatch(event, listeners);
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
        apply(&mut s, &ev("a", text("Hello ")));
        apply(
            &mut s,
            &ev("a", EngineEvent::delta(DeltaKind::Thinking, "hmm")),
        );
        apply(&mut s, &ev("a", text("world")));
        apply(&mut s, &ev("b", text("other")));
        assert_eq!(
            s.get("a"),
            Some(&Inflight {
                text: "Hello world".into(),
                thinking: "hmm".into()
            })
        );
        // A user or tool message does not end the reply; an assistant message does.
        apply(
            &mut s,
            &ev("a", appended(json!({"role": "user", "content": "x"}))),
        );
        assert!(s.get("a").is_some());
        apply(
            &mut s,
            &ev(
                "a",
                appended(json!({"role": "assistant", "content": "Hello world"})),
            ),
        );
        assert!(s.get("a").is_none());
        apply(
            &mut s,
            &ev("b", EngineEvent::status(SessionStatus::Running)),
        );
        assert!(s.get("b").is_some());
        apply(
            &mut s,
            &ev("b", EngineEvent::status(SessionStatus::Cancelled)),
        );
        assert!(s.is_empty());
        apply(&mut s, &ev("a", text("again")));
        apply(
            &mut s,
            &ev(
                "a",
                EngineEvent::OrchestratorComplete(OrchestratorCompleteEvent {
                    status: SessionStatus::Completed,
                    ..Default::default()
                }),
            ),
        );
        assert!(s.is_empty());
    }

    #[test]
    fn text_is_bounded_dropping_whole_old_lines() {
        let mut s = InflightStreams::default();
        let line = format!("{}é\n", "x".repeat(99));
        for _ in 0..(MAX_INFLIGHT_BYTES / line.len() + 50) {
            apply(&mut s, &ev("a", text(&line)));
        }
        let text_a = &s.get("a").unwrap().text;
        assert!(text_a.len() <= MAX_INFLIGHT_BYTES);
        assert!(text_a.len() > MAX_INFLIGHT_BYTES - 2 * line.len());
        assert!(text_a.starts_with('x'), "cut at a line start");
        for i in 0..MAX_INFLIGHT_SESSIONS + 10 {
            apply(&mut s, &ev(&format!("s{i}"), text("y")));
        }
        assert_eq!(s.len(), MAX_INFLIGHT_SESSIONS);
    }
}
