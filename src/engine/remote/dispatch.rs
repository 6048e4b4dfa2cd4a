//! One remote run of a sub-session at the root (design "Root side"): publish its job,
//! then consume `arbor.out.<session>` until the worker's `Done` / `Failed` or the end
//! of a cancellation, applying every message the run's binding admits.
//!
//! Owns: [`run`] — the child's running guard (its token a child of the calling
//! turn's), answering its calls left without a result before the job goes out
//! (`recovered`, from the root's store: the worker's has no sub-sessions), the
//! stored sub-sessions the job carries (`carried`), the connection (an unreachable
//! server fails the child's turn with an error naming the URL; never a local run),
//! the run's registration with the connection's
//! hub (its out messages and lease writes routed to it) and the
//! `arbor.sync.<session>` subscription (both made before the job is published), the
//! job itself (redacted plan, transcript payload, the root's `approvals:` rules, the
//! repository facts), the binding of the run to its lease holder
//! (`remote::pin::Binding`, fed by the hub's watch of the leases and a read before a
//! message unless the watch showed its epoch held by a holder alive now: only the
//! pinned holder's signed messages are applied, a
//! refused one is logged and counted, and a lease taken while its holder is alive
//! fails the run; issue 34 item 7), controls out on `arbor.ctl.<session>`, answering a
//! redelivered job's sync request when the holder signed it, and turning `Done` into
//! the run's outcome (`messages`: the worker's patch applied in the child's worktree).
//! Does not own: what each message does to the session (`apply`), the git steps
//! (`changes`), NATS plumbing (`crate::remote`).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::apply::Applier;
use super::hub::{Hub, Inbox};
use super::person::RunInput;
use super::{Forward, RemoteRuns, auth};
use crate::config::MountPlan;
use crate::config::remote::RemotePlacement;
use crate::engine::env::TurnEnv;
use crate::engine::live::LiveSession;
use crate::engine::outcome::{EngineError, TurnOutcome};
use crate::engine::{isolate, recovered};
use crate::remote::lease;
use crate::remote::pin::{Binding, Observed, Verdict};
use crate::remote::seal::{SEQ_HEADER, SIG_HEADER};
use crate::remote::wire::{
    self, Control, EPOCH_HEADER, JOB_VERSION, Job, JobFiles, Lease, SyncReply, WORKER_HEADER,
    WireDecision, WorkerMsg,
};
use crate::remote::{Payload, Remote, RemoteError, StreamState};
use crate::session::{Message, SessionId, SessionStatus};

mod carried;
mod messages;
mod watch;

/// How long the root keeps trying to read a lease before it judges a message by its
/// signature alone: longer than a JetStream leader election.
const LEASE_READ_FOR: Duration = Duration::from_secs(20);

use watch::{AliveGuard, CHECK_EVERY, StoreWatch, answer_alive, publish_job};

/// How long after a `Control::Cancel` the root waits for the worker's `Done` (its
/// final transcript and metadata) before it ends the run as cancelled on its own:
/// under the 5 s a cancelled turn gives its tool calls (`calls::CANCEL_GRACE`), so a
/// parent's cancel still records the child's answer.
const CANCEL_WAIT: Duration = Duration::from_secs(4);

/// Runs `child`'s next turn on a worker of `placement`'s pool with `instruction`
/// (the parent's context already folded in), under a child token of `parent`.
///
/// Returns the run's outcome: the worker's answer, or a `failed` outcome with the
/// reason when the run could not be dispatched ("remote sub-session: cannot reach
/// NATS at <url>: …") or the worker could not run it; `cancelled` when cancelled.
///
/// Errors (before anything runs): the child already runs a turn (`Busy`).
pub(crate) async fn run(
    env: &TurnEnv,
    runs: &RemoteRuns,
    child: Arc<LiveSession>,
    input: RunInput,
    parent: &CancellationToken,
    placement: RemotePlacement,
) -> Result<TurnOutcome, EngineError> {
    let busy = || EngineError::Busy {
        session_id: child.id.clone(),
    };
    if child.is_running() {
        return Err(busy());
    }
    let guard = child.begin_turn(Some(parent))?;
    // Registered at once (no await since the running flag was set): a steer from now
    // on is forwarded, never left in the root's inbox.
    let (tx, rx) = unbounded_channel();
    let _registered = runs.register(&child.id, tx.clone());
    let mut applier = Applier::new(child.clone(), &env.approvals, env.approval_mode, tx)
        .in_tree(&env.limits, runs);
    isolate::before_turn(&child).await;
    // Tool calls left without a result (a continue after the root died) are answered
    // here, where the store holds the sub-sessions they started: a delegation whose
    // sub-session has since completed gets its answer (`recovered`), which the
    // worker's scratch store could not give.
    if !child.transcript_snapshot().is_empty() {
        recovered::repair_before_turn(env, &child);
    }
    let token = guard.token.clone();
    let outcome = match Dispatched::publish(env, runs, &child, input, &placement).await {
        Ok(dispatched) => dispatched.follow(runs, &mut applier, rx, &token).await,
        Err(e) => applier.ended_without_answer(
            SessionStatus::Failed,
            Some(format!("remote sub-session: {e}")),
        ),
    };
    drop(guard);
    Ok(outcome)
}

