//! A live session's inbox: the messages a person sent while its turn runs (SPEC §13
//! "Steer and queue"), waiting to be appended as plain user messages.
//!
//! Owns: the order of waiting messages and their numbers — steers (all of them go
//! before the running turn's next model call) and queued messages (one turn each, in
//! order, at a chosen place). Does not own: when they are taken (`turn`), the lock
//! around the inbox and the running flag it guards (`live`), or events (`live`).

use std::collections::VecDeque;

use crate::session::protocol::{PromptMode, PromptQueuedEvent};

/// One waiting message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// Its number in this inbox (from 1).
    pub id: u64,
    pub mode: PromptMode,
    /// The text, verbatim.
    pub text: String,
}

/// Steers and queued messages of one session, in the order they will be sent.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    last_id: u64,
    steers: Vec<Pending>,
    queue: VecDeque<Pending>,
}

impl Inbox {
    /// Adds `text` as a steer (`position` ignored) or a queued message at `position`
    /// among the queued ones (`None` or past the end: last). Returns its
    /// `prompt:queued` payload.
    pub fn push(
        &mut self,
        mode: PromptMode,
        text: String,
        position: Option<usize>,
    ) -> PromptQueuedEvent {
        self.last_id += 1;
        let pending = Pending {
            id: self.last_id,
            mode,
            text,
        };
        let position = match mode {
            PromptMode::Steer => {
                self.steers.push(pending.clone());
                None
            }
            PromptMode::Queue => {
                let at = position.unwrap_or(usize::MAX).min(self.queue.len());
                self.queue.insert(at, pending.clone());
                Some(at)
            }
        };
        PromptQueuedEvent {
            id: pending.id,
            mode,
            prompt: pending.text,
            position,
        }
    }

    /// Every steer, oldest first (for the running turn's next model call).
    pub fn take_steers(&mut self) -> Vec<Pending> {
        std::mem::take(&mut self.steers)
    }

    /// What starts the next turn: every steer (the turn they were meant for ended
    /// before its next model call), else the first queued message; empty when nothing
    /// waits.
    pub fn take_next(&mut self) -> Vec<Pending> {
        if !self.steers.is_empty() {
            return self.take_steers();
        }
        self.queue.pop_front().into_iter().collect()
    }

    /// Takes the waiting message `id` out, if it still waits.
    pub fn remove(&mut self, id: u64) -> Option<Pending> {
        if let Some(i) = self.steers.iter().position(|p| p.id == id) {
            return Some(self.steers.remove(i));
        }
        let i = self.queue.iter().position(|p| p.id == id)?;
        self.queue.remove(i)
    }

    /// Everything that waits, steers first, leaving the inbox empty.
    pub fn take_all(&mut self) -> Vec<Pending> {
        let mut all = self.take_steers();
        all.extend(self.queue.drain(..));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(items: &[Pending]) -> Vec<&str> {
        items.iter().map(|p| p.text.as_str()).collect()
    }

    #[test]
    fn steers_go_first_and_together_queued_ones_one_at_a_time_in_place() {
        let mut inbox = Inbox::default();
        let a = inbox.push(PromptMode::Queue, "a".into(), None);
        let b = inbox.push(PromptMode::Queue, "b".into(), None);
        let s1 = inbox.push(PromptMode::Steer, "s1".into(), Some(0));
        inbox.push(PromptMode::Steer, "s2".into(), None);
        let front = inbox.push(PromptMode::Queue, "front".into(), Some(0));
        let mid = inbox.push(PromptMode::Queue, "mid".into(), Some(2));
        assert_eq!((a.id, b.id, s1.id, front.id), (1, 2, 3, 5));
        assert_eq!(
            (a.position, s1.position, front.position),
            (Some(0), None, Some(0))
        );
        assert_eq!(mid.position, Some(2));

        assert_eq!(texts(&inbox.take_next()), ["s1", "s2"]);
        assert_eq!(texts(&inbox.take_next()), ["front"]);
        assert_eq!(texts(&inbox.take_next()), ["a"]);
        assert_eq!(texts(&inbox.take_next()), ["mid"]);
        assert_eq!(texts(&inbox.take_next()), ["b"]);
        assert!(inbox.take_next().is_empty());
    }

    #[test]
    fn a_waiting_message_can_be_removed_once() {
        let mut inbox = Inbox::default();
        let q = inbox.push(PromptMode::Queue, "q".into(), None);
        let s = inbox.push(PromptMode::Steer, "s".into(), None);
        inbox.push(PromptMode::Queue, "r".into(), None);
        assert_eq!(inbox.remove(q.id).map(|p| p.text), Some("q".into()));
        assert_eq!(inbox.remove(q.id), None);
        assert_eq!(inbox.remove(s.id).map(|p| p.mode), Some(PromptMode::Steer));
        assert_eq!(texts(&inbox.take_all()), ["r"]);
        assert!(inbox.take_all().is_empty());
    }
}
