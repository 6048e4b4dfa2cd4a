//! A directory of agent files for the registry: listing its `*.md` files, parsing
//! them on every core, and reusing the previous build's parse of a file whose stamp is
//! unchanged.
//!
//! Owns: [`ParseCache`] (file → stamp and parsed [`AgentDef`]), the stamp rule (size,
//! mtime and, on Unix, inode; a stamp too close to the moment it was read is not
//! trusted), and the parallel parse. Does not own: parsing one file (`agent::file`),
//! tiers, shadowing and trust (`agent::registry`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::agent::file;
use crate::agent::{AgentDef, AgentSource};

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

/// `*.md` files directly in `dir` (no dot-files, regular files or links to them), sorted
/// by file name, with their metadata. A missing or unreadable directory is empty.
fn list(dir: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(PathBuf, std::fs::Metadata)> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.')
                && Path::new(&*name)
                    .extension()
                    .is_some_and(|x| x.eq_ignore_ascii_case("md"))
        })
        .filter_map(|e| {
            let path = e.path();
            // Follows links, as `Path::is_file` does.
            let meta = std::fs::metadata(&path).ok()?;
            meta.is_file().then_some((path, meta))
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files
}

/// `*.md` files directly in `dir` (see [`load_dir`]), paths only.
pub(super) fn agent_files_in(dir: &Path) -> Vec<PathBuf> {
    list(dir).into_iter().map(|(p, _)| p).collect()
}

/// Every agent file in `dir` as `source`, sorted by file name; with a cache, files whose
/// stamp is unchanged since it last parsed them are reused and the rest are parsed and
/// remembered. Parsing runs on all cores when there are many files.
pub(super) fn load_dir(
    dir: &Path,
    source: AgentSource,
    mut cache: Option<&mut ParseCache>,
) -> Vec<AgentDef> {
    let read_at = SystemTime::now();
    let files = list(dir);
    let mut out: Vec<Option<AgentDef>> = Vec::with_capacity(files.len());
    let mut todo: Vec<(usize, &Path)> = Vec::new();
    for (i, (path, meta)) in files.iter().enumerate() {
        let stamp = Stamp::of(meta);
        let reused = cache.as_deref_mut().and_then(|c| {
            let key = (source, path.clone());
            let entry = c.previous.remove(&key)?;
            if entry.stamp != stamp || !stamp.settled(entry.read_at) {
                return None;
            }
            let def = entry.def.clone();
            c.entries.insert(key, entry);
            Some(def)
        });
        if reused.is_none() {
            todo.push((i, path.as_path()));
        }
        out.push(reused);
    }
    let parsed = parse_all(&todo, source);
    if let Some(c) = cache {
        c.parsed += parsed.len();
        for ((i, path), def) in todo.iter().zip(&parsed) {
            let entry = Entry {
                stamp: Stamp::of(&files[*i].1),
                read_at,
                def: def.clone(),
            };
            c.entries.insert((source, path.to_path_buf()), entry);
        }
    }
    for ((i, _), def) in todo.into_iter().zip(parsed) {
        out[i] = Some(def);
    }
    out.into_iter().flatten().collect()
}

/// Parses `files` (index, path) in order, split over the available cores.
fn parse_all(files: &[(usize, &Path)], source: AgentSource) -> Vec<AgentDef> {
    let parse = |chunk: &[(usize, &Path)]| -> Vec<AgentDef> {
        chunk
            .iter()
            .map(|(_, p)| file::load_agent_file(p, source, None))
            .collect()
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if files.len() < PARALLEL_FROM || threads < 2 {
        return parse(files);
    }
    let size = files.len().div_ceil(threads);
    let mut chunks = files.chunks(size);
    let first = chunks.next().unwrap_or(&[]);
    std::thread::scope(|s| {
        let others: Vec<_> = chunks.map(|c| s.spawn(move || parse(c))).collect();
        let mut out = parse(first);
        for handle in others {
            match handle.join() {
                Ok(defs) => out.extend(defs),
                // A parse never panics; if one did, propagate it as the caller would
                // have seen it on one thread.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests;
