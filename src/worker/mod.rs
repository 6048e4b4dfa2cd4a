//! `arbor worker`: runs remote sub-sessions' turns taken from NATS JetStream (issue 27
//! scope 1, 3–5; the lead's design "Worker side").
//!
//! Owns: the worker process — its identity ([`RanOn`]: `w-<8 hex>`, host, pid),
//! connecting with backoff (said through [`Voice`]), making sure the streams, buckets
//! and its pool's durable pull consumer exist, fetching one job per free slot,
//! presence in `arbor_workers` (refreshed every 5 s with how many jobs it runs), and
//! stopping (Ctrl-C: no new jobs, running ones cancelled and handed back). Each job
//! (`job`) runs in a detached worktree of its base commit (`files`) over a scratch
//! store of its session (`scratch`), writing only where the worker allows (`roots`),
//! publishing through `out`.
//!
//! Does not own: building an engine (the caller's [`Factory`]: `cli` loads the
//! worker's own config, provider keys, MCP servers and sandbox, with the job's
//! `approvals:` rules), the wire types, connection, lease and payloads (`remote`), or
//! any turn logic: every job drives an [`Engine`] with `EngineCommand`s, as `arbor
//! run` does.
//!
//! Layer: a front end above `engine`, beside `acp`; `cli` starts it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_nats::jetstream::{kv, object_store::ObjectStore};
use futures::StreamExt;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::config::approvals::Rules;
use crate::engine::Engine;
use crate::paths::Paths;
use crate::remote::wire::{PRESENCE_REFRESH_SECS, RanOn, WorkerInfo, now_ms};
use crate::remote::{Remote, RemoteAuth, RemoteError, redact_url};

pub mod files;
mod job;
mod job_dirs;
pub mod leftover;
mod out;
pub mod roots;
pub mod scratch;
mod wip;

pub use job::JobError;

/// What a job's engine is built from: the worker's paths with `cwd` set to the job's
/// working directory (its worktree; the session's scratch store is
/// `paths.sessions_dir()`), and the job's `approvals:` rules, which replace the
/// worker config's (the policy stays at the root).
#[derive(Clone)]
pub struct JobSetup {
    /// The worker's paths with `cwd` = the job's working directory.
    pub paths: Paths,
    /// The root's `approvals:` rules, replacing the worker config's.
    pub approvals: Rules,
    /// Where the job's own sub-sessions are counted: the root's tree, when the job
    /// says the root answers (`Job::limits_at_root`); `None`: the worker's limits.
    pub tree_room: Option<Arc<dyn crate::engine::TreeRoom>>,
}

/// Builds the engine of one job: a runtime over the worker's config with
/// [`JobSetup`], interactive approvals (answered by the root through `Control`).
/// Errors: why no runtime could be built, sent to the root as `Failed`.
pub type Factory =
    Arc<dyn Fn(JobSetup) -> Result<Engine, Box<dyn std::error::Error + Send + Sync>> + Send + Sync>;

/// Where the worker says things a person reads: `out` the start line (stdout), `err`
/// connection retries and problems (stderr).
#[derive(Clone)]
pub struct Voice {
    /// Says a line on stdout (the start line).
    pub out: Arc<dyn Fn(&str) + Send + Sync>,
    /// Says a line on stderr (retries, fetch problems).
    pub err: Arc<dyn Fn(&str) + Send + Sync>,
}

/// `arbor worker`'s options.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The NATS server (`nats://host:4222`; several comma-separated).
    pub nats_url: String,
    /// Credentials file / CA certificate for the connection.
    pub auth: RemoteAuth,
    /// The pool whose jobs it takes (`arbor.jobs.<pool>`).
    pub pool: String,
    /// Jobs it runs at once (at least 1).
    pub slots: u32,
    /// The worker's clone of the project's repository (worktrees of job commits are
    /// cut from it).
    pub repo: PathBuf,
    /// How long a job may go without a progress ack before JetStream redelivers it;
    /// the worker renews every third of it.
    pub ack_wait: Duration,
    /// The worker's own paths (config, Amplifier home, state).
    pub paths: Paths,
    /// The workers' directory (`worker/` in arbor's state directory): this worker's
    /// own directory is made inside it (its jobs' directories, emptied per job and
    /// kept for the next (`job_dirs`), all removed at exit), and what stopped workers
    /// left there is removed at start (`leftover`).
    pub scratch: PathBuf,
}

