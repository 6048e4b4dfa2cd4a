//! What every remote run on one NATS connection of the root shares (issue 38 item 8):
//! made once per connection instead of once per child, so a root dispatching many
//! children at once does not pay a consumer, a watch and a handful of JetStream API
//! calls for each, and leaves nothing per child behind on the server.
//!
//! Owns: [`Hub`] — the connection (`Remote`) and the leases bucket's handle; one
//! ordered consumer of the whole out stream (`arbor.out.>`, new messages only) and one
//! watch of every key of the leases bucket (new writes only), both made when the hub
//! is and routed by subject / key to the runs registered ([`Hub::register`], done
//! before a run's job is published so nothing of it is missed; a message or lease of a
//! session with no run registered is dropped); making both again when the server lost
//! its store ([`Hub::relisten`]); and the look-ups runs share: the job stream's state
//! (one query answers every run that asked after it started,
//! [`Hub::jobs_stream_since`]), whether a pool has a live worker (asked at most once
//! per [`POOLS_FRESH`]), the payload store's handle.
//!
//! Does not own: judging a run's messages against its lease holder or applying them
//! (`dispatch`, `apply`), the per-session core subscriptions (`arbor.sync.<session>`,
//! `arbor.alive.<session>`: per run in `dispatch`, so a request for a session whose root
//! is gone still finds no responder), the NATS plumbing (`crate::remote`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use async_nats::jetstream::{self, kv, object_store::ObjectStore};
use futures::StreamExt;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::engine::live::lock;
use crate::remote::wire::{self, Lease, OUT_STREAM};
use crate::remote::{Remote, RemoteError, StreamState};

/// Every session's out subject (the hub's one consumer filters on it).
const OUT_ALL: &str = "arbor.out.>";
/// What precedes the session's token in an out subject.
const OUT_PREFIX: &str = "arbor.out.";
/// How long an answer to "which pools have a live worker" serves other runs.
pub(super) const POOLS_FRESH: Duration = Duration::from_secs(1);
/// How long the look-up of live workers may take before it says nothing.
const POOLS_LOOKUP: Duration = Duration::from_secs(2);

/// A lease write the watch saw: the lease and its revision in the bucket.
pub(super) type LeaseSeen = (Lease, u64);

/// One connection's shared listeners and look-ups (see the module doc).
pub(crate) struct Hub {
    remote: Remote,
    leases: kv::Store,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    /// The routing tasks of the out consumer and the lease watch (aborted on drop).
    listeners: Mutex<Listeners>,
    /// Serialises [`Hub::relisten`].
    relistening: tokio::sync::Mutex<()>,
    /// The last query of the job stream: when it was started, and its answer.
    jobs: tokio::sync::Mutex<Option<(Instant, StreamState)>>,
    /// The last look-up of live workers: when, and their pools (`None`: it failed).
    pools: tokio::sync::Mutex<Option<(Instant, Option<Vec<String>>)>>,
    payloads: tokio::sync::Mutex<Option<ObjectStore>>,
    next_route: AtomicU64,
}

/// Where one registered run's messages and leases go.
struct Route {
    id: u64,
    out: UnboundedSender<jetstream::Message>,
    leases: UnboundedSender<LeaseSeen>,
}

/// The routing tasks and when they were made.
struct Listeners {
    out: JoinHandle<()>,
    leases: JoinHandle<()>,
    made: Instant,
}

impl Drop for Listeners {
    fn drop(&mut self) {
        self.out.abort();
        self.leases.abort();
    }
}

/// One run's share of the hub: its out messages and the lease writes of its session,
/// in the order the server delivered them; unregistered on drop.
pub(super) struct Inbox {
    /// The worker's messages on `arbor.out.<session>`. Ends (`None`) when the hub's
    /// out consumer ended for good.
    pub(super) out: UnboundedReceiver<jetstream::Message>,
    /// Every write of the session's lease key (renewals included).
    pub(super) leases: UnboundedReceiver<LeaseSeen>,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    key: String,
    id: u64,
}

impl Drop for Inbox {
    fn drop(&mut self) {
        let mut routes = lock(&self.routes);
        if routes.get(&self.key).is_some_and(|r| r.id == self.id) {
            routes.remove(&self.key);
        }
    }
}

