//! The metadata of a session whose metadata files are all unusable, rebuilt from its
//! transcript and event log (issue 8 item 4: a kill during creation, before
//! `metadata.json` was renamed into place, must not lose the session).
//!
//! Owns: [`read_or_rebuild`], the one way the store reads a session's metadata —
//! `metadata.json`, its backup or the temp file of an interrupted write
//! (`metadata_file::read`), else a rebuild — and so the one place the derived status
//! `interrupted` is decided (SPEC §7: readers derive it). Does not own: the files'
//! formats (`metadata_file`, `transcript`, `events`), the lock (`lock`).
//!
//! A session reads as [`SessionStatus::Interrupted`] when
//! - its metadata says `running`, `queued` or `waiting` but no process holds its lock
//!   (`lock::is_held`: the process that wrote it died, `kill -9` included), or
//! - it was rebuilt: it then also has no `config` (a root resumes from its bundle, a
//!   sub-session cannot resume: "Corrupted session metadata").

use std::io::BufReader;
use std::path::Path;

use super::EVENTS_FILE;
use super::files::{CappedLines, MAX_LINE_BYTES, open_regular};
use super::transcript::{TRANSCRIPT_FILE, read_transcript};
use super::{StoreError, lock, metadata_file};
use crate::session::message::Message;
use crate::session::metadata::{Metadata, SessionStatus};
use crate::session::protocol::{EngineEvent, Event};

/// The metadata of the session `id` in `dir` and the warnings reading it gave:
/// `metadata.json`, else `metadata.json.backup`, else `metadata.json.tmp` (each when it
/// parses), else rebuilt from `transcript.jsonl` and `events.jsonl` (status
/// `interrupted`, warning `"metadata rebuilt from transcript.jsonl and events.jsonl
/// (… why …)"`).
///
/// Errors: `Corrupted` (every metadata file's reason) when there is nothing to rebuild
/// from either — no message and no event; the transcript's own errors (`NotRegular`,
/// `LineTooLong`, `Io`) when it cannot be read.
///
/// A stored `running`/`queued`/`waiting` status whose writer is gone reads as
/// `interrupted` (see the module docs); the file itself is not changed.
pub(crate) fn read_or_rebuild(dir: &Path, id: &str) -> Result<(Metadata, Vec<String>), StoreError> {
    let detail = match metadata_file::read(dir, id) {
        Err(StoreError::Corrupted { detail, .. }) => detail,
        Ok((mut metadata, warnings)) => {
            derive_interrupted(dir, &mut metadata);
            return Ok((metadata, warnings));
        }
        Err(other) => return Err(other),
    };
    let (transcript, mut warnings) = read_transcript(&dir.join(TRANSCRIPT_FILE))?;
    let events = read_events(&dir.join(EVENTS_FILE), &mut warnings);
    if transcript.is_empty() && events.is_empty() {
        return Err(StoreError::Corrupted {
            id: id.to_string(),
            detail: format!(
                "{detail}; nothing to rebuild it from ({TRANSCRIPT_FILE} and {EVENTS_FILE} hold no message or event)"
            ),
        });
    }
    let metadata = rebuild(id, &transcript, &events);
    let warning = format!("metadata rebuilt from {TRANSCRIPT_FILE} and {EVENTS_FILE} ({detail})");
    tracing::warn!("session '{id}': {warning}");
    let mut out = vec![warning];
    out.append(&mut warnings);
    Ok((metadata, out))
}

/// Marks an active session whose writer is gone as `interrupted` (SPEC §7). A lock
/// nobody can tell about (`lock::is_held` → `None`) leaves the status as written.
fn derive_interrupted(dir: &Path, metadata: &mut Metadata) {
    let active = matches!(
        metadata.status,
        SessionStatus::Running | SessionStatus::Queued | SessionStatus::Waiting
    );
    if active && lock::is_held(dir) == Some(false) {
        metadata.status = SessionStatus::Interrupted;
    }
}

