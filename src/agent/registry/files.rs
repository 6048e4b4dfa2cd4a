//! A directory of agent files for the registry: listing its `*.md` files, reading and
//! parsing them on every core, and reusing the previous build's parse of a file whose
//! stamp is unchanged.
//!
//! Which files (`config::agent_files::list`, the listing trust covers) and how one
//! is read (`config::project_file`) are not decided here.
//!
//! Owns: [`ParseCache`] (file → stamp and parsed [`AgentDef`]), the stamp rule (size,
//! mtime and, on Unix, inode; a stamp too close to the moment it was read is not
//! trusted), reading a file with the fewest system calls (the stamp comes from the
//! open file), and the parallel map (a shared counter, so a core the scheduler holds
//! back does not hold up the build). Does not own: parsing one file (`agent::file`),
//! tiers, shadowing and trust (`agent::registry`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use crate::agent::file;
use crate::agent::{AgentDef, AgentSource};
use crate::config::agent_files;
use crate::config::project_file::{self, Confinement};

/// Bytes of one agent file read at most; a larger file is an invalid agent.
pub const MAX_AGENT_BYTES: u64 = 4 << 20;

/// Below this many files to parse, the calling thread parses them alone (spawning a
/// thread costs more than a few parses).
const PARALLEL_FROM: usize = 16;

/// How long before the moment it was read a file's mtime must lie for its stamp to be
/// trusted. File systems stamp files from a coarse clock (a kernel tick on Linux,
/// 2 s on FAT), so a file rewritten with the same size within one tick of being read
/// keeps its stamp; such an entry is parsed again on the next build (git's "racily
/// clean" rule).
const RACY: Duration = Duration::from_secs(2);

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    /// The inode: a file replaced by rename (write-temp-then-rename, `mv`) with the
    /// same size and an old mtime still differs.
    inode: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        }
    }

    /// Whether a parse made at `read_at` can stand for this version of the file.
    fn settled(&self, read_at: SystemTime) -> bool {
        self.modified
            .and_then(|m| read_at.duration_since(m).ok())
            .is_some_and(|age| age >= RACY)
    }
}

#[derive(Debug, Clone)]
struct Entry {
    stamp: Stamp,
    read_at: SystemTime,
    def: AgentDef,
}

/// Parsed agent files kept from one registry build to the next (the watcher keeps one
/// across reloads), so a reload parses only the files that changed. Keyed by tier and
/// path; a build drops the entries of files it no longer sees.
#[derive(Debug, Clone, Default)]
pub struct ParseCache {
    entries: HashMap<(AgentSource, PathBuf), Entry>,
    /// Entries carried over from the previous build, emptied as they are reused.
    previous: HashMap<(AgentSource, PathBuf), Entry>,
    parsed: usize,
}

impl ParseCache {
    /// How many files the last build parsed (the rest were reused).
    pub fn parsed(&self) -> usize {
        self.parsed
    }

    /// How many files the cache holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache holds no file.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Starts a build: entries of the previous one become reusable, unseen ones drop at
    /// [`ParseCache::finish`].
    pub(super) fn begin(&mut self) {
        self.previous = std::mem::take(&mut self.entries);
        self.parsed = 0;
    }

    /// Ends a build, dropping entries of files it did not see.
    pub(super) fn finish(&mut self) {
        self.previous.clear();
    }
}

/// The agent files of `dir` (`config::agent_files::list`, the listing trust covers:
/// `*.md` in any case, capped), with a warning naming how many beyond the cap are
/// not loaded.
fn list(dir: &Path) -> Vec<PathBuf> {
    let listed = agent_files::list(dir);
    if listed.beyond_cap > 0 {
        tracing::warn!(
            "{}: {} agent files beyond the first {} are not loaded",
            dir.display(),
            listed.beyond_cap,
            agent_files::MAX_AGENT_FILES
        );
    }
    listed.files
}

/// The agent files of `dir` (see [`load_dir`]), paths only.
pub(super) fn agent_files_in(dir: &Path) -> Vec<PathBuf> {
    list(dir)
}

/// A file parsed by this build (`None` in its place: the previous build's parse,
/// still in the cache, stands).
struct Parsed {
    /// The version read; `None` when it could not be read (not cached, so the next
    /// build tries again).
    stamp: Option<Stamp>,
    def: AgentDef,
}

