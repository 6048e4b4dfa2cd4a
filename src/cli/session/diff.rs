//! `arbor session diff ID [--subtree]`: the engine's `LoadChanges` query printed — a
//! worktree session's `git diff` of its branch against its base as it is, every other
//! session's changes as the unified diff rebuilt from its transcript (with
//! `--subtree`, each changed sub-session's after a `# session ID (agent)` line;
//! nothing when nothing changed). A session that changed no file itself says on
//! stderr when its sub-sessions did, and how to see them.
//!
//! Owns: those texts. Does not own: which changes a session has
//! (`engine::handle::diff`), rendering the rebuilt diffs
//! (`tool::filesystem::changes::render`).

use color_eyre::Result;

use super::{fail, resolve};
use crate::cli::call::unexpected;
use crate::cli::out::{self, plural};
use crate::engine::handle::diff::SessionChanges;
use crate::engine::{Engine, QueryReply};
use crate::session::EngineQuery;
use crate::tool::filesystem::changes::{SessionDiff, render};

/// Runs `session diff`. Exit 0, or 1 when there is no such session or its changes
/// cannot be read.
pub async fn run(engine: &Engine, id: &str, subtree: bool) -> Result<i32> {
    let id = match resolve(engine, id).await {
        Ok(id) => id,
        Err(e) => return fail(&e),
    };
    let query = EngineQuery::LoadChanges {
        session_id: id.clone(),
        subtree,
    };
    let changes = match engine.ask(query).await {
        QueryReply::LoadChanges(result) => result,
        other => Err(unexpected(other)),
    };
    match changes {
        Ok(SessionChanges::Worktree { patch }) => crate::out!("{patch}")?,
        Ok(SessionChanges::Rebuilt { diffs, below }) => {
            crate::out!("{}", render(&diffs))?;
            note_changes_below(&id, &below);
        }
        Err(e) => return fail(&e),
    }
    Ok(0)
}

/// For `session diff` without `--subtree` of a session that changed no file: says on
/// stderr when its sub-sessions did (`below`: how many sessions and files), and how
/// to see them.
fn note_changes_below(id: &str, below: &[SessionDiff]) {
    if below.is_empty() {
        return;
    }
    let files: usize = below.iter().map(|d| d.files.len()).sum();
    out::error(format!(
        "session {id} changed no file itself; its sub-sessions changed {} in {} \
         (arbor session diff {id} --subtree)",
        plural(files, "file"),
        plural(below.len(), "session"),
    ));
}
