//! One job, start to end: the lease, the heartbeat, the files, the session in a scratch
//! store, the engine's turn, everything it publishes, and the acknowledgement.
//!
//! Owns: [`run`] — whether the job runs here at all (`admit`: a dead root's job is
//! dropped, one this worker's clone cannot serve handed back), taking the session's
//! lease with a fresh key pair for the run (a lost race drops the job: the winner runs
//! and acks it), `Started` (a first delivery's rides in the first pack when the root
//! takes that), the heartbeat (lease renewal plus a progress ack every ack wait / 3; a
//! renewal that finds the lease taken cancels the turn and silences the job), cutting
//! the worktree, materialising the session and the stored sub-sessions the job carries
//! (a redelivered job asks the root for the session as stored now,
//! `arbor.sync.<session>`, signed with the run's key, and continues it with the
//! engine's crash repair), running it through [`Engine`]
//! (`Submit`, or `ContinueInterrupted`), forwarding every event of the session — and of
//! its own sub-sessions, counted and kept at the root (`tree`) — its connection's one
//! ordered stream carries as `WorkerMsg::Event` (all of them before the turn's reply),
//! answering `Control` messages (approvals, steer, queue, cancel), `Done` with the
//! answer and the patch, or `Failed` when the job cannot run, and acking the job only
//! after that was stored. A writing run saves its work in progress before each tool
//! result goes to the root, and a resumed one restores it first (`wip`); getting the
//! job ready is `setup`'s. Does not own: the fetch loop and presence (`worker`), the
//! wire types (`remote::wire`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, AckKind};
use futures::StreamExt;

use super::files::{self, FilesError, JobTree};
use super::out::{Out, Packing, Sent};
use super::scratch::{self, StoreGuard};
use super::wip::{self, Wip};
use super::{Ctx, JobSetup};
use crate::config::approvals::Rules;
use crate::engine::{Engine, EngineError, EngineOutput, EngineReply, TurnOutcome};
use crate::paths::Paths;
use crate::remote::RemoteError;
use crate::remote::lease::{self, Held};
use crate::remote::payload::Payload;
use crate::remote::seal::{self, Signer};
use crate::remote::wire::{
    CarriedSession, Changes, Control, JOB_VERSION, Job, SyncReply, WorkerMsg, ctl_subject,
    sync_subject, token,
};
use crate::session::{
    EngineCommand, EngineEvent, Event, Message, Metadata, SessionStatus, SessionStore, StoreError,
};
use controls::command_of;
use setup::{
    Start, command_for, cut_files, engine_for, into_scratch, start, work_in_progress,
    worker_metadata,
};

mod admit;
mod controls;
mod setup;
mod tree;

use tree::{RootRoom, Subtree};

/// How long one request of a redelivered job on `arbor.sync.<session>` waits.
const SYNC_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a redelivered job keeps asking the root (an unanswered request, or an
/// answer saying the root could not read the server) before it fails: longer than a
/// cluster's election, during which the root's reads fail (issue 38 item 5).
const SYNC_FOR: Duration = Duration::from_secs(45);
/// How long the job's turns get to end once it is over (cancelled when lost).
const END_GRACE: Duration = Duration::from_secs(5);

/// Why a job could not run; sent to the root as `WorkerMsg::Failed`.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// A job written by another arbor version.
    #[error(
        "job version {got} is not supported by this worker (version {JOB_VERSION}); upgrade one side"
    )]
    Version { got: u32 },
    /// The worktree could not be made or read.
    #[error(transparent)]
    Files(#[from] FilesError),
    /// Talking to NATS failed (a payload, the sync request).
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// The scratch store could not be written or read.
    #[error("worker's scratch store: {0}")]
    Store(#[from] StoreError),
    /// The job's `approvals:` rules do not parse.
    #[error("the job's approvals: {0}")]
    Approvals(String),
    /// The worker's engine could not be built (its config, bundle).
    #[error("worker setup: {0}")]
    Setup(String),
    /// The root did not answer the redelivered job's sync request.
    #[error("cannot resume the redelivered job: {0}")]
    Sync(String),
    /// The engine refused the turn before running it (no provider, …).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The previous worker's work in progress does not apply to the base commit.
    #[error(
        "cannot restore the previous worker's work in progress ({object}): {error}; the job is not run on other files than the root's transcript says"
    )]
    Resume { object: String, error: FilesError },
    /// Local files of the job (its scratch directory).
    #[error("worker's scratch directory: {0}")]
    Io(#[from] std::io::Error),
}