/// Every agent file in `dir` as `source`, sorted by file name, each read under
/// `within` (`config::project_file`: a project's files only inside the project,
/// never a private path, regular files only, at most [`MAX_AGENT_BYTES`]; a refused
/// file is an invalid agent saying why); with a cache, files whose stamp is unchanged
/// since it last parsed them are reused and the rest are parsed and remembered.
/// Checking, reading and parsing run on all cores when there are many files.
pub(super) fn load_dir(
    dir: &Path,
    source: AgentSource,
    within: &Confinement,
    mut cache: Option<&mut ParseCache>,
) -> Vec<AgentDef> {
    let read_at = SystemTime::now();
    let files = list(dir);
    let mut previous = cache
        .as_deref_mut()
        .map(|c| std::mem::take(&mut c.previous))
        .unwrap_or_default();
    let loaded = parallel_map(&files, |path| load(path, source, within, &previous));
    let mut out = Vec::with_capacity(files.len());
    let mut parsed = 0;
    for (path, got) in files.into_iter().zip(loaded) {
        let key = (source, path);
        match got {
            None => {
                // `load` saw the entry; it is still there (nothing removed it since).
                if let Some(entry) = previous.remove(&key) {
                    out.push(entry.def.clone());
                    if let Some(c) = cache.as_deref_mut() {
                        c.entries.insert(key, entry);
                    }
                }
            }
            Some(Parsed { stamp, def }) => {
                parsed += 1;
                previous.remove(&key);
                if let (Some(c), Some(stamp)) = (cache.as_deref_mut(), stamp) {
                    let entry = Entry {
                        stamp,
                        read_at,
                        def: def.clone(),
                    };
                    c.entries.insert(key, entry);
                }
                out.push(def);
            }
        }
    }
    if let Some(c) = cache {
        c.parsed += parsed;
        // Entries of the other tier (and of files gone) wait for their own `load_dir`
        // or for `finish`.
        c.previous = previous;
    }
    out
}

/// One file: `None` when `previous` parsed this version of it (same stamp, read long
/// enough after its last change), else read and parsed.
fn load(
    path: &Path,
    source: AgentSource,
    within: &Confinement,
    previous: &HashMap<(AgentSource, PathBuf), Entry>,
) -> Option<Parsed> {
    if let Some(entry) = previous.get(&(source, path.to_path_buf()))
        && entry.stamp.settled(entry.read_at)
        && std::fs::metadata(path).is_ok_and(|m| Stamp::of(&m) == entry.stamp)
    {
        return None;
    }
    let (read, stamp) = match read_stamped(path, within) {
        Ok((bytes, stamp)) => (Ok(bytes), Some(stamp)),
        Err(e) => (Err(e), None),
    };
    Some(Parsed {
        stamp,
        def: file::agent_from_read(path, source, None, read),
    })
}

/// The whole file at `path` and the stamp of the version read, from the open file
/// (`config::project_file::read` under `within`: resolved and checked, opened
/// non-blocking, `fstat`ed). Errors: refused, not a regular file, unreadable, or
/// larger than [`MAX_AGENT_BYTES`].
fn read_stamped(path: &Path, within: &Confinement) -> std::io::Result<(Vec<u8>, Stamp)> {
    let read = project_file::read(path, within, MAX_AGENT_BYTES).map_err(|e| match e {
        project_file::ProjectFileError::Io { source, .. } => source,
        refused => std::io::Error::other(refused.to_string()),
    })?;
    if read.cut {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_AGENT_BYTES} bytes"
        )));
    }
    Ok((read.bytes, Stamp::of(&read.metadata)))
}

/// `f` over `items`, results in `items`' order, spread over the cores (up to 8):
/// every thread takes the next [`BATCH`] items from a shared counter until none are
/// left, so a thread the scheduler holds back leaves its share to the others. Below
/// [`PARALLEL_FROM`] items, or on one core, the calling thread does all of them.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if items.len() < PARALLEL_FROM || threads < 2 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(BATCH, Ordering::Relaxed);
            if start >= items.len() {
                return done;
            }
            let end = (start + BATCH).min(items.len());
            done.extend((start..end).map(|i| (i, f(&items[i]))));
        }
    };
    let parts = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut parts = vec![work()];
        for handle in others {
            match handle.join() {
                Ok(part) => parts.push(part),
                // A parse never panics; if one did, propagate it as the caller would
                // have seen it on one thread.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        parts
    });
    let mut slots: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    for (i, r) in parts.into_iter().flatten() {
        slots[i] = Some(r);
    }
    // Every index was taken by exactly one thread.
    slots.into_iter().flatten().collect()
}

/// How many files a thread takes from the shared counter at a time.
const BATCH: usize = 8;

#[cfg(test)]
mod tests;
