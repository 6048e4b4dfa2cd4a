//! [`SessionWriter`]: the one locked writer of a session directory.
//!
//! Owns: appending transcript and event lines, replacing metadata, redacting what it
//! writes, and durability (SPEC §7: each message is appended and flushed as it
//! completes; fsync at the end of each turn): every line and every metadata
//! replacement reaches the file at once (readable by any reader, safe from a crash of
//! the process), and only [`SessionWriter::sync`] — the end of a turn — or dropping the
//! writer (the end of the session in this process) fsyncs what changed since the last
//! sync. Does not own: reading (`store`, `transcript`), the lock itself (`lock`), or
//! deciding when to write or sync (`engine`).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::EVENTS_FILE;
use super::lock::SessionLock;
use super::metadata_file;
use super::transcript::TRANSCRIPT_FILE;
use super::{StoreError, io_err};
use crate::session::ids::IdError;
use crate::session::message::Message;
use crate::session::metadata::Metadata;
use crate::session::protocol::Event;
use crate::session::redact::{MIN_SECRET_LEN, redact, redact_strings};

/// Exclusive, locked write access to one session directory. Dropping it releases the
/// lock (also when the process dies: the OS drops advisory locks).
#[derive(Debug)]
pub struct SessionWriter {
    id: String,
    dir: PathBuf,
    transcript: File,
    events: File,
    metadata: Metadata,
    secrets: Vec<String>,
    /// What was written since the last sync.
    unsynced: Unsynced,
    /// fsyncs made so far (see [`SessionWriter::fsyncs`]).
    fsyncs: u64,
    /// `None` while released between turns ([`SessionWriter::release_lock`]).
    lock: Option<SessionLock>,
    /// The transcript's length when the lock was released, to see at
    /// [`SessionWriter::retake_lock`] whether another process wrote meanwhile.
    released_at: Option<u64>,
}

/// The files written since the last [`SessionWriter::sync`].
#[derive(Debug, Default, Clone, Copy)]
struct Unsynced {
    transcript: bool,
    events: bool,
    metadata: bool,
}

impl SessionWriter {
    /// Opens the append handles of a locked session directory.
    pub(crate) fn new(
        dir: PathBuf,
        lock: SessionLock,
        metadata: Metadata,
    ) -> Result<Self, StoreError> {
        let transcript = open_append(&dir.join(TRANSCRIPT_FILE))?;
        let events = open_append(&dir.join(EVENTS_FILE))?;
        Ok(Self {
            id: metadata.session_id.to_string(),
            dir,
            transcript,
            events,
            metadata,
            secrets: Vec::new(),
            unsynced: Unsynced::default(),
            fsyncs: 0,
            lock: Some(lock),
            released_at: None,
        })
    }

    /// Renames the session directory to its sibling `to`, keeping the lock and the
    /// open files (they follow the directory) and what is still unsynced; later
    /// writes go to `to`. Errors as `SessionLock::rename_dir` (nothing moved).
    pub(crate) fn rename_dir(&mut self, to: &Path) -> Result<(), StoreError> {
        let Some(lock) = self.lock.as_mut() else {
            return Err(StoreError::Locked {
                id: self.id.clone(),
                pid: 0,
            });
        };
        lock.rename_dir(&self.dir, to, &self.id)?;
        self.dir = to.to_path_buf();
        Ok(())
    }

    /// Releases the session's lock while this process leaves the session idle (between
    /// turns), so another process may resume, merge or rewind it. Writes still go to the
    /// open files; [`SessionWriter::retake_lock`] before the next turn.
    pub(crate) fn release_lock(&mut self) {
        if self.lock.take().is_some() {
            self.released_at = self.transcript_len();
        }
    }

