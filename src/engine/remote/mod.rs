//! The root side of remote sub-sessions (issue 27 items 2–5): a sub-session whose
//! agent `config::remote::placement` puts on a worker is not run here; its run is
//! published as a job to the workers' pool and what the worker streams back is written
//! into the store this process owns, as if the turn had run here.
//!
//! Owns: dispatching one run and consuming its out stream (`dispatch`), applying the
//! worker's messages to the root's `LiveSession` (`apply`), the repository side —
//! which commit the worker starts from, applying its patch in the child's worktree
//! (`changes`) —, counting the late writes the epoch fence refuses (`fence`), and
//! [`RemoteRuns`]: the runtime's registry of runs in flight, through which steers,
//! queued messages, their withdrawals and approval answers reach the worker (`Control` on
//! `arbor.ctl.<session>`), plus the process's NATS connections and what all runs on
//! one share (`hub`: one out consumer and one lease watch per connection), and
//! [`Adopt`]: how a remote child's own sub-sessions (issue 38 item 7) are made live in
//! the root's store (the runtime implements it). Cancelling is the
//! child's own token (a child token of the calling turn's, so cancelling any ancestor
//! reaches it): the run sends `Control::Cancel` when it fires.
//!
//! A person's turn of such a sub-session (a submit, a continue, a steer or queued
//! message while it is idle) goes the same way (`person`).
//!
//! Does not own: the wire and NATS plumbing (`crate::remote`), the placement rule
//! (`config::remote`), creating the child and its limits (`spawn`), the worker
//! (`worker`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::mpsc::UnboundedSender;

use super::env::TurnEnv;
use super::live::{LiveSession, lock};
use super::outcome::EngineError;
use crate::config::MountPlan;
use crate::config::remote::RemotePlacement;
use crate::remote::{Remote, RemoteAuth, RemoteError};
use crate::session::Metadata;
use crate::session::protocol::ApprovalDecision;

mod apply;
mod changes;
mod dispatch;
mod fence;
mod hub;
mod person;

pub(crate) use dispatch::run;
pub(crate) use person::{RunInput, instruction_of, person_turn, placement_for_person};

/// Something for the worker running a session, sent as a `remote::Control`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Forward {
    /// The person's answer to the worker's `approval:required` of `tool_call_id`.
    Approval {
        tool_call_id: String,
        decision: ApprovalDecision,
    },
    /// `EngineCommand::Steer`.
    Steer(String),
    /// `EngineCommand::Queue` (the position is not carried: it goes last).
    Queue(String),
    /// `EngineCommand::Unqueue` of the worker's waiting message `id` (the id of the
    /// `prompt:queued` event the worker streamed).
    Unqueue(u64),
    /// `EngineCommand::Cancel` of one of the run's own sub-sessions (the run itself is
    /// cancelled through its token).
    Cancel,
    /// The root's answer to the worker's `Reserve` of `child` (issue 38 item 7):
    /// counted, or `refused` with the limit's text.
    Reserved {
        child: String,
        refused: Option<String>,
    },
    /// `forward` for `session_id`, one of the run's own sub-sessions.
    Of {
        session_id: String,
        forward: Box<Forward>,
    },
}

/// How the root makes a remote child's own sub-sessions live in its store (the
/// runtime implements it; issue 38 item 7).
pub(crate) trait Adopt: Send + Sync {
    /// Creates the session directory for `metadata` and makes it live (errors as
    /// `Runtime::register`).
    fn adopt(&self, metadata: Metadata, plan: MountPlan) -> Result<Arc<LiveSession>, EngineError>;
    /// Makes the stored session `id` live (errors as `Runtime::live_or_resume`).
    fn resume(&self, id: &str) -> Result<Arc<LiveSession>, EngineError>;
}

/// The remote runs of one runtime: who runs remotely now, the late writes refused,
/// one NATS connection per server URL, and how a remote child's own sub-sessions are
/// made live here.
pub(crate) struct RemoteRuns {
    adopt: Weak<dyn Adopt>,
    /// Session id → where its controls go (its run's channel).
    runs: Mutex<HashMap<String, Route>>,
    refused: fence::Refused,
    /// The repository look-ups children dispatched at once share.
    repos: changes::Lookups,
    /// URL → a connected client with arbor's streams and buckets ensured, and what
    /// its runs share (`hub`).
    connections: Mutex<HashMap<String, Arc<hub::Hub>>>,
    /// URL → the connection being made now, awaited by every run that needs it
    /// meanwhile (one connection and one hub per URL, however many children start at
    /// once).
    connecting: Mutex<HashMap<String, Connecting>>,
}

impl RemoteRuns {
    /// No run yet; a remote child's sub-sessions are made live by `adopt` (the
    /// runtime, held weakly).
    pub fn new(adopt: Weak<dyn Adopt>) -> Self {
        Self {
            adopt,
            runs: Mutex::default(),
            refused: fence::Refused::default(),
            repos: changes::Lookups::default(),
            connections: Mutex::default(),
            connecting: Mutex::default(),
        }
    }

    /// Makes a remote child's sub-session live here (see [`Adopt`]).
    fn adopt(&self, metadata: Metadata, plan: MountPlan) -> Result<Arc<LiveSession>, EngineError> {
        self.adopter()?.adopt(metadata, plan)
    }

    /// Makes a stored sub-session of a remote child live here (see [`Adopt::resume`]).
    fn resume_stored(&self, id: &str) -> Result<Arc<LiveSession>, EngineError> {
        self.adopter()?.resume(id)
    }

