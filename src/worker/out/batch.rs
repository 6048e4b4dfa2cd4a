//! The coalescing rule of a job's stream to its root (issue 38 item 8): streamed
//! `content_block:delta` events go out at most once per [`FLUSH_AFTER`], consecutive
//! ones of one session and one kind (text or thinking) joined into one delta whose text
//! is theirs, so a 3,000-word answer crosses NATS in a few messages per second of
//! streaming instead of one per token.
//!
//! Owns: [`Batch`] — a delta after a pause goes out at once (the root sees the first
//! words without delay, as a worker that wakes up sends at once); the ones that follow
//! within [`FLUSH_AFTER`] of it are held and joined, and go out when that time is up
//! ([`Batch::due`]) or when they reach [`FLUSH_BYTES`]. Anything that is not such a
//! delta lets the held one out first, so the order of what the root applies never
//! changes; the root cannot tell a joined delta from a streamed one (it appends each
//! delta's text). Does not own: publishing (`pipe`), the clock (the caller passes
//! `now`).

use std::time::{Duration, Instant};

use crate::session::protocol::{ContentBlockDeltaEvent, DeltaKind};
use crate::session::{EngineEvent, Event};

/// How often streamed deltas go out at most: the root sees text at least this often
/// while a model streams.
pub(crate) const FLUSH_AFTER: Duration = Duration::from_millis(50);
/// The size (bytes of delta text) at which a held delta goes out at once.
pub(crate) const FLUSH_BYTES: usize = 24 * 1024;

/// What is held back of a job's event stream (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// The delta being joined: its first event (session, parent, timestamp, kind)
    /// with the text so far.
    held: Option<Event>,
    /// When a delta last went out.
    last_out: Option<Instant>,
}

impl Batch {
    /// Takes `event` at `now`; returns what is to be published now, in order (empty
    /// while a delta is held: until it is full or due, even when deltas keep coming).
    pub fn push(&mut self, event: Event, now: Instant) -> Vec<Event> {
        let mut out = Vec::new();
        let Some((kind, text)) = delta_of(&event) else {
            out.extend(self.take(now));
            out.push(event);
            return out;
        };
        match &mut self.held {
            Some(held) if joins(held, &event, kind) => {
                if let EngineEvent::ContentBlockDelta(d) = &mut held.msg {
                    d.delta.push_str(text);
                }
            }
            _ => {
                out.extend(self.take(now));
                if self.last_out.is_none_or(|last| now >= last + FLUSH_AFTER) {
                    self.last_out = Some(now);
                    out.push(event);
                    return out;
                }
                self.held = Some(event);
            }
        }
        if self.held_bytes() >= FLUSH_BYTES || self.due().is_some_and(|due| now >= due) {
            out.extend(self.take(now));
        }
        out
    }

    /// When the held delta must go out ([`FLUSH_AFTER`] after the last delta that
    /// went out); `None` when nothing is held.
    pub fn due(&self) -> Option<Instant> {
        let last = self.last_out?;
        self.held.as_ref().map(|_| last + FLUSH_AFTER)
    }

    /// The held delta, if any, to be published at `now`.
    pub fn take(&mut self, now: Instant) -> Option<Event> {
        let held = self.held.take()?;
        self.last_out = Some(now);
        Some(held)
    }

    fn held_bytes(&self) -> usize {
        self.held
            .as_ref()
            .and_then(delta_of)
            .map_or(0, |(_, text)| text.len())
    }
}

/// The kind and text of a `content_block:delta`.
fn delta_of(event: &Event) -> Option<(DeltaKind, &str)> {
    match &event.msg {
        EngineEvent::ContentBlockDelta(ContentBlockDeltaEvent { delta, kind }) => {
            Some((*kind, delta))
        }
        _ => None,
    }
}

