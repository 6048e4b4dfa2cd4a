//! The session store (SPEC §7 "Store"): one directory per session under a project's
//! sessions directory, root sessions and sub-sessions side by side.
//!
//! ```text
//! <sessions dir>/<session id>/
//!   transcript.jsonl        one Message per line, append-only
//!   metadata.json           replaced atomically; metadata.json.backup = previous
//!   events.jsonl            one amplifier.log line per logged event
//!   lock                    owner pid; OS advisory lock while a writer is open
//! ```
//!
//! Owns: finding, creating, locking, reading and listing session directories, and the
//! id check before any path is built. A listing never hides a session directory: one
//! whose metadata is lost is rebuilt (`rebuild`), one that cannot be read at all is
//! listed as [`Unreadable`] with the reason. A creation that fails removes the
//! directory it made, so a full disk leaves no directory holding only a lock. Does not own: the file formats' shapes
//! (`message`, `metadata`, `events`), redaction rules (`redact`), session trees
//! (`tree`), exports (`export`), or when to write (`engine`).
//!
//! Reading (`load`, `list`, `resolve`) never takes the lock: a session open in another
//! process can always be read.

mod depth;
mod files;
mod handoff;
mod links;
mod lock;
mod metadata_file;
mod rebuild;
pub mod tail;
pub mod transcript;
pub mod volatile;
mod writer;

use crate::session::ids::SessionId;
use std::cmp::Ordering;
use std::path::{Path, PathBuf};

pub use files::{MAX_LINE_BYTES, MAX_METADATA_BYTES, bytes_text};
pub use handoff::{ParsedTranscript, TailLoad};
pub use lock::LOCK_FILE;
pub use metadata_file::{METADATA_BACKUP, METADATA_FILE, METADATA_TEMP};
pub use tail::{EarlierPart, EarlierRead, TranscriptTail};
pub use transcript::{TRANSCRIPT_FILE, parse_transcript};
/// The event log's file name inside a session directory.
pub const EVENTS_FILE: &str = "events.jsonl";

pub use writer::SessionWriter;

use super::ids;
use super::message::Message;
use super::metadata::Metadata;

/// Store failures, with the exact user-facing messages SPEC §7 requires.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The session directory does not exist.
    #[error("Sub-session '{0}' not found. It may have expired or was never created.")]
    NotFound(String),
    /// Neither `metadata.json` nor its backup is readable.
    #[error("Corrupted session metadata for '{id}': {detail}")]
    Corrupted { id: String, detail: String },
    /// The id fails [`ids::validate`]; nothing was touched on disk.
    #[error("invalid session id {id:?}: {reason}")]
    InvalidId { id: String, reason: ids::IdError },
    /// Another writer holds the session's lock (pid 0 when unknown).
    #[error("session '{id}' is open in another process (pid {pid})")]
    Locked { id: String, pid: u32 },
    /// Another process added to the session's transcript while this process held it
    /// idle, unlocked: this process's copy is stale and writes nothing more.
    #[error(
        "session '{id}' was continued by another process while idle here; open it again to see and continue it"
    )]
    ChangedElsewhere { id: String },
    /// A prefix matched several sessions (`matches` sorted); the message lists them
    /// comma-separated.
    #[error(
        "session id prefix '{prefix}' matches {} sessions: {} (give more of the id)",
        matches.len(),
        matches.join(", ")
    )]
    Ambiguous {
        prefix: String,
        matches: Vec<String>,
    },
    /// A session file is not a regular file once symlinks are followed (a FIFO, a
    /// device such as `/dev/zero`, a directory): refused unread, since reading it could
    /// block or never end. `kind` is `"a FIFO"`, `"a device"`, `"a socket"`,
    /// `"a directory"` or `"not a regular file"`.
    #[error("{}: {kind}, not a regular file; refusing to read it", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    /// A line of a session JSONL file is longer than `cap` bytes (see
    /// `files::MAX_LINE_BYTES`); `line` is 1-based. Nothing past the cap was read.
    #[error(
        "{} line {line} is longer than {}, the cap for one line; not read",
        path.display(),
        files::bytes_text(*cap)
    )]
    LineTooLong {
        path: PathBuf,
        line: usize,
        cap: usize,
    },
    /// A session file that is read whole (metadata) is larger than `cap` bytes.
    #[error("{} is larger than {}; not read", path.display(), files::bytes_text(*cap))]
    TooLarge { path: PathBuf, cap: usize },
    /// A filesystem operation failed; `context` says which.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

