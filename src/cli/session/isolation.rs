//! `arbor session merge|discard|rewind ID` and the worktree parts of `session diff`
//! and `session show` (issue 25 items 2–4, 6).
//!
//! - `merge ID`: the sub-session's branch merged three-way into its parent's working
//!   tree; a conflict refuses the whole merge (exit 1, the files named, nothing
//!   changed); success removes the worktree and branch.
//! - `discard ID`: removes the worktree and branch.
//! - `rewind ID --to-turn N [--force]`: restores the files changed after turn N
//!   (`isolation::checkpoint`); files changed since by someone else are refused,
//!   named, unless `--force`.
//!
//! The sub-session's lock is taken while its record changes: a session running in
//! another process is refused. Owns: the commands' wording and exit codes. Does not
//! own: the git steps (`isolation`).

use std::path::PathBuf;

use color_eyre::Result;
use serde_json::{Value, json};

use crate::isolation::checkpoint::Checkpoints;
use crate::isolation::worktree::{KEY, State};
use crate::isolation::{IsolationError, WorktreeRecord, merge};
use crate::outln;
use crate::session::{Message, Metadata, SessionStore, StoreError};

/// Why a merge, discard or rewind did nothing.
#[derive(Debug, thiserror::Error)]
pub enum IsolationCommandError {
    /// The session could not be read or locked (another process has it open).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A git step failed or refused (conflict, changed since, turn out of range).
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    /// Merge or discard of a root.
    #[error("session {0} is a root: it has no parent to merge into and no worktree")]
    Root(String),
    /// Merge or discard of a session that worked in its parent's directory.
    #[error("session {0} has no worktree (it worked in its parent's directory): nothing to {1}")]
    NoWorktree(String, &'static str),
    /// Its worktree is already gone (merged, discarded, removed clean).
    #[error("session {id} has nothing to {what}: its worktree was {state}")]
    Gone {
        id: String,
        what: &'static str,
        state: &'static str,
    },
}

fn state_word(state: State) -> &'static str {
    match state {
        State::Active => "active",
        State::Clean => "removed with no change",
        State::Merged => "already merged",
        State::Discarded => "already discarded",
    }
}

/// The active worktree of `metadata`, or why there is none.
fn active(
    metadata: &Metadata,
    what: &'static str,
) -> Result<WorktreeRecord, IsolationCommandError> {
    let id = metadata.session_id.to_string();
    if metadata.parent_id.is_none() || metadata.forked_from_turn().is_some() {
        return Err(IsolationCommandError::Root(id));
    }
    let record = WorktreeRecord::of(&metadata.extra)
        .ok_or(IsolationCommandError::NoWorktree(id.clone(), what))?;
    if record.state != State::Active {
        return Err(IsolationCommandError::Gone {
            id,
            what,
            state: state_word(record.state),
        });
    }
    Ok(record)
}

/// `session merge ID` (`id` resolved). Exit 0 merged, 1 refused.
pub fn merge(store: &SessionStore, id: &str) -> Result<i32> {
    match try_merge(store, id) {
        Ok(code) => Ok(code),
        Err(e) => super::fail(&e),
    }
}

fn try_merge(store: &SessionStore, id: &str) -> Result<i32, IsolationCommandError> {
    let mut writer = store.open(id)?;
    let mut metadata = writer.metadata().clone();
    let record = active(&metadata, "merge")?;
    let target = metadata
        .parent_id
        .as_deref()
        .and_then(|p| store.load_metadata(p).ok())
        .and_then(|(m, _)| m.working_dir)
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(|| record.parent_dir());
    let merged = merge::merge(&record, &target)?;
    let notes = record.remove()?;
    metadata.extra.insert(
        KEY.into(),
        WorktreeRecord {
            state: State::Merged,
            ..record.clone()
        }
        .to_value(),
    );
    writer.write_metadata(&metadata)?;
    let n = merged.files.len();
    let _ = outln!(
        "merged {} ({n} file{}) into {}{}",
        record.branch,
        if n == 1 { "" } else { "s" },
        target.display(),
        if n == 0 {
            String::new()
        } else {
            format!(": {}", merged.files.join(", "))
        }
    );
    let _ = outln!(
        "removed the worktree {} and the branch {}",
        record.path.display(),
        record.branch
    );
    for note in notes {
        crate::cli::out::warning(note);
    }
    Ok(0)
}

/// `session discard ID` (`id` resolved). Exit 0 removed, 1 refused.
pub fn discard(store: &SessionStore, id: &str) -> Result<i32> {
    let result = (|| -> Result<(), IsolationCommandError> {
        let mut writer = store.open(id)?;
        let mut metadata = writer.metadata().clone();
        let record = active(&metadata, "discard")?;
        let notes = record.remove()?;
        metadata.extra.insert(
            KEY.into(),
            WorktreeRecord {
                state: State::Discarded,
                ..record.clone()
            }
            .to_value(),
        );
        writer.write_metadata(&metadata)?;
        let _ = outln!(
            "discarded the worktree {} and the branch {}",
            record.path.display(),
            record.branch
        );
        for note in notes {
            crate::cli::out::warning(note);
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(0),
        Err(e) => super::fail(&e),
    }
}

/// `session rewind ID --to-turn N [--force]` (`id` resolved). Exit 0 restored (or
/// nothing to restore), 1 refused.
pub fn rewind(store: &SessionStore, id: &str, to_turn: u64, force: bool) -> Result<i32> {
    let result = (|| -> Result<(Vec<String>, Vec<String>, PathBuf), IsolationCommandError> {
        let loaded = store.load(id)?;
        let turns = loaded
            .transcript
            .iter()
            .filter(|m| matches!(m, Message::User(_)))
            .count() as u64;
        let dir = loaded
            .metadata
            .working_dir
            .map(PathBuf::from)
            .unwrap_or_default();
        let private = store.session_dir(id)?.join("checkpoints.git");
        let checkpoints = Checkpoints::open(&dir, id, &private)?;
        let done = checkpoints.rewind(to_turn, turns, force)?;
        Ok((done.files, done.forced, dir))
    })();
    match result {
        Ok((files, forced, dir)) => {
            if files.is_empty() {
                outln!("nothing to rewind: session {id} changed no file after turn {to_turn}")?;
            } else {
                outln!(
                    "restored {} file{} in {} to before turn {}: {}",
                    files.len(),
                    if files.len() == 1 { "" } else { "s" },
                    dir.display(),
                    to_turn + 1,
                    files.join(", ")
                )?;
            }
            if !forced.is_empty() {
                crate::cli::out::warning(format!(
                    "--force overwrote changes made since by someone else: {}",
                    forced.join(", ")
                ));
            }
            Ok(0)
        }
        Err(e) => super::fail(&e),
    }
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
