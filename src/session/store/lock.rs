//! The per-session write lock: a `lock` file in the session directory, holding the
//! owner's pid, locked with the OS advisory lock (`File::try_lock`).
//!
//! Owns: taking and naming the owner of that lock. Does not own: what the lock guards
//! (`writer`). The OS releases the lock when the owning process dies, so a crash never
//! leaves a stale lock; the pid in the file is only for the error message. The file is
//! never deleted (unlinking a lock file races with a process about to lock it).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::Path;

use super::{StoreError, io_err};

/// The lock file's name inside a session directory.
pub const LOCK_FILE: &str = "lock";

/// A held session lock; dropping it (closing the file) releases the lock.
#[derive(Debug)]
pub(crate) struct SessionLock {
    _file: File,
}

/// Takes the lock of the session in `dir`. Another holder — another process, or another
/// open handle in this process — gives `StoreError::Locked` with the pid it wrote
/// (0 when unreadable).
pub(crate) fn acquire(dir: &Path, id: &str) -> Result<SessionLock, StoreError> {
    let path = dir.join(LOCK_FILE);
    // No truncation before we hold the lock: the file holds the owner's pid.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| io_err(format!("opening {}", path.display()), e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(StoreError::Locked {
                id: id.to_string(),
                pid: read_pid(&mut file),
            });
        }
        Err(TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
            tracing::warn!(
                "file locks unsupported for {}; writing session '{id}' unlocked",
                path.display()
            );
        }
        Err(TryLockError::Error(e)) => {
            return Err(io_err(format!("locking {}", path.display()), e));
        }
    }
    file.set_len(0)
        .and_then(|()| write!(file, "{}", std::process::id()))
        .and_then(|()| file.flush())
        .map_err(|e| io_err(format!("writing {}", path.display()), e))?;
    Ok(SessionLock { _file: file })
}

fn read_pid(file: &mut File) -> u32 {
    let mut text = String::new();
    match file.read_to_string(&mut text) {
        Ok(_) => text.trim().parse().unwrap_or(0),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_handle_is_refused_with_owner_pid_until_release() {
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
        // A foreign handle using the same OS lock sees it held too.
        let foreign = File::open(dir.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(foreign.try_lock(), Err(TryLockError::WouldBlock)));
        drop(held);
        assert!(foreign.try_lock().is_ok());
        drop(foreign);
        assert!(acquire(dir.path(), "s").is_ok());
    }
}
