//! Whether the server still holds a run's job, checked while the root follows it
//! (issue 38 items 3 and 9): a server restarted on an empty store (replaced, or on a
//! fresh volume) drops the job, the lease and what the worker sent, and without a check
//! the root would wait for them forever.
//!
//! A stream that looks lost for [`LOST_FOR`] counts as lost (an election can make
//! a node say it has none for a few seconds).
//!
//! Owns: publishing a run's job ([`publish_job`]) and publishing it again
//! (`Link::start_again`), answering workers that ask whether the root still waits
//! for it ([`answer_alive`]), and [`StoreWatch`] — every [`CHECK_EVERY`] the root asks for the job stream (one
//! query for all runs on the connection: `Hub::jobs_stream_since`) and
//! compares its creation time with the one it saw at publish: a stream gone or made
//! again means the store was lost. A run no worker started yet is published again
//! (its job kept at the root); a started one fails, saying why. A server that does not
//! answer is said once in the child's thread (and on `arbor run`'s stderr), said again
//! when it is back, and fails the run after [`UNREACHABLE_LIMIT`]. Does not own:
//! following the run's messages (`dispatch`), the NATS calls (`crate::remote`).

use std::time::Duration;

use tokio::time::Instant;

use super::{Applier, Binding, Link};
use crate::engine::live::LiveSession;
use crate::engine::outcome::TurnOutcome;
use crate::remote::wire::{self, Job};
use crate::remote::{Payload, Remote, RemoteError, StreamState};
use crate::session::SessionStatus;

/// How often the root checks that the server still holds the run.
pub(super) const CHECK_EVERY: Duration = Duration::from_secs(2);
/// How long the server may stay unreachable before the run fails.
pub(super) const UNREACHABLE_LIMIT: Duration = Duration::from_secs(120);
/// How long the job stream must look lost before the root acts on it: during a
/// cluster's election a node may answer for a few seconds that it has no such stream.
pub(super) const LOST_FOR: Duration = Duration::from_secs(10);

/// What a check found that the run must act on.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// All is as it was (or the server is unreachable, still within the limit).
    Fine,
    /// The server lost its store: the job stream is gone or was made again.
    StoreLost,
    /// Unreachable for longer than [`UNREACHABLE_LIMIT`]; the last reason.
    GaveUp(String),
}

/// The state of the checks of one run.
pub(super) struct StoreWatch {
    /// The job stream's creation time when the job was (last) published.
    created: Option<String>,
    /// Since when the server has not answered.
    unreachable_since: Option<Instant>,
    /// Since when the job stream has looked lost.
    lost_since: Option<Instant>,
}

impl StoreWatch {
    /// A watch of a job published while the job stream was `state`.
    pub(super) fn new(state: StreamState) -> Self {
        let mut watch = Self {
            created: None,
            unreachable_since: None,
            lost_since: None,
        };
        watch.published(state);
        watch
    }

    /// The job was published (again) while the job stream was `state`.
    pub(super) fn published(&mut self, state: StreamState) {
        if let StreamState::Present { created } = state {
            self.created = Some(created);
        }
        self.lost_since = None;
    }

    /// Asks the server (through `link`'s hub: an answer to a query started at most
    /// half a [`CHECK_EVERY`] ago serves) and says in the child's thread when it stops
    /// or starts answering.
    pub(super) async fn check(&mut self, link: &Link, child: &LiveSession) -> Found {
        let url = link.remote.url();
        let since = Instant::now()
            .checked_sub(CHECK_EVERY / 2)
            .unwrap_or_else(Instant::now);
        match link.hub.jobs_stream_since(since).await {
            StreamState::Unreachable(reason) => {
                let since = *self.unreachable_since.get_or_insert_with(|| {
                    child.notice(format!(
                        "lost NATS at {url} ({reason}); waiting for it (up to {} s)",
                        UNREACHABLE_LIMIT.as_secs()
                    ));
                    Instant::now()
                });
                if since.elapsed() > UNREACHABLE_LIMIT {
                    Found::GaveUp(reason)
                } else {
                    Found::Fine
                }
            }
            state => {
                if self.unreachable_since.take().is_some() {
                    child.notice(format!("NATS at {url} answers again"));
                }
                let lost = match (state, &self.created) {
                    (StreamState::Missing, _) => true,
                    (StreamState::Present { created }, Some(seen)) => created != *seen,
                    _ => false,
                };
                if !lost {
                    self.lost_since = None;
                    return Found::Fine;
                }
                let since = *self.lost_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= LOST_FOR {
                    self.lost_since = None;
                    Found::StoreLost
                } else {
                    Found::Fine
                }
            }
        }
    }
}

impl Link {
    /// Checks the server ([`StoreWatch::check`]) and acts on what it found: the run's
    /// outcome when it fails (the server gave up answering, or lost its store while a
    /// worker ran or a cancel was under way), else `None` — the job published again
    /// when the store was lost before a worker took it.
    pub(super) async fn checked(
        &self,
        applier: &mut Applier<'_>,
        cancelling: bool,
        (binding, store, republished): (&mut Binding, &mut StoreWatch, &mut u64),
    ) -> Option<TurnOutcome> {
        let url = self.remote.url();
        let error = match store.check(self, applier.child()).await {
            Found::Fine => return None,
            Found::GaveUp(reason) => format!(
                "remote sub-session: NATS at {url} did not answer for {} s ({reason})",
                UNREACHABLE_LIMIT.as_secs()
            ),
            Found::StoreLost if applier.holder().is_some() || cancelling => format!(
                "remote sub-session: the NATS server at {url} lost its store (restarted empty \
                 or replaced): this run's job, lease and messages are gone; run it again"
            ),
            Found::StoreLost => {
                *republished += 1;
                match self
                    .start_again(applier, *republished, (binding, store))
                    .await
                {
                    Ok(()) => return None,
                    Err(e) => format!(
                        "remote sub-session: the NATS server at {url} lost its store and the \
                         job cannot be published again: {e}"
                    ),
                }
            }
        };
        Some(applier.ended_without_answer(SessionStatus::Failed, Some(error)))
    }