/// Why the worker stopped with an error (a connection that never comes up is retried,
/// not an error).
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Creating the streams, buckets or the pool's consumer failed.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// The worker's own directory could not be made.
    #[error("cannot create the worker's directory {}: {source}", path.display())]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What every job of this worker shares.
pub(crate) struct Ctx {
    remote: Remote,
    leases: kv::Store,
    payloads: ObjectStore,
    ran_on: RanOn,
    factory: Factory,
    base_paths: Paths,
    repo: PathBuf,
    ack_wait: Duration,
    /// The directories jobs run in, under the worker's own directory.
    job_dirs: job_dirs::JobDirs,
    /// Cancelled when the worker stops: running jobs go quiet and are handed back.
    stopping: CancellationToken,
    /// Where a job says what the person running the worker should know (a job
    /// dropped or handed back).
    voice: Voice,
}

/// This process's identity: `w-` and 8 random hex digits, the host name, the pid.
pub fn identity() -> RanOn {
    let id = uuid::Uuid::new_v4().simple().to_string();
    RanOn {
        worker: format!("w-{}", id.get(..8).unwrap_or(&id)),
        host: crate::remote::wire::hostname(),
        pid: std::process::id(),
    }
}

/// How often, at most, an idle or failing worker checks that the server still has its
/// pool's consumer (`Pool::repair`).
const REPAIR_EVERY: Duration = Duration::from_secs(3);
/// How long the pool's consumer must look missing before the worker makes it again.
const MISSING_FOR: Duration = Duration::from_secs(10);
/// How long a stopping worker waits for the server to remove its presence entry.
const PRESENCE_REMOVAL: Duration = Duration::from_secs(1);

/// The start line: `worker <id> on <host> pid <pid>: pool <p>, <n> slots, nats <url>`
/// (the URL redacted: `remote::redact_url`).
pub fn start_line(ran_on: &RanOn, options: &WorkerOptions) -> String {
    format!(
        "worker {} on {} pid {}: pool {}, {} slot{}, nats {}",
        ran_on.worker,
        ran_on.host,
        ran_on.pid,
        options.pool,
        options.slots,
        if options.slots == 1 { "" } else { "s" },
        redact_url(&options.nats_url)
    )
}

/// `cannot reach NATS at <url>; retrying in <n> s: <why>`.
pub fn retry_line(url: &str, error: &RemoteError, delay: Duration) -> String {
    let reason = match error {
        RemoteError::Connect { reason, .. } => reason.clone(),
        other => other.to_string(),
    };
    format!(
        "cannot reach NATS at {url}; retrying in {} s: {reason}",
        format_secs(delay)
    )
}

fn format_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if (s - s.round()).abs() < 1e-9 {
        format!("{}", s.round())
    } else {
        format!("{s:.1}")
    }
}

