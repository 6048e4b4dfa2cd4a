//! What a worker killed mid-job (`kill -9`, a power loss) left on its machine, and
//! cleaning it at the next start.
//!
//! Owns: each worker's own directory under the workers' directory (`<worker id>/`,
//! with a `pid` file; its jobs' worktrees are inside it), and [`sweep`]: for every
//! directory whose process is gone, the scratch stores of its jobs (the project
//! directories of the Amplifier home named after paths inside it) and the directory
//! itself are removed, then the clone's worktree list is pruned. Does not own: a
//! job's own cleanup when it ends normally (`files`, `scratch`).

use std::path::{Path, PathBuf};

use crate::isolation::git::Git;
use crate::paths::{Paths, project_slug};

/// The file in a worker's directory holding its process id.
const PID_FILE: &str = "pid";

/// A worker's own directory, removed (with whatever is left in it) when dropped.
#[derive(Debug)]
pub struct Claimed {
    /// `<root>/<worker id>`.
    pub dir: PathBuf,
}

impl Drop for Claimed {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("worker: removing {}: {e}", self.dir.display());
        }
    }
}

/// Creates this worker's directory `<root>/<worker>` with its `pid` file.
///
/// Errors: the directory or file cannot be written.
pub fn claim(root: &Path, worker: &str) -> std::io::Result<Claimed> {
    let dir = root.join(worker);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(PID_FILE), std::process::id().to_string())?;
    Ok(Claimed { dir })
}

/// Removes what dead workers left under `root` (see the module doc); `repo` is the
/// clone whose worktree list is pruned afterwards. Returns how many workers' leftovers
/// were removed; failures are logged and skipped.
pub fn sweep(root: &Path, paths: &Paths, repo: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let dir = entry.path();
        if !dir.is_dir() || alive(&dir) {
            continue;
        }
        remove_stores(paths, &dir);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => removed += 1,
            Err(e) => tracing::warn!("worker: removing {}: {e}", dir.display()),
        }
    }
    if removed > 0 {
        if let Err(e) = Git::at(repo).run(&["worktree", "prune"]) {
            tracing::debug!("worker: git worktree prune: {e}");
        }
        tracing::info!("worker: removed what {removed} stopped worker(s) left");
    }
    removed
}

/// Whether the worker that owns `dir` still runs: its `pid` file names a live process.
/// A directory without a readable pid is taken as dead.
fn alive(dir: &Path) -> bool {
    let Some(pid) = std::fs::read_to_string(dir.join(PID_FILE))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
    else {
        return false;
    };
    if u32::try_from(pid).ok() == Some(std::process::id()) {
        return true;
    }
    process_exists(pid)
}

#[cfg(unix)]
fn process_exists(pid: i32) -> bool {
    use nix::errno::Errno;
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(Errno::ESRCH) => false,
        // EPERM: a process of another user has that pid now — not ours, but alive;
        // leave its directory alone.
        Err(_) => true,
    }
}

#[cfg(not(unix))]
fn process_exists(_pid: i32) -> bool {
    true
}

/// Removes the project directories of the Amplifier home whose slug names a path
/// inside `dir` (the scratch stores of its jobs).
fn remove_stores(paths: &Paths, dir: &Path) {
    let prefix = format!("{}-", project_slug(dir));
    let Ok(projects) = std::fs::read_dir(paths.projects_dir()) else {
        return;
    };
    for project in projects.flatten() {
        let name = project.file_name().to_string_lossy().to_string();
        if name.starts_with(&prefix)
            && let Err(e) = std::fs::remove_dir_all(project.path())
        {
            tracing::warn!("worker: removing {}: {e}", project.path().display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_workers_directory_and_stores_go_and_a_live_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("workers");
        let paths = Paths::from_env_map(
            &|k| (k == "AMPLIFIER_HOME").then(|| tmp.path().join("amp").display().to_string()),
            tmp.path().to_path_buf(),
        );
        let mine = claim(&root, "w-00000001").unwrap();
        let dead = root.join("w-00000002");
        std::fs::create_dir_all(dead.join("job-x/work")).unwrap();
        // A pid no process has (above the kernel's maximum).
        std::fs::write(dead.join(PID_FILE), "2147483000").unwrap();
        let dead_store = paths.sessions_dir_for(&dead.join("job-x/work"));
        let mine_store = paths.sessions_dir_for(&mine.dir.join("job-y/work"));
        std::fs::create_dir_all(&dead_store).unwrap();
        std::fs::create_dir_all(&mine_store).unwrap();
        assert_eq!(sweep(&root, &paths, tmp.path()), 1);
        assert!(!dead.exists());
        assert!(!dead_store.exists());
        assert!(mine.dir.exists() && mine_store.exists());
        let own = mine.dir.clone();
        drop(mine);
        assert!(!own.exists(), "a worker's directory goes when it stops");
    }
}
