//! Worktrees a crash left behind (issue 25 item 2): found under arbor's worktree
//! directory and removed on request (`arbor session cleanup`).
//!
//! Each worktree is claimed by a marker beside it, `<short id>.session`, holding the
//! directory of the session it belongs to ([`claim`], written right after the
//! worktree is made and before the session is registered). A worktree is left over
//! when its marker is missing, its session directory is gone, or that session's
//! metadata does not record it as active (a crash between creating it and storing
//! the session). Owns: finding and removing those. Does not own: the worktrees of
//! live sessions (`worktree`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::git::Git;
use super::{IsolationError, Repo};

/// A worktree no session claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The worktree directory.
    pub path: PathBuf,
    /// Its branch (`arbor/<short id>`), when git still knows it.
    pub branch: Option<String>,
}

fn marker(worktree: &Path) -> PathBuf {
    worktree.with_extension("session")
}

/// Marks `worktree` as belonging to the session stored in `session_dir`.
pub fn claim(worktree: &Path, session_dir: &Path) -> Result<(), IsolationError> {
    let path = marker(worktree);
    std::fs::write(&path, session_dir.display().to_string())
        .map_err(|source| IsolationError::Io { path, source })
}

/// Removes `worktree`'s marker once the worktree is gone with its session's record
/// saying so (merged): nothing is left to claim. A missing marker is fine.
pub fn release(worktree: &Path) -> Result<(), IsolationError> {
    let path = marker(worktree);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(IsolationError::Io { path, source }),
    }
}

/// Whether the session named by `worktree`'s marker records it as active.
fn claimed(worktree: &Path) -> bool {
    let Ok(dir) = std::fs::read_to_string(marker(worktree)) else {
        return false;
    };
    let Ok(text) = std::fs::read_to_string(Path::new(dir.trim()).join("metadata.json")) else {
        return false;
    };
    let Ok(meta) = serde_json::from_str::<Value>(&text) else {
        // Unreadable now (mid-write): never remove what may be in use.
        return true;
    };
    let record = &meta["worktree"];
    let canonical = std::fs::canonicalize(worktree).unwrap_or(worktree.to_path_buf());
    record["state"] == "active" && record["path"].as_str().map(PathBuf::from) == Some(canonical)
}

/// The worktrees under `root` (arbor's worktree directory: `<repo slug>/<short id>`)
/// no session claims.
pub fn find(root: &Path) -> Vec<Leftover> {
    let mut found = Vec::new();
    let Ok(repos) = std::fs::read_dir(root) else {
        return found;
    };
    for repo in repos.flatten().filter(|e| e.path().is_dir()) {
        let Ok(entries) = std::fs::read_dir(repo.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_dir() || claimed(&path) {
                continue;
            }
            let branch = Git::at(&path)
                .run(&["symbolic-ref", "--quiet", "--short", "HEAD"])
                .ok()
                .filter(|b| b.starts_with("arbor/"));
            found.push(Leftover { path, branch });
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// Removes a left-over worktree, its branch and its marker. A directory git no longer
/// knows as a worktree is removed as a plain directory.
pub fn remove(leftover: &Leftover) -> Result<(), IsolationError> {
    let io = |source| IsolationError::Io {
        path: leftover.path.clone(),
        source,
    };
    match Repo::discover(&leftover.path) {
        Ok(repo) if repo.git_dir != repo.common_dir => {
            let main = repo
                .common_dir
                .parent()
                .unwrap_or(&repo.common_dir)
                .to_path_buf();
            let git = Git::at(&main);
            let shown = leftover.path.display().to_string();
            git.run(&["worktree", "remove", "--force", "--force", &shown])?;
            if let Some(branch) = &leftover.branch {
                git.run(&["branch", "--quiet", "-D", branch])?;
            }
        }
        _ => std::fs::remove_dir_all(&leftover.path).map_err(io)?,
    }
    match std::fs::remove_file(marker(&leftover.path)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
        _ => Ok(()),
    }
}
