//! The root's binding of one remote run to the worker holding its lease (issue 34
//! item 7): which holder's key the root trusts, when it trusts another, and whether a
//! message or a sync request comes from that holder.
//!
//! Owns: [`Binding`] — pinning the first holder of the run's job seen in the leases
//! bucket ([`Binding::observe`]; its key from the lease, `seal`), seeing it alive by
//! its renewals (each a new revision of the key), accepting a new holder only once the
//! pinned one's lease expired by the root's own clock (no renewal seen for two thirds
//! of its ack wait: a live holder renews every third) and refusing the run for good
//! when the lease moves while the holder is alive ([`Observed::Usurped`]: a peer bumped
//! the epoch), then, per message, [`Binding::admit`]: the pinned epoch, a signature
//! that verifies against the pinned key, a sequence number above the last applied.
//! Does not own: reading the bucket (`lease`), signatures (`seal`), what the root does
//! with a verdict (`engine::remote`).
//!
//! Before this, the root applied any message carrying the lease's current epoch, so a
//! peer on the bus could forge events and a final answer, and one that bumped the
//! epoch took the run over.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::seal::{self, PublicKey};
use super::wire::{Lease, RanOn};

/// The ack wait assumed for a lease that records none (an older worker's): the
/// worker's default, 30 s.
const DEFAULT_ACK_WAIT: Duration = Duration::from_secs(30);

/// What observing the lease changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// Nothing the run cares about (a renewal, an older or another job's lease).
    Nothing,
    /// The first holder of the job, pinned.
    Pinned(RanOn),
    /// A new holder after the pinned one's lease expired, now pinned.
    TookOver { from: RanOn, to: RanOn },
    /// The lease moved to `by` (epoch `epoch`) while the pinned holder's was live, or
    /// a lease of the job holds no valid key: the run cannot be trusted any more.
    /// `reason` says which, for the run's error.
    Usurped {
        by: RanOn,
        epoch: u64,
        reason: String,
    },
}

/// What the binding says of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Apply it: the pinned holder's, signed, in order.
    Apply,
    /// An older holder's message (`stale` below the pinned `current`): a late write.
    Stale { stale: u64, current: u64 },
    /// Not the pinned holder's: unsigned, a bad signature, a replayed sequence number,
    /// an epoch not pinned, or no holder yet. `reason` says which.
    Forged { reason: String },
}

/// Why a sync request is not the pinned holder's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncRefused {
    /// No holder is pinned yet.
    #[error("no holder of this run's lease yet")]
    NoHolder,
    /// It names another epoch than the pinned holder's.
    #[error("epoch {epoch} is not the lease holder's ({held})")]
    OtherEpoch { epoch: u64, held: u64 },
    /// It carries no signature.
    #[error("unsigned")]
    Unsigned,
    /// Its signature does not check against the pinned key.
    #[error(transparent)]
    Signature(#[from] seal::SealError),
}

/// The pinned holder of a run.
#[derive(Debug, Clone)]
struct Pinned {
    lease: Lease,
    key: PublicKey,
    revision: u64,
    alive_at: Instant,
    next_seq: u64,
}

impl Pinned {
    /// How long after its last renewal seen the root counts this holder's lease as
    /// expired: two thirds of its ack wait (it renews every third).
    fn expiry(&self) -> Duration {
        let wait = match self.lease.ack_wait_ms {
            0 => DEFAULT_ACK_WAIT,
            ms => Duration::from_millis(ms),
        };
        wait * 2 / 3
    }
}

/// One run's binding (see the module doc): the session, the job's stream sequence
/// (a lease of another job is not this run's), the pinned holder.
#[derive(Debug, Clone)]
pub struct Binding {
    session: String,
    job_seq: u64,
    pinned: Option<Pinned>,
    /// Epochs refused for good (taken while the holder was live, or keyless).
    refused: BTreeSet<u64>,
}

impl Binding {
    /// The binding of the run of `session` whose job is `job_seq` in `ARBOR_JOBS`.
    pub fn new(session: &str, job_seq: u64) -> Self {
        Self {
            session: session.to_string(),
            job_seq,
            pinned: None,
            refused: BTreeSet::new(),
        }
    }

    /// Whether a message under `epoch` can be judged at `now` without reading the
    /// lease first: `epoch` is the pinned holder's and its last renewal seen is within
    /// its expiry, so no new holder could be taken now (a newer epoch read now would be
    /// [`Observed::Usurped`], which ends the run as the watch will, and the message is
    /// the pinned holder's either way). `false` before any holder is pinned.
    pub fn current(&self, epoch: u64, now: Instant) -> bool {
        self.pinned.as_ref().is_some_and(|p| {
            p.lease.epoch == epoch && now.saturating_duration_since(p.alive_at) < p.expiry()
        })
    }

    /// The pinned holder, if any.
    pub fn holder(&self) -> Option<&RanOn> {
        self.pinned.as_ref().map(|p| &p.lease.ran_on)
    }

    /// The pinned epoch (0 before any).
    pub fn epoch(&self) -> u64 {
        self.pinned.as_ref().map_or(0, |p| p.lease.epoch)
    }

