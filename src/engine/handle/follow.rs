//! Following the open thread's transcript while another process writes it (issue 23
//! item 13: `arbor session resume ID "more"` from a shell while the TUI shows ID).
//!
//! Owns: [`TranscriptFollow`] — for the one stored session the TUI has open, a
//! thread that wakes when its directory changes (`notify`, as `agent::watcher` uses
//! it; a slow poll as well, for file systems without change events), reads what was
//! appended to `transcript.jsonl` after the bytes already shown (complete lines only;
//! a line still being written waits for its end), and sends each new message as the
//! `message:appended` event live sessions publish on the bus
//! ([`EngineReply::Followed`]; after a `task` call or result also the store's listing,
//! so a front end's tree shows the new sub-sessions). When the session's
//! `metadata.json` changes (a turn started or ended in the other process) its metadata
//! is read again and sent as [`EngineReply::StoredSessionChanged`]. It stops when
//! another session is opened, when the session becomes live in this process (the
//! engine's bus then carries its messages; nothing is shown twice), when the front end
//! is gone, or when the file shrinks (it was rewritten: reopening shows it). Does not
//! own: opening a session (`open`), showing messages (the front end).

use crate::session::ids::SessionId;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::reply::{EngineReply, Replies};
use crate::config::modules::describe;
use crate::engine::EngineError;
use crate::session::store::{METADATA_FILE, TRANSCRIPT_FILE, parse_transcript};
use crate::session::{EngineEvent, Event, Message, Metadata, SessionStatus, SessionStore};

/// How often the file is checked when no change event came: a fallback for file
/// systems whose changes `notify` does not see.
const POLL: Duration = Duration::from_secs(2);

/// Whether a session (by id) is live in this process: its messages then come from
/// the engine's bus.
pub type IsLive = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The stored session to follow.
pub struct FollowSpec {
    /// The session's id.
    pub session_id: SessionId,
    /// Its parent (`None` for a root), for the events sent.
    pub parent_id: Option<SessionId>,
    /// Its directory in the store (`transcript.jsonl` is read there).
    pub dir: PathBuf,
    /// Bytes of `transcript.jsonl` the thread already shows (the open's `covers`).
    pub from: u64,
    /// Whether the session became live in this process (then following stops).
    pub is_live: IsLive,
    /// The store, listed again ([`EngineReply::SessionsListed`]) after a `task` call or
    /// result, so the tree shows the sub-sessions the other process starts.
    pub store: Option<SessionStore>,
}

/// Follows at most one session's transcript at a time (see the module docs).
#[derive(Default)]
pub struct TranscriptFollow {
    current: Mutex<Option<Following>>,
}

/// A running follower; dropping it stops it.
struct Following {
    wake: mpsc::Sender<Wake>,
}

enum Wake {
    Changed,
    Stop,
}

impl Drop for Following {
    fn drop(&mut self) {
        // The thread may have ended already (nobody to tell then).
        let _ = self.wake.send(Wake::Stop);
    }
}

impl TranscriptFollow {
    /// Follows `spec`'s session from now on (any other one stops), replying
    /// `message:appended` events for its new messages ([`EngineReply::Followed`]) to
    /// `results`. A directory that cannot be watched is polled instead (logged).
    pub fn follow(&self, spec: FollowSpec, results: Replies) {
        let (wake, woken) = mpsc::channel();
        let notifier = wake.clone();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok_and(|e| wakes(&e)) {
                let _ = notifier.send(Wake::Changed);
            }
        })
        .and_then(|mut w| w.watch(&spec.dir, RecursiveMode::NonRecursive).map(|()| w));
        let watcher = match watcher {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::debug!(session = %spec.session_id, "transcript not watched, polled: {e}");
                None
            }
        };
        let id = spec.session_id.clone();
        let spawned = std::thread::Builder::new()
            .name("arbor-follow".into())
            .spawn(move || {
                let _watcher = watcher;
                follow_loop(&spec, &woken, &results);
            });
        match spawned {
            Ok(_) => self.replace(Some(Following { wake })),
            Err(e) => {
                tracing::warn!(session = %id, "cannot follow the transcript: {e}");
                self.replace(None);
            }
        }
    }

    /// Stops following (a session live in this process was opened).
    pub fn stop(&self) {
        self.replace(None);
    }

    fn replace(&self, next: Option<Following>) {
        let previous = std::mem::replace(
            &mut *self.current.lock().unwrap_or_else(PoisonError::into_inner),
            next,
        );
        drop(previous);
    }
}

/// Whether `event` is a change of the followed session's transcript or metadata. An
/// access (a file opened or closed) is not: the follower's own reads are accesses, and
/// waking on them kept it reading both files in a loop (a core busy for as long as a
/// stored session was open); a write comes as a modification too.
fn wakes(event: &notify::Event) -> bool {
    !matches!(event.kind, notify::EventKind::Access(_))
        && event
            .paths
            .iter()
            .any(|p| p.ends_with(TRANSCRIPT_FILE) || p.ends_with(METADATA_FILE))
}