pub(crate) fn io_err(context: String, source: std::io::Error) -> StoreError {
    StoreError::Io { context, source }
}

/// A session read from disk: metadata, transcript, and what loading had to skip.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    pub metadata: Metadata,
    pub transcript: Vec<Message>,
    /// e.g. "transcript.jsonl: dropped torn last line (12 bytes)",
    /// "transcript.jsonl line 7: skipped: …",
    /// "metadata.json unreadable: …; used metadata.json.backup".
    pub warnings: Vec<String>,
}

/// A session directory whose metadata can be neither read nor rebuilt (or that cannot
/// be read at all), listed with the reason instead of being hidden.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub session_id: SessionId,
    /// The session directory.
    pub dir: PathBuf,
    /// The error, e.g. "Corrupted session metadata for '…': metadata.json unreadable: …".
    pub reason: String,
}

/// What a listing found: readable sessions (`T` is [`Metadata`], or a pair of the
/// sessions directory and metadata across projects), newest `last_updated` first, and
/// unreadable directories sorted by id.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing<T> {
    pub sessions: Vec<T>,
    pub unreadable: Vec<Unreadable>,
}

/// One project's sessions directory (`$AMPLIFIER_HOME/projects/<slug>/sessions`).
#[derive(Debug, Clone)]
pub struct SessionStore {
    root: PathBuf,
}

fn checked(id: &str) -> Result<(), StoreError> {
    ids::validate(id).map_err(|reason| StoreError::InvalidId {
        id: id.to_string(),
        reason,
    })
}

/// A refused id is the store's `InvalidId` (same id and reason).
impl From<ids::InvalidSessionId> for StoreError {
    fn from(e: ids::InvalidSessionId) -> Self {
        StoreError::InvalidId {
            id: e.id,
            reason: e.reason,
        }
    }
}

impl SessionStore {
    /// A store over the sessions directory `root` (created on the first `create`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The sessions directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/<id>`, after validating `id` (`StoreError::InvalidId`). The directory
    /// may not exist.
    pub fn session_dir(&self, id: &str) -> Result<PathBuf, StoreError> {
        checked(id)?;
        Ok(self.root.join(id))
    }

    /// Whether a session directory for `id` exists (false for invalid ids).
    pub fn exists(&self, id: &str) -> bool {
        self.session_dir(id).is_ok_and(|dir| dir.is_dir())
    }

    /// Creates the session directory for `metadata.session_id` (and the sessions
    /// directory), takes the lock, writes metadata (config redacted). Refuses invalid
    /// ids before touching the disk. An existing directory is reused (its metadata
    /// becomes the backup); a locked one gives `StoreError::Locked`. When any step
    /// fails (a full disk), a directory this call created is removed again.
    ///
    /// A new directory appears whole: it is filled as `.creating-<id>` (a name no
    /// listing reads) and renamed into place once its first `metadata.json` is
    /// written, so a process killed at any point leaves either a loadable session or
    /// no session directory at all; [`SessionStore::sweep_abandoned_creations`] removes
    /// what such a kill left. Nothing is fsynced here: the writer's first
    /// [`SessionWriter::sync`] (the end of the first turn, SPEC §7) makes the files
    /// durable; a power loss before it may lose the new session's metadata, which a
    /// load then rebuilds from the transcript and events (`rebuild`).
    pub fn create(&self, metadata: &Metadata) -> Result<SessionWriter, StoreError> {
        self.create_with_secrets(metadata, Vec::new())
    }

    /// [`SessionStore::create`] with the writer's literal secrets set before the first
    /// metadata write (see [`SessionWriter::set_secrets`]), so not even the first
    /// version — later kept as `metadata.json.backup` — holds a credential value.
    pub fn create_with_secrets(
        &self,
        metadata: &Metadata,
        secrets: impl IntoIterator<Item = String>,
    ) -> Result<SessionWriter, StoreError> {
        let id = &metadata.session_id;
        let dir = self.session_dir(id)?;
        let secrets: Vec<String> = secrets.into_iter().collect();
        let open = |dir: &Path, first: &Metadata| {
            let lock = lock::acquire(dir, id)?;
            transcript::repair_tail(&dir.join(TRANSCRIPT_FILE))?;
            let mut writer = SessionWriter::new(dir.to_path_buf(), lock, first.clone())?;
            writer.set_secrets(secrets.clone());
            Ok::<_, StoreError>(writer)
        };
        if dir.exists() {
            let mut writer = open(&dir, metadata)?;
            writer.write_metadata(metadata)?;
            return Ok(writer);
        }
        let staging = self.root.join(format!("{STAGING_PREFIX}{id}"));
        let mut writer = in_new_dir(&staging, || {
            let mut writer = open(&staging, metadata)?;
            writer.write_metadata(metadata)?;
            Ok(writer)
        })?;
        // The writer keeps its lock and files through the rename (they follow the
        // directory): no second lock, no files opened again, nothing synced here.
        if let Err(e) = writer.rename_dir(&dir) {
            drop(writer);
            remove_created(&staging);
            return Err(e);
        }
        Ok(writer)
    }

