//! A writing sub-session's git worktree (issue 25 item 1): creating it from its
//! parent's working tree as it is, committing its changes to its branch, its diff
//! against its base, repairing or removing it.
//!
//! Owns: the git steps on a [`WorktreeRecord`] (the record itself is the session
//! metadata's `worktree` key, `session::metadata`). Does not own: deciding who gets
//! one (`engine::spawn`), merging (`merge`).

use std::path::{Path, PathBuf};

use super::git::Git;
use super::{IsolationError, Repo};

pub use crate::session::metadata::{WorktreeRecord, WorktreeState as State};

/// The git steps on a worktree record (the record's shape is metadata's:
/// `session::metadata::WorktreeRecord`).
impl WorktreeRecord {
    fn git(&self) -> Git {
        match (&self.git_dir, &self.common_dir) {
            (Some(git_dir), Some(common)) => Git::linked(git_dir, common, &self.path),
            _ => Git::at(&self.path),
        }
    }

    /// The repository the branch lives in, as a place to run git: the checkout it was
    /// cut from, or — when that is gone (a grandchild whose parent's worktree was
    /// removed) — the recorded main `.git` itself, which holds the same branches and
    /// objects (issue 35: `session diff` failed with "cannot change to …").
    fn main_git(&self) -> Git {
        match &self.common_dir {
            Some(common) if !self.repo.exists() => Git::private(common, common),
            _ => Git::at(&self.repo),
        }
    }

    /// Cuts a worktree for session `short` (its short id) from `parent_dir` as it is
    /// now: a commit object of its working tree (uncommitted and untracked files
    /// included, ignored ones not) on top of `HEAD`, checked out at
    /// `root/<repo slug>/<short>` on a new branch `arbor/<short>`.
    ///
    /// Errors: `NotARepo` outside git; `Git` when a step fails (a branch of that name
    /// exists, …).
    pub fn create(parent_dir: &Path, short: &str, root: &Path) -> Result<Self, IsolationError> {
        let repo = Repo::discover(parent_dir)?;
        let git = repo.git();
        let tree = Git::at(parent_dir).snapshot()?;
        let head = git.commit_of("HEAD")?;
        let parents: Vec<&str> = head.iter().map(String::as_str).collect();
        let base = git.commit_tree(&tree, &parents, &format!("arbor: base of {short}"))?;
        let branch = format!("arbor/{short}");
        let path = root.join(crate::paths::project_slug(&repo.top)).join(short);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| IsolationError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let shown = path.display().to_string();
        git.run(&["worktree", "add", "--quiet", "-b", &branch, &shown, &base])?;
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        let linked = Repo::discover(&path)?;
        let canonical = std::fs::canonicalize(parent_dir).unwrap_or(parent_dir.to_path_buf());
        let subdir = canonical
            .strip_prefix(&repo.top)
            .map(|p| p.to_string_lossy().to_string())
            .unwrap_or_default();
        Ok(Self {
            path,
            branch,
            base,
            repo: repo.top,
            subdir,
            state: State::Active,
            git_dir: Some(linked.git_dir),
            common_dir: Some(repo.common_dir),
            changed: None,
        })
    }

    /// The directories a sandboxed command in this worktree must write for git to
    /// work (issue 25 item 6): its own entry in the main `.git` (`worktrees/<name>`),
    /// the shared `objects` and `logs`, and of the refs only `refs/heads/arbor` (issue
    /// 34: a child moved the person's `main` with `git update-ref`; the sandbox's git
    /// guard keeps the entry's `commondir` and `gitdir` read-only).
    pub fn git_write_paths(&self) -> Vec<PathBuf> {
        let (git_dir, common) = match (&self.git_dir, &self.common_dir) {
            (Some(g), Some(c)) => (g.clone(), c.clone()),
            _ => match Repo::discover(&self.path) {
                Ok(repo) => (repo.git_dir, repo.common_dir),
                Err(_) => return Vec::new(),
            },
        };
        vec![
            git_dir,
            common.join("objects"),
            common.join("logs"),
            common.join("refs/heads/arbor"),
        ]
    }

