//! Messages waiting in sessions' inboxes (SPEC §13 steer and queue), as the bus
//! reports them: `prompt:queued` adds one, `prompt:sent` and `prompt:unqueued` take it
//! out.
//!
//! Owns: the waiting messages of every session of this process, in the order the
//! engine will send them (steers first, then queued ones by position). Does not own:
//! the inbox itself (the engine's), what the app does with a message taken back
//! (`app`), or how the list looks (`views::pending`).

use crate::session::ids::SessionId;
use std::collections::HashMap;

use crate::session::protocol::{PromptMode, UnqueueReason};
use crate::session::{EngineEvent, Event};

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
    /// Applies one bus event; returns the message a `prompt:unqueued` took out.
    pub fn apply(&mut self, event: &Event) -> Option<Unqueued> {
        match &event.msg {
            EngineEvent::PromptQueued(q) => {
                let waiting = self
                    .by_session
                    .entry(event.session_id.to_string())
                    .or_default();
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
                None
            }
            EngineEvent::PromptSent(sent) => {
                self.take(&event.session_id, sent.id);
                None
            }
            EngineEvent::PromptUnqueued(u) => {
                let prompt = self
                    .take(&event.session_id, u.id)
                    .unwrap_or_else(|| PendingPrompt {
                        id: u.id,
                        mode: u.mode,
                        text: u.prompt.clone(),
                    });
                Some(Unqueued {
                    session_id: event.session_id.clone(),
                    prompt,
                    reason: u.reason,
                })
            }
            // Not about the inbox of steered or queued prompts.
            EngineEvent::SessionStart(_)
            | EngineEvent::SessionFork(_)
            | EngineEvent::SessionResume(_)
            | EngineEvent::ProviderEndpointChanged(_)
            | EngineEvent::SessionRebuilt(_)
            | EngineEvent::SessionEnd(_)
            | EngineEvent::PromptSubmit(_)
            | EngineEvent::ProviderRequest(_)
            | EngineEvent::ProviderResponse(_)
            | EngineEvent::ProviderError(_)
            | EngineEvent::ProviderWarning(_)
            | EngineEvent::ContentBlockDelta(_)
            | EngineEvent::ToolPre(_)
            | EngineEvent::ToolPost(_)
            | EngineEvent::ToolError(_)
            | EngineEvent::TaskAgentSpawned(_)
            | EngineEvent::TaskAgentResumed(_)
            | EngineEvent::TaskAgentCompleted(_)
            | EngineEvent::CancelRequested(_)
            | EngineEvent::CancelCompleted(_)
            | EngineEvent::OrchestratorComplete(_)
            | EngineEvent::ApprovalRequired(_)
            | EngineEvent::ApprovalGranted(_)
            | EngineEvent::ApprovalDenied(_)
            | EngineEvent::SessionStatus(_)
            | EngineEvent::SessionRenamed(_)
            | EngineEvent::MessageAppended(_)
            | EngineEvent::SessionBudget(_)
            | EngineEvent::AgentTransfer(_)
            | EngineEvent::McpServerFailed(_)
            | EngineEvent::SessionNotice(_)
            | EngineEvent::HookRan(_)
            | EngineEvent::ContextCompaction(_)
            | EngineEvent::ContextUsage(_) => None,
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
    use crate::session::protocol::{PromptQueuedEvent, PromptSentEvent, PromptUnqueuedEvent};

    fn ev(session: &str, msg: EngineEvent) -> Event {
        Event::new(session, None, msg)
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
        p.apply(&ev("s", queued(1, PromptMode::Queue, "q1", Some(0))));
        p.apply(&ev("s", queued(2, PromptMode::Steer, "st", None)));
        p.apply(&ev("s", queued(3, PromptMode::Queue, "q0", Some(0))));
        p.apply(&ev("other", queued(1, PromptMode::Queue, "x", Some(0))));
        assert_eq!(texts(&p, "s"), ["st", "q0", "q1"]);
        assert_eq!(p.queue_position("s", 1), Some(1));
        assert_eq!(p.count(), 4);

        p.apply(&ev(
            "s",
            EngineEvent::PromptSent(PromptSentEvent {
                id: 2,
                mode: PromptMode::Steer,
                prompt: "st".into(),
            }),
        ));
        let taken = p.apply(&ev(
            "s",
            EngineEvent::PromptUnqueued(PromptUnqueuedEvent {
                id: 3,
                mode: PromptMode::Queue,
                prompt: "q0".into(),
                reason: UnqueueReason::Returned,
            }),
        ));
        assert_eq!(
            taken.map(|t| (t.session_id, t.prompt.text, t.reason)),
            Some(("s".into(), "q0".into(), UnqueueReason::Returned))
        );
        assert_eq!(texts(&p, "s"), ["q1"]);
        assert_eq!(p.count(), 2);
    }
}
