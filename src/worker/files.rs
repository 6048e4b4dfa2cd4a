//! A job's files on the worker (issue 27 scope 5): a detached worktree of the job's
//! base commit, cut from the worker's clone of the repository, and the patch of what
//! the sub-session changed there.
//!
//! Owns: checking that the clone has the commit ([`JobTree::cut`]: "worker's clone at
//! <repo> lacks commit <c>; fetch it"), the worktree under the job's scratch
//! directory, the patch (`git add -A` then `git diff --binary --cached <base>`:
//! staged, new files included) and removing the worktree ([`JobTree::remove`], also on
//! drop). Does not own: the git CLI wrapper (`isolation::git`), what the root does with
//! the patch (`engine::remote`).

use std::path::{Path, PathBuf};

use crate::isolation::git::Git;
use crate::isolation::{IsolationError, Repo};

/// Why a job's files could not be set up or read.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// `--repo` is not a git repository.
    #[error("worker's repository {} is not a git clone (start the worker with --repo <clone of {repo_name}>)", path.display())]
    NotARepo { path: PathBuf, repo_name: String },
    /// The clone lacks the job's base commit.
    #[error("worker's clone at {} lacks commit {commit}; fetch it", repo.display())]
    MissingCommit { repo: PathBuf, commit: String },
    /// The job's working directory is not inside its worktree.
    #[error("the job's working directory '{0}' leaves the repository")]
    BadRelativeDir(String),
    /// A git step failed.
    #[error(transparent)]
    Git(#[from] IsolationError),
}

/// Why the clone at `repo` cannot serve a job based on `commit` of the root's
/// repository `repo_name` ([`FilesError::NotARepo`], [`FilesError::MissingCommit`], a
/// failing git, as text); `None` when it has the commit.
pub fn cannot_serve(repo: &Path, commit: &str, repo_name: &str) -> Option<String> {
    let top = match Repo::discover(repo) {
        Ok(found) => found.top,
        Err(IsolationError::NotARepo { .. }) => {
            return Some(
                FilesError::NotARepo {
                    path: repo.to_path_buf(),
                    repo_name: repo_name.to_string(),
                }
                .to_string(),
            );
        }
        Err(e) => return Some(e.to_string()),
    };
    match Git::at(&top).commit_of(commit) {
        Ok(Some(_)) if is_hex(commit) => None,
        Ok(_) => Some(
            FilesError::MissingCommit {
                repo: top,
                commit: commit.to_string(),
            }
            .to_string(),
        ),
        Err(e) => Some(e.to_string()),
    }
}

/// A detached worktree of a job's base commit, removed on drop.
#[derive(Debug)]
pub struct JobTree {
    repo: PathBuf,
    /// The worktree's top level.
    pub top: PathBuf,
    /// The commit it was cut at.
    pub base: String,
    removed: bool,
}