/// The events of `events.jsonl` arbor reads (`Event::from_log_line`; a line that is
/// torn, not JSON or names an event arbor does not know is skipped; missing file:
/// none). Whatever stops the read (not a regular file, an over-long line, an I/O
/// error) ends it with a warning.
fn read_events(path: &Path, warnings: &mut Vec<String>) -> Vec<Event> {
    let mut events = Vec::new();
    let file = match open_regular(path) {
        Ok(Some(file)) => file,
        Ok(None) => return events,
        Err(e) => {
            warnings.push(e.to_string());
            return events;
        }
    };
    let mut lines = CappedLines::new(BufReader::new(file), path, MAX_LINE_BYTES);
    let mut line = Vec::new();
    loop {
        match lines.next_into(&mut line) {
            Ok(true) => {
                if let Some(event) = std::str::from_utf8(&line)
                    .ok()
                    .and_then(|text| Event::from_log_line(text).ok())
                {
                    events.push(event);
                }
            }
            Ok(false) => return events,
            Err(e) => {
                warnings.push(e.to_string());
                return events;
            }
        }
    }
}

/// What a session's first `session:start` / `session:fork` / `session:resume` says of
/// it: `(agent, depth)`, and of a root's start `(working_dir, bundle, model)`.
struct Start {
    agent: String,
    depth: u32,
    place: Option<(Option<String>, Option<String>, Option<String>)>,
}

/// Metadata for `id` from what its transcript and `events.jsonl` lines tell:
/// parent, agent, depth, bundle, model and working dir from `session:start` /
/// `session:fork` / `session:resume` (else the transcript's authors and the id), turns
/// from `prompt:submit` (else user messages), times from the first and last timestamp.
fn rebuild(id: &str, transcript: &[Message], events: &[Event]) -> Metadata {
    let starts: Vec<Start> = events
        .iter()
        .filter_map(|e| match &e.msg {
            EngineEvent::SessionStart(s) => Some(Start {
                agent: s.agent.clone(),
                depth: s.depth,
                place: Some((s.working_dir.clone(), s.bundle.clone(), s.model.clone())),
            }),
            EngineEvent::SessionFork(f) => Some(Start {
                agent: f.agent.clone(),
                depth: f.depth,
                place: None,
            }),
            EngineEvent::SessionResume(r) => Some(Start {
                agent: r.agent.clone(),
                depth: r.depth,
                place: None,
            }),
            _ => None,
        })
        .collect();
    let place = starts.iter().find_map(|s| s.place.clone());
    let (working_dir, bundle, model) = place.unwrap_or_default();
    let parent_id = events.iter().find_map(|e| e.parent_id.clone());
    let agent_name = starts
        .first()
        .map(|s| s.agent.clone())
        .or_else(|| transcript.iter().find_map(author))
        .or_else(|| id.rsplit_once('_').map(|(_, agent)| agent.to_string()));
    let depth = starts
        .first()
        .map_or(u32::from(parent_id.is_some()), |s| s.depth);
    let prompts = events
        .iter()
        .filter(|e| matches!(e.msg, EngineEvent::PromptSubmit(_)))
        .count();
    let user_messages = transcript
        .iter()
        .filter(|m| matches!(m, Message::User(_)))
        .count();
    let times: Vec<&str> = events
        .iter()
        .map(|e| e.timestamp.as_str())
        .chain(transcript.iter().filter_map(Message::timestamp))
        .collect();
    let first = times.iter().min_by_key(|t| super::timestamp_of(t));
    let last = times.iter().max_by_key(|t| super::timestamp_of(t));
    Metadata {
        session_id: id.into(),
        parent_id,
        agent_name,
        created: first.map(|t| t.to_string()).unwrap_or_default(),
        last_updated: last.map(|t| t.to_string()).unwrap_or_default(),
        turn_count: u32::try_from(prompts.max(user_messages)).unwrap_or(u32::MAX),
        working_dir,
        bundle,
        model,
        status: SessionStatus::Interrupted,
        depth,
        ..Default::default()
    }
}

