//! What a job sends to its root: [`WorkerMsg`]s on `arbor.out.<session>` (JetStream),
//! each with the lease's epoch, the worker's id, its sequence number and its signature
//! with the run's key (`remote::seal`) as headers, stored in the order they were sent.
//!
//! Owns: [`Out`] — the job's end of its publisher (`pipe`, a task per job): events
//! are handed over and the job goes on ([`Out::event`]; streamed deltas are joined,
//! `batch`, events close together packed into one message, `pipe`, and published
//! without waiting for each acknowledgement), while
//! [`Out::send`] waits until its message and everything before it are stored
//! (`Started`, and `Done`/`Failed` before the job is acked). Each message has an id
//! (`<session token>-r<run>-e<epoch>-<n>`, so a publish retried after a lost
//! acknowledgement is dropped by the stream's duplicate window instead of stored
//! twice); a failed publish is retried, and the job goes quiet for good once the lease
//! is lost (`stale`) or the root cannot be reached. Does not own: what is sent
//! (`job`), the root's fence (`engine::remote`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_nats::jetstream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::remote::RemoteError;
use crate::remote::seal::Signer;
use crate::remote::wire::{WorkerMsg, out_subject, token};
use crate::session::Event;
use pipe::{Channel, Item, Pipe, Quiet};

mod batch;
mod pipe;

/// The worker → root channel of one session under one lease epoch.
pub struct Out {
    epoch: u64,
    /// The run's key (its public half is in the lease).
    signer: Arc<Signer>,
    /// `Started` may open the first pack ([`Out::lead`]).
    leads: bool,
    /// To the publisher task, which ends when this is dropped.
    items: mpsc::UnboundedSender<Item>,
    /// Cancelled once the lease is lost (or the worker stops): nothing more is sent.
    pub stale: CancellationToken,
    /// Set by [`Out::lose`]: the lease is gone (or the root unreachable), as opposed
    /// to the worker stopping.
    lost: Arc<AtomicBool>,
}

/// What the root takes packed (the job's `packed_events`, `packed_many`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Packing {
    /// [`WorkerMsg::Events`]: events a few milliseconds apart go out as one message.
    pub events: bool,
    /// [`WorkerMsg::Many`]: a first delivery's `Started` opens the first pack and
    /// the run's end closes the last ([`Out::lead`]).
    pub many: bool,
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
    /// signed by `signer`; starts its publisher on the current runtime. `packing`:
    /// what the root takes packed (`Job::packed_events`, `Job::packed_many`).
    ///
    /// Errors: [`RemoteError::Token`] for an empty session id.
    pub fn new(
        js: jetstream::Context,
        (session, run): (&str, u64),
        (epoch, signer): (u64, Arc<Signer>),
        (worker, packing): (&str, Packing),
    ) -> Result<Self, RemoteError> {
        let channel = Channel {
            js,
            subject: out_subject(session)?,
            id_prefix: format!("{}-r{run}-e{epoch}", token(session)?),
            session: session.to_string(),
            epoch,
            worker: worker.to_string(),
            signer: signer.clone(),
            packing,
        };
        let quiet = Quiet {
            stale: CancellationToken::new(),
            lost: Arc::new(AtomicBool::new(false)),
        };
        let (items, rx) = mpsc::unbounded_channel();
        tokio::spawn(Pipe::new(channel, quiet.clone()).run(rx));
        Ok(Self {
            epoch,
            signer,
            leads: packing.events && packing.many,
            items,
            stale: quiet.stale,
            lost: quiet.lost,
        })
    }

    /// Marks the lease lost (or the root unreachable): nothing more is sent, and the
    /// job's turn is cancelled.
    pub fn lose(&self) {
        self.lost.store(true, Ordering::SeqCst);
        self.stale.cancel();
    }

    /// Whether the lease was lost (or the root unreachable), not merely the worker
    /// stopping.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// The epoch every message carries.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The run's key (a sync request is signed with it too).
    pub fn signer(&self) -> &Signer {
        &self.signer
    }

    /// Hands `event` to the publisher and returns at once: it is published after
    /// everything handed over before it (a delta possibly joined with the next ones,
    /// at most 50 ms later; packed with the events that follow it within 10 ms when
    /// the channel is `packed`). Nothing once `stale` is cancelled; a publish that never
    /// works makes the job quiet (`stale`, [`Out::is_lost`]).
    pub fn event(&self, event: &Event) {
        if !self.stale.is_cancelled() {
            let _ = self.items.send(Item::Event(Box::new(event.clone())));
        }
    }

    /// Hands a first delivery's `started` to the publisher without waiting when the
    /// root takes packs of many (`Job::packed_many`): it goes out with the events of the
    /// next [`PACK_AFTER`](pipe::PACK_AFTER) (a short run's whole stream, end
    /// included, as one message). `false` when the root does not take that: the caller
    /// sends it with [`Out::send`].
    pub fn lead(&self, started: &WorkerMsg) -> bool {
        if !self.leads {
            return false;
        }
        if !self.stale.is_cancelled() {
            let _ = self.items.send(Item::Lead(Box::new(started.clone())));
        }
        true
    }

    /// Publishes `msg` after everything handed over before it and waits until all of
    /// it is stored; a failed attempt is retried (5 in all, 0.2 s doubling between
    /// them; the same message id each time). [`Sent::Quiet`] without publishing once
    /// `stale` is cancelled.
    ///
    /// Errors: [`RemoteError::Json`] when `msg` does not serialize; [`RemoteError::Nats`]
    /// when every attempt failed (the root is unreachable: the job stops unacked, and
    /// JetStream redelivers it after its ack wait).
    pub async fn send(&self, msg: &WorkerMsg) -> Result<Sent, RemoteError> {
        if self.stale.is_cancelled() {
            return Ok(Sent::Quiet);
        }
        let (answer, answered) = oneshot::channel();
        if self
            .items
            .send(Item::Sync(Box::new(msg.clone()), answer))
            .is_err()
        {
            return Ok(Sent::Quiet);
        }
        // No answer: the publisher stopped for the lease.
        answered.await.unwrap_or(Ok(Sent::Quiet))
    }
}
