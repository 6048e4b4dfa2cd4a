//! A job's own sub-sessions (issue 38 item 7): a remote child that delegates creates
//! its children on this worker, but they belong to the root's tree — counted against
//! the root's limits, kept in the root's store, steered and answered from the root.
//!
//! Owns: [`RootRoom`] — the job's [`TreeRoom`]: before each sub-session the job's
//! engine creates, `WorkerMsg::Reserve` goes to the root and the spawn waits (at most
//! [`RESERVE_WAIT`]) for its `Control::Reserved`; and [`Subtree`] — which sessions of
//! the job's engine are the job's (its session, the stored sub-sessions the job carried
//! from the root, `Job::subtree`, and, through each `session:fork`, their
//! descendants), the `WorkerMsg::SubSession` that goes before a new or resumed one's
//! first event and after each of its turns, and the final ones before `Done`
//! (`send_finals`). Does not own: the publisher (`out`), the event loop that uses them
//! (`job::run_engine`), the root side (`engine::remote::apply`).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::oneshot;

use super::super::out::{Out, Sent};
use crate::engine::{LimitReached, TreeRoom};
use crate::remote::wire::WorkerMsg;
use crate::session::{EngineEvent, Event, SessionId, SessionStore};

/// How long a spawn waits for the root's answer to its `Reserve`.
pub(super) const RESERVE_WAIT: Duration = Duration::from_secs(60);

/// The root's answers still awaited, by child id.
type Waiting = Arc<Mutex<HashMap<String, oneshot::Sender<Option<String>>>>>;

/// The job's [`TreeRoom`]: asks the root that dispatched it (a clone shares its
/// waiting spawns).
#[derive(Clone)]
pub(crate) struct RootRoom {
    out: Arc<Out>,
    waiting: Waiting,
}

impl RootRoom {
    /// A room asking through the job's publisher `out`.
    pub fn new(out: Arc<Out>) -> Self {
        Self {
            out,
            waiting: Waiting::default(),
        }
    }

    /// The root's `Control::Reserved` for `child`: wakes the spawn waiting for it
    /// (`refused`: the root's refusal text). An answer nobody waits for is ignored.
    pub fn answer(&self, child: &str, refused: Option<String>) {
        let waiter = self.lock().remove(child);
        if let Some(waiter) = waiter {
            let _ = waiter.send(refused);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Option<String>>>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl TreeRoom for RootRoom {
    fn reserve(
        &self,
        parent: &str,
        child: &str,
        agent: &str,
    ) -> BoxFuture<'static, Result<(), LimitReached>> {
        let room = self.clone();
        let msg = WorkerMsg::Reserve {
            parent: parent.into(),
            child: child.into(),
            agent: agent.to_string(),
        };
        let child = child.to_string();
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            room.lock().insert(child.clone(), tx);
            let unasked = |why: &str| {
                LimitReached::AtRoot(format!(
                    "no sub-session was started: the root of this remote session's tree \
                     {why}, so it could not count it against its limits"
                ))
            };
            match room.out.send(&msg).await {
                Ok(Sent::Stored) => {}
                Ok(Sent::Quiet) | Err(_) => {
                    room.lock().remove(&child);
                    return Err(unasked("cannot be reached"));
                }
            }
            match tokio::time::timeout(RESERVE_WAIT, rx).await {
                Ok(Ok(None)) => Ok(()),
                Ok(Ok(Some(refused))) => Err(LimitReached::AtRoot(refused)),
                Ok(Err(_)) | Err(_) => {
                    room.lock().remove(&child);
                    Err(unasked(&format!(
                        "did not answer within {} s",
                        RESERVE_WAIT.as_secs()
                    )))
                }
            }
        })
    }
}

/// The sessions of a job's engine that are the job's: its session and every
/// sub-session forked from one of them.
pub(crate) struct Subtree {
    top: SessionId,
    members: HashSet<SessionId>,
    /// Members the job carried from the root's store (`Job::subtree`) whose metadata
    /// has not gone out yet: it goes before the first event of one (resumed here).
    unannounced: HashSet<SessionId>,
    /// The job's scratch store (the sub-sessions' metadata is read from it).
    store: PathBuf,
}

impl Subtree {
    /// The job's session `top`, whose engine stores its sessions in `store`.
    pub fn new(top: SessionId, store: PathBuf) -> Self {
        Self {
            members: HashSet::from([top.clone()]),
            unannounced: HashSet::new(),
            top,
            store,
        }
    }

    /// Makes the stored sub-sessions the job carried (`carried`) members: the first
    /// event of one (the job's engine resumed it) goes after its metadata.
    pub fn carry(&mut self, carried: Vec<SessionId>) {
        self.members.extend(carried.iter().cloned());
        self.unannounced.extend(carried);
    }

