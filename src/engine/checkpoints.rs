//! Checkpoints around each turn that may write (issue 25 item 4): the state before
//! turn N under `refs/arbor/<session>/N`, and after the turn under `…/end`
//! (`isolation::checkpoint`). A failure is logged and never stops the turn.
//!
//! Owns: when a checkpoint is taken and where a session's private one lives outside
//! git (`<session dir>/checkpoints.git`). Does not own: the snapshots themselves.

use std::path::PathBuf;

use super::env::TurnEnv;
use super::isolate::{blocking, may_write};
use super::live::LiveSession;
use crate::isolation::checkpoint::Checkpoints;
use crate::session::Message;

/// The private checkpoint repository of `session` outside git.
pub(crate) fn private_dir(env: &TurnEnv, session: &str) -> PathBuf {
    env.paths
        .sessions_dir()
        .join(session)
        .join("checkpoints.git")
}

/// Records the state before the current turn of `live` (its number: the user
/// messages in its transcript plus the `coming` ones this turn stores after its
/// prompt hooks) when it may write.
pub(crate) async fn before_turn(env: &TurnEnv, live: &LiveSession, coming: usize) {
    if !may_write(&live.plan) {
        return;
    }
    let stored = live
        .transcript_snapshot()
        .iter()
        .filter(|m| matches!(m, Message::User(_)))
        .count();
    let turn = (stored + coming) as u64;
    let (dir, id, private) = (
        live.working_dir.clone(),
        live.id.to_string(),
        private_dir(env, &live.id),
    );
    let done =
        blocking(move || Checkpoints::open(&dir, &id, &private).and_then(|c| c.before_turn(turn)))
            .await;
    if let Err(e) = done {
        tracing::warn!(session = %live.id, "no checkpoint before turn {turn}: {e}");
    }
}

/// Records the state after the turn of `live` (`…/end`) when it may write.
pub(crate) async fn after_turn(env: &TurnEnv, live: &LiveSession) {
    if !may_write(&live.plan) {
        return;
    }
    let (dir, id, private) = (
        live.working_dir.clone(),
        live.id.to_string(),
        private_dir(env, &live.id),
    );
    let done =
        blocking(move || Checkpoints::open(&dir, &id, &private).and_then(|c| c.after_turn())).await;
    if let Err(e) = done {
        tracing::warn!(session = %live.id, "no checkpoint after the turn: {e}");
    }
}
