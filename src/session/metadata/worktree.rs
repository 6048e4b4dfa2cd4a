//! The worktree keys of a sub-session's `metadata.json` (issues 25 and 35), as data:
//! [`WorktreeRecord`] under `worktree`, its [`WorktreeState`], and the
//! [`MergePolicy`] under `merge_policy`. Their shapes live here, below `config` and
//! `isolation`, so [`super::Metadata`] can name them.
//!
//! Owns: the types and their JSON form, and the two directories a record names.
//! Does not own: the git steps on a worktree (`isolation::worktree`, which implements
//! them on [`WorktreeRecord`]), how `isolation:` is spelled in config, frontmatter and
//! calls (`config::isolation`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a sub-session's worktree stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorktreeState {
    /// The worktree exists (or its branch does) and is not merged.
    Active,
    /// Its session ended with no change: worktree and branch removed.
    Clean,
    /// Merged into its parent's working tree; worktree and branch removed.
    Merged,
    /// Discarded; worktree and branch removed.
    Discarded,
}

/// A sub-session's worktree, as stored in its metadata (`worktree`):
/// `{path, branch, base, repo, subdir, state, git_dir?, common_dir?, changed?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeRecord {
    /// The worktree's top level (under arbor's state directory).
    pub path: PathBuf,
    /// `arbor/<short id>`.
    pub branch: String,
    /// The commit it was cut from: the parent's working tree at spawn.
    pub base: String,
    /// The top level of the work tree it was cut from (the parent's).
    pub repo: PathBuf,
    /// The parent's working directory relative to `repo` (`""` at the top): the
    /// session works in `path/subdir`.
    #[serde(default)]
    pub subdir: String,
    /// Where the worktree stands.
    pub state: WorktreeState,
    /// The worktree's own git directory (`<main .git>/worktrees/<name>`), recorded at
    /// creation with [`Self::common_dir`]: arbor's git addresses the worktree through
    /// them, never through the worktree's `.git` file or its `commondir` (both
    /// writable by the session working there). Records written before issue 34 have
    /// none and fall back to discovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_dir: Option<PathBuf>,
    /// The main repository's `.git`, recorded at creation (see [`Self::git_dir`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_dir: Option<PathBuf>,
    /// How many files the session had changed against its base when its last turn
    /// ended (issue 35: `unmerged ✎3`); `None` before the first count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<usize>,
}

impl WorktreeRecord {
    /// The same record in `state`.
    pub fn with_state(&self, state: WorktreeState) -> Self {
        Self {
            state,
            ..self.clone()
        }
    }

    /// The session's working directory: `path/subdir`.
    pub fn working_dir(&self) -> PathBuf {
        if self.subdir.is_empty() {
            self.path.clone()
        } else {
            self.path.join(&self.subdir)
        }
    }

    /// The parent's working directory it was cut from: `repo/subdir`.
    pub fn parent_dir(&self) -> PathBuf {
        if self.subdir.is_empty() {
            self.repo.clone()
        } else {
            self.repo.join(&self.subdir)
        }
    }
}

/// `isolation: {merge: auto | review | manual}`: what happens to a worktree child's
/// branch when its `task` call returns (issue 35); stored with the child as
/// `merge_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MergePolicy {
    /// Merged three-way into the parent's working tree before the task result goes
    /// to the parent (the default); a conflict leaves it unmerged and tells the parent.
    #[default]
    Auto,
    /// A person decides; headless runs leave it unmerged for now.
    Review,
    /// Left unmerged: `arbor session merge` or `discard` it.
    Manual,
}

impl MergePolicy {
    /// The spelling in files and calls (`auto`, `review`, `manual`).
    pub fn as_str(self) -> &'static str {
        match self {
            MergePolicy::Auto => "auto",
            MergePolicy::Review => "review",
            MergePolicy::Manual => "manual",
        }
    }

    /// Parses `"auto"`, `"review"` or `"manual"`; `None` for anything else.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "auto" => Some(MergePolicy::Auto),
            "review" => Some(MergePolicy::Review),
            "manual" => Some(MergePolicy::Manual),
            _ => None,
        }
    }
}