impl Hub {
    /// The hub of `remote` (its streams and buckets ensured): the out consumer and the
    /// lease watch made and routing.
    ///
    /// Errors: [`RemoteError::Nats`] when the leases bucket, the out stream's consumer
    /// or the watch cannot be made.
    pub(super) async fn new(remote: Remote) -> Result<Self, RemoteError> {
        let leases = remote.leases().await?;
        let routes = Arc::new(Mutex::new(HashMap::new()));
        let listeners = listen(&remote, &leases, &routes).await?;
        Ok(Self {
            remote,
            leases,
            routes,
            listeners: Mutex::new(listeners),
            relistening: tokio::sync::Mutex::new(()),
            jobs: tokio::sync::Mutex::new(None),
            pools: tokio::sync::Mutex::new(None),
            payloads: tokio::sync::Mutex::new(None),
            next_route: AtomicU64::new(1),
        })
    }

    /// The connection.
    pub(super) fn remote(&self) -> &Remote {
        &self.remote
    }

    /// The leases bucket.
    pub(super) fn leases(&self) -> &kv::Store {
        &self.leases
    }

    /// Routes `session`'s out messages and lease writes to the returned inbox until
    /// it drops (a run registered again replaces the earlier inbox, which then ends).
    /// Call it before the run's job is published. The out consumer is made again
    /// first when it ended.
    ///
    /// Errors: `session` is no valid token; the consumer cannot be made again.
    pub(super) async fn register(&self, session: &str) -> Result<Inbox, RemoteError> {
        let key = wire::token(session)?;
        let ended = lock(&self.listeners).out.is_finished();
        if ended {
            self.relisten(Instant::now()).await?;
        }
        let (out_tx, out) = unbounded_channel();
        let (leases_tx, leases) = unbounded_channel();
        let id = self.next_route.fetch_add(1, Ordering::Relaxed);
        let route = Route {
            id,
            out: out_tx,
            leases: leases_tx,
        };
        lock(&self.routes).insert(key.clone(), route);
        Ok(Inbox {
            out,
            leases,
            routes: self.routes.clone(),
            key,
            id,
        })
    }

    /// Makes the out consumer and the lease watch again (after the server lost its
    /// store: the old ones follow streams that are gone), unless they were made at or
    /// after `unless_since` (another run did it already) and still run. The new ones
    /// take messages and writes from when they are made; the old ones stop then.
    ///
    /// Errors: [`RemoteError::Nats`] when either cannot be made (the old ones stay).
    pub(super) async fn relisten(&self, unless_since: Instant) -> Result<(), RemoteError> {
        let _one = self.relistening.lock().await;
        {
            let listeners = lock(&self.listeners);
            if listeners.made >= unless_since && !listeners.out.is_finished() {
                return Ok(());
            }
        }
        let listeners = listen(&self.remote, &self.leases, &self.routes).await?;
        *lock(&self.listeners) = listeners;
        *self.payloads.lock().await = None;
        Ok(())
    }

    /// What the server holds of the job stream, from a query started at or after
    /// `since` (one query serves every run asking meanwhile; see
    /// `Remote::jobs_stream`).
    pub(super) async fn jobs_stream_since(&self, since: Instant) -> StreamState {
        let mut cached = self.jobs.lock().await;
        if let Some((asked, state)) = &*cached
            && *asked >= since
        {
            return state.clone();
        }
        let asked = Instant::now();
        let state = self.remote.jobs_stream().await;
        *cached = Some((asked, state.clone()));
        state
    }

    /// Whether a live worker serves `pool` (`Remote::live_workers`, looked up at most
    /// once per [`POOLS_FRESH`] for all runs, within 2 s); `None` when the look-up
    /// failed or took longer.
    pub(super) async fn pool_served(&self, pool: &str) -> Option<bool> {
        let mut cached = self.pools.lock().await;
        let fresh = cached
            .as_ref()
            .filter(|(asked, _)| asked.elapsed() < POOLS_FRESH)
            .map(|(_, pools)| pools.clone());
        let pools = match fresh {
            Some(pools) => pools,
            None => {
                let asked = Instant::now();
                let lookup = tokio::time::timeout(POOLS_LOOKUP, self.remote.live_workers()).await;
                let pools = match lookup {
                    Ok(Ok(workers)) => Some(workers.into_iter().map(|w| w.pool).collect()),
                    _ => None,
                };
                *cached = Some((asked, pools.clone()));
                pools
            }
        };
        pools.map(|pools: Vec<String>| pools.iter().any(|p| p == pool))
    }