/// Runs the worker until `stop` is cancelled: connects (retrying with backoff, each
/// failure said on `voice.err`), ensures the streams, buckets and the pool's consumer,
/// says the start line on `voice.out`, then takes jobs — one per free slot — and runs
/// each with an engine from `factory`. At `stop` it takes no more jobs, cancels the
/// running ones (handed back to the queue), removes its presence entry and returns.
///
/// Making the streams, buckets and consumer is retried like the connection (each
/// failure said on `voice.err`: JetStream disabled, incompatible settings, an
/// election under way), until it works or `stop`.
///
/// Errors: [`WorkerError::Dir`] when the worker's scratch directory cannot be claimed.
pub async fn serve(
    options: WorkerOptions,
    factory: Factory,
    voice: Voice,
    stop: CancellationToken,
) -> Result<(), WorkerError> {
    let ran_on = identity();
    let slots = options.slots.max(1);
    leftover::sweep(&options.scratch, &options.paths, &options.repo);
    let own =
        leftover::claim(&options.scratch, &ran_on.worker).map_err(|source| WorkerError::Dir {
            path: options.scratch.join(&ran_on.worker),
            source,
        })?;
    // The jobs' scratch stores in memory-backed storage when there is some (see
    // `leftover`), else in the Amplifier home.
    let memory = leftover::memory_root().and_then(|root| {
        leftover::sweep_memory(&root);
        leftover::claim(&root, &ran_on.worker)
            .inspect_err(|e| tracing::debug!("worker: {}: {e}", root.display()))
            .ok()
    });
    // Shown redacted (`nats://user:***@…`); connected to as given.
    let url = redact_url(&options.nats_url);
    let client_name = format!("arbor worker {}", ran_on.worker);
    let connecting = Remote::connect_retrying(
        &options.nats_url,
        &client_name,
        &options.auth,
        |e, delay| (voice.err)(&retry_line(&url, e, delay)),
    );
    let remote = tokio::select! {
        remote = connecting => remote,
        () = stop.cancelled() => return Ok(()),
    };
    // Retried like the connection: during a cluster's election the streams cannot be
    // made for a few seconds (issue 38 item 5).
    let mut delay = Duration::from_millis(500);
    let (consumer, leases, workers, payloads) = loop {
        match set_up(&remote, &options).await {
            Ok(made) => break made,
            Err(e) => {
                (voice.err)(&format!(
                    "cannot make arbor's streams on NATS at {url}; retrying in {} s: {e}",
                    format_secs(delay)
                ));
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = stop.cancelled() => return Ok(()),
                }
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
    };
    let shown = WorkerOptions {
        slots,
        ..options.clone()
    };
    (voice.out)(&start_line(&ran_on, &shown));
    let ctx = Arc::new(Ctx {
        remote,
        leases,
        payloads,
        ran_on: ran_on.clone(),
        factory,
        base_paths: Paths {
            store_home: memory.as_ref().map(|m| m.dir.clone()),
            ..options.paths.clone()
        },
        repo: options.repo.clone(),
        ack_wait: options.ack_wait,
        job_dirs: job_dirs::JobDirs::new(own.dir.clone()),
        stopping: stop.clone(),
        voice: voice.clone(),
    });
    let busy = Arc::new(AtomicU32::new(0));
    let presence = tokio::spawn(presence(
        (voice.clone(), url.clone()),
        workers.clone(),
        WorkerInfo {
            ran_on: ran_on.clone(),
            pool: options.pool.clone(),
            slots,
            busy: 0,
            started_ms: now_ms(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        busy.clone(),
    ));
    let mut jobs = tokio::task::JoinSet::new();
    let pool = Pool {
        ctx: &ctx,
        consumer: &consumer,
        name: &options.pool,
        busy: &busy,
        voice: &voice,
        url: &url,
    };
    pool.take_jobs(slots, &mut jobs, &stop).await;
    // Stopping: running jobs see `stop` (their turns are cancelled, the jobs handed
    // back); wait for them to end.
    while jobs.join_next().await.is_some() {}
    presence.abort();
    // Best effort, and brief: with the server gone the entry expires by itself
    // (`PRESENCE_TTL_SECS`), and a stopping worker does not wait out a request timeout.
    let state = ctx.remote.client().connection_state();
    if state == async_nats::connection::State::Connected {
        match tokio::time::timeout(PRESENCE_REMOVAL, workers.delete(&ran_on.worker)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!("worker: removing presence: {e}"),
            Err(_) => tracing::debug!("worker: removing presence: no answer from NATS"),
        }
    }
    drop(ctx);
    drop(own);
    drop(memory);
    Ok(())
}

/// arbor's streams and buckets, the pool's consumer, and the handles a worker keeps.
///
/// Errors: any of them cannot be made or opened.
async fn set_up(
    remote: &Remote,
    options: &WorkerOptions,
) -> Result<
    (
        async_nats::jetstream::consumer::PullConsumer,
        kv::Store,
        kv::Store,
        ObjectStore,
    ),
    RemoteError,
> {
    remote.ensure().await?;
    let consumer = remote.ensure_pool(&options.pool, options.ack_wait).await?;
    Ok((
        consumer,
        remote.leases().await?,
        remote.workers().await?,
        remote.payloads().await?,
    ))
}

/// What the fetch loop needs: the jobs' context, the pool's consumer, the count of
/// running jobs (for the presence entry), where to say a failure, and the server's
/// URL (for those words).
struct Pool<'a> {
    ctx: &'a Arc<Ctx>,
    consumer: &'a async_nats::jetstream::consumer::PullConsumer,
    /// The pool's name (its consumer is made again under it).
    name: &'a str,
    busy: &'a Arc<AtomicU32>,
    voice: &'a Voice,
    url: &'a str,
}

/// The fetch loop's checks of the pool's consumer: when it was last checked, and
/// since when it has looked missing.
struct Upkeep {
    checked: tokio::time::Instant,
    missing_since: Option<tokio::time::Instant>,
}

impl Pool<'_> {
    /// Takes jobs until `stop`: one per free slot of `slots`, fetched in batches of
    /// the free slots, each run in `jobs`. A fetch that fails is said once (until one
    /// works again) and retried after a second; a job beyond the free slots is handed
    /// back (`Nak`) for redelivery. After a failed or empty fetch the worker checks, at
    /// most every [`REPAIR_EVERY`], that the server still has the pool's consumer, and
    /// makes the streams, buckets and consumer again when it lost them ([`Self::repair`]).
    async fn take_jobs(
        &self,
        slots: u32,
        jobs: &mut tokio::task::JoinSet<()>,
        stop: &CancellationToken,
    ) {
        let free = Arc::new(Semaphore::new(slots as usize));
        let mut failing = false;
        let mut consumer = self.consumer.clone();
        let mut upkeep = Upkeep {
            checked: tokio::time::Instant::now(),
            missing_since: None,
        };
        loop {
            let first = tokio::select! {
                permit = free.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
                () = stop.cancelled() => break,
            };
            let mut permits = vec![first];
            while let Ok(more) = free.clone().try_acquire_owned() {
                permits.push(more);
            }
            let fetching = consumer
                .fetch()
                .max_messages(permits.len())
                .expires(Duration::from_secs(5))
                .messages();
            // Asking for jobs waits on a reconnecting client: a stop does not.
            let fetched = tokio::select! {
                fetched = fetching => fetched,
                () = stop.cancelled() => break,
            };
            let batch = match fetched {
                Ok(batch) => batch,
                Err(e) => {
                    if !failing {
                        (self.voice.err)(&format!(
                            "cannot fetch jobs from NATS at {}: {e}; retrying",
                            self.url
                        ));
                    }
                    failing = true;
                    drop(permits);
                    // The upkeep asks the server, which may be gone: a stop does not
                    // wait for its answer.
                    tokio::select! {
                        () = self.upkeep(&mut upkeep, &mut consumer) => {}
                        () = stop.cancelled() => break,
                    }
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        () = stop.cancelled() => break,
                    }
                }
            };
            if self.run_batch(batch, permits, jobs, stop).await {
                failing = false;
            } else {
                tokio::select! {
                    () = self.upkeep(&mut upkeep, &mut consumer) => {}
                    () = stop.cancelled() => break,
                }
            }
            while jobs.try_join_next().is_some() {}
        }
    }

    /// After a failed or empty fetch: at most every [`REPAIR_EVERY`], checks that the
    /// server still has the pool's consumer and, when it has looked missing for
    /// [`MISSING_FOR`], replaces `consumer` with one made again ([`Self::repair`]).
    async fn upkeep(
        &self,
        upkeep: &mut Upkeep,
        consumer: &mut async_nats::jetstream::consumer::PullConsumer,
    ) {
        if upkeep.checked.elapsed() < REPAIR_EVERY {
            return;
        }
        upkeep.checked = tokio::time::Instant::now();
        if !self.ctx.remote.pool_consumer_missing(self.name).await {
            upkeep.missing_since = None;
            return;
        }
        // Only when it stays missing: during a cluster's election a node may answer for
        // a few seconds that it has no such stream or consumer.
        let since = *upkeep
            .missing_since
            .get_or_insert_with(tokio::time::Instant::now);
        if since.elapsed() < MISSING_FOR {
            return;
        }
        upkeep.missing_since = None;
        if let Some(made) = self.repair().await {
            *consumer = made;
        }
    }

    /// Makes arbor's streams, buckets and the pool's consumer again after the server
    /// lost them (restarted on an empty store, or replaced) and says so on stderr; the
    /// new consumer, or `None` when it cannot be made yet (said too; tried again at the
    /// next check).
    async fn repair(&self) -> Option<async_nats::jetstream::consumer::PullConsumer> {
        let remote = &self.ctx.remote;
        let made = async {
            remote.ensure().await?;
            remote.ensure_pool(self.name, self.ctx.ack_wait).await
        };
        match made.await {
            Ok(consumer) => {
                (self.voice.err)(&format!(
                    "NATS at {} lost arbor's streams (a server restarted without its store?): recreated them and the consumer of pool {}",
                    self.url, self.name
                ));
                Some(consumer)
            }
            Err(e) => {
                (self.voice.err)(&format!(
                    "NATS at {} lost arbor's streams and they cannot be made yet: {e}; retrying",
                    self.url
                ));
                None
            }
        }
    }

    /// Runs each job of `batch` in `jobs` with one of `permits` (a job beyond them is
    /// handed back). Returns whether a job arrived (the server answers again).
    async fn run_batch(
        &self,
        mut batch: async_nats::jetstream::consumer::pull::Batch,
        mut permits: Vec<tokio::sync::OwnedSemaphorePermit>,
        jobs: &mut tokio::task::JoinSet<()>,
        stop: &CancellationToken,
    ) -> bool {
        let mut arrived = false;
        loop {
            let next = tokio::select! {
                next = batch.next() => next,
                () = stop.cancelled() => None,
            };
            let Some(message) = next else { break };
            let message = match message {
                Ok(message) => message,
                Err(e) => {
                    tracing::debug!("worker: fetch: {e}");
                    continue;
                }
            };
            arrived = true;
            let Some(permit) = permits.pop() else {
                // More than asked for: leave it for redelivery.
                let _ = message
                    .ack_with(async_nats::jetstream::AckKind::Nak(None))
                    .await;
                continue;
            };
            let (ctx, busy) = (self.ctx.clone(), self.busy.clone());
            jobs.spawn(async move {
                busy.fetch_add(1, Ordering::SeqCst);
                job::run(ctx, message).await;
                busy.fetch_sub(1, Ordering::SeqCst);
                drop(permit);
            });
        }
        arrived
    }
}

