//! Which sub-session each `task` call of a session started or resumed, read back from
//! the session's `events.jsonl` (issue 23 item 1: a parent whose process died during
//! its task calls gets each continued child's answer as the call's result).
//!
//! Owns: [`SessionStore::task_calls`] and [`SessionStore::task_links`]. Does not own:
//! the event shapes (`protocol`: `tool:pre` carries `tool_call_id` and, for a task
//! call, `sub_session_id` — written before the sub-session is created, so a kill at any
//! later point leaves the link), what is done with the links (`engine::recovered`),
//! carrying them to a worker (`remote::wire::TaskCalls`).

use std::collections::HashMap;
use std::io::BufReader;

use super::EVENTS_FILE;
use super::files::{CappedLines, MAX_LINE_BYTES, open_regular};
use super::{SessionStore, StoreError};
use crate::session::protocol::{EngineEvent, Event, ToolPreEvent};

impl SessionStore {
    /// The `tool:pre` event of every `task` call of session `id` (those with
    /// [`crate::session::protocol::TaskCallFields`]), in the order of its
    /// `events.jsonl`. A missing `events.jsonl` gives none; lines that do not parse are
    /// skipped, and a read that fails part-way keeps what was read before it (logged).
    ///
    /// Errors: an invalid id (`InvalidId`), no such session (`NotFound`).
    pub fn task_calls(&self, id: &str) -> Result<Vec<ToolPreEvent>, StoreError> {
        let path = self.existing_dir(id)?.join(EVENTS_FILE);
        let mut calls = Vec::new();
        let file = match open_regular(&path) {
            Ok(Some(file)) => file,
            Ok(None) => return Ok(calls),
            Err(e) => {
                tracing::warn!(session = id, "task links not read: {e}");
                return Ok(calls);
            }
        };
        let mut lines = CappedLines::new(BufReader::new(file), &path, MAX_LINE_BYTES);
        let mut line = Vec::new();
        loop {
            match lines.next_into(&mut line) {
                Ok(true) => {}
                Ok(false) => return Ok(calls),
                Err(e) => {
                    tracing::warn!(session = id, "task links read in part: {e}");
                    return Ok(calls);
                }
            }
            // Most lines are other events: parse only the task calls' `tool:pre`.
            let text = String::from_utf8_lossy(&line);
            if !text.contains("\"tool:pre\"") || !text.contains("sub_session_id") {
                continue;
            }
            if let Ok(Event {
                msg: EngineEvent::ToolPre(pre),
                ..
            }) = Event::from_log_line(&text)
                && pre.task.is_some()
            {
                calls.push(pre);
            }
        }
    }

    /// `tool_call_id → sub_session_id` for every `task` call of session `id`
    /// ([`SessionStore::task_calls`]; a call id that repeats across turns maps to its
    /// latest call's sub-session).
    ///
    /// Errors: as [`SessionStore::task_calls`].
    pub fn task_links(&self, id: &str) -> Result<HashMap<String, String>, StoreError> {
        Ok(self
            .task_calls(id)?
            .into_iter()
            .filter_map(|pre| {
                let task = pre.task?;
                Some((
                    String::from(pre.tool_call_id),
                    String::from(task.sub_session_id),
                ))
            })
            .collect())
    }
}