    /// The runtime that makes sessions live (`TaskFailed` once it is shutting down).
    fn adopter(&self) -> Result<Arc<dyn Adopt>, EngineError> {
        self.adopt.upgrade().ok_or_else(|| EngineError::TaskFailed {
            what: "a remote sub-session's own sub-session",
            message: "the runtime is shutting down".into(),
        })
    }

    /// Hands `forward` to the remote run of `session_id`. `false` when the session
    /// does not run remotely now (the caller handles it locally).
    pub fn forward(&self, session_id: &str, forward: Forward) -> bool {
        let Some(route) = lock(&self.runs).get(session_id).cloned() else {
            return false;
        };
        // One of a run's own sub-sessions: it goes out with the run's controls,
        // marked with its id.
        let forward = if route.own {
            Forward::Of {
                session_id: session_id.to_string(),
                forward: Box::new(forward),
            }
        } else {
            forward
        };
        route.tx.send(forward).is_ok()
    }

    /// Whether `session_id` runs on a worker now.
    pub fn is_remote(&self, session_id: &str) -> bool {
        lock(&self.runs).contains_key(session_id)
    }

    /// How many messages from workers the epoch fence refused so far.
    pub fn refused_writes(&self) -> u64 {
        self.refused.count()
    }

    /// Records that `session_id` runs remotely with controls going to `tx`, until the
    /// returned guard drops.
    fn register(&self, session_id: &str, tx: UnboundedSender<Forward>) -> Registered<'_> {
        self.route(session_id, Route { tx, own: false })
    }

    /// Records that `session_id`, one of a remote run's own sub-sessions (issue 38
    /// item 7), runs on that run's worker: its controls go to the run's `tx` as
    /// [`Forward::Of`], until the returned guard drops.
    fn register_own(&self, session_id: &str, tx: UnboundedSender<Forward>) -> Registered<'_> {
        self.route(session_id, Route { tx, own: true })
    }

    fn route(&self, session_id: &str, route: Route) -> Registered<'_> {
        lock(&self.runs).insert(session_id.to_string(), route);
        Registered {
            runs: self,
            session_id: session_id.to_string(),
        }
    }

    /// The connection to `url` and its [`hub::Hub`] (made once per process, with
    /// `Remote::ensure` run on it); a failed attempt is not kept, so the next run
    /// tries again.
    ///
    /// Errors: `RemoteError::Connect` naming `url`; `RemoteError::Nats` when the
    /// streams or buckets, the out consumer or the lease watch cannot be made.
    async fn connection(&self, url: &str, auth: &RemoteAuth) -> Result<Arc<hub::Hub>, RemoteError> {
        use futures::FutureExt;
        if let Some(hub) = lock(&self.connections).get(url) {
            return Ok(hub.clone());
        }
        // One attempt shared by all who ask meanwhile, awaited outside the lock:
        // children dispatched at once while the server is down all fail after one
        // connect timeout, not one after another.
        let attempt = lock(&self.connecting)
            .entry(url.to_string())
            .or_insert_with(|| {
                let (url, auth) = (url.to_string(), auth.clone());
                async move {
                    let remote = Remote::connect(&url, "arbor root", &auth).await?;
                    remote.ensure().await?;
                    Ok(Arc::new(hub::Hub::new(remote).await?))
                }
                .map(|made: Result<_, RemoteError>| made.map_err(Arc::new))
                .boxed()
                .shared()
            })
            .clone();
        let made = attempt.clone().await.map(|hub| {
            lock(&self.connections)
                .entry(url.to_string())
                .or_insert(hub)
                .clone()
        });
        // Only now: a run asking from here on finds the connection (or, after a
        // failure, tries again).
        let mut connecting = lock(&self.connecting);
        if connecting.get(url).is_some_and(|a| a.ptr_eq(&attempt)) {
            connecting.remove(url);
        }
        drop(connecting);
        made.map_err(|e| e.again())
    }
}

/// One attempt at a connection and its hub, shared by the runs awaiting it.
type Connecting = futures::future::Shared<
    futures::future::BoxFuture<'static, Result<Arc<hub::Hub>, Arc<RemoteError>>>,
>;

/// Where the controls of a session running remotely go: its run's channel, marked
/// with the session's id when it is one of the run's own sub-sessions (`own`).
#[derive(Clone)]
struct Route {
    tx: UnboundedSender<Forward>,
    own: bool,
}

/// A run's entry in [`RemoteRuns`]; removed on drop.
struct Registered<'a> {
    runs: &'a RemoteRuns,
    session_id: String,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        lock(&self.runs.runs).remove(&self.session_id);
    }
}

/// Where `child`'s next run goes: `Some` when the config's `remote:` section and its
/// agent's frontmatter put it on a worker (`config::remote::placement`).
pub(crate) fn placement_of(env: &TurnEnv, child: &LiveSession) -> Option<RemotePlacement> {
    crate::config::remote::placement(&env.config, &child.agent_name, &child.agent_overlay)
}

/// The credentials of the root's NATS connection, from the environment variables the
/// `nats` CLI uses (`remote::auth::AUTH_VARS`: `NATS_CREDS`, `NATS_NKEY`, `NATS_TOKEN`,
/// `NATS_USER`/`NATS_PASSWORD`, `NATS_CERT`/`NATS_KEY`, `NATS_CA`).
fn auth(env: &TurnEnv) -> RemoteAuth {
    RemoteAuth::from_env(&|name: &str| (env.env)(name))
}

#[cfg(test)]
mod tests;
