//! Counting the late writes the root's epoch fence refuses (issue 27 item 3, design
//! "The lease / fence"): a message from a worker is applied only when its
//! `Arbor-Epoch` is the epoch of the session's lease in `arbor_leases` now
//! (`remote::lease::Fence`), so a worker that lost its lease can never write again.
//!
//! Owns: [`Refused`] (the count, shared by every remote run of a runtime) and the log
//! line of each refusal ([`REFUSED_PHRASE`]; [`FORGED_PHRASE`] for a message that is
//! not the pinned lease holder's, `remote::pin`). Does not own: the check itself
//! (`remote::lease::Fence`), the lease (`remote::lease`).

use std::sync::atomic::{AtomicU64, Ordering};

/// How many late writes the root refused (every remote run of one runtime adds to
/// it); what tests read to see the fence work.
#[derive(Debug, Default)]
pub(crate) struct Refused(AtomicU64);

/// The fixed phrase of the log line of a refused write (tests look for it).
pub(crate) const REFUSED_PHRASE: &str = "refused a late write from worker";

/// The fixed phrase of the log line of a refused message that is not the pinned lease
/// holder's (issue 34 item 7; tests look for it).
pub(crate) const FORGED_PHRASE: &str =
    "refused a message not signed by the lease holder, claiming worker";

impl Refused {
    /// Logs and counts one refused message of `session` from `worker` at `epoch`
    /// (`kind`: the message's kind) while the lease is at `current`.
    pub fn record(&self, session: &str, worker: &str, epoch: u64, current: u64, kind: &str) {
        self.0.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            session,
            kind,
            lease_epoch = current,
            "{REFUSED_PHRASE} {worker} epoch {epoch}"
        );
    }

    /// Logs and counts one message of `session` that is not the lease holder's
    /// (`reason`: unsigned, a bad signature, a replay, an epoch not pinned), claiming
    /// `worker` and `epoch` (`kind`: the message's kind, or `sync`).
    pub fn record_forged(&self, session: &str, worker: &str, epoch: u64, kind: &str, reason: &str) {
        self.0.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            session,
            kind,
            "{FORGED_PHRASE} {worker} epoch {epoch}: {reason}"
        );
    }

    /// The count so far.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted() {
        let refused = Refused::default();
        assert_eq!(refused.count(), 0);
        refused.record("s", "w-1", 1, 2, "event");
        refused.record("s", "w-1", 1, 2, "done");
        assert_eq!(refused.count(), 2);
    }
}