/// A published job and what the root consumes for it: its inbox at the hub (out
/// messages, lease writes) and the sync subscription (owned by the loop), and the
/// rest (shared by the handlers).
struct Dispatched {
    link: Link,
    inbox: Inbox,
    sync: async_nats::Subscriber,
    /// The stored sub-sessions the job carries (`Job::subtree`).
    carried: Vec<SessionId>,
}

/// What the handlers of a run's messages need.
struct Link {
    remote: Remote,
    /// What the runs on this connection share.
    hub: Arc<Hub>,
    placement: RemotePlacement,
    session: String,
    run: u64,
    /// The job's sequence in `ARBOR_JOBS` (deleted when cancelled before a worker
    /// started it); a new one when it is published again.
    job_seq: std::sync::atomic::AtomicU64,
    /// The job as published (published again when the server lost its store before a
    /// worker started it).
    job: Job,
    /// The job stream's state when the job was published.
    published: StreamState,
    /// Answers workers asking whether this root still waits for the job.
    _alive: AliveGuard,
    leases: async_nats::jetstream::kv::Store,
    ctl_subject: String,
}

impl Dispatched {
    /// Connects, subscribes to the out and sync subjects, then publishes the job of
    /// the child's next run (the child shows `queued` until a worker starts it).
    ///
    /// Errors: the server cannot be reached (`Connect`, naming the URL), a stream,
    /// bucket or subscription cannot be made, the job cannot be published.
    async fn publish(
        env: &TurnEnv,
        runs: &RemoteRuns,
        child: &LiveSession,
        input: RunInput,
        placement: &RemotePlacement,
    ) -> Result<Self, RemoteError> {
        let hub = runs.connection(&placement.nats_url, &auth(env)).await?;
        let remote = hub.remote().clone();
        let session = child.id.to_string();
        let leases = hub.leases().clone();
        let payloads = hub.payloads().await?;
        let (inbox, sync) = listen(&hub, &session).await?;
        // The run's number and the status `queued` in one write, before the job is
        // published (`session:status` is said once it is).
        let mut run = 0;
        child.update_metadata(|m| {
            run = m.arbor.remote_runs.unwrap_or(0) + 1;
            m.arbor.remote_runs = Some(run);
            m.status = SessionStatus::Queued;
        });
        // The run's instruction is in the root's store before its job is published: a
        // root that dies while the job waits leaves a child that `session continue`
        // runs on its instruction, not on an empty transcript. The worker continues
        // from it (the unanswered user message is the model call it runs).
        let instruction = input.instruction();
        // A session with a transcript may have delegated: its stored sub-sessions go
        // with the job (a new task call's child has none to read for).
        let delegated = !child.transcript_snapshot().is_empty();
        if let RunInput::Prompt(text) = input {
            child.append(Message::user(text));
        }
        let metadata = child.metadata();
        let plan = MountPlan::from_value(crate::session::redact::redact(&child.plan.to_value()));
        let files = runs.repos.job_files(&metadata, &child.plan).await;
        let transcript = child.transcript_snapshot().to_vec();
        let name = format!("{}-{run}-transcript", wire::token(&session)?);
        let (subtree, carried) =
            carried::for_job(env, &payloads, (&session, run), delegated).await?;
        let job = Job {
            version: JOB_VERSION,
            session_id: child.id.clone(),
            run,
            metadata,
            plan,
            transcript: Payload::pack(&payloads, &name, transcript).await?,
            // Said for the record (logs, a worker of an older version); the worker
            // continues the session, whose last message it is.
            instruction,
            continues: true,
            approvals: serde_json::to_value(&env.config.approvals)?,
            files: files.map(|f| {
                if let Some(note) = &f.unseen {
                    child.notice(note.clone());
                }
                JobFiles {
                    base_commit: f.base_commit,
                    repo_name: f.repo_name,
                    relative_dir: f.relative_dir,
                    writes: f.writes,
                }
            }),
            dispatched_at_ms: wire::now_ms(),
            limits_at_root: true,
            packed_events: true,
            packed_many: true,
            subtree,
        };
        let alive = answer_alive(&remote, &session, run).await?;
        let job_seq =
            publish_job(&remote, &placement.pool, &job, &format!("{session}-{run}")).await?;
        let published = hub.jobs_stream_since(tokio::time::Instant::now()).await;
        child.emit(crate::session::EngineEvent::status(SessionStatus::Queued));
        warn_if_no_worker(&hub, child, &placement.pool).await;
        tracing::info!(
            session, run, pool = %placement.pool, url = %remote.url(),
            "remote sub-session dispatched"
        );
        Ok(Self {
            link: Link {
                ctl_subject: wire::ctl_subject(&session)?,
                remote,
                hub,
                placement: placement.clone(),
                session,
                run,
                job_seq: job_seq.into(),
                job,
                published,
                _alive: alive,
                leases,
            },
            inbox,
            sync,
            carried,
        })
    }