    /// Removes what creations killed before their rename left behind: `.creating-<id>`
    /// directories last changed more than `older_than` ago whose lock is free (a
    /// creation in progress holds it, and takes milliseconds). Returns how many were
    /// removed; failures are logged and skipped. A runtime calls it once at start
    /// with [`ABANDONED_AFTER`].
    pub fn sweep_abandoned_creations(&self, older_than: std::time::Duration) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_prefix(STAGING_PREFIX) else {
                continue;
            };
            let old_enough = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age >= older_than));
            if !old_enough || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let dir = entry.path();
            let Ok(lock) = lock::acquire(&dir, id) else {
                continue;
            };
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => removed += 1,
                Err(e) => tracing::warn!("cannot remove {}: {e}", dir.display()),
            }
            drop(lock);
        }
        if removed > 0 {
            tracing::info!(
                "removed {removed} abandoned session creation(s) in {}",
                self.root.display()
            );
        }
        removed
    }

    /// Takes the lock of an existing session for writing (a resume). Missing directory
    /// → `NotFound`; lock held → `Locked`; metadata unreadable with no usable backup →
    /// `Corrupted`. A torn last transcript line is cut so appends start on a fresh line.
    pub fn open(&self, id: &str) -> Result<SessionWriter, StoreError> {
        let dir = self.existing_dir(id)?;
        let lock = lock::acquire(&dir, id)?;
        let (mut metadata, _) = rebuild::read_or_rebuild(&dir, id)?;
        if metadata.session_id != id {
            // The directory name is the truth; metadata copied from elsewhere may differ.
            tracing::warn!(
                "session dir '{id}' holds metadata for '{}'",
                metadata.session_id
            );
            metadata.session_id = id.into();
        }
        transcript::repair_tail(&dir.join(TRANSCRIPT_FILE))?;
        let writer = SessionWriter::new(dir, lock, metadata)?;
        Ok(writer)
    }

    /// Reads metadata (falling back to `.backup`, then `.tmp`, then a rebuild from the
    /// transcript and events: `rebuild::read_or_rebuild`) and transcript (torn-line
    /// recovery), fresh from disk. Needs no lock. Missing directory → `NotFound`;
    /// nothing usable and nothing to rebuild from → `Corrupted`; a transcript that is
    /// not a regular file → `NotRegular`; a line over the cap → `LineTooLong`.
    /// Metadata without `config` loads (`config: None`).
    pub fn load(&self, id: &str) -> Result<LoadedSession, StoreError> {
        Ok(self.load_reusing(id, None)?.0)
    }

    /// Opens a session from its transcript's end (tail-first, see [`tail`]): the
    /// metadata (as [`SessionStore::load`] reads it) and at least `min_messages` of the
    /// newest messages, or all of them when the transcript is shorter. The returned
    /// [`EarlierPart`] (`None` when the tail is the whole transcript) reads the rest;
    /// the session's `warnings` then hold the metadata's only, and the transcript's
    /// come with the earlier part, numbered as [`SessionStore::load`] numbers them.
    ///
    /// Errors: as [`SessionStore::load`], except that a line over the cap is reported
    /// by the earlier part's read.
    pub fn load_tail(
        &self,
        id: &str,
        min_messages: usize,
    ) -> Result<(LoadedSession, Option<EarlierPart>), StoreError> {
        let load = self.load_tail_covering(id, min_messages)?;
        Ok((load.session, load.earlier))
    }

    /// Metadata only (with the fallbacks of [`SessionStore::load`] and their warnings;
    /// the transcript is read only for a rebuild). A sub-session stored without a
    /// depth (Amplifier's) gets the length of its `parent_id` chain, as in `load`
    /// and listings.
    pub fn load_metadata(&self, id: &str) -> Result<(Metadata, Vec<String>), StoreError> {
        self.metadata_in(&self.existing_dir(id)?, id)
    }

    /// The metadata of session `id` stored in `dir` (read, or rebuilt with warnings)
    /// with its depth filled in: what every `load*` starts from.
    fn metadata_in(&self, dir: &Path, id: &str) -> Result<(Metadata, Vec<String>), StoreError> {
        let (mut metadata, warnings) = rebuild::read_or_rebuild(dir, id)?;
        metadata.depth = self.depth_of(&metadata);
        Ok((metadata, warnings))
    }

    /// The depth of `metadata`: as stored, or for a sub-session stored without one
    /// (Amplifier writes none) the length of its `parent_id` chain in this store
    /// (`depth::chain_depth`).
    fn depth_of(&self, metadata: &Metadata) -> u32 {
        depth::chain_depth(metadata, |id| {
            let dir = self.session_dir(id).ok()?;
            let (parent, _) = metadata_file::read(&dir, id).ok()?;
            Some((parent.parent_id, parent.depth))
        })
    }

    /// Metadata of every readable session in this store (recovered and rebuilt ones
    /// included; see [`SessionStore::load`]), newest `last_updated` first; unreadable
    /// directories are logged and left out (see [`SessionStore::listing`] for them). A
    /// missing sessions directory is an empty list.
    pub fn list(&self) -> Result<Vec<Metadata>, StoreError> {
        let listing = self.listing()?;
        for u in &listing.unreadable {
            tracing::warn!("session '{}' is unreadable: {}", u.session_id, u.reason);
        }
        Ok(listing.sessions)
    }

    /// Every session directory of this store (directories whose names are not valid
    /// ids are not sessions): the readable ones' metadata, newest first, and the
    /// unreadable ones with the reason. A missing sessions directory is empty.
    pub fn listing(&self) -> Result<Listing<Metadata>, StoreError> {
        let mut sessions = Vec::new();
        let mut unreadable = Vec::new();
        for id in self.session_ids()? {
            let dir = self.root.join(&id);
            match rebuild::read_or_rebuild(&dir, &id) {
                Ok((metadata, _)) => sessions.push(metadata),
                Err(e) => unreadable.push(Unreadable {
                    session_id: id.into(),
                    dir,
                    reason: e.to_string(),
                }),
            }
        }
        depth::fill_depths(&mut sessions);
        sessions.sort_by(newest_first);
        unreadable.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        Ok(Listing {
            sessions,
            unreadable,
        })
    }

    /// A full id from what a person typed (surrounding whitespace and a leading `#`
    /// ignored; SPEC §14: every id arbor shows is accepted):
    /// 1. an exact id always wins;
    /// 2. else the sessions whose *own* part starts with it — a root's id (its
    ///    8-character UUID prefix is what the TUI shows), a sub-session's child span
    ///    (`#1eb7af22` for `…-1eb7af22…_explorer`);
    /// 3. else, when none, the sub-sessions whose whole id starts with it (a longer
    ///    prefix, or a parent span).
    ///
    /// So a root's prefix resolves to the root although its children's ids start with
    /// the same digits (their parent span is the root's first 16 hex digits). One match
    /// at the first step that has any → its id; several → `Ambiguous` (those
    /// candidates, sorted); none → `NotFound(input)`.
    ///
    /// This is where an id a person typed becomes a [`SessionId`]: the result always
    /// names an existing, valid session directory.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<SessionId, StoreError> {
        let prefix = id_or_prefix.trim();
        if self.session_dir(prefix)?.is_dir() {
            return Ok(SessionId::parse(prefix)?);
        }
        let short = prefix.strip_prefix('#').unwrap_or(prefix);
        if short.is_empty() {
            return Err(StoreError::NotFound(prefix.to_string()));
        }
        let all = self.session_ids()?;
        let own = |id: &&String| match ids::child_span_of(id) {
            Some(span) => span.starts_with(short),
            None => id.starts_with(short),
        };
        let mut matches: Vec<String> = all.iter().filter(own).cloned().collect();
        if matches.is_empty() {
            matches = all.into_iter().filter(|id| id.starts_with(short)).collect();
        }
        matches.sort();
        match matches.len() {
            0 => Err(StoreError::NotFound(prefix.to_string())),
            // Listed directory names passed `ids::validate` in `session_ids`.
            1 => Ok(SessionId::new_unchecked(matches.remove(0))),
            _ => Err(StoreError::Ambiguous {
                prefix: prefix.to_string(),
                matches,
            }),
        }
    }

    /// Names of the session directories (valid ids only), unordered.
    fn session_ids(&self) -> Result<Vec<String>, StoreError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(format!("listing {}", self.root.display()), e)),
        };
        Ok(entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| ids::validate(name).is_ok())
            .collect())
    }

    /// The directory of an existing session: `InvalidId`, else `NotFound`.
    fn existing_dir(&self, id: &str) -> Result<PathBuf, StoreError> {
        let dir = self.session_dir(id)?;
        if dir.is_dir() {
            Ok(dir)
        } else {
            Err(StoreError::NotFound(id.to_string()))
        }
    }
}