    /// Whether `event` is of a session of the job; a `session:fork` whose parent is
    /// makes its session one. Returns the messages to send before it (a new
    /// sub-session's metadata) — `None` when the event is not the job's.
    pub fn before(&mut self, event: &Event) -> Option<Vec<WorkerMsg>> {
        if self.members.contains(&event.session_id) {
            if self.unannounced.remove(&event.session_id) {
                return Some(self.metadata_of(&event.session_id).into_iter().collect());
            }
            return Some(Vec::new());
        }
        let EngineEvent::SessionFork(fork) = &event.msg else {
            return None;
        };
        if !self.members.contains(fork.parent.as_str()) {
            return None;
        }
        self.members.insert(event.session_id.clone());
        Some(self.metadata_of(&event.session_id).into_iter().collect())
    }

    /// Whether `id` is a session of the job.
    pub fn has(&self, id: &str) -> bool {
        self.members.contains(id)
    }

    /// What to send after the job's `event`: a sub-session's metadata when one of its
    /// turns ended (its usage and status as stored).
    pub fn after(&self, event: &Event) -> Option<WorkerMsg> {
        let ended = matches!(event.msg, EngineEvent::SessionEnd(_));
        if !ended || event.session_id == self.top {
            return None;
        }
        self.metadata_of(&event.session_id)
    }

    /// Sends every sub-session's metadata as stored now (a carried one only when it
    /// ran here), each once stored at the root (before `Done`). [`Sent::Quiet`] as
    /// soon as one was not sent (the job went quiet).
    ///
    /// Errors: as `Out::send`.
    pub async fn send_finals(&self, out: &Out) -> Result<Sent, crate::remote::RemoteError> {
        let mut ids: Vec<&SessionId> = self
            .members
            .iter()
            .filter(|m| **m != self.top && !self.unannounced.contains(*m))
            .collect();
        ids.sort();
        for msg in ids.into_iter().filter_map(|id| self.metadata_of(id)) {
            if out.send(&msg).await? == Sent::Quiet {
                return Ok(Sent::Quiet);
            }
        }
        Ok(Sent::Stored)
    }

    fn metadata_of(&self, id: &SessionId) -> Option<WorkerMsg> {
        match SessionStore::new(self.store.clone()).load_metadata(id) {
            Ok((metadata, _)) => Some(WorkerMsg::SubSession {
                metadata: Box::new(metadata),
            }),
            Err(e) => {
                tracing::warn!(session = %id, "worker: a sub-session's metadata: {e}");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::protocol::SessionForkEvent;

    fn fork(id: &str, parent: &str) -> Event {
        Event::new(
            id,
            Some(parent),
            EngineEvent::SessionFork(SessionForkEvent {
                parent: parent.into(),
                agent: "helper".into(),
                depth: 2,
                resolved_model: None,
            }),
        )
    }

    #[test]
    fn a_carried_session_goes_after_its_metadata_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let top = SessionId::child(&SessionId::new_root(), "helper");
        let scout = SessionId::child(&top, "scout");
        let metadata = crate::session::Metadata {
            session_id: scout.clone(),
            parent_id: Some(top.clone()),
            ..Default::default()
        };
        drop(store.create(&metadata).unwrap());
        let mut tree = Subtree::new(top, dir.path().to_path_buf());
        let running = Event::new(
            &scout,
            None,
            EngineEvent::status(crate::session::SessionStatus::Running),
        );
        assert!(
            tree.before(&running).is_none(),
            "not the job's before it is carried"
        );
        tree.carry(vec![scout.clone()]);
        assert!(tree.has(&scout));
        let first = tree.before(&running).unwrap();
        assert!(
            matches!(&first[..], [WorkerMsg::SubSession { metadata }] if metadata.session_id == scout),
            "{first:?}"
        );
        assert_eq!(tree.before(&running).map(|m| m.len()), Some(0));
    }

    #[test]
    fn the_subtree_grows_through_forks_of_its_members_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut tree = Subtree::new("top".into(), dir.path().to_path_buf());
        let status = |id: &str| {
            Event::new(
                id,
                None,
                EngineEvent::status(crate::session::SessionStatus::Running),
            )
        };
        assert_eq!(tree.before(&status("top")).map(|m| m.len()), Some(0));
        assert!(tree.before(&status("other")).is_none());
        assert!(tree.before(&fork("x", "elsewhere")).is_none());
        // Not stored in the scratch store: no metadata message, but a member now.
        assert!(tree.before(&fork("g1", "top")).is_some());
        assert!(tree.before(&fork("g2", "g1")).is_some());
        assert!(tree.before(&status("g2")).is_some());
        assert!(tree.before(&status("x")).is_none());
    }
}
