//! "Needs you" acknowledgements kept across restarts (issue 23 item 8): a failed or
//! interrupted session the person opened stops needing them (`state::tree::needs_you`);
//! this remembers that, so a restart does not count it again. Kept in
//! `Paths::seen_file` (`seen/<project slug>.json` in arbor's state directory).
//!
//! File shape: one JSON object, session id → `{"status": "failed", "at": RFC 3339}` —
//! the status the person saw and when. Written whole through a temp file renamed over
//! it (never half-written); an unreadable file is an empty store. At most [`CAP`]
//! entries (the newest kept).
//!
//! A stored session counts as acknowledged when its status is the one seen and it was
//! last updated no later than [`SLACK_MS`] after the person saw it (the engine may
//! write the metadata just after the status event the TUI showed); a session that
//! moved on since (continued, failed again) is not. The `App` also forgets an
//! acknowledgement as soon as it sees the session's status change.
//!
//! Owns: the file, and the rule above. Does not own: when a session counts as seen
//! (`app::needs_you`).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::session::SessionStatus;

/// Acknowledgements kept (the newest).
pub const CAP: usize = 2_000;

/// How long after an acknowledgement a session's metadata may still have been written
/// for the same status (milliseconds).
pub const SLACK_MS: i64 = 5_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Ack {
    status: SessionStatus,
    at: Timestamp,
}

/// The acknowledgements of one project.
#[derive(Debug, Clone, Default)]
pub struct SeenStore {
    /// Where they are kept (`None`: in memory only).
    path: Option<PathBuf>,
    acks: HashMap<String, Ack>,
}

impl SeenStore {
    /// Reads the store at `path` (missing or unreadable: empty, still written to).
    pub fn load(path: PathBuf) -> Self {
        let acks = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        Self {
            path: Some(path),
            acks,
        }
    }

    /// Whether session `id`, now `status` and last updated at `updated`, was seen by
    /// the person in that status (see the module doc).
    pub fn acknowledged(
        &self,
        id: &str,
        status: SessionStatus,
        updated: Option<Timestamp>,
    ) -> bool {
        self.acks.get(id).is_some_and(|a| {
            a.status == status
                && updated.is_none_or(|u| u.as_millisecond() <= a.at.as_millisecond() + SLACK_MS)
        })
    }

    /// The status `id` was seen in, if kept.
    pub fn status_of(&self, id: &str) -> Option<SessionStatus> {
        self.acks.get(id).map(|a| a.status)
    }

    /// Records that the person saw `id` in `status` at `at`, and writes the file.
    ///
    /// Errors: the file cannot be written (the acknowledgement holds in memory).
    pub fn record(
        &mut self,
        id: &str,
        status: SessionStatus,
        at: Timestamp,
    ) -> Result<(), SeenError> {
        if self.acks.get(id).is_some_and(|a| a.status == status) {
            return Ok(());
        }
        self.acks.insert(id.to_string(), Ack { status, at });
        if self.acks.len() > CAP {
            let mut by_age: Vec<(Timestamp, String)> =
                self.acks.iter().map(|(k, a)| (a.at, k.clone())).collect();
            by_age.sort();
            for (_, k) in by_age.into_iter().take(self.acks.len() - CAP) {
                self.acks.remove(&k);
            }
        }
        self.save()
    }

    /// Forgets `id` (its status changed) and writes the file when it was kept.
    ///
    /// Errors: the file cannot be written.
    pub fn forget(&mut self, id: &str) -> Result<(), SeenError> {
        if self.acks.remove(id).is_none() {
            return Ok(());
        }
        self.save()
    }

    /// Session ids kept.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.acks.keys().map(String::as_str)
    }

    fn save(&self) -> Result<(), SeenError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let dir = path.parent().ok_or(SeenError::NoDirectory)?;
        std::fs::create_dir_all(dir).map_err(|source| SeenError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
        let text = serde_json::to_string(&self.acks)?;
        let write = |source| SeenError::Write {
            path: path.clone(),
            source,
        };
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(write)?;
        tmp.write_all(text.as_bytes()).map_err(write)?;
        tmp.persist(path).map_err(|e| write(e.error))?;
        Ok(())
    }
}

/// Why the seen file was not written (the acknowledgements hold in memory).
#[derive(Debug, thiserror::Error)]
pub enum SeenError {
    /// The file's path has no parent directory.
    #[error("no directory for the seen file")]
    NoDirectory,
    /// Its directory cannot be created.
    #[error("creating {}: {source}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file cannot be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The acknowledgements cannot be encoded as JSON.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn kept_across_loads_and_only_for_the_status_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seen").join("p.json");
        let mut store = SeenStore::load(path.clone());
        let at = ts("2025-03-01T12:00:00Z");
        store.record("a", SessionStatus::Failed, at).unwrap();
        let again = SeenStore::load(path.clone());
        let early = Some(ts("2025-03-01T12:00:03Z"));
        assert!(again.acknowledged("a", SessionStatus::Failed, early));
        assert!(!again.acknowledged("a", SessionStatus::Interrupted, early));
        let later = Some(ts("2025-03-01T12:05:00Z"));
        assert!(!again.acknowledged("a", SessionStatus::Failed, later));
        assert!(!again.acknowledged("b", SessionStatus::Failed, early));
        let mut again = again;
        again.forget("a").unwrap();
        assert!(!SeenStore::load(path).acknowledged("a", SessionStatus::Failed, early));
    }

    #[test]
    fn an_unreadable_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seen.json");
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(SeenStore::load(path).ids().count(), 0);
    }
}