/// Every project's sessions under `projects_dir` (`$AMPLIFIER_HOME/projects`): pairs of
/// (`<projects_dir>/<slug>/sessions`, metadata), newest `last_updated` first, and the
/// unreadable session directories (see [`SessionStore::listing`]). For `arbor session
/// list --all-projects`. A missing `projects_dir` is empty; a project whose sessions
/// directory cannot be listed is logged and skipped.
pub fn list_all_projects(projects_dir: &Path) -> Result<Listing<(PathBuf, Metadata)>, StoreError> {
    let mut out = Listing {
        sessions: Vec::new(),
        unreadable: Vec::new(),
    };
    let entries = match std::fs::read_dir(projects_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io_err(format!("listing {}", projects_dir.display()), e)),
    };
    for entry in entries.filter_map(Result::ok) {
        let sessions = entry.path().join("sessions");
        if !sessions.is_dir() {
            continue;
        }
        match SessionStore::new(&sessions).listing() {
            Ok(listing) => {
                let pairs = listing.sessions.into_iter().map(|m| (sessions.clone(), m));
                out.sessions.extend(pairs);
                out.unreadable.extend(listing.unreadable);
            }
            Err(e) => tracing::warn!("skipping {}: {e}", sessions.display()),
        }
    }
    out.sessions.sort_by(|a, b| newest_first(&a.1, &b.1));
    out.unreadable
        .sort_by(|a, b| a.session_id.cmp(&b.session_id));
    Ok(out)
}

