//! The session store (SPEC §7 "Store"). CONTRACT STUB — the session helper replaces
//! the bodies; keep these signatures.

use std::path::{Path, PathBuf};

use super::events::Event;
use super::message::Message;
use super::metadata::Metadata;

/// Store failures, with the exact user-facing messages SPEC §7 requires.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("Sub-session '{0}' not found. It may have expired or was never created.")]
    NotFound(String),
    #[error("Corrupted session metadata for '{id}': {detail}")]
    Corrupted { id: String, detail: String },
    #[error("invalid session id {id:?}: {reason}")]
    InvalidId { id: String, reason: String },
    #[error("session '{id}' is open in another process (pid {pid})")]
    Locked { id: String, pid: u32 },
    #[error("session id prefix '{prefix}' is ambiguous: {matches:?}")]
    Ambiguous { prefix: String, matches: Vec<String> },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

/// A session read from disk: metadata, transcript, and what loading had to skip.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    pub metadata: Metadata,
    pub transcript: Vec<Message>,
    /// e.g. "transcript.jsonl: dropped torn last line", "line 7: … skipped",
    /// "metadata.json unreadable, used metadata.json.backup".
    pub warnings: Vec<String>,
}

/// One project's sessions directory (`$AMPLIFIER_HOME/projects/<slug>/sessions`).
#[derive(Debug, Clone)]
pub struct SessionStore {
    root: PathBuf,
}

/// Exclusive, locked write access to one session directory. Dropping it releases the lock.
#[derive(Debug)]
pub struct SessionWriter {
    _private: (),
}

impl SessionStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The sessions directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the session directory for `metadata.session_id`, takes the lock, writes
    /// metadata. Refuses invalid ids before touching the disk.
    pub fn create(&self, metadata: &Metadata) -> Result<SessionWriter, StoreError> {
        let _ = metadata;
        todo!("session helper")
    }

    /// Takes the lock of an existing session for writing (a resume).
    pub fn open(&self, id: &str) -> Result<SessionWriter, StoreError> {
        let _ = id;
        todo!("session helper")
    }

    /// Reads metadata (falling back to `.backup`) and transcript (torn-line recovery),
    /// fresh from disk. Needs no lock.
    pub fn load(&self, id: &str) -> Result<LoadedSession, StoreError> {
        let _ = id;
        todo!("session helper")
    }

    /// Metadata of every session in this store (unreadable ones skipped), newest first.
    pub fn list(&self) -> Result<Vec<Metadata>, StoreError> {
        todo!("session helper")
    }

    /// A full id from an unambiguous prefix (an exact id always wins).
    pub fn resolve(&self, id_or_prefix: &str) -> Result<String, StoreError> {
        let _ = id_or_prefix;
        todo!("session helper")
    }
}

impl SessionWriter {
    /// The session's id.
    pub fn id(&self) -> &str {
        todo!("session helper")
    }

    /// Appends one message line and flushes it (no fsync).
    pub fn append_message(&mut self, message: &Message) -> Result<(), StoreError> {
        let _ = message;
        todo!("session helper")
    }

    /// Appends one `events.jsonl` line (ignores non-logged events).
    pub fn append_event(&mut self, event: &Event) -> Result<(), StoreError> {
        let _ = event;
        todo!("session helper")
    }

    /// Writes metadata atomically (temp + rename, previous kept as `.backup`), with
    /// secrets in `config` redacted.
    pub fn write_metadata(&mut self, metadata: &Metadata) -> Result<(), StoreError> {
        let _ = metadata;
        todo!("session helper")
    }

    /// fsyncs the transcript and events (end of turn).
    pub fn sync(&mut self) -> Result<(), StoreError> {
        todo!("session helper")
    }
}