    /// Publishes the job of a run no worker started again after the server lost its
    /// store (the `attempt`-th time), listening anew first (the hub's out consumer and
    /// lease watch made again, unless another run on the connection did so since the
    /// loss: `Hub::relisten`): a new binding for the new job. Said in the child's
    /// thread.
    ///
    /// Errors: as [`Link::republish`] and `Hub::relisten`.
    pub(super) async fn start_again(
        &self,
        applier: &Applier<'_>,
        attempt: u64,
        (binding, store): (&mut Binding, &mut StoreWatch),
    ) -> Result<(), RemoteError> {
        self.remote.ensure().await?;
        // Seen lost for at least LOST_FOR: listeners made since were made on the new store.
        let lost = Instant::now()
            .checked_sub(LOST_FOR)
            .unwrap_or_else(Instant::now);
        self.hub.relisten(lost).await?;
        let (seq, state) = self.republish(applier.child(), attempt).await?;
        self.job_seq.store(seq, std::sync::atomic::Ordering::SeqCst);
        *binding = Binding::new(&self.session, seq);
        store.published(state);
        applier.child().notice(format!(
            "the NATS server at {} lost its store (restarted empty or replaced) before a worker took this sub-session: its job was published again",
            self.remote.url()
        ));
        Ok(())
    }

    /// Publishes `job` with message id `id` on the run's pool; its sequence.
    pub(super) async fn publish_job(&self, job: &Job, id: &str) -> Result<u64, RemoteError> {
        publish_job(&self.remote, &self.placement.pool, job, id).await
    }

    /// Publishes the run's job again after the server lost its store: the streams and
    /// buckets made again, the transcript packed again (an object payload was lost with
    /// the store; no worker started the run, so `child`'s transcript is still the one
    /// sent), a new message id. Returns the job's new sequence and the job stream's
    /// state after it.
    ///
    /// Errors: the streams cannot be made, or the job cannot be packed or published.
    pub(super) async fn republish(
        &self,
        child: &LiveSession,
        attempt: u64,
    ) -> Result<(u64, StreamState), RemoteError> {
        self.remote.ensure().await?;
        let mut job = self.job.clone();
        if matches!(job.transcript, Payload::Object { .. }) {
            let payloads = self.hub.payloads().await?;
            let name = format!(
                "{}-{}-transcript-again{attempt}",
                crate::remote::wire::token(&self.session)?,
                self.run
            );
            let transcript = child.transcript_snapshot().to_vec();
            job.transcript = Payload::pack(&payloads, &name, transcript).await?;
        }
        let seq = self
            .publish_job(
                &job,
                &format!("{}-{}-again{attempt}", self.session, self.run),
            )
            .await?;
        Ok((seq, self.remote.jobs_stream().await))
    }
}

/// Publishes `job` on `pool`'s subject with message id `id`, awaiting the stream's
/// acknowledgement; the job's sequence in `ARBOR_JOBS`.
///
/// Errors: the subject cannot be made, or the publish fails or is not acknowledged.
pub(super) async fn publish_job(
    remote: &Remote,
    pool: &str,
    job: &Job,
    id: &str,
) -> Result<u64, RemoteError> {
    let subject = wire::job_subject(pool)?;
    let message = async_nats::jetstream::message::PublishMessage::build()
        .payload(serde_json::to_vec(job)?.into())
        .message_id(id);
    let ack = remote
        .js()
        .send_publish(subject.clone(), message)
        .await
        .map_err(|e| RemoteError::nats(format!("cannot publish the job on {subject}"), e))?
        .await
        .map_err(|e| RemoteError::nats(format!("cannot publish the job on {subject}"), e))?;
    Ok(ack.sequence)
}

/// Answers workers that ask whether this root still waits for `session`'s job
/// ([`wire::alive_subject`]) with `run`, until the returned guard drops (the run
/// ended). Subscribed before the job is published, so a worker never finds nobody
/// listening for a live root.
///
/// Errors: the subject cannot be made or subscribed to.
pub(super) async fn answer_alive(
    remote: &Remote,
    session: &str,
    run: u64,
) -> Result<AliveGuard, RemoteError> {
    let subject = wire::alive_subject(session)?;
    let mut asked = remote
        .client()
        .subscribe(subject.clone())
        .await
        .map_err(|e| RemoteError::nats(format!("cannot subscribe to {subject}"), e))?;
    let client = remote.client().clone();
    let body = serde_json::to_vec(&wire::AliveReply { run })?;
    let task = tokio::spawn(async move {
        while let Some(request) = futures::StreamExt::next(&mut asked).await {
            if let Some(reply) = request.reply {
                let _ = client.publish(reply, body.clone().into()).await;
            }
        }
    });
    Ok(AliveGuard(task))
}

/// Stops answering on the alive subject when dropped.
pub(super) struct AliveGuard(tokio::task::JoinHandle<()>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}