    /// Takes in `lease` as the bucket holds it at `revision`, seen at `now` by the
    /// root's clock (from a watch of the key, or read before a message is admitted).
    pub fn observe(&mut self, lease: &Lease, revision: u64, now: Instant) -> Observed {
        if lease.job_seq != self.job_seq || self.refused.contains(&lease.epoch) {
            return Observed::Nothing;
        }
        let usurped = |reason: String| Observed::Usurped {
            by: lease.ran_on.clone(),
            epoch: lease.epoch,
            reason,
        };
        let Ok(key) = PublicKey::parse(&lease.key) else {
            self.refused.insert(lease.epoch);
            return usurped(format!(
                "worker {} took the lease (epoch {}) with no valid public key (an arbor before issue 34?)",
                lease.ran_on.worker, lease.epoch
            ));
        };
        let fresh = Pinned {
            lease: lease.clone(),
            key,
            revision,
            alive_at: now,
            next_seq: 0,
        };
        let Some(pinned) = &mut self.pinned else {
            self.pinned = Some(fresh);
            return Observed::Pinned(lease.ran_on.clone());
        };
        if lease.epoch < pinned.lease.epoch {
            return Observed::Nothing;
        }
        if lease.epoch == pinned.lease.epoch {
            if lease.key == pinned.lease.key && revision > pinned.revision {
                pinned.revision = revision;
                pinned.alive_at = now;
            }
            return Observed::Nothing;
        }
        let silent = now.saturating_duration_since(pinned.alive_at);
        if silent >= pinned.expiry() {
            let from = pinned.lease.ran_on.clone();
            self.pinned = Some(fresh);
            return Observed::TookOver {
                from,
                to: lease.ran_on.clone(),
            };
        }
        self.refused.insert(lease.epoch);
        usurped(format!(
            "worker {} took the lease (epoch {}) while worker {}'s (epoch {}) was live, renewed {} ms before; a peer that can write the leases bucket, refused",
            lease.ran_on.worker,
            lease.epoch,
            pinned.lease.ran_on.worker,
            pinned.lease.epoch,
            silent.as_millis()
        ))
    }

    /// Whether message `seq` sent under `epoch` with `body` and `signature` (its
    /// headers; `None` when missing) is the pinned holder's; an applied one moves the
    /// expected sequence past `seq`.
    pub fn admit(
        &mut self,
        epoch: u64,
        (seq, signature): (Option<u64>, Option<&str>),
        body: &[u8],
    ) -> Verdict {
        let forged = |reason: &str| Verdict::Forged {
            reason: reason.to_string(),
        };
        let Some(pinned) = &mut self.pinned else {
            return forged("no holder of this run's lease yet");
        };
        if epoch < pinned.lease.epoch {
            return Verdict::Stale {
                stale: epoch,
                current: pinned.lease.epoch,
            };
        }
        if epoch > pinned.lease.epoch {
            return forged("its epoch is not the pinned holder's");
        }
        let (Some(seq), Some(signature)) = (seq, signature) else {
            return forged("unsigned");
        };
        if let Err(e) =
            seal::verify_message(&pinned.key, (&self.session, epoch, seq), body, signature)
        {
            return forged(&e.to_string());
        }
        if seq < pinned.next_seq {
            return forged("a replayed sequence number");
        }
        pinned.next_seq = seq + 1;
        Verdict::Apply
    }

