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
                if pid != own_pid || started.elapsed() >= FORK_WINDOW {
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
}