/// Creates `dir` (and its parents) and runs `fill` in it. When `fill` fails and `dir`
/// did not exist before, `dir` is removed again (best effort, logged), so a failed
/// creation (a full disk) leaves no directory holding only a lock; an existing
/// directory is never removed.
fn in_new_dir<T>(
    dir: &Path,
    fill: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let fresh = !dir.exists();
    std::fs::create_dir_all(dir).map_err(|e| io_err(format!("creating {}", dir.display()), e))?;
    let filled = fill();
    if filled.is_err() && fresh {
        remove_created(dir);
    }
    filled
}

/// The name prefix of a session directory being created (`.creating-<id>`); ids never
/// start with `.`, so no listing reads one. A leftover one (a creation killed before
/// its rename) holds no session.
const STAGING_PREFIX: &str = ".creating-";

/// How old a `.creating-<id>` directory must be before
/// [`SessionStore::sweep_abandoned_creations`] removes it: 10 minutes, far beyond the
/// milliseconds a creation takes.
pub const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes `dir`, made by a creation that failed (best effort, logged).
fn remove_created(dir: &Path) {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => tracing::warn!("removed {} after a failed creation", dir.display()),
        Err(e) => tracing::warn!(
            "cannot remove {} after a failed creation: {e}",
            dir.display()
        ),
    }
}

/// Orders metadata newest `last_updated` first (unparseable timestamps last), then by
/// id for a stable order.
pub fn newest_first(a: &Metadata, b: &Metadata) -> Ordering {
    let key = |m: &Metadata| timestamp_of(&m.last_updated);
    key(b)
        .cmp(&key(a))
        .then_with(|| b.last_updated.cmp(&a.last_updated))
        .then_with(|| a.session_id.cmp(&b.session_id))
}

/// An RFC 3339 timestamp, or a naive ISO date-time (as Python's `isoformat()` may
/// write) taken as UTC.
pub(crate) fn timestamp_of(text: &str) -> Option<jiff::Timestamp> {
    text.parse::<jiff::Timestamp>().ok().or_else(|| {
        text.parse::<jiff::civil::DateTime>()
            .ok()
            .and_then(|dt| dt.to_zoned(jiff::tz::TimeZone::UTC).ok())
            .map(|z| z.timestamp())
    })
}

#[cfg(test)]
mod tests;
