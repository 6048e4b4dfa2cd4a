//! Whether the server still holds a run's job, checked while the root follows it
//! (issue 38 items 3 and 9): a server restarted on an empty store (replaced, or on a
//! fresh volume) drops the job, the lease and what the worker sent, and without a check
//! the root would wait for them forever.
//!
//! Owns: [`StoreWatch`] — every [`CHECK_EVERY`] the root asks for the job stream and
//! compares its creation time with the one it saw at publish: a stream gone or made
//! again means the store was lost. A run no worker started yet is published again
//! (its job kept at the root); a started one fails, saying why. A server that does not
//! answer is said once in the child's thread (and on `arbor run`'s stderr), said again
//! when it is back, and fails the run after [`UNREACHABLE_LIMIT`]. Does not own:
//! following the run's messages (`dispatch`), the NATS calls (`crate::remote`).

use std::time::Duration;

use tokio::time::Instant;

use super::Link;
use crate::engine::live::LiveSession;
use crate::remote::{Payload, RemoteError, StreamState};

/// How often the root checks that the server still holds the run.
pub(super) const CHECK_EVERY: Duration = Duration::from_secs(2);
/// How long the server may stay unreachable before the run fails.
pub(super) const UNREACHABLE_LIMIT: Duration = Duration::from_secs(120);

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
}

impl StoreWatch {
    /// A watch of a job published while the job stream was `state`.
    pub(super) fn new(state: StreamState) -> Self {
        let mut watch = Self {
            created: None,
            unreachable_since: None,
        };
        watch.published(state);
        watch
    }

    /// The job was published (again) while the job stream was `state`.
    pub(super) fn published(&mut self, state: StreamState) {
        if let StreamState::Present { created } = state {
            self.created = Some(created);
        }
    }

    /// Asks the server (through `link`) and says in the child's thread when it stops or
    /// starts answering.
    pub(super) async fn check(&mut self, link: &Link, child: &LiveSession) -> Found {
        let url = link.remote.url();
        match link.remote.jobs_stream().await {
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
                match (state, &self.created) {
                    (StreamState::Missing, _) => Found::StoreLost,
                    (StreamState::Present { created }, Some(seen)) if created != *seen => {
                        Found::StoreLost
                    }
                    _ => Found::Fine,
                }
            }
        }
    }
}

impl Link {
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
            let payloads = self.remote.payloads().await?;
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