    /// Consumes the run's messages until its `Done` / `Failed`, its cancellation, or
    /// the out stream failing for good; forwards `rx`'s controls meanwhile.
    async fn follow(
        self,
        runs: &RemoteRuns,
        applier: &mut Applier<'_>,
        mut rx: UnboundedReceiver<Forward>,
        token: &CancellationToken,
    ) -> TurnOutcome {
        let Dispatched {
            link,
            mut inbox,
            mut sync,
            carried,
        } = self;
        applier.carry(carried);
        link.follow(runs, applier, &mut rx, token, (&mut inbox, &mut sync))
            .await
    }
}

impl Link {
    /// [`Dispatched::follow`] over the run's owned streams.
    async fn follow(
        &self,
        runs: &RemoteRuns,
        applier: &mut Applier<'_>,
        rx: &mut UnboundedReceiver<Forward>,
        token: &CancellationToken,
        (inbox, sync): (&mut Inbox, &mut async_nats::Subscriber),
    ) -> TurnOutcome {
        let mut binding = Binding::new(
            &self.session,
            self.job_seq.load(std::sync::atomic::Ordering::SeqCst),
        );
        let mut store = StoreWatch::new(self.published.clone());
        let mut checks =
            tokio::time::interval_at(tokio::time::Instant::now() + CHECK_EVERY, CHECK_EVERY);
        let mut republished = 0;
        let mut cancel_deadline: Option<tokio::time::Instant> = None;
        // Controls that came while no worker listened on the control subject (before
        // the holder's first event): sent once one does.
        let mut held_back: Vec<Control> = Vec::new();
        loop {
            let deadline = cancel_deadline;
            tokio::select! {
                () = token.cancelled(), if cancel_deadline.is_none() => {
                    self.control(Control::Cancel).await;
                    if applier.holder().is_none() && self.withdraw_job().await {
                        return applier.ended_without_answer(SessionStatus::Cancelled, None);
                    }
                    cancel_deadline = Some(tokio::time::Instant::now() + CANCEL_WAIT);
                }
                () = sleep_until(deadline), if deadline.is_some() => {
                    let error = "the worker did not answer the cancel".to_string();
                    return applier.ended_without_answer(SessionStatus::Cancelled, Some(error));
                }
                _ = checks.tick() => {
                    let cancelling = cancel_deadline.is_some();
                    let state = (&mut binding, &mut store, &mut republished);
                    if let Some(outcome) = self.checked(applier, cancelling, state).await {
                        return outcome;
                    }
                }
                Some(forward) = rx.recv() => {
                    let control = control_of(forward);
                    if applier.listening() {
                        self.control(control).await;
                    } else {
                        held_back.push(control);
                    }
                }
                Some(request) = sync.next() => {
                    if let Some(outcome) = self.answer_sync(runs, applier, &mut binding, request).await {
                        return outcome;
                    }
                }
                Some((lease, revision)) = inbox.leases.recv() => {
                    let observed = binding.observe(&lease, revision, std::time::Instant::now());
                    if let Some(outcome) = self.observed(applier, observed) {
                        return outcome;
                    }
                }
                message = inbox.out.recv() => {
                    let message = match message {
                        Some(message) => message,
                        None => {
                            let error = format!(
                                "remote sub-session: the out stream at {} ended",
                                crate::remote::redact_url(&self.placement.nats_url)
                            );
                            return applier.ended_without_answer(SessionStatus::Failed, Some(error));
                        }
                    };
                    let listened = applier.listening();
                    if let Some(outcome) = self.admit(runs, applier, &mut binding, &message).await {
                        return outcome;
                    }
                    // A (new) holder listens now: it hears what it missed.
                    if !listened && applier.listening() {
                        for control in held_back.drain(..) {
                            self.control(control).await;
                        }
                        if cancel_deadline.is_some() {
                            self.control(Control::Cancel).await;
                        }
                    }
                }
            }
        }
    }

