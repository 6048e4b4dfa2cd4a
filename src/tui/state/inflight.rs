//! In-flight streamed replies of every session, kept whether or not its thread is open,
//! so opening a running session shows what streamed before it was opened (the
//! transcript on disk holds only finished messages).
//!
//! Bus events read: `content_block:delta` `{delta|text, kind|block_type}` (appends);
//! `message:appended` of an assistant message, `session:status` other than `running`,
//! `orchestrator:complete` and `session:end` (clear the session's entry).
//!
//! Owns: that bounded buffer. Does not own: the open thread's stream (`stream`) or
//! seeding it (`thread::Thread::seed_stream`, called by the `App`).

use std::collections::HashMap;

use serde_json::Value;

use crate::session::Event;
use crate::session::events::names;

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
    sessions: HashMap<String, Inflight>,
}

impl InflightStreams {
    /// Applies one bus event of any session.
    pub fn apply(&mut self, event: &Event) {
        let data = &event.data;
        match event.event.as_str() {
            names::CONTENT_BLOCK_DELTA => {
                let Some(delta) = str_of(data, "delta").or_else(|| str_of(data, "text")) else {
                    return;
                };
                let kind = str_of(data, "kind").or_else(|| str_of(data, "block_type"));
                if !matches!(kind, None | Some("text" | "thinking")) || delta.is_empty() {
                    return;
                }
                if !self.sessions.contains_key(&event.session_id)
                    && self.sessions.len() >= MAX_INFLIGHT_SESSIONS
                {
                    return;
                }
                let entry = self.sessions.entry(event.session_id.clone()).or_default();
                let buf = if kind == Some("thinking") {
                    &mut entry.thinking
                } else {
                    &mut entry.text
                };
                buf.push_str(delta);
                bound(buf);
            }
            names::MESSAGE_APPENDED => {
                let role = data
                    .get("message")
                    .and_then(|m| m.get("role"))
                    .and_then(Value::as_str);
                if role == Some("assistant") {
                    self.sessions.remove(&event.session_id);
                }
            }
            names::SESSION_STATUS if str_of(data, "status").is_some_and(|s| s != "running") => {
                self.sessions.remove(&event.session_id);
            }
            names::ORCHESTRATOR_COMPLETE | names::SESSION_END => {
                self.sessions.remove(&event.session_id);
            }
            _ => {}
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

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
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
    use serde_json::json;

    fn ev(name: &str, id: &str, data: Value) -> Event {
        Event::new(name, id, None, data)
    }

    #[test]
    fn keeps_text_until_the_assistant_message_or_the_end_of_the_turn() {
        let mut s = InflightStreams::default();
        let delta = |t: &str, k: &str| {
            ev(
                names::CONTENT_BLOCK_DELTA,
                "a",
                json!({"delta": t, "kind": k}),
            )
        };
        s.apply(&delta("Hello ", "text"));
        s.apply(&delta("hmm", "thinking"));
        s.apply(&delta("world", "text"));
        s.apply(&ev(
            names::CONTENT_BLOCK_DELTA,
            "b",
            json!({"delta": "other"}),
        ));
        assert_eq!(
            s.get("a"),
            Some(&Inflight {
                text: "Hello world".into(),
                thinking: "hmm".into()
            })
        );
        // A user or tool message does not end the reply; an assistant message does.
        s.apply(&ev(
            names::MESSAGE_APPENDED,
            "a",
            json!({"message": {"role": "user", "content": "x"}}),
        ));
        assert!(s.get("a").is_some());
        s.apply(&ev(
            names::MESSAGE_APPENDED,
            "a",
            json!({"message": {"role": "assistant", "content": "Hello world"}}),
        ));
        assert!(s.get("a").is_none());
        s.apply(&ev(
            names::SESSION_STATUS,
            "b",
            json!({"status": "running"}),
        ));
        assert!(s.get("b").is_some());
        s.apply(&ev(
            names::SESSION_STATUS,
            "b",
            json!({"status": "cancelled"}),
        ));
        assert!(s.is_empty());
        s.apply(&delta("again", "text"));
        s.apply(&ev(
            names::ORCHESTRATOR_COMPLETE,
            "a",
            json!({"status": "success"}),
        ));
        assert!(s.is_empty());
    }

    #[test]
    fn text_is_bounded_dropping_whole_old_lines() {
        let mut s = InflightStreams::default();
        let line = format!("{}é\n", "x".repeat(99));
        for _ in 0..(MAX_INFLIGHT_BYTES / line.len() + 50) {
            s.apply(&ev(names::CONTENT_BLOCK_DELTA, "a", json!({"delta": line})));
        }
        let text = &s.get("a").unwrap().text;
        assert!(text.len() <= MAX_INFLIGHT_BYTES);
        assert!(text.len() > MAX_INFLIGHT_BYTES - 2 * line.len());
        assert!(text.starts_with('x'), "cut at a line start");
        for i in 0..MAX_INFLIGHT_SESSIONS + 10 {
            s.apply(&ev(
                names::CONTENT_BLOCK_DELTA,
                &format!("s{i}"),
                json!({"delta": "y"}),
            ));
        }
        assert_eq!(s.len(), MAX_INFLIGHT_SESSIONS);
    }
}