/// How a job's run ended.
enum Ended {
    /// The answer or failure to send (then ack).
    Reply(WorkerMsg),
    /// Nothing more to send: the lease was lost, the worker is stopping, or the root
    /// cannot be reached. The job is left unacked (JetStream redelivers it).
    Quiet,
}

/// Runs the job in `msg` to its end (see the module doc). Never panics; every
/// failure is published (`Failed`) or logged.
pub(super) async fn run(ctx: Arc<Ctx>, msg: jetstream::Message) {
    let (attempt, seq) = match msg.info() {
        Ok(info) => (
            u32::try_from(info.delivered).unwrap_or(1).max(1),
            info.stream_sequence,
        ),
        Err(e) => {
            tracing::warn!("worker: a job without JetStream info ({e}); left for redelivery");
            return;
        }
    };
    let job: Job = match serde_json::from_slice(&msg.payload) {
        Ok(job) => job,
        Err(e) => {
            // No session to answer: the message is dropped for good.
            tracing::warn!("worker: job {seq} is not a job ({e}); dropped");
            if let Err(e) = msg.ack_with(AckKind::Term).await {
                tracing::warn!("worker: dropping job {seq}: {e}");
            }
            return;
        }
    };
    if admit::admit(&ctx, &job, &msg, attempt).await == admit::Admit::Settled {
        return;
    }
    let session = job.session_id.to_string();
    // A key pair for this run: its public half goes into the lease, and the root
    // applies only what is signed with it (`remote::seal`, `remote::pin`).
    let signer = match Signer::generate() {
        Ok(signer) => Arc::new(signer),
        Err(e) => {
            tracing::warn!(session, "worker: {e}; job left for redelivery");
            return;
        }
    };
    let terms = (signer.public_key(), ctx.ack_wait);
    // The first delivery of a session's first run: nobody can have leased it yet.
    let unleased = attempt <= 1 && job.run == 1;
    let held =
        match lease::acquire(&ctx.leases, &session, &ctx.ran_on, (seq, unleased), terms).await {
            Ok(held) => held,
            Err(RemoteError::LeaseLost { .. }) => {
                tracing::info!(
                    session,
                    "worker: another worker took the lease; job left to it"
                );
                return;
            }
            Err(e) => {
                tracing::warn!(session, "worker: {e}; job left for redelivery");
                return;
            }
        };
    let out = match Out::new(
        ctx.remote.js().clone(),
        (&session, job.run),
        (held.epoch(), signer.clone()),
        (
            &ctx.ran_on.worker,
            Packing {
                events: job.packed_events,
                many: job.packed_many,
            },
        ),
    ) {
        Ok(out) => Arc::new(out),
        Err(e) => {
            tracing::warn!(session, "worker: {e}");
            return;
        }
    };
    let msg = Arc::new(msg);
    tracing::info!(
        session,
        run = job.run,
        epoch = held.epoch(),
        attempt,
        dispatch_ms = crate::remote::wire::now_ms().saturating_sub(job.dispatched_at_ms),
        "worker: job taken"
    );
    let beat = tokio::spawn(heartbeat(ctx.clone(), msg.clone(), held, out.clone()));
    let stopping = {
        let (stop, stale) = (ctx.stopping.clone(), out.stale.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            stale.cancel();
        })
    };
    let ended = drive(&ctx, &job, attempt, &out).await;
    let reply = match ended {
        Ended::Reply(reply) => out.send(&reply).await,
        Ended::Quiet => Ok(Sent::Quiet),
    };
    beat.abort();
    stopping.abort();
    settle(&ctx, &job, &msg, &out, reply).await;
}

/// Ends the job's message by how its answer went: stored at the root — acked (and a
/// writing run's saved work in progress deleted); not sent — left for redelivery,
/// handed back at once when the worker stops with the lease still its own.
async fn settle(
    ctx: &Ctx,
    job: &Job,
    msg: &jetstream::Message,
    out: &Out,
    reply: Result<Sent, RemoteError>,
) {
    let session = job.session_id.as_str();
    match reply {
        Ok(Sent::Stored) => {
            match msg.double_ack_with(AckKind::Ack).await {
                Ok(()) => {
                    if writes(job)
                        && let Ok(name) = wip::wip_name(session, job.run)
                    {
                        wip::delete(&ctx.payloads, &name).await;
                    }
                }
                Err(e) => tracing::warn!(session, "worker: acking the job: {e}"),
            }
            tracing::info!(session, run = job.run, "worker: job done");
        }
        Ok(Sent::Quiet) | Err(_) => {
            if let Err(e) = &reply {
                tracing::warn!(session, "worker: {e}; job left for redelivery");
            }
            if ctx.stopping.is_cancelled() && !out_lost(out) {
                // Stopping with the lease still ours: hand the job back at once.
                let _ = msg.ack_with(AckKind::Nak(None)).await;
            }
        }
    }
}