    /// Checks `message` against the binding (the lease read first, unless the watch
    /// showed the message's epoch held by a holder alive now: `Binding::current`) and
    /// applies it; the outcome when it ends the run.
    async fn admit(
        &self,
        runs: &RemoteRuns,
        applier: &mut Applier<'_>,
        binding: &mut Binding,
        message: &async_nats::jetstream::Message,
    ) -> Option<TurnOutcome> {
        let header = |name: &str| header_of(message.headers.as_ref(), name);
        let epoch = epoch_of(message.headers.as_ref());
        let worker = header(WORKER_HEADER).unwrap_or_else(|| "?".into());
        let parsed: WorkerMsg = match serde_json::from_slice(&message.payload) {
            Ok(parsed) => parsed,
            Err(e) => {
                tracing::warn!(session = %self.session, %worker, "malformed worker message: {e}");
                return None;
            }
        };
        let kind = kind_of(&parsed);
        let read = if binding.current(epoch, std::time::Instant::now()) {
            Ok(None)
        } else {
            self.read_lease().await
        };
        match read {
            Ok(Some((lease, revision))) => {
                let observed = binding.observe(&lease, revision, std::time::Instant::now());
                if let Some(outcome) = self.observed(applier, observed) {
                    return Some(outcome);
                }
            }
            Ok(None) => {}
            // Not dropped: the pinned holder's key still decides below (a message
            // lost here could be the run's `Done`).
            Err(e) => tracing::warn!(
                session = %self.session, %worker,
                "cannot check the lease (the message is judged by its signature alone): {e}"
            ),
        }
        let seq = header(SEQ_HEADER).and_then(|s| s.trim().parse::<u64>().ok());
        let signature = header(SIG_HEADER);
        match binding.admit(epoch, (seq, signature.as_deref()), &message.payload) {
            Verdict::Apply => {}
            Verdict::Stale { stale, current } => {
                runs.refused
                    .record(&self.session, &worker, stale, current, kind);
                return None;
            }
            Verdict::Forged { reason } => {
                runs.refused
                    .record_forged(&self.session, &worker, epoch, kind, &reason);
                return None;
            }
        }
        self.apply(applier, parsed).await
    }

