//! Messages waiting in sessions' inboxes (SPEC §13 steer and queue), as the bus
//! reports them (through the TUI's dispatcher, `state::dispatch`): `prompt:queued`
//! adds one, `prompt:sent` and `prompt:unqueued` take it out.
//!
//! Owns: the waiting messages of every session of this process, in the order the
//! engine will send them (steers first, then queued ones by position). Does not own:
//! the inbox itself (the engine's), what the app does with a message taken back
//! (`app`), or how the list looks (`views::pending`).

use crate::session::ids::SessionId;
use std::collections::HashMap;

use crate::session::protocol::{
    PromptMode, PromptQueuedEvent, PromptSentEvent, PromptUnqueuedEvent, UnqueueReason,
};

/// One waiting message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingPrompt {
    /// Its number in the session's inbox (`prompt:queued` `id`).
    pub id: u64,
    pub mode: PromptMode,
    /// The text, verbatim.
    pub text: String,
}

/// A message that left an inbox unsent (`prompt:unqueued`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unqueued {
    pub session_id: SessionId,
    pub prompt: PendingPrompt,
    pub reason: UnqueueReason,
}

/// One session's waiting messages.
#[derive(Debug, Clone, Default)]
struct Waiting {
    steers: Vec<PendingPrompt>,
    queued: Vec<PendingPrompt>,
}

/// The waiting messages of every session.
#[derive(Debug, Clone, Default)]
pub struct PendingPrompts {
    by_session: HashMap<String, Waiting>,
}

impl PendingPrompts {
    /// `prompt:queued` of `session`: a steer goes after the steers, a queued message
    /// at its position.
    pub fn on_queued(&mut self, session: &str, q: &PromptQueuedEvent) {
        let waiting = self.by_session.entry(session.to_string()).or_default();
        let prompt = PendingPrompt {
            id: q.id,
            mode: q.mode,
            text: q.prompt.clone(),
        };
        match q.mode {
            PromptMode::Steer => waiting.steers.push(prompt),
            PromptMode::Queue => {
                let at = q.position.unwrap_or(usize::MAX).min(waiting.queued.len());
                waiting.queued.insert(at, prompt);
            }
        }
    }

    /// `prompt:sent` of `session`: that message left the inbox.
    pub fn on_sent(&mut self, session: &str, sent: &PromptSentEvent) {
        self.take(session, sent.id);
    }

    /// `prompt:unqueued` of `session`: the message it took out, unsent.
    pub fn on_unqueued(&mut self, session: &SessionId, u: &PromptUnqueuedEvent) -> Unqueued {
        let prompt = self.take(session, u.id).unwrap_or_else(|| PendingPrompt {
            id: u.id,
            mode: u.mode,
            text: u.prompt.clone(),
        });
        Unqueued {
            session_id: session.clone(),
            prompt,
            reason: u.reason,
        }
    }

    fn take(&mut self, session_id: &str, id: u64) -> Option<PendingPrompt> {
        let waiting = self.by_session.get_mut(session_id)?;
        let taken = [&mut waiting.steers, &mut waiting.queued]
            .into_iter()
            .find_map(|list| {
                let i = list.iter().position(|p| p.id == id)?;
                Some(list.remove(i))
            });
        if waiting.steers.is_empty() && waiting.queued.is_empty() {
            self.by_session.remove(session_id);
        }
        taken
    }

    /// `session_id`'s waiting messages in sending order: steers, then queued ones.
    pub fn of(&self, session_id: &str) -> Vec<&PendingPrompt> {
        self.by_session
            .get(session_id)
            .map(|w| w.steers.iter().chain(&w.queued).collect())
            .unwrap_or_default()
    }

    /// The place of queued message `id` among `session_id`'s queued ones (0 = next).
    pub fn queue_position(&self, session_id: &str, id: u64) -> Option<usize> {
        self.by_session
            .get(session_id)?
            .queued
            .iter()
            .position(|p| p.id == id)
    }

    /// How many messages wait, over every session.
    pub fn count(&self) -> usize {
        self.by_session
            .values()
            .map(|w| w.steers.len() + w.queued.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{EngineEvent, Event};
    use crate::tui::state::dispatch::{Listeners, dispatch};
    use crate::tui::state::tree::SessionTree;

    fn ev(session: &str, msg: EngineEvent) -> Event {
        Event::new(session, None, msg)
    }

    /// Hands `event` to `p` as the TUI's dispatcher does; the message it took out.
    fn apply(p: &mut PendingPrompts, event: &Event) -> Option<Unqueued> {
        let mut tree = SessionTree::default();
        let listeners = Listeners {
            pending: Some(p),
            ..Listeners::tree(&mut tree)
        };
        dispatch(event, listeners).unqueued
    }

    fn queued(id: u64, mode: PromptMode, text: &str, position: Option<usize>) -> EngineEvent {
        EngineEvent::PromptQueued(PromptQueuedEvent {
            id,
            mode,
            prompt: text.into(),
            position,
        })
    }

    fn texts(p: &PendingPrompts, session: &str) -> Vec<String> {
        p.of(session).iter().map(|p| p.text.clone()).collect()
    }

    #[test]
    fn follows_queued_sent_and_unqueued_in_sending_order() {
        let mut p = PendingPrompts::default();
        apply(
            &mut p,
            &ev("s", queued(1, PromptMode::Queue, "q1", Some(0))),
        );
        apply(&mut p, &ev("s", queued(2, PromptMode::Steer, "st", None)));
        apply(
            &mut p,
            &ev("s", queued(3, PromptMode::Queue, "q0", Some(0))),
        );
        apply(
            &mut p,
            &ev("other", queued(1, PromptMode::Queue, "x", Some(0))),
        );
        assert_eq!(texts(&p, "s"), ["st", "q0", "q1"]);
        assert_eq!(p.queue_position("s", 1), Some(1));
        assert_eq!(p.count(), 4);

        apply(
            &mut p,
            &ev(
                "s",
                EngineEvent::PromptSent(PromptSentEvent {
                    id: 2,
                    mode: PromptMode::Steer,
                    prompt: "st".into(),
                }),
            ),
        );
        let taken = apply(
            &mut p,
            &ev(
                "s",
                EngineEvent::PromptUnqueued(PromptUnqueuedEvent {
                    id: 3,
                    mode: PromptMode::Queue,
                    prompt: "q0".into(),
                    reason: UnqueueReason::Returned,
                }),
            ),
        );
        assert_eq!(
            taken.map(|t| (t.session_id, t.prompt.text, t.reason)),
            Some(("s".into(), "q0".into(), UnqueueReason::Returned))
        );
        assert_eq!(texts(&p, "s"), ["q1"]);
        assert_eq!(p.count(), 2);
    }
}
