//! The per-session write lock: a `lock` file in the session directory, holding the
//! owner's pid, locked with the OS advisory lock (`File::try_lock`).
//!
//! Owns: taking and naming the owner of that lock. Does not own: what the lock guards
//! (`writer`). The OS releases the lock when the owning process dies, so a crash never
//! leaves a stale lock; the pid in the file is only for the error message. The file is
//! never deleted (unlinking a lock file races with a process about to lock it).
//!
//! Two details of advisory locks are handled here:
//! - Locks held by this process are also recorded in a process-wide set, so a second
//!   writer in the same process is refused at once and by path, not by fd semantics.
//! - A child being spawned (by any thread: the bash tool, a test) briefly holds copies
//!   of every fd between `fork` and `exec`, lock files included. A lock that looks held
//!   while the file names this process and the set says we released it is such a
//!   window: retried for up to [`FORK_WINDOW`] before reporting `Locked`.
//! - A reader asking whether the owner is alive ([`is_held`]) takes a shared lock for
//!   an instant. A writer meeting that instant retries for up to [`PROBE_WINDOW`]
//!   before reporting `Locked`.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{StoreError, io_err};

/// The lock file's name inside a session directory.
pub const LOCK_FILE: &str = "lock";

/// How long a lock that only a spawning child of this process can hold is retried.
const FORK_WINDOW: Duration = Duration::from_millis(500);

/// How long a lock held by another process is retried: a reader's liveness probe
/// ([`is_held`]) holds it for microseconds.
const PROBE_WINDOW: Duration = Duration::from_millis(50);

/// Session directories (canonical) whose lock this process holds.
static HELD: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn held() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A held session lock; dropping it (closing the file) releases the lock.
#[derive(Debug)]
pub(crate) struct SessionLock {
    key: PathBuf,
    _file: File,
}

impl SessionLock {
    /// Renames the locked session directory `from` to its sibling `to` (same parent),
    /// the lock staying held: the open lock file follows the directory, and this
    /// process's record of held locks names `to` before the rename and drops `from`
    /// after it, so no moment lets a second writer of this process in. Errors:
    /// `Locked` when this process already holds `to`; `Io` when the rename fails
    /// (nothing moved, the lock still held at `from`).
    pub(crate) fn rename_dir(
        &mut self,
        from: &Path,
        to: &Path,
        id: &str,
    ) -> Result<(), StoreError> {
        // `key` is `from` canonicalized; a sibling's canonical path differs in its
        // last component only.
        let key = match (self.key.parent(), to.file_name()) {
            (Some(parent), Some(name)) => parent.join(name),
            _ => to.to_path_buf(),
        };
        if !held().insert(key.clone()) {
            return Err(StoreError::Locked {
                id: id.to_string(),
                pid: std::process::id(),
            });
        }
        if let Err(e) = std::fs::rename(from, to) {
            held().remove(&key);
            return Err(io_err(format!("creating {}", to.display()), e));
        }
        held().remove(&self.key);
        self.key = key;
        Ok(())
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        held().remove(&self.key);
    }
}

/// Takes the lock of the session in `dir`. Another holder — another process, or another
/// writer in this process — gives `StoreError::Locked` with the pid it wrote (0 when
/// unreadable).
pub(crate) fn acquire(dir: &Path, id: &str) -> Result<SessionLock, StoreError> {
    let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let own_pid = std::process::id();
    if !held().insert(key.clone()) {
        return Err(StoreError::Locked {
            id: id.to_string(),
            pid: own_pid,
        });
    }
    match lock_file(dir, id, own_pid) {
        Ok(file) => Ok(SessionLock { key, _file: file }),
        Err(e) => {
            held().remove(&key);
            Err(e)
        }
    }
}

fn lock_file(dir: &Path, id: &str, own_pid: u32) -> Result<File, StoreError> {
    let path = dir.join(LOCK_FILE);
    // No truncation before we hold the lock: the file holds the owner's pid.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| io_err(format!("opening {}", path.display()), e))?;
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {
                let pid = read_pid(&mut file);
                let window = if pid == own_pid {
                    FORK_WINDOW
                } else {
                    PROBE_WINDOW
                };
                if started.elapsed() >= window {
                    return Err(StoreError::Locked {
                        id: id.to_string(),
                        pid,
                    });
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
                tracing::warn!(
                    "file locks unsupported for {}; writing session '{id}' unlocked",
                    path.display()
                );
                break;
            }
            Err(TryLockError::Error(e)) => {
                return Err(io_err(format!("locking {}", path.display()), e));
            }
        }
    }
    file.set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)))
        .and_then(|_| write!(file, "{own_pid}"))
        .and_then(|()| file.flush())
        .map_err(|e| io_err(format!("writing {}", path.display()), e))?;
    Ok(file)
}

