//! What a job sends to its root: [`WorkerMsg`]s on `arbor.out.<session>` (JetStream),
//! each with the lease's epoch and the worker's id as headers, published in order and
//! each awaited until the stream acknowledged it.
//!
//! Owns: [`Out`] — the headers, a message id per message (`<session token>-r<run>-
//! e<epoch>-<n>`, so a publish retried after a lost acknowledgement is dropped by the stream's
//! duplicate window instead of stored twice), retrying a failed publish, and going
//! quiet for good once the lease is lost (`stale`). Does not own: what is sent (`job`),
//! the root's fence (`engine::remote`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, message::PublishMessage};
use tokio_util::sync::CancellationToken;

use crate::remote::RemoteError;
use crate::remote::wire::{EPOCH_HEADER, WORKER_HEADER, WorkerMsg, out_subject, token};

/// How many times one message is published before the job gives up on its root.
const ATTEMPTS: u32 = 5;
/// The first wait between attempts (doubling).
const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// The worker → root channel of one session under one lease epoch.
pub struct Out {
    js: jetstream::Context,
    subject: String,
    id_prefix: String,
    epoch: u64,
    worker: String,
    sent: AtomicU64,
    /// Cancelled once the lease is lost (or the worker stops): nothing more is sent.
    pub stale: CancellationToken,
    /// Set by [`Out::lose`]: the lease is gone (or the root unreachable), as opposed
    /// to the worker stopping.
    pub lost: AtomicBool,
}

/// Whether a message went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// The stream stored it.
    Stored,
    /// Not sent: the lease was lost (or the worker is stopping) before it.
    Quiet,
}

impl Out {
    /// The channel of run `run` of `session` under `epoch`, sent by `worker`.
    ///
    /// Errors: [`RemoteError::Token`] for an empty session id.
    pub fn new(
        js: jetstream::Context,
        (session, run): (&str, u64),
        epoch: u64,
        worker: &str,
    ) -> Result<Self, RemoteError> {
        Ok(Self {
            js,
            subject: out_subject(session)?,
            id_prefix: format!("{}-r{run}-e{epoch}", token(session)?),
            epoch,
            worker: worker.to_string(),
            sent: AtomicU64::new(0),
            stale: CancellationToken::new(),
            lost: AtomicBool::new(false),
        })
    }

    /// Marks the lease lost (or the root unreachable): nothing more is sent, and the
    /// job's turn is cancelled.
    pub fn lose(&self) {
        self.lost.store(true, Ordering::SeqCst);
        self.stale.cancel();
    }

    /// The epoch every message carries.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Publishes `msg` and waits for the stream's acknowledgement, retrying a failed
    /// attempt (5 in all, 0.2 s doubling between them; the same message id each time).
    /// [`Sent::Quiet`] without publishing once `stale` is cancelled.
    ///
    /// Errors: [`RemoteError::Json`] when `msg` does not serialize; [`RemoteError::Nats`]
    /// when every attempt failed (the root is unreachable: the job stops unacked, and
    /// JetStream redelivers it after its ack wait).
    pub async fn send(&self, msg: &WorkerMsg) -> Result<Sent, RemoteError> {
        if self.stale.is_cancelled() {
            return Ok(Sent::Quiet);
        }
        let body = serde_json::to_vec(msg)?;
        let n = self.sent.fetch_add(1, Ordering::SeqCst);
        let id = format!("{}-{n}", self.id_prefix);
        let mut headers = HeaderMap::new();
        headers.insert(EPOCH_HEADER, self.epoch.to_string().as_str());
        headers.insert(WORKER_HEADER, self.worker.as_str());
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            if self.stale.is_cancelled() {
                return Ok(Sent::Quiet);
            }
            let publish = PublishMessage::build()
                .payload(body.clone().into())
                .headers(headers.clone())
                .message_id(&id);
            let stored = match self.js.send_publish(self.subject.clone(), publish).await {
                Ok(ack) => ack.await.map(drop).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match stored {
                Ok(()) => return Ok(Sent::Stored),
                Err(e) => {
                    tracing::warn!(
                        subject = %self.subject,
                        attempt,
                        "worker: publishing to the root failed: {e}"
                    );
                    last = e;
                }
            }
            if attempt < ATTEMPTS {
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
        }
        Err(RemoteError::nats(
            format!("cannot publish on {}", self.subject),
            last,
        ))
    }
}