/// Refreshes this worker's presence entry every [`PRESENCE_REFRESH_SECS`] with how
/// many jobs it runs now, until aborted. A refresh that fails says once on stderr that
/// the server at `url` is lost (the client reconnects by itself), and the first one
/// that works again says it is back.
async fn presence(
    (voice, url): (Voice, String),
    workers: kv::Store,
    mut info: WorkerInfo,
    busy: Arc<AtomicU32>,
) {
    let key = info.ran_on.worker.clone();
    let mut down = false;
    loop {
        info.busy = busy.load(Ordering::SeqCst);
        match serde_json::to_vec(&info) {
            Ok(value) => match workers.put(&key, value.into()).await {
                Ok(_) if down => {
                    down = false;
                    (voice.err)(&format!("reconnected to NATS at {url}"));
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("worker: presence: {e}");
                    if !down {
                        down = true;
                        (voice.err)(&format!("lost NATS at {url} ({e}); reconnecting"));
                    }
                }
            },
            Err(e) => tracing::warn!("worker: presence: {e}"),
        }
        tokio::time::sleep(Duration::from_secs(PRESENCE_REFRESH_SECS)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_unique_and_well_formed() {
        let a = identity();
        let b = identity();
        assert_ne!(a.worker, b.worker);
        assert_eq!(a.worker.len(), 10);
        assert!(a.worker.starts_with("w-"));
        assert!(a.worker[2..].bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(a.pid, std::process::id());
        assert!(!a.host.is_empty());
    }

    #[test]
    fn lines_say_who_where_and_how_long() {
        let ran_on = RanOn {
            worker: "w-0000beef".into(),
            host: "box".into(),
            pid: 42,
        };
        let options = WorkerOptions {
            nats_url: "nats://127.0.0.1:4222".into(),
            auth: RemoteAuth::default(),
            pool: "default".into(),
            slots: 2,
            repo: ".".into(),
            ack_wait: Duration::from_secs(30),
            paths: Paths::from_env_map(&|_| None, ".".into()),
            scratch: ".".into(),
        };
        assert_eq!(
            start_line(&ran_on, &options),
            "worker w-0000beef on box pid 42: pool default, 2 slots, nats nats://127.0.0.1:4222"
        );
        let e = RemoteError::Connect {
            url: "nats://x:1".into(),
            reason: "connection refused".into(),
        };
        assert_eq!(
            retry_line("nats://x:1", &e, Duration::from_secs(2)),
            "cannot reach NATS at nats://x:1; retrying in 2 s: connection refused"
        );
        assert_eq!(
            retry_line("nats://x:1", &e, Duration::from_millis(500)),
            "cannot reach NATS at nats://x:1; retrying in 0.5 s: connection refused"
        );
    }
}