/// Whether a writer holds the lock of the session in `dir` now (SPEC §7: readers
/// derive `interrupted` for an active session whose process is gone):
/// - `Some(true)`: this process holds it, or another process does (its OS lock is
///   taken; the OS drops it when that process dies, `kill -9` included);
/// - `Some(false)`: the lock file exists and nobody holds it — the writer ended or died;
/// - `None`: unknown — no lock file (a session arbor never opened, e.g. Amplifier's),
///   file locks unsupported, or the file cannot be opened.
///
/// Takes a shared lock for an instant to find out (never blocks); a writer that meets
/// it retries (see the module docs).
pub(crate) fn is_held(dir: &Path) -> Option<bool> {
    let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if held().contains(&key) {
        return Some(true);
    }
    let file = File::open(dir.join(LOCK_FILE)).ok()?;
    match file.try_lock_shared() {
        // Dropping `file` releases the probe's lock.
        Ok(()) => Some(false),
        Err(TryLockError::WouldBlock) => Some(true),
        Err(TryLockError::Error(e)) => {
            tracing::debug!("cannot probe the lock in {}: {e}", dir.display());
            None
        }
    }
}

fn read_pid(file: &mut File) -> u32 {
    let mut text = String::new();
    match file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text))
    {
        Ok(_) => text.trim().parse().unwrap_or(0),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_is_refused_with_owner_pid_until_release() {
        let dir = tempfile::tempdir().unwrap();
        let held = acquire(dir.path(), "s").unwrap();
        let pid_text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(pid_text, std::process::id().to_string());
        match acquire(dir.path(), "s") {
            Err(StoreError::Locked { id, pid }) => {
                assert_eq!(id, "s");
                assert_eq!(pid, std::process::id());
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        // The OS lock is really taken: a foreign handle cannot lock the file.
        let foreign = File::open(dir.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(foreign.try_lock(), Err(TryLockError::WouldBlock)));
        drop(foreign);
        drop(held);
        assert!(acquire(dir.path(), "s").is_ok());
    }

    #[test]
    fn a_foreign_os_lock_is_reported_with_the_pid_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        std::fs::write(&path, "4242\n").unwrap();
        let foreign = File::open(&path).unwrap();
        foreign.try_lock().unwrap();
        assert!(matches!(
            acquire(dir.path(), "s"),
            Err(StoreError::Locked { pid: 4242, .. })
        ));
        // (Re-acquiring after `drop(foreign)` is not asserted here: a child spawned by a
        // concurrent test may hold a copy of `foreign` for a moment; the pid in the file
        // is not ours, so no retry would cover that.)
        drop(foreign);
    }

    #[test]
    fn is_held_tells_a_live_writer_from_a_gone_one() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(is_held(dir.path()), None, "no lock file: unknown");
        let writer = acquire(dir.path(), "s").unwrap();
        assert_eq!(is_held(dir.path()), Some(true), "held by this process");
        drop(writer);
        assert_eq!(is_held(dir.path()), Some(false), "released");
        // Another process's lock (here: another open file) counts as held.
        let foreign = File::open(dir.path().join(LOCK_FILE)).unwrap();
        foreign.try_lock().unwrap();
        assert_eq!(is_held(dir.path()), Some(true));
        drop(foreign);
        // The probe left nothing behind: a writer takes the lock at once.
        assert!(acquire(dir.path(), "s").is_ok());
    }

    #[test]
    fn a_renamed_directory_keeps_its_lock_under_the_new_name() {
        let root = tempfile::tempdir().unwrap();
        let from = root.path().join(".creating-s");
        let to = root.path().join("s");
        std::fs::create_dir(&from).unwrap();
        let mut lock = acquire(&from, "s").unwrap();
        // A non-empty directory in the way: nothing moves, the lock stays at `from`.
        std::fs::create_dir(&to).unwrap();
        std::fs::write(to.join("x"), "1").unwrap();
        assert!(matches!(
            lock.rename_dir(&from, &to, "s"),
            Err(StoreError::Io { .. })
        ));
        assert_eq!(is_held(&from), Some(true));
        std::fs::remove_dir_all(&to).unwrap();

        lock.rename_dir(&from, &to, "s").unwrap();
        assert!(!from.exists());
        assert_eq!(is_held(&to), Some(true), "held at the new name");
        assert!(matches!(acquire(&to, "s"), Err(StoreError::Locked { .. })));
        // The OS lock is the same one: the file moved with the directory.
        let foreign = File::open(to.join(LOCK_FILE)).unwrap();
        assert!(matches!(foreign.try_lock(), Err(TryLockError::WouldBlock)));
        drop(foreign);
        drop(lock);
        assert_eq!(is_held(&to), Some(false));
        assert!(acquire(&to, "s").is_ok());
    }
}
