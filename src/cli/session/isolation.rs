//! `arbor session merge|discard|rewind ID` and the worktree parts of `session diff`
//! and `session show` (issue 25 items 2–4, 6).
//!
//! - `merge ID`: the sub-session's branch merged three-way into its parent's working
//!   tree; a conflict refuses the whole merge (exit 1, the files named, nothing
//!   changed); success removes the worktree and branch. `--markers` writes a
//!   conflict as git-style markers instead (named on stderr).
//! - `discard ID`: removes the worktree and branch.
//! - `rewind ID --to-turn N [--force]`: restores the files changed after turn N
//!   (`isolation::checkpoint`); files changed since by someone else are refused,
//!   named, unless `--force`.
//!
//! Owns: the commands' wording and exit codes. Does not own: the checks and steps,
//! shared with the TUI's keys (`engine::handle::undo`), or the git plumbing
//! (`isolation`).

use color_eyre::Result;
use serde_json::{Value, json};

use crate::engine::handle::undo;
use crate::isolation::worktree::State;
use crate::isolation::{IsolationError, WorktreeRecord};
use crate::outln;
use crate::session::{Metadata, SessionStore};

/// `session merge ID [--markers]` (`id` resolved). Exit 0 merged, 1 refused.
pub fn merge(store: &SessionStore, id: &str, markers: bool) -> Result<i32> {
    let done = if markers {
        undo::merge_with_markers(store, id)
    } else {
        undo::merge(store, id)
    };
    let merged = match done {
        Ok(m) => m,
        Err(e) => return super::fail(&e),
    };
    let n = merged.files.len();
    outln!(
        "merged {} ({n} file{}) into {}{}",
        merged.branch,
        if n == 1 { "" } else { "s" },
        merged.target.display(),
        if n == 0 {
            String::new()
        } else {
            format!(": {}", merged.files.join(", "))
        }
    )?;
    outln!(
        "removed the worktree {} and the branch {}",
        merged.worktree.display(),
        merged.branch
    )?;
    if !merged.conflicted.is_empty() {
        crate::cli::out::warning(format!(
            "conflict markers written in {}: resolve them by hand",
            merged.conflicted.join(", ")
        ));
    }
    for note in merged.notes {
        crate::cli::out::warning(note);
    }
    Ok(0)
}

/// `session discard ID` (`id` resolved). Exit 0 removed, 1 refused.
pub fn discard(store: &SessionStore, id: &str) -> Result<i32> {
    let discarded = match undo::discard(store, id) {
        Ok(d) => d,
        Err(e) => return super::fail(&e),
    };
    outln!(
        "discarded the worktree {} and the branch {}",
        discarded.worktree.display(),
        discarded.branch
    )?;
    for note in discarded.notes {
        crate::cli::out::warning(note);
    }
    Ok(0)
}

/// `session rewind ID --to-turn N [--force]` (`id` resolved). Exit 0 restored (or
/// nothing to restore), 1 refused.
pub fn rewind(store: &SessionStore, id: &str, to_turn: u64, force: bool) -> Result<i32> {
    let done = match undo::rewind(store, id, to_turn, force) {
        Ok(r) => r,
        Err(e) => return super::fail(&e),
    };
    let files = &done.files;
    if files.is_empty() {
        outln!("nothing to rewind: session {id} changed no file after turn {to_turn}")?;
    } else {
        outln!(
            "restored {} file{} in {} to before turn {}: {}",
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            done.dir.display(),
            to_turn + 1,
            files.join(", ")
        )?;
    }
    if !done.forced.is_empty() {
        crate::cli::out::warning(format!(
            "--force overwrote changes made since by someone else: {}",
            done.forced.join(", ")
        ));
    }
    Ok(0)
}

/// A worktree session's `session diff`: `git diff` of its branch (and uncommitted
/// changes) against its base, a patch `git apply` accepts; `None` for other sessions.
pub fn diff(metadata: &Metadata) -> Option<Result<String, IsolationError>> {
    let record = WorktreeRecord::of(&metadata.extra)?;
    (record.state == State::Active).then(|| record.diff())
}

/// The `worktree` of `session show --json`: `{path, branch, state, unmerged}`
/// (`unmerged`: files changed against the base while active); `None` without one.
pub fn show_json(metadata: &Metadata) -> Option<Value> {
    let record = WorktreeRecord::of(&metadata.extra)?;
    let unmerged = (record.state == State::Active)
        .then(|| record.changed_files().map(|f| f.len()).ok())
        .flatten();
    Some(json!({
        "path": record.working_dir(),
        "branch": record.branch,
        "state": record.state,
        "unmerged": unmerged,
    }))
}

/// What `session tree` adds to a session's line: `  (fork @3)` for a fork,
/// `  ⎇ arbor/1a2b3c4d unmerged` for an active worktree; empty otherwise.
pub fn tree_mark(metadata: &Metadata) -> String {
    let mut mark = String::new();
    if let Some(turn) = metadata.forked_from_turn() {
        mark.push_str(&format!("  (fork @{turn})"));
    }
    if let Some(record) = WorktreeRecord::of(&metadata.extra).filter(|r| r.state == State::Active) {
        mark.push_str(&format!("  ⎇ {} unmerged", record.branch));
    }
    mark
}