/// The follower thread: waits for a change (or the poll), then sends what was
/// appended; returns when told to stop or when following must end.
fn follow_loop(spec: &FollowSpec, woken: &mpsc::Receiver<Wake>, results: &Replies) {
    let path = spec.dir.join(TRANSCRIPT_FILE);
    let mut offset = spec.from;
    // What the tree was last told of the session's metadata.
    let mut told: Option<MetadataKey> = None;
    // The first read is at once: lines may have come since the open read the file.
    let mut waited = true;
    loop {
        if !std::mem::replace(&mut waited, false) {
            match woken.recv_timeout(POLL) {
                Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(Wake::Changed) | Err(RecvTimeoutError::Timeout) => {}
            }
        }
        // A burst of changes is read once.
        while let Ok(wake) = woken.try_recv() {
            if matches!(wake, Wake::Stop) {
                return;
            }
        }
        if (spec.is_live)(&spec.session_id) {
            return;
        }
        let messages = match read_appended(&path, &mut offset) {
            Ok(Some(messages)) => messages,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!(session = %spec.session_id, "transcript not read: {e}");
                continue;
            }
        };
        // Read after the session went live: the bus shows these (the engine appends
        // only once it is live).
        if (spec.is_live)(&spec.session_id) {
            return;
        }
        // A delegation call (its sub-session may exist by now) or its result (it does).
        let delegated = messages.iter().any(|m| match m {
            Message::Assistant(a) => a.tool_calls.iter().any(|c| describe(&c.tool).delegates()),
            Message::Tool(t) => describe(&t.name).delegates(),
            _ => false,
        });
        for message in messages {
            let event = Event::new(
                &spec.session_id,
                spec.parent_id.as_deref(),
                EngineEvent::appended(message),
            );
            if !results.send(EngineReply::Followed(Arc::new(event))) {
                return;
            }
        }
        if delegated && let Some(store) = &spec.store {
            let listed = store.list().map_err(EngineError::from);
            if !results.send(EngineReply::SessionsListed(listed)) {
                return;
            }
        }
        if let Some(store) = &spec.store
            && let Ok((metadata, _)) = store.load_metadata(&spec.session_id)
        {
            let key = MetadataKey::of(&metadata);
            if told.as_ref() != Some(&key) && !(spec.is_live)(&spec.session_id) {
                told = Some(key);
                if !results.send(EngineReply::StoredSessionChanged(Box::new(metadata))) {
                    return;
                }
            }
        }
    }
}

/// What of a session's metadata the tree shows: sent again when it changes.
#[derive(PartialEq)]
struct MetadataKey {
    status: SessionStatus,
    last_updated: String,
    turn_started: Option<String>,
    name: Option<String>,
    tokens: u64,
    files: usize,
}

impl MetadataKey {
    fn of(m: &Metadata) -> Self {
        Self {
            status: m.status,
            last_updated: m.last_updated.clone(),
            turn_started: m.arbor.turn_started.clone(),
            name: m.name.clone(),
            tokens: m.usage.input_tokens + m.usage.output_tokens,
            files: m.arbor.files_changed.len(),
        }
    }
}

/// The messages of the complete lines appended to `path` after byte `offset`, which
/// moves past them. `Ok(None)`: the file is shorter than `offset` (rewritten) or gone.
fn read_appended(path: &Path, offset: &mut u64) -> std::io::Result<Option<Vec<Message>>> {
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    if len < *offset {
        return Ok(None);
    }
    if len == *offset {
        return Ok(Some(Vec::new()));
    }
    file.seek(SeekFrom::Start(*offset))?;
    let mut bytes = Vec::new();
    file.take(len - *offset).read_to_end(&mut bytes)?;
    let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
        return Ok(Some(Vec::new()));
    };
    let complete = &bytes[..=end];
    let (messages, warnings) = parse_transcript(complete);
    for warning in warnings {
        tracing::debug!("{}: {warning}", path.display());
    }
    *offset += u64::try_from(complete.len()).unwrap_or(0);
    Ok(Some(messages))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn its_own_reads_do_not_wake_the_follower() {
        use notify::event::{AccessKind, AccessMode, CreateKind, DataChange, ModifyKind};
        use notify::{Event as Change, EventKind};
        let dir = Path::new("/s/1beedfe8");
        let at = |kind, file: &str| Change::new(kind).add_path(dir.join(file));
        let opened = EventKind::Access(AccessKind::Open(AccessMode::Any));
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        let written = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        assert!(!wakes(&at(opened, TRANSCRIPT_FILE)));
        assert!(!wakes(&at(opened, METADATA_FILE)));
        assert!(!wakes(&at(closed, TRANSCRIPT_FILE)));
        assert!(wakes(&at(written, TRANSCRIPT_FILE)));
        assert!(wakes(&at(written, METADATA_FILE)));
        assert!(wakes(&at(
            EventKind::Create(CreateKind::File),
            METADATA_FILE
        )));
        assert!(!wakes(&at(written, "events.jsonl")));
    }

    #[test]
    fn only_complete_appended_lines_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRANSCRIPT_FILE);
        std::fs::write(&path, "{\"role\":\"user\",\"content\":\"old\"}\n").unwrap();
        let mut offset = std::fs::metadata(&path).unwrap().len();
        assert_eq!(read_appended(&path, &mut offset).unwrap(), Some(vec![]));
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        write!(
            file,
            "{{\"role\":\"user\",\"content\":\"new\"}}\n{{\"role\":\"assis"
        )
        .unwrap();
        let read = read_appended(&path, &mut offset).unwrap().unwrap();
        assert_eq!(read.iter().map(|m| m.text()).collect::<Vec<_>>(), ["new"]);
        writeln!(file, "tant\",\"content\":\"done\"}}").unwrap();
        let read = read_appended(&path, &mut offset).unwrap().unwrap();
        assert_eq!(read.iter().map(|m| m.text()).collect::<Vec<_>>(), ["done"]);
        std::fs::write(&path, "").unwrap();
        assert_eq!(read_appended(&path, &mut offset).unwrap(), None, "shrunk");
    }
}
