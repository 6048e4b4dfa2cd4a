//! Isolation and undo (issue 25): a git worktree per writing sub-session, merging or
//! discarding it, checkpoints before each turn that may write, and rewinding to them.
//!
//! Everything goes through the `git` CLI ([`git::Git`]) with a fixed identity
//! (`arbor <arbor@localhost>`), so it works in a repository with no user configured:
//!
//! - [`worktree`]: a sub-session's worktree under arbor's state directory
//!   (`<state>/arbor/worktrees/<repo slug>/<short id>`), on a branch `arbor/<short id>`
//!   cut from a commit object of its parent's working tree as it is (uncommitted and
//!   untracked files included); committing its changes when its turn ends; its diff
//!   against that base; removing it. The record of it is the session metadata's
//!   `worktree` key ([`WorktreeRecord`], whose shape `session::metadata` owns);
//!   [`leftover`] finds the ones a crash left with no session.
//! - [`merge`]: the three-way merge of a sub-session's branch into its parent's
//!   working tree (`git merge-tree`), all or nothing.
//! - [`checkpoint`]: a tree object of the files a session can touch, under the
//!   private ref `refs/arbor/<session>/<turn>` (in a git repository) or in a private
//!   repository kept with the session (`<session dir>/checkpoints.git`) elsewhere;
//!   rewinding restores from them.
//!
//! Owns: the git plumbing and the records. Does not own: when a worktree is made or a
//! checkpoint taken (`engine::spawn`, `engine::checkpoints`), the commands
//! (`cli::session`), the session store (`session`). Uses only `paths` and the
//! metadata's record types (`session::metadata`) below it.

pub mod checkpoint;
pub mod git;
pub mod hermetic;
pub mod leftover;
pub mod merge;
pub mod patch;
pub mod standing;
pub mod worktree;

use std::path::{Path, PathBuf};

pub use standing::Standing;
pub use worktree::WorktreeRecord;

/// What went wrong in an isolation step. Every variant names the files or the git
/// command involved; none leaves a half-applied change (merge and rewind check first).
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    /// `dir` is not inside a git work tree.
    #[error("{} is not inside a git repository", dir.display())]
    NotARepo { dir: PathBuf },
    /// `git` could not be started (not installed?).
    #[error("could not run git: {source}")]
    Spawn { source: std::io::Error },
    /// A git command failed.
    #[error("git {args} failed in {}: {stderr}", dir.display())]
    Git {
        args: String,
        dir: PathBuf,
        stderr: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The three-way merge conflicts; nothing was changed.
    #[error("merge refused: {} conflict{} with the target ({}); nothing was changed", files.len(), if files.len() == 1 { "" } else { "s" }, files.join(", "))]
    Conflict { files: Vec<String> },
    /// Files the rewind would restore were changed by someone else since the
    /// session's last turn; nothing was changed (`--force` overrides).
    #[error("rewind refused: changed since by someone else: {}; nothing was changed (--force restores them anyway)", files.join(", "))]
    ChangedSince { files: Vec<String> },
    /// `--to-turn` outside the session's turns.
    #[error("Turn {turn} out of range. Valid range: 0-{max}")]
    TurnOutOfRange { turn: u64, max: u64 },
    /// A restore (rewind, merge) was asked to write a path it must not: `..`, an
    /// absolute path, inside `.git`, or through a symlink; nothing was written.
    #[error("refused to restore '{path}': {why}; nothing was changed")]
    UnsafePath { path: String, why: String },
    /// A checkpoint recorded in the session does not match the repository (its
    /// tree is missing); nothing was changed.
    #[error(
        "checkpoint {label} of this session is missing from the repository; nothing was changed"
    )]
    MissingCheckpoint { label: String },
    /// The directory is too large for a private snapshot outside git.
    #[error("{} holds more than {limit} files: no checkpoint outside git", dir.display())]
    TooLarge { dir: PathBuf, limit: usize },
}

/// The top level of the git work tree `dir` is in, with the repository's common git
/// directory (the main `.git`, shared by its worktrees) and this work tree's own git
/// directory; [`IsolationError::NotARepo`] outside one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The work tree's top level (canonical).
    pub top: PathBuf,
    /// The main repository's `.git` (absolute).
    pub common_dir: PathBuf,
    /// This work tree's git directory (`.git`, or `.git/worktrees/<name>`).
    pub git_dir: PathBuf,
}

impl Repo {
    /// Finds the repository of `dir`. Runs `git rev-parse`, unless no directory from
    /// `dir` up could be a repository's ([`may_be_in_repo`]): then
    /// [`IsolationError::NotARepo`] without spawning git.
    pub fn discover(dir: &Path) -> Result<Self, IsolationError> {
        if !may_be_in_repo(dir) {
            return Err(IsolationError::NotARepo {
                dir: dir.to_path_buf(),
            });
        }
        let git = git::Git::at(dir);
        let out = git.output(&[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
            "--git-dir",
        ])?;
        if !out.status.success() {
            return Err(IsolationError::NotARepo {
                dir: dir.to_path_buf(),
            });
        }
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let mut lines = text.lines().map(PathBuf::from);
        match (lines.next(), lines.next(), lines.next()) {
            (Some(top), Some(common_dir), Some(git_dir)) => Ok(Self {
                top: std::fs::canonicalize(&top).unwrap_or(top),
                common_dir,
                git_dir,
            }),
            _ => Err(IsolationError::NotARepo {
                dir: dir.to_path_buf(),
            }),
        }
    }

    /// `git` at the top level.
    pub fn git(&self) -> git::Git {
        git::Git::at(&self.top)
    }
}

/// Whether git's discovery could find a work tree from `dir`: `false` only when `dir`
/// resolves and neither it nor any ancestor holds a `.git` entry (file, directory or
/// link) or looks like a git directory itself (`HEAD` and `objects/`, which git's
/// `is_git_directory` requires among others). The caller's `GIT_DIR` and
/// `GIT_WORK_TREE` do not count: arbor's git runs without them ([`hermetic`]). A
/// handful of `stat`s instead of a `git` process, which costs a fork and an exec —
/// outside any repository, every remote child's job asked git (issue 38 item 8).
fn may_be_in_repo(dir: &Path) -> bool {
    // git -C changes into `dir` and walks up its physical path.
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return true;
    };
    dir.ancestors().any(|at| {
        at.join(".git").symlink_metadata().is_ok()
            || (at.join("HEAD").is_file() && at.join("objects").is_dir())
    })
}

#[cfg(test)]
mod tests;