/// Whether delta `next` (of `kind`) continues the held delta `held`: the same session
/// (and parent) and the same kind.
fn joins(held: &Event, next: &Event, kind: DeltaKind) -> bool {
    held.session_id == next.session_id
        && held.parent_id == next.parent_id
        && delta_of(held).is_some_and(|(k, _)| k == kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionStatus;
    use crate::session::protocol::SessionStatusEvent;

    fn delta(session: &str, kind: DeltaKind, text: &str) -> Event {
        Event::new(
            session,
            Some("parent"),
            EngineEvent::ContentBlockDelta(ContentBlockDeltaEvent {
                delta: text.into(),
                kind,
            }),
        )
    }

    fn status(session: &str) -> Event {
        Event::new(
            session,
            Some("parent"),
            EngineEvent::SessionStatus(SessionStatusEvent {
                status: SessionStatus::Completed,
            }),
        )
    }

    fn text_of(event: &Event) -> (DeltaKind, String) {
        let (kind, text) = delta_of(event).expect("a delta");
        (kind, text.to_string())
    }

    #[test]
    fn a_delta_after_a_pause_goes_out_at_once_and_the_next_ones_join() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut batch = Batch::default();
        let out = batch.push(delta("s", DeltaKind::Text, "Hel"), t0);
        assert_eq!(text_of(&out[0]), (DeltaKind::Text, "Hel".into()), "at once");
        assert!(
            batch
                .push(delta("s", DeltaKind::Text, "lo "), ms(10))
                .is_empty()
        );
        assert!(
            batch
                .push(delta("s", DeltaKind::Text, "world"), ms(20))
                .is_empty()
        );
        assert_eq!(
            batch.due(),
            Some(t0 + FLUSH_AFTER),
            "due from the last one out"
        );
        // A status event lets the joined delta out first: the order is kept.
        let out = batch.push(status("s"), ms(30));
        assert_eq!(out.len(), 2);
        assert_eq!(text_of(&out[0]), (DeltaKind::Text, "lo world".into()));
        assert!(matches!(out[1].msg, EngineEvent::SessionStatus(_)));
        assert_eq!(batch.due(), None, "nothing held");
        assert!(batch.take(ms(30)).is_none());
        // Within FLUSH_AFTER of that one the next delta waits; after it, it does not.
        assert!(
            batch
                .push(delta("s", DeltaKind::Text, "!"), ms(40))
                .is_empty()
        );
        assert_eq!(batch.due(), Some(ms(30) + FLUSH_AFTER));
        assert_eq!(text_of(&batch.take(ms(80)).unwrap()).1, "!");
        assert_eq!(
            batch.push(delta("s", DeltaKind::Text, "?"), ms(200)).len(),
            1
        );
    }

    #[test]
    fn another_kind_or_session_starts_a_new_delta() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(10);
        let mut batch = Batch::default();
        batch.push(delta("s", DeltaKind::Thinking, "h"), t0);
        assert!(
            batch
                .push(delta("s", DeltaKind::Thinking, "mm"), t0)
                .is_empty()
        );
        let out = batch.push(delta("s", DeltaKind::Text, "So"), t1);
        assert_eq!(out.len(), 1);
        assert_eq!(text_of(&out[0]), (DeltaKind::Thinking, "mm".into()));
        assert_eq!(batch.due(), Some(t1 + FLUSH_AFTER), "held from the flush");
        let out = batch.push(delta("grandchild", DeltaKind::Text, "x"), t1);
        assert_eq!(text_of(&out[0]), (DeltaKind::Text, "So".into()));
        assert_eq!(out[0].session_id, "s");
        let last = batch.take(t1).unwrap();
        assert_eq!(last.session_id, "grandchild");
    }

    #[test]
    fn a_full_delta_goes_out_at_once_and_nothing_is_lost() {
        let t0 = Instant::now();
        let mut batch = Batch::default();
        let word = "word ".repeat(100);
        let mut sizes = Vec::new();
        let mut published = String::new();
        for _ in 0..1000 {
            for event in batch.push(delta("s", DeltaKind::Text, &word), t0) {
                let (_, text) = text_of(&event);
                sizes.push(text.len());
                published.push_str(&text);
            }
        }
        if let Some(last) = batch.take(t0) {
            published.push_str(&text_of(&last).1);
        }
        assert_eq!(published, word.repeat(1000), "every piece, in order");
        assert_eq!(sizes[0], word.len(), "the first piece at once");
        assert!(
            sizes[1..]
                .iter()
                .all(|n| (FLUSH_BYTES..FLUSH_BYTES + word.len()).contains(n)),
            "{sizes:?}"
        );
        assert!(
            sizes.len() <= 1 + 1000 * word.len() / FLUSH_BYTES,
            "{sizes:?}"
        );
    }

    #[test]
    fn a_delta_that_comes_when_the_held_one_is_due_goes_out_with_it() {
        let t0 = Instant::now();
        let mut batch = Batch::default();
        assert_eq!(batch.push(delta("s", DeltaKind::Text, "a"), t0).len(), 1);
        let early = t0 + FLUSH_AFTER - Duration::from_millis(1);
        assert!(
            batch
                .push(delta("s", DeltaKind::Text, "b"), early)
                .is_empty()
        );
        let out = batch.push(delta("s", DeltaKind::Text, "c"), t0 + FLUSH_AFTER);
        assert_eq!(out.len(), 1);
        assert_eq!(text_of(&out[0]), (DeltaKind::Text, "bc".into()));
        assert_eq!(batch.due(), None);
    }

    #[test]
    fn the_joined_delta_keeps_the_first_pieces_stamp() {
        let t0 = Instant::now();
        let mut batch = Batch::default();
        batch.push(delta("s", DeltaKind::Text, "a"), t0);
        let first = delta("s", DeltaKind::Text, "b");
        let stamp = first.timestamp.clone();
        batch.push(first, t0);
        batch.push(delta("s", DeltaKind::Text, "c"), t0);
        let joined = batch.take(t0).unwrap();
        assert_eq!(text_of(&joined).1, "bc");
        assert_eq!(joined.timestamp, stamp);
        assert_eq!(joined.parent_id.as_deref(), Some("parent"));
    }
}
