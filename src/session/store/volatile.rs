//! Stores whose files need not survive a crash: a worker's scratch copy of a job's
//! session, which the root's store holds durably (issue 38 item 8: the fsyncs of a
//! copy thrown away at the job's end were a third of a trivial job's time on the
//! worker).
//!
//! Owns: the process-wide set of directories marked volatile ([`mark`], removed when
//! its [`Volatile`] drops) and whether a session directory is under one
//! ([`covers`]); `SessionWriter::sync` then makes no fsync (what it wrote is in the
//! files at once, as always). Does not own: writing (`writer`), the scratch store's
//! life (`worker::scratch`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The directories marked volatile now.
static VOLATILE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn marked() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    VOLATILE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `dir` marked volatile while this lives.
#[derive(Debug)]
pub struct Volatile {
    dir: PathBuf,
}

impl Drop for Volatile {
    fn drop(&mut self) {
        marked().remove(&self.dir);
    }
}

/// Marks `dir` (a sessions directory) volatile: the sessions stored under it are
/// never fsynced, until the returned guard drops.
pub fn mark(dir: &Path) -> Volatile {
    marked().insert(dir.to_path_buf());
    Volatile {
        dir: dir.to_path_buf(),
    }
}

/// Whether `dir` is under a directory marked volatile.
pub(crate) fn covers(dir: &Path) -> bool {
    let marked = marked();
    !marked.is_empty() && dir.ancestors().any(|a| marked.contains(a))
}