fn author(message: &Message) -> Option<String> {
    match message {
        Message::Assistant(m) => m.author(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn log_line(event: &str, ts: &str, data: Value) -> String {
        json!({"ts": ts, "lvl": "INFO", "event": event, "session_id": "s", "data": data})
            .to_string()
    }

    #[test]
    fn a_session_is_rebuilt_from_its_events_and_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let events = [
            log_line(
                "session:fork",
                "2025-03-01T12:00:00Z",
                json!({"parent": "p", "agent": "explorer", "depth": 2, "parent_id": "p"}),
            ),
            log_line(
                "prompt:submit",
                "2025-03-01T12:00:01Z",
                json!({"prompt": "go", "parent_id": "p"}),
            ),
            "{torn".to_string(),
        ];
        std::fs::write(dir.path().join(EVENTS_FILE), events.join("\n")).unwrap();
        std::fs::write(
            dir.path().join(TRANSCRIPT_FILE),
            format!(
                "{}\n{}\n",
                json!({"role": "user", "content": "go", "timestamp": "2025-03-01T12:00:01Z"}),
                json!({"role": "assistant", "content": "done", "timestamp": "2025-03-01T12:05:00Z"}),
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join(metadata_file::METADATA_FILE), "{\"sess").unwrap();
        let (m, warnings) = read_or_rebuild(dir.path(), "p-c_explorer").unwrap();
        assert_eq!(m.session_id, "p-c_explorer");
        assert_eq!(m.parent_id.as_deref(), Some("p"));
        assert_eq!(m.agent_name.as_deref(), Some("explorer"));
        assert_eq!((m.depth, m.turn_count), (2, 1));
        assert_eq!(m.created, "2025-03-01T12:00:00Z");
        assert_eq!(m.last_updated, "2025-03-01T12:05:00Z");
        assert_eq!(m.status, SessionStatus::Interrupted);
        assert_eq!(m.config, None);
        assert!(
            warnings[0].starts_with(
                "metadata rebuilt from transcript.jsonl and events.jsonl (metadata.json unreadable"
            ),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_root_is_rebuilt_from_its_start_and_events_arbor_does_not_know_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let events = [
            log_line(
                "session:start",
                "2025-03-01T12:00:00Z",
                json!({"agent": "zen", "depth": 0, "bundle": "bundle:foundation", "model": "openai/gpt-x", "working_dir": "/p"}),
            ),
            // Another tool's event: not read, its time not taken.
            log_line("amplifier:custom", "2025-02-01T00:00:00Z", json!({"x": 1})),
            log_line(
                "prompt:submit",
                "2025-03-01T12:00:01Z",
                json!({"prompt": "go"}),
            ),
            log_line(
                "prompt:submit",
                "2025-03-01T12:03:00Z",
                json!({"prompt": "again"}),
            ),
        ];
        std::fs::write(dir.path().join(EVENTS_FILE), events.join("\n")).unwrap();
        let (m, _) = read_or_rebuild(dir.path(), "5f0e1c2a-1111-4222-8333-444455556666").unwrap();
        assert_eq!(m.parent_id, None);
        assert_eq!(m.agent_name.as_deref(), Some("zen"));
        assert_eq!((m.depth, m.turn_count), (0, 2));
        assert_eq!(m.working_dir.as_deref(), Some("/p"));
        assert_eq!(m.bundle.as_deref(), Some("bundle:foundation"));
        assert_eq!(m.model.as_deref(), Some("openai/gpt-x"));
        assert_eq!(m.created, "2025-03-01T12:00:00Z");
        assert_eq!(m.last_updated, "2025-03-01T12:03:00Z");
        assert_eq!(m.status, SessionStatus::Interrupted);
    }

    #[test]
    fn nothing_to_rebuild_from_is_corrupted_with_every_reason() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(TRANSCRIPT_FILE), "").unwrap();
        std::fs::write(dir.path().join("lock"), "1").unwrap();
        match read_or_rebuild(dir.path(), "s") {
            Err(StoreError::Corrupted { id, detail }) => {
                assert_eq!(id, "s");
                assert_eq!(
                    detail,
                    "metadata.json missing; metadata.json.backup missing; metadata.json.tmp missing; nothing to rebuild it from (transcript.jsonl and events.jsonl hold no message or event)"
                );
            }
            other => panic!("expected Corrupted, got {other:?}"),
        }
    }
}
