//! What a job sends to its root: [`WorkerMsg`]s on `arbor.out.<session>` (JetStream),
//! each with the lease's epoch, the worker's id, its sequence number and its signature
//! with the run's key (`remote::seal`) as headers, published in order (one at a time)
//! and each awaited until the stream acknowledged it.
//!
//! Owns: [`Out`] — the headers, a message id per message (`<session token>-r<run>-
//! e<epoch>-<n>`, so a publish retried after a lost acknowledgement is dropped by the stream's
//! duplicate window instead of stored twice), retrying a failed publish, and going
//! quiet for good once the lease is lost (`stale`). Does not own: what is sent (`job`),
//! the root's fence (`engine::remote`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_nats::jetstream::{self, message::PublishMessage};
use tokio_util::sync::CancellationToken;

use crate::remote::RemoteError;
use crate::remote::seal::{self, Signer};
use crate::remote::wire::{WorkerMsg, out_subject, token};

/// How many times one message is published before the job gives up on its root.
const ATTEMPTS: u32 = 5;
/// The first wait between attempts (doubling).
const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// The worker → root channel of one session under one lease epoch.
pub struct Out {
    js: jetstream::Context,
    subject: String,
    id_prefix: String,
    session: String,
    epoch: u64,
    worker: String,
    /// The run's key (its public half is in the lease).
    signer: Arc<Signer>,
    /// The next sequence number; held while a message is published, so messages are
    /// stored in the order of their numbers.
    sent: tokio::sync::Mutex<u64>,
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
    /// The channel of run `run` of `session` under `epoch`, sent by `worker` and
    /// signed by `signer`.
    ///
    /// Errors: [`RemoteError::Token`] for an empty session id.
    pub fn new(
        js: jetstream::Context,
        (session, run): (&str, u64),
        (epoch, signer): (u64, Arc<Signer>),
        worker: &str,
    ) -> Result<Self, RemoteError> {
        Ok(Self {
            js,
            subject: out_subject(session)?,
            id_prefix: format!("{}-r{run}-e{epoch}", token(session)?),
            session: session.to_string(),
            epoch,
            worker: worker.to_string(),
            signer,
            sent: tokio::sync::Mutex::new(0),
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

    /// The run's key (a sync request is signed with it too).
    pub fn signer(&self) -> &Signer {
        &self.signer
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
        let mut sent = self.sent.lock().await;
        let n = *sent;
        *sent += 1;
        let id = format!("{}-{n}", self.id_prefix);
        let headers = seal::headers(
            &self.signer,
            (&self.session, self.epoch, n),
            &self.worker,
            &body,
        );
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
