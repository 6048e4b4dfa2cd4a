//! The directories a worker's jobs run in, kept for the next job instead of made and
//! removed per job.
//!
//! Owns: [`JobDirs`], a pool of `job-<n>/` directories under the worker's own
//! directory. [`JobDirs::take`] hands out a free one (or makes the next), and its
//! [`JobDir`] guard, dropped at the job's end, empties it: whatever the job left
//! (a worktree's directory, `wip.index`, any file) is removed, and `work/` and
//! `scratch/` are kept, emptied, for the next job. A directory that cannot be
//! emptied is removed and not handed out again. Why: on a disk file system every
//! directory made and removed costs an inode allocation, and on an ext4 without a
//! journal each allocation searches past every inode deleted in the last 60 s (300 s
//! while its table block is dirty) — three directories per trivial job, paid again by
//! every file the root and the other jobs create on the same disk (issue 38 item 8).
//! Does not own: what a job puts in its directory (`job`, `files`, `scratch`), a dead
//! worker's leftovers (`leftover`, which removes the worker's whole directory).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The entries of a job's directory kept (emptied) between jobs.
const KEPT: [&str; 2] = ["work", "scratch"];

/// The pool of one worker's job directories, all directly under `root`.
#[derive(Debug)]
pub(crate) struct JobDirs {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    /// Emptied directories, ready for a job.
    free: Mutex<Vec<PathBuf>>,
    /// The number of the next directory made.
    next: AtomicU64,
}

/// A job's directory, emptied and returned to its pool when dropped.
#[derive(Debug)]
pub(crate) struct JobDir {
    path: PathBuf,
    pool: Arc<Inner>,
}

impl JobDirs {
    /// A pool of directories under `root` (made on the first [`take`](Self::take)).
    pub(crate) fn new(root: PathBuf) -> Self {
        Self {
            inner: Arc::new(Inner {
                root,
                free: Mutex::new(Vec::new()),
                next: AtomicU64::new(1),
            }),
        }
    }

    /// An empty directory for one job: a free one of the pool, or `<root>/job-<n>`
    /// made now (`root` included when missing).
    ///
    /// Errors: the directory cannot be made.
    pub(crate) fn take(&self) -> io::Result<JobDir> {
        let pool = self.inner.clone();
        let free = lock(&pool.free).pop();
        if let Some(path) = free {
            return Ok(JobDir { path, pool });
        }
        std::fs::create_dir_all(&pool.root)?;
        loop {
            let n = pool.next.fetch_add(1, Ordering::Relaxed);
            let path = pool.root.join(format!("job-{n}"));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(JobDir { path, pool }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// How many emptied directories wait for a job.
    #[cfg(test)]
    fn free(&self) -> usize {
        lock(&self.inner.free).len()
    }
}

impl JobDir {
    /// The directory (absolute when the pool's root is).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for JobDir {
    fn drop(&mut self) {
        match empty(&self.path) {
            Ok(()) => lock(&self.pool.free).push(std::mem::take(&mut self.path)),
            Err(e) => {
                tracing::warn!(
                    "worker: cannot empty the job directory {}: {e}; removing it",
                    self.path.display()
                );
                if let Err(e) = std::fs::remove_dir_all(&self.path)
                    && e.kind() != io::ErrorKind::NotFound
                {
                    tracing::warn!("worker: removing {}: {e}", self.path.display());
                }
            }
        }
    }
}

/// The free list, also after a panic while it was held (it is a plain list).
fn lock(free: &Mutex<Vec<PathBuf>>) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
    free.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes everything in `dir` but the [`KEPT`] directories, and everything in those.
/// Nothing is followed through a link: a link is removed as a file.
fn empty(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        let kept = kind.is_dir() && KEPT.iter().any(|k| entry.file_name() == *k);
        if kept {
            for inner in std::fs::read_dir(&path)? {
                let inner = inner?;
                remove(&inner.path(), inner.file_type()?.is_dir())?;
            }
        } else {
            remove(&path, kind.is_dir())?;
        }
    }
    Ok(())
}

/// Removes the file or link `path`, or the directory `path` with its contents.
fn remove(path: &Path, dir: bool) -> io::Result<()> {
    if dir {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_directory_comes_back_empty_with_work_and_scratch_kept() {
        let root = tempfile::tempdir().unwrap();
        let dirs = JobDirs::new(root.path().join("w-1"));
        let first = dirs.take().unwrap();
        let path = first.path().to_path_buf();
        assert_eq!(path, root.path().join("w-1/job-1"));
        let (work, scratch) = (path.join("work"), path.join("scratch"));
        std::fs::create_dir_all(work.join("src/deep")).unwrap();
        std::fs::write(work.join("src/deep/a.rs"), "fn main() {}").unwrap();
        std::fs::write(work.join(".hidden"), "x").unwrap();
        std::fs::create_dir_all(&scratch).unwrap();
        std::fs::write(scratch.join("notes"), "x").unwrap();
        std::fs::write(path.join("wip.index"), "x").unwrap();
        std::fs::create_dir_all(path.join("other/inner")).unwrap();
        #[cfg(unix)]
        {
            // A link is removed, never followed: what it points at stays.
            let outside = root.path().join("outside");
            std::fs::create_dir_all(&outside).unwrap();
            std::fs::write(outside.join("keep"), "x").unwrap();
            std::os::unix::fs::symlink(&outside, work.join("link")).unwrap();
            std::os::unix::fs::symlink(&outside, path.join("link")).unwrap();
        }
        drop(first);
        assert_eq!(dirs.free(), 1);
        let mut left: Vec<_> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["scratch", "work"]);
        assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
        assert!(root.path().join("outside/keep").exists());
        // The next job gets the same, emptied directory; one running beside it a new one.
        let again = dirs.take().unwrap();
        assert_eq!(again.path(), path);
        let beside = dirs.take().unwrap();
        assert_eq!(beside.path(), root.path().join("w-1/job-2"));
    }

    #[test]
    fn a_directory_that_cannot_be_emptied_is_removed_and_not_handed_out() {
        let root = tempfile::tempdir().unwrap();
        let dirs = JobDirs::new(root.path().to_path_buf());
        let dir = dirs.take().unwrap();
        let path = dir.path().to_path_buf();
        // Gone under the pool's feet: it cannot be read, so it is not reused.
        std::fs::remove_dir_all(&path).unwrap();
        drop(dir);
        assert_eq!(dirs.free(), 0);
        let next = dirs.take().unwrap();
        assert_ne!(next.path(), path);
        assert!(next.path().is_dir());
    }

    #[test]
    fn a_name_already_taken_is_skipped() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("job-1")).unwrap();
        std::fs::write(root.path().join("job-1/theirs"), "x").unwrap();
        let dirs = JobDirs::new(root.path().to_path_buf());
        let dir = dirs.take().unwrap();
        assert_eq!(dir.path(), root.path().join("job-2"));
        assert!(root.path().join("job-1/theirs").exists());
    }
}
