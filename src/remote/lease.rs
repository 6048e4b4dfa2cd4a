//! The lease of a remotely running session and its epoch fence (issue 27).
//!
//! Owns: taking a session's lease with compare-and-set in the leases bucket
//! ([`acquire`]), keeping it ([`Held::renew`]), and reading the current one for the
//! root's fence ([`current`]). Does not own: when a worker takes or renews it (the
//! worker), refusing a stale message (the root applies [`Fence`]).
//!
//! The protocol: a worker that takes a job reads the session's key; absent, it
//! `create`s the lease at epoch 1; present at revision `r` with epoch `e`, it
//! `update`s it to epoch `e + 1` expecting revision `r`. Exactly one of two racing
//! workers wins. JetStream redelivers a job only after its ack wait passed without an
//! ack or a progress ack, so a redelivery means the previous holder stopped
//! heart-beating and taking over is right. The holder renews at the same epoch,
//! expecting the revision it last wrote; a renewal that finds the revision moved means
//! another worker took over: [`RemoteError::LeaseLost`], and the worker must stop at
//! once. Every worker message carries its epoch; the root applies only messages of the
//! epoch the bucket holds now, so a frozen worker that wakes up cannot write again.
//! The lease also carries the holder's public key for the run and its ack wait: the
//! root pins the first holder of its job and accepts another only once that one's
//! lease expired by the root's own clock (`pin`), and checks every message's
//! signature against the pinned key (`seal`).

use std::time::Duration;

use async_nats::jetstream::kv;

use super::RemoteError;
use super::wire::{Lease, RanOn, now_ms, token};

/// A lease this process holds: the session, the epoch it holds it at, and the revision
/// of the key it last wrote (the compare-and-set expectation of the next renewal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub session: String,
    pub lease: Lease,
    pub revision: u64,
}

impl Held {
    /// The epoch every message sent under this lease carries.
    pub fn epoch(&self) -> u64 {
        self.lease.epoch
    }

    /// Writes the lease again at the same epoch, expecting the revision this holder
    /// last wrote.
    ///
    /// Errors: [`RemoteError::LeaseLost`] when another worker took the lease since;
    /// [`RemoteError::Nats`] when the server cannot be reached (the holder keeps the
    /// lease until its ack wait passes: retry).
    pub async fn renew(&mut self, leases: &kv::Store) -> Result<(), RemoteError> {
        let key = token(&self.session)?;
        let value = serde_json::to_vec(&self.lease)?;
        match leases.update(&key, value.into(), self.revision).await {
            Ok(revision) => {
                self.revision = revision;
                Ok(())
            }
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                Err(RemoteError::LeaseLost {
                    session: self.session.clone(),
                    held: self.lease.epoch,
                })
            }
            Err(e) => Err(RemoteError::nats(
                format!("cannot renew the lease of {}", self.session),
                e,
            )),
        }
    }
}

/// Takes the lease of `session` for the worker `ran_on`, running job `job_seq`, with
/// its run's public key `public_key` (`seal::Signer::public_key`) and its `ack_wait`: epoch 1
/// when the session has none, else one more than the current epoch. `unleased`: the
/// session cannot have a lease yet (its first run's first delivery), so epoch 1 is
/// created without reading the bucket first (one request less per job); a lease found
/// there anyway is lost like a race.
///
/// Errors: [`RemoteError::LeaseLost`] when another worker took it between the read and
/// the write (that worker runs the job; this one must drop it); [`RemoteError::Nats`]
/// when the bucket cannot be read or written; [`RemoteError::Json`] when the stored
/// lease is not arbor's JSON (it is overwritten only through a readable one).
pub async fn acquire(
    leases: &kv::Store,
    session: &str,
    ran_on: &RanOn,
    (job_seq, unleased): (u64, bool),
    (public_key, ack_wait): (&str, Duration),
) -> Result<Held, RemoteError> {
    let key = token(session)?;
    let entry = if unleased {
        None
    } else {
        leases
            .entry(&key)
            .await
            .map_err(|e| RemoteError::nats(format!("cannot read the lease of {session}"), e))?
    };
    let live = entry.filter(|e| e.operation == kv::Operation::Put);
    let previous = match &live {
        Some(entry) => Some(serde_json::from_slice::<Lease>(&entry.value)?),
        None => None,
    };
    let lease = Lease {
        epoch: previous.as_ref().map_or(1, |p| p.epoch + 1),
        ran_on: ran_on.clone(),
        job_seq,
        acquired_ms: now_ms(),
        key: public_key.to_string(),
        ack_wait_ms: u64::try_from(ack_wait.as_millis()).unwrap_or(u64::MAX),
    };
    let value = serde_json::to_vec(&lease)?;
    let lost = || RemoteError::LeaseLost {
        session: session.to_string(),
        held: lease.epoch,
    };
    let revision = match &live {
        None => leases.create(&key, value.into()).await.map_err(|e| {
            if e.kind() == kv::CreateErrorKind::AlreadyExists {
                lost()
            } else {
                RemoteError::nats(format!("cannot take the lease of {session}"), e)
            }
        })?,
        Some(entry) => leases
            .update(&key, value.into(), entry.revision)
            .await
            .map_err(|e| {
                if e.kind() == kv::UpdateErrorKind::WrongLastRevision {
                    lost()
                } else {
                    RemoteError::nats(format!("cannot take the lease of {session}"), e)
                }
            })?,
    };
    Ok(Held {
        session: session.to_string(),
        lease,
        revision,
    })
}

