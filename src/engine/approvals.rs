//! The pending approvals of this process (SPEC §12): tool calls that published
//! `approval:required` and wait for a person's answer.
//!
//! Owns: the registry from (session id, tool call id) to the channel the waiting call
//! listens on; handing an answer ([`ApprovalDecision`]) to that call. Does not own:
//! deciding whether a call needs approval (the policy), publishing the approval events,
//! or what the call does with the answer (the turn's tool-call gate), nor asking the
//! person (`tui`).
//!
//! The gate registers before it publishes `approval:required`, then awaits the
//! receiver (together with its session's cancel token). A receiver that resolves to a
//! closed channel means the entry was replaced or withdrawn: the call must not run.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;

use super::live::lock;
use super::outcome::EngineError;
use crate::session::protocol::ApprovalDecision;

/// (session id, tool call id).
type Key = (String, String);

/// Tool calls waiting for a person, each with the sender its answer goes to. One per
/// `Runtime`; the lock is held only for an insert or a removal.
#[derive(Debug, Default)]
pub struct PendingApprovals {
    waiting: Mutex<HashMap<Key, oneshot::Sender<ApprovalDecision>>>,
}

impl PendingApprovals {
    /// Records that tool call `tool_call_id` of `session_id` waits for an answer and
    /// returns the receiver the answer arrives on. Registering the same call again
    /// replaces the entry: the earlier receiver then sees a closed channel.
    pub fn register(
        &self,
        session_id: &str,
        tool_call_id: &str,
    ) -> oneshot::Receiver<ApprovalDecision> {
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert((session_id.to_string(), tool_call_id.to_string()), tx);
        rx
    }

    /// Hands `decision` to the waiting call and removes its entry.
    ///
    /// Errors: [`EngineError::NoPendingApproval`] when no such call is registered
    /// (never asked, already answered, withdrawn), or when its waiter is gone (its turn
    /// ended, e.g. cancelled); the entry is removed either way.
    pub fn resolve(
        &self,
        session_id: &str,
        tool_call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), EngineError> {
        let key = (session_id.to_string(), tool_call_id.to_string());
        let sender = lock(&self.waiting).remove(&key);
        let no_pending = || EngineError::NoPendingApproval {
            session_id: session_id.to_string(),
            tool_call_id: tool_call_id.to_string(),
        };
        sender
            .ok_or_else(no_pending)?
            .send(decision)
            .map_err(|_| no_pending())
    }

    /// Removes the entry of a call that stopped waiting without an answer (its
    /// session was cancelled). Returns whether there was one.
    pub fn withdraw(&self, session_id: &str, tool_call_id: &str) -> bool {
        let key = (session_id.to_string(), tool_call_id.to_string());
        lock(&self.waiting).remove(&key).is_some()
    }

    /// How many calls of `session_id` wait now.
    pub fn waiting_in(&self, session_id: &str) -> usize {
        lock(&self.waiting)
            .keys()
            .filter(|(session, _)| session == session_id)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::protocol::AllowScope;

    #[test]
    fn a_registered_call_receives_its_answer_once() {
        let pending = PendingApprovals::default();
        let mut rx = pending.register("s1", "call_1");
        assert_eq!(pending.waiting_in("s1"), 1);
        let always = ApprovalDecision::Allow {
            scope: AllowScope::AlwaysPrefix("cargo test".into()),
        };
        pending.resolve("s1", "call_1", always.clone()).unwrap();
        assert_eq!(rx.try_recv().unwrap(), always);
        assert_eq!(pending.waiting_in("s1"), 0);

        let again = pending.resolve("s1", "call_1", ApprovalDecision::Deny { reason: None });
        assert!(
            matches!(again, Err(EngineError::NoPendingApproval { .. })),
            "{again:?}"
        );
    }

    #[test]
    fn an_unknown_call_is_an_error_that_names_it() {
        let pending = PendingApprovals::default();
        let _rx = pending.register("s1", "call_1");
        let err = pending
            .resolve("s2", "call_1", ApprovalDecision::Deny { reason: None })
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "no pending approval for tool call 'call_1' of session 's2' \
             (already answered, cancelled, or never asked)"
        );
        assert_eq!(pending.waiting_in("s1"), 1, "the other entry stays");
    }

    #[test]
    fn a_gone_waiter_or_a_withdrawn_call_takes_no_answer() {
        let pending = PendingApprovals::default();
        drop(pending.register("s1", "gone"));
        let deny = ApprovalDecision::Deny {
            reason: Some("no".into()),
        };
        assert!(pending.resolve("s1", "gone", deny.clone()).is_err());
        assert_eq!(pending.waiting_in("s1"), 0, "the dead entry is removed");

        let mut rx = pending.register("s1", "call_2");
        assert!(pending.withdraw("s1", "call_2"));
        assert!(!pending.withdraw("s1", "call_2"));
        assert!(pending.resolve("s1", "call_2", deny).is_err());
        assert!(rx.try_recv().is_err(), "the waiter sees a closed channel");
    }

    #[test]
    fn registering_again_closes_the_earlier_receiver() {
        let pending = PendingApprovals::default();
        let mut first = pending.register("s1", "call_1");
        let mut second = pending.register("s1", "call_1");
        assert_eq!(first.try_recv(), Err(oneshot::error::TryRecvError::Closed));
        let once = ApprovalDecision::Allow {
            scope: AllowScope::Once,
        };
        pending.resolve("s1", "call_1", once.clone()).unwrap();
        assert_eq!(second.try_recv().unwrap(), once);
    }
}