impl JobTree {
    /// Cuts a detached worktree of `commit` from the clone at `repo` at `dest` (which
    /// must not exist). `repo_name` is the root's repository name, said in errors.
    ///
    /// Errors: [`FilesError::NotARepo`], [`FilesError::MissingCommit`] (the clone has no
    /// such commit: fetch it), [`FilesError::Git`] when `git worktree add` fails.
    pub fn cut(
        repo: &Path,
        commit: &str,
        dest: &Path,
        repo_name: &str,
    ) -> Result<Self, FilesError> {
        let top = match Repo::discover(repo) {
            Ok(found) => found.top,
            Err(IsolationError::NotARepo { .. }) => {
                return Err(FilesError::NotARepo {
                    path: repo.to_path_buf(),
                    repo_name: repo_name.to_string(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let git = Git::at(&top);
        let full = match git.commit_of(commit)? {
            Some(full) if is_hex(commit) => full,
            _ => {
                return Err(FilesError::MissingCommit {
                    repo: top,
                    commit: commit.to_string(),
                });
            }
        };
        let shown = dest.display().to_string();
        git.run(&["worktree", "add", "--quiet", "--detach", &shown, &full])?;
        let top_of_tree = std::fs::canonicalize(dest).unwrap_or_else(|_| dest.to_path_buf());
        Ok(Self {
            repo: top,
            top: top_of_tree,
            base: full,
            removed: false,
        })
    }

    /// The sub-session's working directory: `relative` (`/`-separated, `""` = the top)
    /// under the worktree, created when missing.
    ///
    /// Errors: [`FilesError::BadRelativeDir`] for an absolute path or one with `..`.
    pub fn working_dir(&self, relative: &str) -> Result<PathBuf, FilesError> {
        let rel = Path::new(relative);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(FilesError::BadRelativeDir(relative.to_string()));
        }
        let dir = self.top.join(rel);
        std::fs::create_dir_all(&dir).map_err(|source| IsolationError::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(dir)
    }

    /// What the sub-session changed against the base commit, as one patch: every file
    /// staged (new, changed, deleted; ignored ones not) and `git diff --binary --cached
    /// <base>` (commits the session made included); empty when nothing changed.
    ///
    /// Errors: a git step failed.
    pub fn patch(&self) -> Result<String, FilesError> {
        patch_at(&self.top, &self.base)
    }

    /// Removes the worktree (and prunes its entry). Failures are logged.
    pub fn remove(&mut self) {
        if self.removed {
            return;
        }
        self.removed = true;
        let git = Git::at(&self.repo);
        let shown = self.top.display().to_string();
        if let Err(e) = git.run(&["worktree", "remove", "--force", "--force", &shown]) {
            tracing::warn!("worker: removing the job's worktree: {e}");
            let _ = std::fs::remove_dir_all(&self.top);
            let _ = git.run(&["worktree", "prune"]);
        }
    }
}

impl Drop for JobTree {
    fn drop(&mut self) {
        self.remove();
    }
}

/// [`JobTree::patch`] of the worktree at `top` against `base` (for a blocking thread,
/// which cannot borrow the tree).
///
/// Errors: a git step failed.
pub fn patch_at(top: &Path, base: &str) -> Result<String, FilesError> {
    let git = Git::at(top);
    git.run(&["add", "-A"])?;
    let out = git.output(&["diff", "--binary", "--cached", "--no-color", base])?;
    if !out.status.success() {
        return Err(git.failed(&["diff", "--binary", "--cached"], &out).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `s` is a (possibly abbreviated) hex commit id: a job names a commit, never
/// a branch or an expression git would resolve on the worker's side.
fn is_hex(s: &str) -> bool {
    (4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, PathBuf, String) {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("clone");
        std::fs::create_dir_all(&repo).unwrap();
        let git = Git::at(&repo);
        git.run(&["init", "--quiet"]).unwrap();
        std::fs::write(repo.join("a.txt"), "one\n").unwrap();
        git.run(&["add", "-A"]).unwrap();
        git.run(&["commit", "--quiet", "-m", "first"]).unwrap();
        let head = git.commit_of("HEAD").unwrap().unwrap();
        (dir, repo, head)
    }

    #[test]
    fn a_worktree_of_the_base_returns_its_changes_as_a_patch_and_goes_away() {
        let (dir, repo, head) = repo();
        let dest = dir.path().join("job").join("work");
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let mut tree = JobTree::cut(&repo, &head, &dest, "proj").unwrap();
        assert_eq!(tree.patch().unwrap(), "", "nothing changed yet");
        let work = tree.working_dir("sub/dir").unwrap();
        std::fs::write(work.join("new.txt"), "fresh\n").unwrap();
        std::fs::write(tree.top.join("a.txt"), "two\n").unwrap();
        let patch = tree.patch().unwrap();
        assert!(patch.contains("sub/dir/new.txt"), "{patch}");
        assert!(patch.contains("-one") && patch.contains("+two"), "{patch}");
        // The patch applies to the base in the clone.
        std::fs::write(dir.path().join("p.diff"), &patch).unwrap();
        let p = dir.path().join("p.diff").display().to_string();
        Git::at(&repo).run(&["apply", "--check", &p]).unwrap();
        tree.remove();
        assert!(!dest.exists());
        let list = Git::at(&repo).run(&["worktree", "list"]).unwrap();
        assert_eq!(list.lines().count(), 1, "{list}");
    }

    #[test]
    fn a_missing_commit_or_a_bad_directory_is_a_clear_error() {
        let (dir, repo, _) = repo();
        let missing = "0123456789abcdef0123456789abcdef01234567";
        let e = JobTree::cut(&repo, missing, &dir.path().join("w"), "proj").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "worker's clone at {} lacks commit {missing}; fetch it",
                std::fs::canonicalize(&repo).unwrap().display()
            )
        );
        let e = JobTree::cut(&repo, "HEAD", &dir.path().join("w"), "proj").unwrap_err();
        assert!(matches!(e, FilesError::MissingCommit { .. }), "{e}");
        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        let e = JobTree::cut(&plain, missing, &dir.path().join("w"), "proj").unwrap_err();
        assert!(e.to_string().contains("--repo <clone of proj>"), "{e}");
        let (_d2, repo2, head2) = self::repo();
        let tree = JobTree::cut(&repo2, &head2, &dir.path().join("w2"), "proj").unwrap();
        assert!(tree.working_dir("../out").is_err());
        assert!(tree.working_dir("/abs").is_err());
    }
}