/// Whether the job may write files (its work in progress is kept).
fn writes(job: &Job) -> bool {
    job.files.as_ref().is_some_and(|f| f.writes)
}

/// Whether the job's lease was lost (not merely the worker stopping).
fn out_lost(out: &Out) -> bool {
    out.is_lost()
}

/// `Started`, then the run; what to send at its end.
async fn drive(ctx: &Arc<Ctx>, job: &Job, attempt: u32, out: &Arc<Out>) -> Ended {
    // Subscribed before `Started`: what the root sends once it hears of this holder
    // (held controls, a cancel) waits in the subscription until the turn runs.
    let control =
        match ctl_subject(&job.session_id) {
            Ok(subject) => ctx.remote.client().subscribe(subject).await.map_err(|e| {
                RemoteError::nats("cannot subscribe to the session's control subject", e)
            }),
            Err(e) => Err(e.into()),
        };
    let started = WorkerMsg::Started {
        ran_on: ctx.ran_on.clone(),
        epoch: out.epoch(),
        attempt,
    };
    // A first delivery's `Started` rides in the first pack when the root takes that;
    // a redelivery's is stored before its sync request, which the root answers only
    // to the holder whose `Started` came first.
    let led = attempt <= 1 && out.lead(&started);
    if !led {
        match out.send(&started).await {
            Ok(Sent::Stored) => {}
            Ok(Sent::Quiet) => return Ended::Quiet,
            Err(e) => {
                tracing::warn!(session = %job.session_id, "worker: {e}");
                return Ended::Quiet;
            }
        }
    }
    let ran = match control {
        Ok(control) => execute(ctx, job, attempt, out, control).await,
        Err(e) => Err(e.into()),
    };
    match ran {
        Ok(Some(done)) => Ended::Reply(done),
        Ok(None) => Ended::Quiet,
        Err(error) => {
            tracing::warn!(session = %job.session_id, "worker: job failed: {error}");
            Ended::Reply(WorkerMsg::Failed {
                run: job.run,
                error: error.to_string(),
            })
        }
    }
}

/// Renews the lease and sends a progress ack every ack wait / 3 until aborted. A
/// renewal that finds the lease taken — or no successful renewal for a whole ack wait —
/// silences the job (`Out::stale`), which cancels its turn.
async fn heartbeat(ctx: Arc<Ctx>, msg: Arc<jetstream::Message>, mut held: Held, out: Arc<Out>) {
    let every = (ctx.ack_wait / 3).max(Duration::from_millis(100));
    let mut renewed = Instant::now();
    loop {
        tokio::time::sleep(every).await;
        match held.renew(&ctx.leases).await {
            Ok(()) => {
                renewed = Instant::now();
                if let Err(e) = msg.ack_with(AckKind::Progress).await {
                    tracing::warn!(session = %held.session, "worker: progress ack: {e}");
                }
            }
            Err(RemoteError::LeaseLost { .. }) => {
                tracing::warn!(
                    session = %held.session,
                    epoch = held.epoch(),
                    "worker: lease lost (another worker took the session); stopping its turn"
                );
                out.lose();
                return;
            }
            Err(e) => {
                tracing::warn!(session = %held.session, "worker: {e}");
                if renewed.elapsed() >= ctx.ack_wait {
                    tracing::warn!(session = %held.session, "worker: lease not renewed for a whole ack wait; stopping its turn");
                    out.lose();
                    return;
                }
            }
        }
    }
}