    /// Commits whatever changed in the worktree to its branch ("arbor: <message>");
    /// `Ok(true)` when a commit was made. A worktree whose directory is gone is left
    /// alone (`Ok(false)`).
    ///
    /// The commit goes on `refs/heads/<branch>` by name (`commit-tree` and a
    /// compare-and-set `update-ref`), not wherever the worktree's `HEAD` points: the
    /// session working there can rewrite its `HEAD` to name the person's branch.
    pub fn commit(&self, message: &str) -> Result<bool, IsolationError> {
        if !self.path.exists() {
            return Ok(false);
        }
        let git = self.git();
        let branch = format!("refs/heads/{}", self.branch);
        let parent = git.commit_of(&branch)?;
        git.run(&["add", "--all", "--", ":/"])?;
        let tree = git.run(&["write-tree"])?;
        if let Some(parent) = &parent
            && git.run(&["rev-parse", &format!("{parent}^{{tree}}")])? == tree
        {
            return Ok(false);
        }
        let parents: Vec<&str> = parent.iter().map(String::as_str).collect();
        let commit = git.commit_tree(&tree, &parents, &format!("arbor: {message}"))?;
        let old = parent.unwrap_or_else(|| "0".repeat(40));
        git.run(&["update-ref", "-m", "arbor: commit", &branch, &commit, &old])?;
        Ok(true)
    }

    /// The tree the session's changes end in: its worktree as it is now (uncommitted
    /// changes included) when the directory exists, else its branch's.
    pub fn current_tree(&self) -> Result<String, IsolationError> {
        if self.path.exists() {
            self.git().snapshot()
        } else {
            self.main_git()
                .run(&["rev-parse", &format!("{}^{{tree}}", self.branch)])
        }
    }

    /// The files the session changed against its base (repository relative).
    pub fn changed_files(&self) -> Result<Vec<String>, IsolationError> {
        let tree = self.current_tree()?;
        self.main_git().changed(&self.base, &tree)
    }

    /// `git diff` of the session's changes against its base: a patch `git apply`
    /// accepts in the parent's working tree (binary files included).
    pub fn diff(&self) -> Result<String, IsolationError> {
        let tree = self.current_tree()?;
        let out = self.main_git().run(&[
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            &self.base,
            &tree,
        ])?;
        Ok(if out.is_empty() { out } else { out + "\n" })
    }

    /// Whether the branch holds no change against the base and the worktree none
    /// uncommitted.
    pub fn is_clean(&self) -> Result<bool, IsolationError> {
        Ok(self.changed_files()?.is_empty())
    }

    /// A worktree whose directory was deleted by hand: re-checked out from its branch
    /// (`Ok(Some(note))`), or `Ok(None)` when nothing was missing. Errors when the
    /// branch is gone too.
    pub fn repair(&self) -> Result<Option<String>, IsolationError> {
        if self.path.exists() {
            return Ok(None);
        }
        let git = self.main_git();
        git.run(&["worktree", "prune"])?;
        let shown = self.path.display().to_string();
        git.run(&["worktree", "add", "--quiet", &shown, &self.branch])?;
        Ok(Some(format!(
            "the worktree {} was missing; checked out again from {}",
            self.path.display(),
            self.branch
        )))
    }

    /// Removes the worktree (its directory, even with changes) and the branch; what
    /// is already gone is skipped. Returns notes on what was missing.
    pub fn remove(&self) -> Result<Vec<String>, IsolationError> {
        let git = self.main_git();
        let mut notes = Vec::new();
        if self.path.exists() {
            let shown = self.path.display().to_string();
            git.run(&["worktree", "remove", "--force", "--force", &shown])?;
        } else {
            notes.push(format!(
                "the worktree {} was already gone",
                self.path.display()
            ));
        }
        git.run(&["worktree", "prune"])?;
        if git
            .commit_of(&format!("refs/heads/{}", self.branch))?
            .is_some()
        {
            git.run(&["branch", "--quiet", "-D", &self.branch])?;
        } else {
            notes.push(format!("the branch {} was already gone", self.branch));
        }
        // The repository's directory under the worktrees root goes with its last
        // worktree (`remove_dir` refuses a directory that still holds another).
        if let Some(slug) = self.path.parent() {
            let _ = std::fs::remove_dir(slug);
        }
        Ok(notes)
    }
}

/// Every `arbor/*` worktree of the repository at `dir` (its path and branch), for
/// finding the ones no session claims (left by a crash).
pub fn list(dir: &Path) -> Result<Vec<(PathBuf, String)>, IsolationError> {
    let repo = Repo::discover(dir)?;
    let out = repo.git().run(&["worktree", "list", "--porcelain"])?;
    let mut found = Vec::new();
    let mut path = None;
    for line in out.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(PathBuf::from(p));
        } else if let Some(b) = line.strip_prefix("branch refs/heads/")
            && b.starts_with("arbor/")
            && let Some(p) = path.take()
        {
            found.push((p, b.to_string()));
        }
    }
    Ok(found)
}
