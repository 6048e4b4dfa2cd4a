//! What a worker killed mid-job (`kill -9`, a power loss) left on its machine, and
//! cleaning it at the next start.
//!
//! Owns: each worker's own directory under the workers' directory (`<worker id>/`,
//! with a `pid` file; its jobs' worktrees are inside it), and [`sweep`]: for every
//! directory whose process is gone, the scratch stores of its jobs (the project
//! directories of the Amplifier home named after paths inside it) and the directory
//! itself are removed, then the clone's worktree list is pruned. Also the worker's
//! directory in memory-backed storage ([`memory_root`], claimed like the other),
//! where its jobs' scratch stores are kept when there is one: a scratch store is made
//! and removed per job, and on a disk file system every file it makes and removes costs
//! an inode allocation (on an ext4 without journal, a search past every inode deleted
//! in the last 60–300 s: most of a trivial remote job's time); [`sweep_memory`] removes
//! what dead workers left there. Does not own: a job's own cleanup when it ends
//! normally (`files`, `scratch`).

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
    let removed = remove_dead(root, |dir| remove_stores(paths, dir));
    if removed > 0 {
        if let Err(e) = Git::at(repo).run(&["worktree", "prune"]) {
            tracing::debug!("worker: git worktree prune: {e}");
        }
        tracing::info!("worker: removed what {removed} stopped worker(s) left");
    }
    removed
}

/// Removes the directories under `root` (the memory-backed workers' directory,
/// [`memory_root`]) whose worker is gone, with the scratch stores inside. Returns how
/// many; failures are logged and skipped.
pub fn sweep_memory(root: &Path) -> usize {
    remove_dead(root, |_| {})
}

/// Removes each directory under `root` whose worker is gone (not [`alive`]), after
/// `first(dir)`. Returns how many went; failures are logged and skipped.
fn remove_dead(root: &Path, mut first: impl FnMut(&Path)) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let dir = entry.path();
        if !dir.is_dir() || alive(&dir) {
            continue;
        }
        first(&dir);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => removed += 1,
            Err(e) => tracing::warn!("worker: removing {}: {e}", dir.display()),
        }
    }
    removed
}

/// Where workers keep their jobs' scratch stores in memory-backed storage:
/// `$XDG_RUNTIME_DIR/arbor/workers` when the runtime directory is set (absolute, a
/// directory), else `/dev/shm/arbor-<uid>/workers`. The `arbor` directory is made
/// private (0700); `None` — the stores stay in the Amplifier home — when neither
/// exists, it cannot be made, or it is not this user's alone (another user made it
/// first, or opened it to others).
pub fn memory_root() -> Option<PathBuf> {
    let run_dir = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute() && dir.is_dir());
    memory_root_in(run_dir, Path::new("/dev/shm"))
}

#[cfg(unix)]
fn memory_root_in(run_dir: Option<PathBuf>, shm: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let uid = nix::unistd::geteuid();
    let base = match run_dir {
        Some(dir) => dir.join("arbor"),
        None if shm.is_dir() => shm.join(format!("arbor-{uid}")),
        None => return None,
    };
    if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&base)
        && e.kind() != std::io::ErrorKind::AlreadyExists
    {
        tracing::debug!("worker: cannot make {}: {e}", base.display());
        return None;
    }
    let meta = std::fs::symlink_metadata(&base).ok()?;
    if !meta.is_dir() || meta.uid() != uid.as_raw() || meta.mode() & 0o077 != 0 {
        tracing::warn!(
            "worker: {} is not this user's alone; scratch stores stay in the Amplifier home",
            base.display()
        );
        return None;
    }
    let root = base.join("workers");
    std::fs::create_dir_all(&root).ok()?;
    Some(root)
}

#[cfg(not(unix))]
fn memory_root_in(_runtime: Option<PathBuf>, _shm: &Path) -> Option<PathBuf> {
    None
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

    #[cfg(unix)]
    #[test]
    fn the_memory_root_is_private_to_this_user_and_dead_workers_stores_go() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let run_dir = tmp.path().join("run");
        std::fs::create_dir_all(&run_dir).unwrap();
        let root = memory_root_in(Some(run_dir.clone()), Path::new("/nonexistent")).unwrap();
        assert_eq!(root, run_dir.join("arbor").join("workers"));
        let mode = std::fs::metadata(run_dir.join("arbor"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        // Without a run_dir directory: /dev/shm's own (here a stand-in).
        let shm = tmp.path().join("shm");
        std::fs::create_dir_all(&shm).unwrap();
        let uid = nix::unistd::geteuid();
        assert_eq!(
            memory_root_in(None, &shm),
            Some(shm.join(format!("arbor-{uid}")).join("workers"))
        );
        assert_eq!(memory_root_in(None, &tmp.path().join("none")), None);
        // Opened to others (or made by someone else first): not used.
        let open = tmp.path().join("open");
        std::fs::create_dir_all(open.join("arbor")).unwrap();
        std::fs::set_permissions(open.join("arbor"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        assert_eq!(memory_root_in(Some(open), Path::new("/nonexistent")), None);

        let mine = claim(&root, "w-00000001").unwrap();
        std::fs::create_dir_all(mine.dir.join("projects/-job/sessions")).unwrap();
        let dead = root.join("w-00000002");
        std::fs::create_dir_all(dead.join("projects/-job/sessions/s")).unwrap();
        std::fs::write(dead.join(PID_FILE), "2147483000").unwrap();
        assert_eq!(sweep_memory(&root), 1);
        assert!(!dead.exists());
        assert!(mine.dir.join("projects").exists(), "a live worker's stay");
    }
}
