//! The pending approvals of this process (SPEC §12): tool calls that published
//! `approval:required` and wait for a person's answer.
//!
//! Owns: the registry from (session id, tool call id) to the channel the waiting call
//! listens on; handing an answer ([`ApprovalDecision`]) to that call; the "always"
//! grants of each session tree ([`TreeGrants`]); who answers
//! ([`ApprovalMode`]: a person, or headless `--yes` / its absence); the metadata key
//! listing the calls of a session that wait ([`AWAITING_APPROVAL`], read by transcript
//! repair after a crash). Does not own:
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
use crate::config::approvals::{Grant, Grants};
use crate::session::Metadata;
use crate::session::protocol::ApprovalDecision;

/// The "always" answers of this process, per session tree (keyed by root session id):
/// SPEC §12 `a` allows "this tool or command prefix, in this tree". Held in memory
/// only: a new process asks again (unless the person saved the rule to the config).
/// Every added grant bumps a counter that waiting calls watch ([`TreeGrants::watch`]),
/// so the other prompts of the tree are checked again (issue 22).
#[derive(Debug)]
pub struct TreeGrants {
    by_root: Mutex<HashMap<String, Grants>>,
    changed: tokio::sync::watch::Sender<u64>,
}

impl Default for TreeGrants {
    fn default() -> Self {
        Self {
            by_root: Mutex::default(),
            changed: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl TreeGrants {
    /// The grants of the tree rooted at `root_id` (a copy; empty when none).
    pub fn of(&self, root_id: &str) -> Grants {
        lock(&self.by_root)
            .get(root_id)
            .cloned()
            .unwrap_or_default()
    }

    /// Adds `grant` to the tree rooted at `root_id` (once) and tells the watchers.
    pub fn add(&self, root_id: &str, grant: Grant) {
        lock(&self.by_root)
            .entry(root_id.to_string())
            .or_default()
            .add(grant);
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that changes each time a grant is added (to any tree).
    pub fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// Who answers a tool call whose policy decision is `ask` (SPEC §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalMode {
    /// A front end (the TUI) answers each `approval:required` with
    /// `EngineCommand::ResolveApproval`; the call waits for it (or for its session's
    /// cancellation).
    Interactive,
    /// Headless `arbor run` / `arbor session resume`: nobody is there to answer. `ask`
    /// is denied, unless `yes` (`--yes`), which grants it. `deny` holds either way.
    Headless { yes: bool },
}

/// The `metadata.json` key (arbor's own) listing the tool call ids of the session that
/// wait for approval now: `"awaiting_approval": ["call_1"]`, absent when none. Written
/// with the status `waiting`, so a session whose process died while a call waited
/// resumes with a "not run" result for that call (`repair`).
pub const AWAITING_APPROVAL: &str = "awaiting_approval";

/// The tool call ids `metadata` lists under [`AWAITING_APPROVAL`] (empty when absent or
/// not a list of strings).
pub fn awaiting_approval(metadata: &Metadata) -> Vec<String> {
    metadata.arbor.awaiting_approval.clone()
}

/// Adds (`waiting`) or removes tool call `id` in `metadata`'s [`AWAITING_APPROVAL`]
/// list (the key goes when the list empties). Returns how many calls wait afterwards.
pub fn set_awaiting(metadata: &mut Metadata, id: &str, waiting: bool) -> usize {
    let mut ids = awaiting_approval(metadata);
    ids.retain(|known| known != id);
    if waiting {
        ids.push(id.to_string());
    }
    let waiting = ids.len();
    metadata.arbor.awaiting_approval = ids;
    waiting
}

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
            session_id: session_id.into(),
            tool_call_id: tool_call_id.into(),
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
    fn awaiting_calls_are_listed_in_metadata_until_answered() {
        let mut meta = Metadata::default();
        assert_eq!(set_awaiting(&mut meta, "call_1", true), 1);
        assert_eq!(set_awaiting(&mut meta, "call_2", true), 2);
        assert_eq!(set_awaiting(&mut meta, "call_1", true), 2, "listed once");
        let json = serde_json::to_value(&meta).unwrap();
        assert_eq!(
            json[AWAITING_APPROVAL],
            serde_json::json!(["call_2", "call_1"])
        );
        assert_eq!(set_awaiting(&mut meta, "call_2", false), 1);
        assert_eq!(awaiting_approval(&meta), ["call_1"]);
        assert_eq!(set_awaiting(&mut meta, "call_1", false), 0);
        let json = serde_json::to_value(&meta).unwrap();
        assert!(json.get(AWAITING_APPROVAL).is_none(), "{json}");
    }

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