    /// Whether a sync request under `epoch` answered on `reply` with `signature` is the
    /// pinned holder's.
    ///
    /// Errors: [`SyncRefused`] says why not (no holder, another epoch, no or a bad
    /// signature).
    pub fn admit_sync(
        &self,
        epoch: u64,
        reply: &str,
        signature: Option<&str>,
    ) -> Result<(), SyncRefused> {
        let pinned = self.pinned.as_ref().ok_or(SyncRefused::NoHolder)?;
        if epoch != pinned.lease.epoch {
            return Err(SyncRefused::OtherEpoch {
                epoch,
                held: pinned.lease.epoch,
            });
        }
        let signature = signature.ok_or(SyncRefused::Unsigned)?;
        Ok(seal::verify_sync(
            &pinned.key,
            (&self.session, epoch),
            reply,
            signature,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::seal::Signer;

    fn lease(epoch: u64, who: &str, signer: &Signer, job_seq: u64) -> Lease {
        Lease {
            epoch,
            ran_on: RanOn {
                worker: who.into(),
                host: "h".into(),
                pid: 1,
            },
            job_seq,
            acquired_ms: 0,
            key: signer.public_key().to_string(),
            ack_wait_ms: 3000,
        }
    }

    #[test]
    fn the_pinned_holders_signed_messages_apply_once_in_order() {
        let (a, b) = (Signer::generate().unwrap(), Signer::generate().unwrap());
        let mut binding = Binding::new("s", 7);
        let now = Instant::now();
        assert_eq!(
            binding.admit(1, (Some(0), Some("x")), b"m"),
            Verdict::Forged {
                reason: "no holder of this run's lease yet".into()
            }
        );
        assert_eq!(
            binding.observe(&lease(1, "w-other", &b, 6), 1, now),
            Observed::Nothing,
            "another job's lease"
        );
        assert!(matches!(
            binding.observe(&lease(1, "w-a", &a, 7), 2, now),
            Observed::Pinned(_)
        ));
        let sig = a.sign_message("s", 1, 0, b"m");
        assert_eq!(
            binding.admit(1, (Some(0), Some(&sig)), b"m"),
            Verdict::Apply
        );
        assert!(
            matches!(
                binding.admit(1, (Some(0), Some(&sig)), b"m"),
                Verdict::Forged { .. }
            ),
            "a replay"
        );
        let forged = b.sign_message("s", 1, 1, b"n");
        assert!(matches!(
            binding.admit(1, (Some(1), Some(&forged)), b"n"),
            Verdict::Forged { .. }
        ));
        assert!(matches!(
            binding.admit(1, (None, None), b"n"),
            Verdict::Forged { .. }
        ));
        let sig = a.sign_message("s", 1, 1, b"n");
        assert!(matches!(
            binding.admit(1, (Some(1), Some(&sig)), b"changed"),
            Verdict::Forged { .. }
        ));
        assert_eq!(
            binding.admit(1, (Some(1), Some(&sig)), b"n"),
            Verdict::Apply
        );
        assert!(
            binding
                .admit_sync(1, "_INBOX.x", Some(&a.sign_sync("s", 1, "_INBOX.x")))
                .is_ok()
        );
        assert!(
            binding
                .admit_sync(1, "_INBOX.x", Some(&b.sign_sync("s", 1, "_INBOX.x")))
                .is_err()
        );
        assert!(binding.admit_sync(1, "_INBOX.x", None).is_err());
    }

    #[test]
    fn a_new_holder_is_taken_only_after_the_pinned_lease_expired() {
        let (a, b, c) = (
            Signer::generate().unwrap(),
            Signer::generate().unwrap(),
            Signer::generate().unwrap(),
        );
        let t0 = Instant::now();
        let mut binding = Binding::new("s", 7);
        binding.observe(&lease(1, "w-a", &a, 7), 1, t0);
        // Renewed at 1.5 s; a takeover 1.9 s after that (expiry: 2 s) is refused.
        binding.observe(&lease(1, "w-a", &a, 7), 2, t0 + Duration::from_millis(1500));
        let usurped = binding.observe(&lease(2, "w-b", &b, 7), 3, t0 + Duration::from_millis(3400));
        assert!(
            matches!(usurped, Observed::Usurped { epoch: 2, .. }),
            "{usurped:?}"
        );
        assert_eq!(binding.epoch(), 1, "still the first holder's");
        let sig = b.sign_message("s", 2, 0, b"m");
        assert!(matches!(
            binding.admit(2, (Some(0), Some(&sig)), b"m"),
            Verdict::Forged { .. }
        ));

        // Another run: the holder went silent for the whole expiry; the next one is
        // taken and the old one's messages are late writes.
        let mut binding = Binding::new("s", 7);
        binding.observe(&lease(1, "w-a", &a, 7), 1, t0);
        let took = binding.observe(&lease(2, "w-c", &c, 7), 2, t0 + Duration::from_millis(2100));
        assert!(matches!(took, Observed::TookOver { .. }), "{took:?}");
        let old = a.sign_message("s", 1, 5, b"late");
        assert_eq!(
            binding.admit(1, (Some(5), Some(&old)), b"late"),
            Verdict::Stale {
                stale: 1,
                current: 2
            }
        );
        let new = c.sign_message("s", 2, 0, b"m");
        assert_eq!(
            binding.admit(2, (Some(0), Some(&new)), b"m"),
            Verdict::Apply
        );
    }

    #[test]
    fn a_message_is_judged_without_a_read_only_while_its_holder_is_alive() {
        let a = Signer::generate().unwrap();
        let t0 = Instant::now();
        let mut binding = Binding::new("s", 7);
        assert!(!binding.current(1, t0), "nothing pinned yet");
        binding.observe(&lease(1, "w-a", &a, 7), 1, t0);
        assert!(binding.current(1, t0 + Duration::from_millis(1900)));
        assert!(!binding.current(2, t0), "another epoch");
        assert!(!binding.current(0, t0), "no epoch");
        // Silent for its whole expiry (2 s): a new holder may have been taken.
        assert!(!binding.current(1, t0 + Duration::from_millis(2000)));
        // A renewal seen makes it current again.
        binding.observe(&lease(1, "w-a", &a, 7), 2, t0 + Duration::from_millis(2500));
        assert!(binding.current(1, t0 + Duration::from_millis(4000)));
    }

    #[test]
    fn a_keyless_lease_is_refused() {
        let a = Signer::generate().unwrap();
        let mut binding = Binding::new("s", 7);
        let mut keyless = lease(1, "w-old", &a, 7);
        keyless.key.clear();
        assert!(matches!(
            binding.observe(&keyless, 1, Instant::now()),
            Observed::Usurped { .. }
        ));
        assert_eq!(binding.holder(), None);
    }
}