/// Runs `job` (see the module doc): `Ok(Some(Done))`, `Ok(None)` when the job went
/// quiet (lease lost, worker stopping, root unreachable), or why it could not run.
async fn execute(
    ctx: &Arc<Ctx>,
    job: &Job,
    attempt: u32,
    out: &Arc<Out>,
    control: async_nats::Subscriber,
) -> Result<Option<WorkerMsg>, JobError> {
    if job.version != JOB_VERSION {
        return Err(JobError::Version { got: job.version });
    }
    let session = job.session_id.to_string();
    // Emptied and kept for the next job when this one ends (`job_dirs`).
    let dir = ctx.job_dirs.take()?;
    let files = cut_files(ctx, job, dir.path()).await?;
    let (from, resume) = match start(ctx, job, attempt, out, &files).await? {
        Start::Answered(done) => return Ok(Some(done)),
        Start::Run { from, resume } => (*from, resume),
    };
    let Starting {
        metadata: root_meta,
        transcript,
        carried: carried_now,
        task_calls,
    } = from;
    let wip = work_in_progress(ctx, job, (&files, dir.path()), resume, out).await?;
    let paths = Paths {
        cwd: files.work_dir.clone(),
        ..ctx.base_paths.clone()
    };
    let sessions_dir = paths.sessions_dir();
    let _store = StoreGuard::new(&sessions_dir);
    let scratch_dir = dir.path().join("scratch");
    let carried = match (carried_now, &job.subtree) {
        (Some(now), _) => now,
        (None, Some(subtree)) => subtree.clone().unpack(&ctx.payloads).await?,
        (None, None) => Vec::new(),
    };
    let sessions = worker_metadata(job, &root_meta, (&files, &scratch_dir), resume, carried)?;
    for note in &sessions.dropped {
        tracing::warn!(session, "worker: {note}");
    }
    let carried = into_scratch(&sessions_dir, sessions, (transcript, task_calls)).await?;
    let (engine, room) = engine_for(ctx, job, paths, out)?;
    let command = command_for(job, resume);
    let mut subtree = Subtree::new(job.session_id.clone(), sessions_dir.clone());
    subtree.carry(carried);
    let ran = run_engine(
        (job, control),
        &engine,
        (out, wip),
        (&mut subtree, room.as_ref()),
        command,
    )
    .await;
    shut_down(engine, &session).await;
    let Some(outcome) = ran? else {
        return Ok(None);
    };
    if subtree.send_finals(out).await? == Sent::Quiet {
        return Ok(None);
    }
    let changes = changes_of(ctx, job, &files).await?;
    let after = {
        let (dir, id) = (sessions_dir.clone(), session.clone());
        blocking(move || SessionStore::new(dir).load_metadata(&id))
            .await??
            .0
    };
    let metadata = scratch::for_root(&after, &root_meta, &ctx.ran_on);
    Ok(Some(WorkerMsg::Done {
        run: job.run,
        status: outcome.status,
        response: outcome.response,
        turn_count: u64::from(outcome.turn_count),
        error: outcome.error.map(|e| e.to_string()),
        metadata: Box::new(metadata),
        changes,
    }))
}

/// Ends the job's engine: its turns get [`END_GRACE`], then are cancelled (said in
/// the log when any still ran).
async fn shut_down(engine: Engine, session: &str) {
    let left = engine.shutdown(END_GRACE).await;
    if left > 0 {
        tracing::warn!(
            session,
            "worker: {left} turn(s) still running after the job"
        );
    }
}

/// A writing job's work as `Changes` (its worktree's patch against the job's commit,
/// packed inline or as an object), `None` for a job that does not write.
async fn changes_of(
    ctx: &Ctx,
    job: &Job,
    files: &setup::JobFilesHere,
) -> Result<Option<Payload<Changes>>, JobError> {
    match (&files.tree, &job.files) {
        (Some(tree), Some(job_files)) if job_files.writes => {
            let (top, base) = (tree.top.clone(), tree.base.clone());
            let patch = blocking(move || files::patch_at(&top, &base)).await??;
            let session = job.session_id.to_string();
            Ok(Some(
                pack_changes(ctx, (&session, job.run), &tree.base, patch).await?,
            ))
        }
        _ => Ok(None),
    }
}

/// The object a run's `Changes` go to when too large to be inline.
fn changes_name(session: &str, run: u64) -> Result<String, RemoteError> {
    Ok(format!("{}-{run}-changes", token(session)?))
}

/// A writing run's [`Changes`] (`patch` against `base`), inline or in the payload
/// store under [`changes_name`].
async fn pack_changes(
    ctx: &Ctx,
    (session, run): (&str, u64),
    base: &str,
    patch: String,
) -> Result<Payload<Changes>, RemoteError> {
    let changes = Changes {
        base_commit: base.to_string(),
        patch,
    };
    Payload::pack(&ctx.payloads, &changes_name(session, run)?, changes).await
}