/// The lease of `session` as the bucket holds it now (`None`: never leased).
///
/// Errors: [`RemoteError::Nats`] when the bucket cannot be read, [`RemoteError::Json`]
/// when the value is not a lease.
pub async fn current(leases: &kv::Store, session: &str) -> Result<Option<Lease>, RemoteError> {
    Ok(current_entry(leases, session)
        .await?
        .map(|(lease, _)| lease))
}

/// [`current`] with the key's revision (it grows at every write, a renewal included:
/// the root sees a holder alive by it). Read from the bucket's stream leader (the
/// JetStream message-get API, never a direct get): on a cluster a direct get may be
/// answered by a replica that was frozen and still holds an old lease, and the root
/// would refuse the current holder (issue 38 item 5).
///
/// Errors: as [`current`].
pub async fn current_entry(
    leases: &kv::Store,
    session: &str,
) -> Result<Option<(Lease, u64)>, RemoteError> {
    let key = token(session)?;
    let subject = format!("{}{key}", leases.prefix);
    let message = match leases
        .stream
        .get_last_raw_message_by_subject(&subject)
        .await
    {
        Ok(message) => message,
        Err(e)
            if e.kind()
                == async_nats::jetstream::stream::LastRawMessageErrorKind::NoMessageFound =>
        {
            return Ok(None);
        }
        Err(e) => {
            return Err(RemoteError::nats(
                format!("cannot read the lease of {session}"),
                e,
            ));
        }
    };
    // A deleted or purged key is a marker message with a `KV-Operation` header.
    let removed = message
        .headers
        .get("KV-Operation")
        .is_some_and(|op| matches!(op.as_str(), "DEL" | "PURGE"));
    if removed {
        return Ok(None);
    }
    Ok(Some((
        serde_json::from_slice(&message.payload)?,
        message.sequence,
    )))
}

/// The root's epoch fence for one session: the highest epoch it has seen current.
/// A message below it is refused without asking the server; one at or above it is
/// checked against [`current`] (a frozen worker's message can carry an epoch the
/// root has not yet seen superseded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fence {
    highest: u64,
}

/// What the fence says of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Apply it: its epoch is the current one.
    Current,
    /// Refuse it: its epoch `stale` is older than `current`.
    Stale { stale: u64, current: u64 },
}

impl Fence {
    /// Checks a message sent under `epoch` for `session` against the bucket.
    ///
    /// Errors: as [`current`]; a session without a lease refuses every message (a
    /// worker always takes the lease before it sends).
    pub async fn check(
        &mut self,
        leases: &kv::Store,
        session: &str,
        epoch: u64,
    ) -> Result<Verdict, RemoteError> {
        if epoch < self.highest {
            return Ok(Verdict::Stale {
                stale: epoch,
                current: self.highest,
            });
        }
        let now = current(leases, session).await?.map_or(0, |l| l.epoch);
        self.highest = self.highest.max(now);
        if epoch == now {
            Ok(Verdict::Current)
        } else {
            Ok(Verdict::Stale {
                stale: epoch,
                current: now,
            })
        }
    }

    /// The highest epoch seen current so far (0 before any).
    pub fn highest(&self) -> u64 {
        self.highest
    }
}