    /// A redelivered job's worker asks for the session as stored now. Only the
    /// pinned lease holder's request, signed over its reply subject, is answered (the
    /// lease read first, so a new holder that took over is pinned); any other gets an
    /// error and is counted as refused. Unless the holder applied last is the pinned
    /// one (the asker's `Started` came first), that holder lost its lease (the session
    /// marked interrupted, its streamed text kept partial); then the metadata and
    /// transcript are the answer. The outcome when the lease was usurped.
    async fn answer_sync(
        &self,
        runs: &RemoteRuns,
        applier: &mut Applier<'_>,
        binding: &mut Binding,
        request: async_nats::Message,
    ) -> Option<TurnOutcome> {
        let reply = request.reply.clone()?;
        match lease::current_entry(&self.leases, &self.session).await {
            Ok(Some((lease, revision))) => {
                let observed = binding.observe(&lease, revision, std::time::Instant::now());
                if let Some(outcome) = self.observed(applier, observed) {
                    return Some(outcome);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(session = %self.session, "cannot read the lease: {e}"),
        }
        let header = |name: &str| header_of(request.headers.as_ref(), name);
        let epoch = epoch_of(request.headers.as_ref());
        if let Err(reason) = binding.admit_sync(epoch, &reply, header(SIG_HEADER).as_deref()) {
            runs.refused
                .record_forged(&self.session, "?", epoch, "sync", &reason.to_string());
            let refused = SyncReply {
                metadata: None,
                transcript: None,
                subtree: None,
                task_calls: None,
                error: Some(format!("refused: {reason}")),
            };
            if let Ok(body) = serde_json::to_vec(&refused) {
                let _ = self.remote.client().publish(reply, body.into()).await;
            }
            return None;
        }
        let pinned = binding.holder().map(|h| h.worker.clone());
        if applier
            .holder()
            .is_some_and(|held| Some(&held.worker) != pinned.as_ref())
        {
            applier.lease_lost();
        }
        let child = applier.child();
        let name = format!(
            "{}-{}-sync-{}",
            wire::token(&self.session).unwrap_or_default(),
            self.run,
            wire::now_ms()
        );
        let transcript = child.transcript_snapshot().to_vec();
        let answer = match self.hub.payloads().await {
            Ok(store) => match Payload::pack(&store, &name, transcript).await {
                Ok(transcript) => match carried::now(&store, child, &name).await {
                    Ok((subtree, task_calls)) => SyncReply {
                        metadata: Some(Box::new(child.metadata())),
                        transcript: Some(transcript),
                        subtree,
                        task_calls,
                        error: None,
                    },
                    Err(e) => sync_error(e),
                },
                Err(e) => sync_error(e),
            },
            Err(e) => sync_error(e),
        };
        let body = match serde_json::to_vec(&answer) {
            Ok(body) => body,
            Err(e) => {
                tracing::warn!(session = %self.session, "cannot encode the sync answer: {e}");
                return None;
            }
        };
        if let Err(e) = self.remote.client().publish(reply, body.into()).await {
            tracing::warn!(session = %self.session, "cannot answer the sync request: {e}");
        }
        None
    }

    /// What the root does with what observing the lease changed: logs a pinned holder
    /// or a takeover; a usurped lease ends the run failed with the reason (the run can
    /// no longer be told apart from a forgery: denied, not forged).
    fn observed(&self, applier: &mut Applier<'_>, observed: Observed) -> Option<TurnOutcome> {
        match observed {
            Observed::Nothing => None,
            Observed::Pinned(holder) => {
                tracing::info!(session = %self.session, worker = %holder.worker, "remote sub-session: lease holder pinned");
                None
            }
            Observed::TookOver { from, to } => {
                tracing::info!(
                    session = %self.session, from = %from.worker, to = %to.worker,
                    "remote sub-session: a new lease holder after the previous one's lease expired"
                );
                applier.child().notice(format!(
                    "worker {} stopped renewing its lease; worker {} took this sub-session over                      from the root's store (a model call in flight runs again, an answered tool                      call does not)",
                    from.worker, to.worker
                ));
                None
            }
            Observed::Usurped { reason, .. } => Some(applier.ended_without_answer(
                SessionStatus::Failed,
                Some(format!("remote sub-session: {reason}")),
            )),
        }
    }

    /// The session's lease, read again with a growing pause (0.1 s doubling to 2 s)
    /// while reading fails, for up to [`LEASE_READ_FOR`]: a stream leader's election
    /// takes seconds, and a message must not be dropped for it (issue 38 item 5).
    ///
    /// Errors: the last read's, when every read within that time failed.
    async fn read_lease(&self) -> Result<Option<(Lease, u64)>, RemoteError> {
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(100);
        loop {
            match lease::current_entry(&self.leases, &self.session).await {
                Ok(found) => return Ok(found),
                Err(e) if started.elapsed() + pause > LEASE_READ_FOR => return Err(e),
                Err(e) => {
                    tracing::debug!(session = %self.session, "reading the lease: {e}; again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Publishes `control` on the session's control subject (logged on failure: the
    /// worker may be gone; a cancel then ends by its deadline).
    async fn control(&self, control: Control) {
        let body = match serde_json::to_vec(&control) {
            Ok(body) => body,
            Err(e) => {
                tracing::warn!(session = %self.session, "cannot encode a control: {e}");
                return;
            }
        };
        let sent = self
            .remote
            .client()
            .publish(self.ctl_subject.clone(), body.into())
            .await;
        match sent {
            Ok(()) => tracing::debug!(session = %self.session, ?control, "control sent"),
            Err(e) => tracing::warn!(session = %self.session, "cannot send {control:?}: {e}"),
        }
    }

    /// Removes the job from the queue when no worker took it yet (a cancel while it
    /// waits). `false` when it is gone already (a worker has it: cancel that one).
    async fn withdraw_job(&self) -> bool {
        let stream = match self.remote.js().get_stream(wire::JOBS_STREAM).await {
            Ok(stream) => stream,
            Err(e) => {
                tracing::warn!(session = %self.session, "cannot open the job stream: {e}");
                return false;
            }
        };
        let seq = self.job_seq.load(std::sync::atomic::Ordering::SeqCst);
        stream.delete_message(seq).await.unwrap_or(false)
    }
}

/// What the root listens to for one run of `session`, made before its job is
/// published: its inbox at `hub` (its out messages, new ones only, and every write of
/// its lease from now on, renewals included: the binding sees its holder alive by
/// them, and a takeover at the moment it happens), and the subscription to its sync
/// subject.
///
/// Errors: `session` is no valid token, the hub's consumer cannot be made again, or
/// the subscription cannot be made.
async fn listen(hub: &Hub, session: &str) -> Result<(Inbox, async_nats::Subscriber), RemoteError> {
    let inbox = hub.register(session).await?;
    let sync_subject = wire::sync_subject(session)?;
    let sync = hub
        .remote()
        .client()
        .subscribe(sync_subject.clone())
        .await
        .map_err(|e| RemoteError::nats(format!("cannot subscribe to {sync_subject}"), e))?;
    Ok((inbox, sync))
}

/// Says on the child (its thread, `arbor run`'s stderr) when no live worker serves
/// `pool`: the job waits until one joins. Looked up for at most 2 s (shared by the
/// runs on the connection, `Hub::pool_served`); a failed look-up says nothing (the
/// job is published either way).
async fn warn_if_no_worker(hub: &Hub, child: &LiveSession, pool: &str) {
    if hub.pool_served(pool).await == Some(false) {
        child.notice(format!(
            "no live worker in pool {pool}: this sub-session waits until one joins \
             (`arbor worker --pool {pool}`)"
        ));
    }
}

/// A sync answer saying why the state could not be sent.
fn sync_error(e: RemoteError) -> SyncReply {
    SyncReply {
        metadata: None,
        transcript: None,
        subtree: None,
        task_calls: None,
        error: Some(e.to_string()),
    }
}

/// The wire control of a forward.
fn control_of(forward: Forward) -> Control {
    match forward {
        Forward::Approval {
            tool_call_id,
            decision,
        } => Control::Approval {
            tool_call_id,
            decision: WireDecision::from(&decision),
        },
        Forward::Steer(text) => Control::Steer { text },
        Forward::Queue(text) => Control::Queue { text },
        Forward::Unqueue(id) => Control::Unqueue { id },
        Forward::Cancel => Control::Cancel,
        Forward::Reserved { child, refused } => Control::Reserved { child, refused },
        Forward::Of {
            session_id,
            forward,
        } => Control::Of {
            session_id,
            control: Box::new(control_of(*forward)),
        },
    }
}

/// The message's kind as the wire spells it (for logs).
fn kind_of(message: &WorkerMsg) -> &'static str {
    match message {
        WorkerMsg::Started { .. } => "started",
        WorkerMsg::Event { .. } => "event",
        WorkerMsg::Events { .. } => "events",
        WorkerMsg::Many { .. } => "many",
        WorkerMsg::Done { .. } => "done",
        WorkerMsg::Failed { .. } => "failed",
        WorkerMsg::Reserve { .. } => "reserve",
        WorkerMsg::SubSession { .. } => "sub_session",
    }
}

/// Sleeps until `deadline`; forever when `None` (its `select!` branch is disabled then).
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The value of header `name` of a NATS message, if present.
fn header_of(headers: Option<&async_nats::HeaderMap>, name: &str) -> Option<String> {
    headers
        .and_then(|h| h.get(name))
        .map(|v| v.as_str().to_string())
}

/// The lease epoch a worker's message or sync request carries (`EPOCH_HEADER`); 0
/// when absent or not a number.
fn epoch_of(headers: Option<&async_nats::HeaderMap>) -> u64 {
    header_of(headers, EPOCH_HEADER)
        .and_then(|e| e.trim().parse::<u64>().ok())
        .unwrap_or(0)
}