    /// Takes the lock again after [`SessionWriter::release_lock`] (nothing to do when
    /// held) and reloads the metadata from disk (another process may have merged or
    /// discarded the session's worktree meanwhile); returns that metadata.
    ///
    /// Errors: `Locked` (another process runs a turn in it now); `ChangedElsewhere`
    /// (another process added to its transcript meanwhile: the lock stays released);
    /// the metadata's read errors.
    pub(crate) fn retake_lock(&mut self) -> Result<Option<Metadata>, StoreError> {
        if self.lock.is_some() {
            return Ok(None);
        }
        let lock = super::lock::acquire(&self.dir, &self.id)?;
        if self.transcript_len() != self.released_at {
            return Err(StoreError::ChangedElsewhere {
                id: self.id.clone(),
            });
        }
        let (metadata, _) = super::rebuild::read_or_rebuild(&self.dir, &self.id)?;
        self.metadata = metadata.clone();
        self.lock = Some(lock);
        self.released_at = None;
        Ok(Some(metadata))
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session directory this writer holds.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The metadata as last written (config and overlay already redacted), or as loaded
    /// by `open`.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Credential values (API keys from the environment/config) to replace by
    /// `"[REDACTED]"` in every string this writer writes from now on: messages, events
    /// and metadata. Values shorter than 8 characters are ignored.
    pub fn set_secrets(&mut self, secrets: impl IntoIterator<Item = String>) {
        self.secrets = secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
    }

    /// Appends one message line to `transcript.jsonl` in a single write, readable at
    /// once (no fsync: see [`SessionWriter::sync`]).
    pub fn append_message(&mut self, message: &Message) -> Result<(), StoreError> {
        self.while_idle(|w| w.append_message_locked(message))
    }

    fn append_message_locked(&mut self, message: &Message) -> Result<(), StoreError> {
        let line = self.line(message, false)?;
        self.unsynced.transcript = true;
        self.transcript
            .write_all(&line)
            .and_then(|()| self.transcript.flush())
            .map_err(|e| {
                io_err(
                    format!("appending to {TRANSCRIPT_FILE} of '{}'", self.id),
                    e,
                )
            })
    }

    /// Appends `event.to_log_line()` to `events.jsonl` with secret-looking keys
    /// redacted; events that are not logged (live deltas, appended messages) are
    /// ignored.
    pub fn append_event(&mut self, event: &Event) -> Result<(), StoreError> {
        if !event.is_logged() {
            return Ok(());
        }
        self.while_idle(|w| w.append_event_locked(event))
    }

    fn append_event_locked(&mut self, event: &Event) -> Result<(), StoreError> {
        let line = self.line(&event.to_log_line(), true)?;
        self.unsynced.events = true;
        self.events
            .write_all(&line)
            .and_then(|()| self.events.flush())
            .map_err(|e| io_err(format!("appending to {EVENTS_FILE} of '{}'", self.id), e))
    }

    /// Writes metadata atomically (temp + rename, previous kept as
    /// `metadata.json.backup`; fsynced by the next [`SessionWriter::sync`]) — in
    /// place when the session is under a directory marked volatile (`volatile`: a
    /// worker's scratch copy; `metadata_file::write_in_place`) — with
    /// secrets in `config` and `agent_overlay` redacted. `metadata.session_id` must be
    /// this writer's id, else `StoreError::InvalidId` ([`IdError::OtherSession`]).
    pub fn write_metadata(&mut self, metadata: &Metadata) -> Result<(), StoreError> {
        if metadata.session_id != self.id {
            return Err(StoreError::InvalidId {
                id: metadata.session_id.to_string(),
                reason: IdError::OtherSession(self.id.to_string()),
            });
        }
        let redacted = redact_metadata(metadata, &self.secrets)?;
        self.while_idle(|w| {
            w.unsynced.metadata = true;
            if super::volatile::covers(&w.dir) {
                metadata_file::write_in_place(&w.dir, &redacted)
            } else {
                metadata_file::write(&w.dir, &redacted)
            }
        })?;
        self.metadata = redacted;
        Ok(())
    }

    /// Runs `write` under the session's lock: at once while it is held (a turn runs);
    /// while it is released between turns ([`SessionWriter::release_lock`]), the lock
    /// is taken for this write alone, so a write of an idle session (a merge recorded
    /// after the child's turn, a rename) never races another process that took the
    /// session meanwhile.
    ///
    /// Errors, nothing written: `Locked` (another process runs a turn in it now);
    /// `ChangedElsewhere` (another process added to its transcript while it was idle
    /// here: this copy is stale).
    fn while_idle<T>(
        &mut self,
        write: impl FnOnce(&mut Self) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.lock.is_some() {
            return write(self);
        }
        let _lock = super::lock::acquire(&self.dir, &self.id)?;
        if self.transcript_len() != self.released_at {
            return Err(StoreError::ChangedElsewhere {
                id: self.id.clone(),
            });
        }
        let written = write(self);
        self.released_at = self.transcript_len();
        written
    }

    fn transcript_len(&self) -> Option<u64> {
        self.transcript.metadata().ok().map(|m| m.len())
    }

    /// Makes everything written since the last sync durable (end of a turn): fsyncs
    /// `transcript.jsonl` and `events.jsonl` when appended to, and `metadata.json`, its
    /// backup and the directory when metadata was written. Nothing written: no fsync.
    /// A session under a directory marked volatile (`volatile::mark`: a worker's
    /// scratch copy) is never fsynced.
    /// Errors: the first file that cannot be synced (the rest stay marked unsynced).
    pub fn sync(&mut self) -> Result<(), StoreError> {
        if super::volatile::covers(&self.dir) {
            self.unsynced = Unsynced::default();
            return Ok(());
        }
        let err = |id: &str, e| io_err(format!("syncing session '{id}'"), e);
        if self.unsynced.transcript {
            self.transcript.sync_data().map_err(|e| err(&self.id, e))?;
            self.fsyncs += 1;
            self.unsynced.transcript = false;
        }
        if self.unsynced.events {
            self.events.sync_data().map_err(|e| err(&self.id, e))?;
            self.fsyncs += 1;
            self.unsynced.events = false;
        }
        if self.unsynced.metadata {
            self.fsyncs += u64::from(metadata_file::sync(&self.dir)?);
            self.unsynced.metadata = false;
        }
        Ok(())
    }

    /// How many fsyncs this writer has made (a test hook: a turn's count does not grow
    /// with its number of messages).
    pub fn fsyncs(&self) -> u64 {
        self.fsyncs
    }

    /// One JSON line (with `\n`), literal secrets removed; `redact_keys` also applies
    /// key-based redaction (events — messages keep their tool arguments intact).
    fn line<T: Serialize>(&self, value: &T, redact_keys: bool) -> Result<Vec<u8>, StoreError> {
        let ser = |e: serde_json::Error| io_err(format!("serializing for '{}'", self.id), e.into());
        let mut bytes = if self.secrets.is_empty() && !redact_keys {
            serde_json::to_vec(value).map_err(ser)?
        } else {
            let mut v = serde_json::to_value(value).map_err(ser)?;
            if redact_keys {
                v = redact(&v);
            }
            if !self.secrets.is_empty() {
                let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
                v = redact_strings(&v, &secrets);
            }
            serde_json::to_vec(&v).map_err(ser)?
        };
        bytes.push(b'\n');
        Ok(bytes)
    }
}

impl Drop for SessionWriter {
    /// The end of the session in this process: what is still unsynced is synced (best
    /// effort, failures logged) before the lock is released.
    fn drop(&mut self) {
        if let Err(e) = self.sync() {
            tracing::error!("{e}");
        }
    }
}

/// `metadata` with `config` and `agent_overlay` passed through [`redact`] and, when
/// `secrets` is non-empty, every literal secret removed.
fn redact_metadata(metadata: &Metadata, secrets: &[String]) -> Result<Metadata, StoreError> {
    let mut out = metadata.clone();
    out.config = out.config.as_ref().map(redact);
    out.agent_overlay = redact(&out.agent_overlay);
    if secrets.is_empty() {
        return Ok(out);
    }
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let value = serde_json::to_value(&out)
        .map_err(|e| io_err("serializing metadata".to_string(), e.into()))?;
    serde_json::from_value(redact_strings(&value, &secrets))
        .map_err(|e| io_err("re-reading redacted metadata".to_string(), e.into()))
}

/// Opens (creating) `path` for appending; an existing non-regular file (a FIFO would
/// block the open) is refused with `NotRegular`.
fn open_append(path: &Path) -> Result<File, StoreError> {
    super::files::regular_or_missing(path)?;
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| io_err(format!("opening {}", path.display()), e))
}
