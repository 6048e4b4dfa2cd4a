//! What a session changed, for `EngineCommand::LoadDiff` (the TUI's `d`): a worktree
//! session's changes are `git diff` of its branch against its base (issue 25 item 3),
//! split per file; every other session's are rebuilt from its transcript
//! (`tool::filesystem::changes`).
//!
//! Owns: choosing between the two. Does not own: the git plumbing (`isolation`) or
//! rebuilding changes from tool calls (`tool::filesystem::changes`).

use crate::engine::outcome::EngineError;
use crate::isolation::patch;
use crate::session::SessionStore;
use crate::tool::filesystem::changes::{FileDiff, SessionDiff, session_diffs};

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

/// `Some` for a session with an active worktree: its branch against its base.
fn worktree_changes(
    store: &SessionStore,
    id: &str,
) -> Option<Result<Vec<SessionDiff>, EngineError>> {
    let (metadata, _) = store.load_metadata(id).ok()?;
    let record = metadata.active_worktree()?;
    Some(record.diff().map_err(EngineError::from).map(|text| {
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
