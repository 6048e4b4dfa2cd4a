//! Whether this worker runs a job it fetched, before it takes the job's lease (issue
//! 38 items 4 and 6).
//!
//! Owns: [`admit`] — a job whose root is gone (nobody answers on
//! `arbor.alive.<session>`), or whose root follows another run of the session now, is
//! dropped for good (it would run for nobody); a job this worker cannot serve (its
//! clone lacks the base commit, or is no git clone) is handed back for another worker
//! (redelivered after as many seconds as it was delivered times), said on stderr, until
//! it was delivered [`HAND_BACK_LIMIT`] times — then it runs and fails with the reason,
//! so the root hears it (after 28 s when no worker of the pool can serve it). Does not own:
//! running the job (`job`), cutting its worktree (`files`).

use std::time::Duration;

use async_nats::jetstream::{self, AckKind};

use super::super::Ctx;
use super::super::files;
use crate::remote::wire::{AliveReply, Job, alive_subject};

/// Deliveries after which a job no worker could serve runs anyway (and fails, naming
/// what the worker lacks), so its root is not left waiting.
pub(super) const HAND_BACK_LIMIT: u32 = 8;
/// How long the root may take to answer whether it still waits.
const ASK_ROOT: Duration = Duration::from_secs(2);

/// What to do with a fetched job.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Admit {
    /// Run it.
    Run,
    /// Done with it: dropped or handed back (the message is settled).
    Settled,
}

/// Decides whether `job` (its message `msg`, delivered the `attempt`-th time) runs
/// here, and settles the message when it does not (see the module doc).
pub(super) async fn admit(ctx: &Ctx, job: &Job, msg: &jetstream::Message, attempt: u32) -> Admit {
    let session = job.session_id.to_string();
    let short = job.session_id.short();
    if let Some(why) = root_gone(ctx, &session, job.run).await {
        (ctx.voice.err)(&format!("dropped the job of sub-session #{short}: {why}"));
        if let Err(e) = msg.ack_with(AckKind::Term).await {
            tracing::warn!(session, "worker: dropping a job: {e}");
        }
        return Admit::Settled;
    }
    if attempt >= HAND_BACK_LIMIT {
        return Admit::Run;
    }
    let Some(wanted) = &job.files else {
        return Admit::Run;
    };
    let (repo, commit, name) = (
        ctx.repo.clone(),
        wanted.base_commit.clone(),
        wanted.repo_name.clone(),
    );
    let lacking = tokio::task::spawn_blocking(move || files::cannot_serve(&repo, &commit, &name))
        .await
        .ok()
        .flatten();
    let Some(lacking) = lacking else {
        return Admit::Run;
    };
    let delay = Duration::from_secs(u64::from(attempt));
    (ctx.voice.err)(&format!(
        "handed back the job of sub-session #{short} for another worker of the pool: {lacking} (delivery {attempt} of {HAND_BACK_LIMIT} before it fails)"
    ));
    if let Err(e) = msg.ack_with(AckKind::Nak(Some(delay))).await {
        tracing::warn!(session, "worker: handing a job back: {e}");
    }
    Admit::Settled
}

/// Why the job's root no longer waits for run `run` of `session`: nobody answers on
/// its alive subject (the root died), or the root follows another run. `None` when
/// the root answers for this run, or cannot be asked (the job runs: a root that cannot
/// be reached is the fence's business, not a reason to drop work).
async fn root_gone(ctx: &Ctx, session: &str, run: u64) -> Option<String> {
    let subject = alive_subject(session).ok()?;
    let asked =
        tokio::time::timeout(ASK_ROOT, ctx.remote.client().request(subject, "".into())).await;
    match asked {
        Ok(Ok(reply)) => match serde_json::from_slice::<AliveReply>(&reply.payload) {
            Ok(alive) if alive.run != run => Some(format!(
                "its root follows run {} of the session now, not run {run}",
                alive.run
            )),
            _ => None,
        },
        Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => {
            Some("its root is gone (nobody waits for its answer)".into())
        }
        _ => None,
    }
}
