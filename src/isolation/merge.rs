//! Merging a sub-session's worktree into its parent's working tree (issue 25 item 2):
//! three-way, all or nothing.
//!
//! The parent's side is a snapshot of its working tree as it is (uncommitted changes
//! included), the child's is its branch after committing what it left uncommitted,
//! the base is the commit the worktree was cut from. `git merge-tree --write-tree`
//! merges them without touching any work tree; only a clean result is written, and
//! only the files it changes against the parent's snapshot. The parent's index and
//! `HEAD` are untouched: the changes show as unstaged edits. Does not own: removing
//! the worktree afterwards (`worktree`), finding the parent (`cli::session`).

use std::path::Path;

use super::git::Git;
use super::worktree::WorktreeRecord;
use super::{IsolationError, Repo};

/// What a merge wrote: the files changed in the target, repository relative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The files written or removed in the target, repository relative.
    pub files: Vec<String>,
}

/// Merges `record`'s branch into the working tree at `target` (the parent's working
/// directory). Errors: `Conflict` naming the conflicting files (nothing written),
/// `NotARepo` when `target` is not in the worktree's repository, `Git`/`Io`.
pub fn merge(record: &WorktreeRecord, target: &Path) -> Result<Merged, IsolationError> {
    record.commit("changes left uncommitted, before merging")?;
    let repo = Repo::discover(target)?;
    let git = repo.git();
    let theirs = git
        .commit_of(&format!("refs/heads/{}", record.branch))?
        .ok_or_else(|| IsolationError::Git {
            args: format!("rev-parse {}", record.branch),
            dir: repo.top.clone(),
            stderr: format!("the branch {} is gone", record.branch),
        })?;
    let ours_tree = Git::at(&repo.top).snapshot()?;
    let ours = git.commit_tree(&ours_tree, &[&record.base], "arbor: merge target")?;
    let merge_base = format!("--merge-base={}", record.base);
    let args = [
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        &merge_base,
        &ours,
        &theirs,
    ];
    let out = git.output(&args)?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = text.lines();
    let merged = lines.next().unwrap_or_default().trim().to_string();
    match out.status.code() {
        Some(0) => {}
        Some(1) => {
            let mut files: Vec<String> = lines
                .take_while(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            files.dedup();
            return Err(IsolationError::Conflict { files });
        }
        _ => return Err(git.failed(&args, &out)),
    }
    let files = git.changed(&ours_tree, &merged)?;
    git.restore(&merged, &repo.top, &files)?;
    Ok(Merged { files })
}