    /// The payload store (`Remote::payloads`), opened once (again after
    /// [`Hub::relisten`]).
    ///
    /// Errors: as `Remote::payloads`.
    pub(super) async fn payloads(&self) -> Result<ObjectStore, RemoteError> {
        let mut cached = self.payloads.lock().await;
        if let Some(store) = &*cached {
            return Ok(store.clone());
        }
        let store = self.remote.payloads().await?;
        *cached = Some(store.clone());
        Ok(store)
    }
}

/// Makes the out consumer (`arbor.out.>`, new messages only) and the watch of every
/// lease key, and starts routing both to `routes`.
///
/// Errors: [`RemoteError::Nats`] when the stream cannot be opened or either cannot be
/// made.
async fn listen(
    remote: &Remote,
    leases: &kv::Store,
    routes: &Arc<Mutex<HashMap<String, Route>>>,
) -> Result<Listeners, RemoteError> {
    let stream = remote
        .js()
        .get_stream(OUT_STREAM)
        .await
        .map_err(|e| RemoteError::nats(format!("cannot open stream {OUT_STREAM}"), e))?;
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: OUT_ALL.to_string(),
            deliver_policy: DeliverPolicy::New,
            ..Default::default()
        })
        .await
        .map_err(|e| RemoteError::nats(format!("cannot consume {OUT_ALL}"), e))?;
    let messages = consumer
        .messages()
        .await
        .map_err(|e| RemoteError::nats(format!("cannot consume {OUT_ALL}"), e))?;
    let watch = leases
        .watch_all()
        .await
        .map_err(|e| RemoteError::nats("cannot watch the leases", e))?;
    let url = crate::remote::redact_url(remote.url());
    Ok(Listeners {
        out: tokio::spawn(route_out(messages, routes.clone(), url)),
        leases: tokio::spawn(route_leases(watch, routes.clone())),
        made: Instant::now(),
    })
}

/// Hands each out message to the run registered for its subject's session (dropped
/// when none is). When the consumer ends for good, every run registered then hears
/// it (its inbox's `out` ends).
async fn route_out(
    mut messages: jetstream::consumer::pull::Ordered,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    url: String,
) {
    loop {
        match messages.next().await {
            Some(Ok(message)) => {
                let Some(key) = message.subject.as_str().strip_prefix(OUT_PREFIX) else {
                    continue;
                };
                let route = lock(&routes).get(key).map(|r| r.out.clone());
                match route {
                    Some(tx) => {
                        let _ = tx.send(message);
                    }
                    None => {
                        tracing::debug!(subject = %message.subject, "no run follows it; dropped")
                    }
                }
            }
            Some(Err(e)) => {
                // The ordered consumer makes itself again; do not spin meanwhile.
                tracing::warn!("reading the out stream at {url}: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            None => {
                tracing::warn!("the out stream at {url} ended");
                for route in lock(&routes).values_mut() {
                    // A sender whose receiver is gone: the run's inbox ends.
                    route.out = unbounded_channel().0;
                }
                return;
            }
        }
    }
}

/// Hands each write of a lease key to the run registered for that session (a
/// deletion or a value that is no lease is skipped, as is a key no run follows).
async fn route_leases(mut watch: kv::Watch, routes: Arc<Mutex<HashMap<String, Route>>>) {
    while let Some(entry) = watch.next().await {
        let Ok(entry) = entry else { continue };
        if entry.operation != kv::Operation::Put {
            continue;
        }
        let Ok(lease) = serde_json::from_slice::<Lease>(&entry.value) else {
            continue;
        };
        let route = lock(&routes).get(&entry.key).map(|r| r.leases.clone());
        if let Some(tx) = route {
            let _ = tx.send((lease, entry.revision));
        }
    }
}