/// Applies the previous worker's work in progress `name` (if any) to `tree`; the
/// patch applied (empty when there was none).
///
/// Errors: [`JobError::Resume`] when it does not apply, [`JobError::Remote`] when it
/// cannot be fetched.
async fn restore(ctx: &Ctx, tree: &JobTree, name: &str) -> Result<String, JobError> {
    let Some(patch) = wip::fetch(&ctx.payloads, name).await? else {
        return Ok(String::new());
    };
    let (top, applied) = (tree.top.clone(), patch.clone());
    blocking(move || wip::apply_at(&top, &applied))
        .await?
        .map_err(|error| JobError::Resume {
            object: name.to_string(),
            error,
        })?;
    tracing::info!(
        object = name,
        "worker: the previous worker's work in progress restored"
    );
    Ok(patch)
}

/// Asks the root for the session as its store holds it now (a redelivered job),
/// signed as the lease holder (`seal::request_sync`: the root answers no one else).
/// Asked again (a second apart) while the root does not answer or says it could not
/// read the server, for up to [`SYNC_FOR`]; a refusal is final.
async fn sync(ctx: &Ctx, session: &str, out: &Out) -> Result<Starting, JobError> {
    let started = Instant::now();
    loop {
        let error = match sync_once(ctx, session, out).await {
            Ok(answer) => return Ok(answer),
            Err(SyncError::Final(e)) => return Err(e),
            Err(SyncError::Again(e)) => e,
        };
        if started.elapsed() + Duration::from_secs(1) > SYNC_FOR {
            return Err(error);
        }
        tracing::info!(session, "worker: {error}; asking the root again");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The session a run starts from: the job's own on a first attempt, else the root's
/// as it stores it now (a redelivered job's sync answer).
struct Starting {
    metadata: Metadata,
    transcript: Vec<Message>,
    /// Its own sub-sessions as the root stores them now (`SyncReply::subtree`; `None`
    /// on a first attempt, from an older root, or when it has none: the job's copies,
    /// `Job::subtree`, serve).
    carried: Option<Vec<CarriedSession>>,
    /// Its delegation calls as the root stores them now (`SyncReply::task_calls`,
    /// `wire::TaskCalls`; none on a first attempt, whose calls the root answered
    /// before the job went out).
    task_calls: crate::remote::wire::TaskCalls,
}

/// Why one sync request did not give the session.
enum SyncError {
    /// Worth asking again (no answer, the root could not read the server).
    Again(JobError),
    /// The root refused, or its answer cannot be read.
    Final(JobError),
}

/// One request of [`sync`].
async fn sync_once(ctx: &Ctx, session: &str, out: &Out) -> Result<Starting, SyncError> {
    let subject = sync_subject(session)
        .map_err(RemoteError::from)
        .map_err(|e| SyncError::Final(e.into()))?;
    let answer = seal::request_sync(
        ctx.remote.client(),
        subject,
        (session, out.epoch()),
        out.signer(),
        SYNC_TIMEOUT,
    )
    .await
    .map_err(|e| {
        SyncError::Again(JobError::Sync(format!(
            "the root did not answer on arbor.sync: {e}"
        )))
    })?;
    let reply: SyncReply = serde_json::from_slice(&answer.payload)
        .map_err(|e| SyncError::Final(RemoteError::from(e).into()))?;
    if let Some(error) = reply.error {
        return Err(if error.starts_with("refused") {
            SyncError::Final(JobError::Sync(error))
        } else {
            SyncError::Again(JobError::Sync(error))
        });
    }
    let unpacked = |e: RemoteError| SyncError::Again(e.into());
    let carried = match reply.subtree {
        Some(subtree) => Some(subtree.unpack(&ctx.payloads).await.map_err(unpacked)?),
        None => None,
    };
    let task_calls = match reply.task_calls {
        Some(calls) => calls.unpack(&ctx.payloads).await.map_err(unpacked)?,
        None => Vec::new(),
    };
    match (reply.metadata, reply.transcript) {
        (Some(metadata), Some(transcript)) => Ok(Starting {
            metadata: *metadata,
            transcript: transcript.unpack(&ctx.payloads).await.map_err(unpacked)?,
            carried,
            task_calls,
        }),
        _ => Err(SyncError::Final(JobError::Sync(
            "the root's answer has no metadata or transcript".into(),
        ))),
    }
}

/// Runs `command` on `engine` and forwards the session's events until its turn ends:
/// `Ok(Some(outcome))`, `Ok(None)` when the job went quiet (its turn was cancelled),
/// or the engine's error before the turn. The root's control messages are taken once
/// the turn runs (its first `session:status` running or waiting): a cancel or steer
/// sent earlier then reaches the running turn instead of racing its start.
async fn run_engine(
    (job, mut control): (&Job, async_nats::Subscriber),
    engine: &Engine,
    (out, mut wip): (&Out, Option<Wip>),
    (subtree, room): (&mut Subtree, Option<&RootRoom>),
    command: EngineCommand,
) -> Result<Option<TurnOutcome>, JobError> {
    let id = job.session_id.clone();
    let (client, mut stream) = engine.connect();
    let turn = client.submit(command);
    let mut cancelled = false;
    let mut running = false;
    let ended = loop {
        tokio::select! {
            biased;
            () = out.stale.cancelled(), if !cancelled => {
                cancelled = true;
                client.submit(EngineCommand::Cancel { session_id: id.clone() });
            }
            output = stream.next() => match output {
                // In order: every event of the turn is forwarded before its reply.
                Some(EngineOutput::Event(event)) => {
                    // The job's session and its own sub-sessions (issue 38 item 7).
                    let Some(first) = subtree.before(&event) else { continue };
                    for msg in first {
                        let _ = out.send(&msg).await;
                    }
                    if event.session_id == id {
                        running = running || turn_runs(&event);
                    }
                    forward(out, &event, wip.as_mut()).await;
                    if let Some(msg) = subtree.after(&event) {
                        let _ = out.send(&msg).await;
                    }
                }
                Some(EngineOutput::Reply { command, reply }) if command == turn => match reply {
                    EngineReply::TurnFinished(outcome) if outcome.session_id == id => {
                        break Ok(outcome);
                    }
                    EngineReply::Failed { error, .. } => break Err(error),
                    _ => {}
                },
                // A control's answer: only its failures are worth a line.
                Some(EngineOutput::Reply { reply, .. }) => match reply {
                    EngineReply::Failed { error, .. } | EngineReply::NotSent { error, .. } => {
                        tracing::warn!("worker: control: {error}");
                    }
                    _ => {}
                },
                Some(EngineOutput::Answered { command }) if command != turn => {}
                Some(EngineOutput::Answered { .. }) | None => {
                    break Err(EngineError::TaskFailed {
                        what: "the job's turn",
                        message: "the engine ran no turn (nothing to continue)".into(),
                    });
                }
            },
            Some(message) = control.next(), if running => {
                take_control(&client, (&id, &*subtree, room), &message.payload);
            }
        }
    };
    if out.stale.is_cancelled() {
        return Ok(None);
    }
    Ok(Some(ended?))
}

/// One control message of the root for the job `id` (see `controls`): a spawn's
/// answer goes to `room`, a control for one of the job's own sub-sessions only when
/// `subtree` has it, anything else to the engine through `client`.
fn take_control(
    client: &crate::engine::EngineClient,
    (id, subtree, room): (&crate::session::SessionId, &Subtree, Option<&RootRoom>),
    payload: &[u8],
) {
    match serde_json::from_slice::<Control>(payload) {
        Ok(Control::Reserved { child, refused }) => {
            if let Some(room) = room {
                room.answer(&child, refused);
            }
        }
        Ok(Control::Of { session_id, .. }) if !subtree.has(&session_id) => {
            tracing::warn!(session = %id, "worker: a control for {session_id}, not a session of this job");
        }
        Ok(control) => {
            if let Some(command) = command_of(id, control) {
                client.submit(command);
            }
        }
        Err(e) => tracing::warn!(session = %id, "worker: a control message that is not one: {e}"),
    }
}

/// Whether `event` says its session's turn runs (status running or waiting): from
/// then on a cancel, steer or queue reaches that turn.
fn turn_runs(event: &Event) -> bool {
    matches!(
        &event.msg,
        EngineEvent::SessionStatus(s)
            if matches!(s.status, SessionStatus::Running | SessionStatus::Waiting)
    )
}

/// Hands one event to the job's publisher (which makes the job quiet when the root
/// cannot be reached). A tool's result is preceded by saving the work in progress of
/// a writing run (the root never holds a tool result whose file effects a takeover
/// could not restore).
async fn forward(out: &Out, event: &Event, wip: Option<&mut Wip>) {
    if let Some(wip) = wip.filter(|_| wip::is_tool_result(event) && !out.stale.is_cancelled()) {
        wip.save().await;
    }
    out.event(event);
}

/// Runs `work` (git, store files) on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, JobError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| JobError::Setup(format!("a blocking step failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_errors_say_what_to_do() {
        assert_eq!(
            JobError::Version { got: 9 }.to_string(),
            "job version 9 is not supported by this worker (version 1); upgrade one side"
        );
    }
}
