//! What a session changed, for `EngineCommand::LoadDiff` (the TUI's `d`) and
//! `EngineQuery::LoadChanges` (`arbor session diff`): a worktree session's changes are
//! `git diff` of its branch against its base (issue 25 item 3) — split per file for
//! the TUI, the patch itself for `session diff`; every other session's are rebuilt
//! from its transcript (`tool::filesystem::changes`).
//!
//! Owns: choosing between the two, and what a session's sub-sessions changed when it
//! changed nothing itself. Does not own: the git plumbing (`isolation`) or rebuilding
//! changes from tool calls (`tool::filesystem::changes`).

use crate::engine::outcome::EngineError;
use crate::isolation::patch;
use crate::session::{Metadata, SessionStore};
use crate::tool::filesystem::changes::{FileDiff, SessionDiff, session_diffs};

/// What `EngineQuery::LoadChanges` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChanges {
    /// An active worktree session asked alone: its branch's `git diff` against its
    /// base (uncommitted changes included), a patch `git apply` accepts.
    Worktree { patch: String },
    /// Rebuilt from the transcripts: the session's diffs (itself first, then, with
    /// `subtree`, its changed descendants). `below`: when it was asked alone and
    /// changed no file itself, its sub-sessions that did (else empty).
    Rebuilt {
        diffs: Vec<SessionDiff>,
        below: Vec<SessionDiff>,
    },
}

/// The changes of session `id` (a full id), with `subtree` its descendants' too.
/// An active worktree session (asked alone) gives its branch's `git diff`, one
/// [`SessionDiff`] with a [`FileDiff`] per file.
///
/// Errors: the store's (unknown or unreadable session) or git's.
pub fn session_changes(
    store: &SessionStore,
    id: &str,
    subtree: bool,
) -> Result<Vec<SessionDiff>, EngineError> {
    if !subtree && let Some(diff) = worktree_changes(store, id) {
        return diff;
    }
    Ok(session_diffs(store, id, subtree)?)
}

/// [`SessionChanges`] of session `id` (a full id), with `subtree` its descendants'
/// too.
///
/// Errors: as [`session_changes`].
pub fn changes(
    store: &SessionStore,
    id: &str,
    subtree: bool,
) -> Result<SessionChanges, EngineError> {
    if !subtree && let Some((_, patch)) = worktree_patch(store, id) {
        return Ok(SessionChanges::Worktree { patch: patch? });
    }
    let diffs = session_diffs(store, id, subtree)?;
    let below = if !subtree && diffs.iter().all(|d| d.files.is_empty()) {
        changed_below(store, id)
    } else {
        Vec::new()
    };
    Ok(SessionChanges::Rebuilt { diffs, below })
}

/// The changed sub-sessions of `id` (its descendants that changed a file); empty
/// when the subtree cannot be read.
fn changed_below(store: &SessionStore, id: &str) -> Vec<SessionDiff> {
    let Ok(all) = session_diffs(store, id, true) else {
        return Vec::new();
    };
    all.into_iter()
        .skip(1)
        .filter(|d| !d.files.is_empty())
        .collect()
}

/// `Some` for a session with an active worktree: its metadata and its branch's `git
/// diff` against its base.
fn worktree_patch(
    store: &SessionStore,
    id: &str,
) -> Option<(Metadata, Result<String, EngineError>)> {
    let (metadata, _) = store.load_metadata(id).ok()?;
    let record = metadata.active_worktree()?;
    let patch = record.diff().map_err(EngineError::from);
    Some((metadata, patch))
}

/// `Some` for a session with an active worktree: its branch against its base, split
/// per file.
fn worktree_changes(
    store: &SessionStore,
    id: &str,
) -> Option<Result<Vec<SessionDiff>, EngineError>> {
    let (metadata, patch) = worktree_patch(store, id)?;
    Some(patch.map(|text| {
        let files = patch::split(&text)
            .into_iter()
            .map(|f| FileDiff {
                path: f.path,
                diff: f.diff,
                added: f.added,
                removed: f.removed,
            })
            .collect();
        vec![SessionDiff {
            session_id: metadata.session_id.clone(),
            agent: metadata.agent_name.clone(),
            files,
        }]
    }))
}
