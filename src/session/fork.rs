//! Forking a stored session at a turn (issue 25 item 5), as amplifier-foundation's
//! `session/fork.py` (`fork_session`, d0d96f7) does, so Amplifier's `SessionStore`
//! and `amplifier session resume` open the result and arbor resumes it at once.
//!
//! A turn is a `user` message and everything up to the next one (foundation's
//! `messages.py`: `get_turn_boundaries`, `count_turns`), 1-indexed. The fork:
//!
//! - `transcript.jsonl`: the messages up to the end of turn N, tool calls left
//!   without a result completed by a synthetic one right after their assistant
//!   message (`add_synthetic_tool_results`, same content; an assistant message
//!   closing the turn when a user message followed);
//! - `metadata.json`: foundation's keys — `session_id`, `parent_id` (the original),
//!   `forked_from_turn`, `forked_at`, `created`, `turn_count` (of the slice),
//!   `bundle`, `model` — plus what arbor needs to resume it without a rebuild (the
//!   original's `agent_name`, `working_dir`, `config`, `agent_overlay`, resolved
//!   model), `status: idle`, `depth: 0` (a fork is a root for depth and limits),
//!   `last_updated` and a title `name`;
//! - `events.jsonl`: the original's events up to the timestamp of turn N's last
//!   timestamped message, each with `session_id` rewritten to the fork's and
//!   `parent_session_id` set to the original (`slice_events_for_fork`).
//!
//! Owns: [`fork`] and [`count_turns`]. Does not own: resolving ids (`store`), the
//! command (`cli::session`).

use std::path::Path;

use serde_json::{Map, Value, json};

use super::ids::SessionId;
use super::message::now_rfc3339;
use super::store::{SessionStore, StoreError};

/// foundation's `_DEFAULT_SYNTHETIC_TOOL_CONTENT` (a JSON string, compact as
/// Python's `json.dumps` writes it: `", "` and `": "` separators).
const SYNTHETIC_TOOL: &str = "{\"error\": \"Tool execution interrupted by session fork\", \"forked\": true, \"message\": \"This tool call was in progress when the session was forked. The result is not available in this forked session.\"}";

/// foundation's `_DEFAULT_SYNTHETIC_ASSISTANT_CONTENT`.
const SYNTHETIC_ASSISTANT: &str = "The previous tool calls were interrupted by a session fork. Results are not available in this forked session.";

/// The metadata keys arbor copies from the original so the fork resumes as it would.
const KEPT: &[&str] = &[
    "agent_name",
    "working_dir",
    "config",
    "agent_overlay",
    "resolved_model",
    "agent_source",
    "model_role",
    "provider_preferences",
];

/// Why a fork was refused; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// The original could not be read (not found, invalid id, unreadable).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The original has no user message.
    #[error("Cannot fork: session has no user messages")]
    NoTurns,
    /// foundation's wording: `Turn 7 out of range. Valid range: 1-3`.
    #[error("Turn {turn} out of range. Valid range: 1-{max}")]
    OutOfRange { turn: u64, max: u64 },
    /// `--name` names a session that exists.
    #[error("a session named '{0}' already exists")]
    Exists(String),
    /// Writing the fork's files failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// A fork made: `{session_id, parent_id, forked_from_turn}` (what `--json` prints)
/// and the counts foundation's `ForkResult` reports.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Forked {
    /// The new session.
    pub session_id: SessionId,
    /// The session it was forked from.
    pub parent_id: SessionId,
    /// The last turn it holds (1-based).
    pub forked_from_turn: u64,
    /// Messages in its transcript (synthetic results included).
    #[serde(skip)]
    pub message_count: usize,
    /// Events copied into its `events.jsonl`.
    #[serde(skip)]
    pub events_count: usize,
}

/// The number of turns (user messages) of `messages`.
pub fn count_turns(messages: &[Value]) -> u64 {
    messages.iter().filter(|m| is_user(m)).count() as u64
}

fn is_user(m: &Value) -> bool {
    m.get("role").and_then(Value::as_str) == Some("user")
}

/// Forks session `id` of `store` at turn `turn` (`None`: the latest), as a new
/// session beside it named `name` (its id; a new UUID when `None`).
///
/// Errors: the original's store errors (not found, invalid id); `NoTurns`;
/// `OutOfRange` naming the valid range; `Exists` for a taken `name`; `Io`.
pub fn fork(
    store: &SessionStore,
    id: &str,
    turn: Option<u64>,
    name: Option<&str>,
) -> Result<Forked, ForkError> {
    let (metadata, _) = store.load_metadata(id)?;
    let dir = store.session_dir(id)?;
    let messages = read_jsonl(&dir.join("transcript.jsonl"));
    let max = count_turns(&messages);
    if max == 0 {
        return Err(ForkError::NoTurns);
    }
    let turn = turn.unwrap_or(max);
    if turn < 1 || turn > max {
        return Err(ForkError::OutOfRange { turn, max });
    }
    let sliced = slice_to_turn(&messages, turn);
    let new_id = match name {
        Some(n) => SessionId::parse(n).map_err(StoreError::from)?,
        None => SessionId::new_root(),
    };
    if store.exists(&new_id) {
        return Err(ForkError::Exists(new_id.to_string()));
    }
    let final_dir = store.session_dir(&new_id)?;
    // Filled under the store's staging name and renamed into place, so a crash
    // leaves a whole fork or none (as `SessionStore::create`).
    let new_dir = store.root().join(format!(".creating-{new_id}"));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ForkError::Io { path, source }
    };
    std::fs::create_dir_all(&new_dir).map_err(io(&new_dir))?;
    let transcript = new_dir.join("transcript.jsonl");
    std::fs::write(&transcript, jsonl(&sliced)).map_err(io(&transcript))?;

    let original = serde_json::to_value(&metadata).unwrap_or(Value::Null);
    let now = now_rfc3339();
    let mut meta = Map::new();
    meta.insert("session_id".into(), json!(new_id));
    meta.insert("parent_id".into(), json!(metadata.session_id));
    meta.insert("forked_from_turn".into(), json!(turn));
    meta.insert("forked_at".into(), json!(now));
    meta.insert("created".into(), json!(now));
    meta.insert("turn_count".into(), json!(count_turns(&sliced)));
    meta.insert("bundle".into(), json!(metadata.bundle));
    meta.insert("model".into(), json!(metadata.model));
    for key in KEPT {
        if let Some(v) = original.get(*key).filter(|v| !v.is_null()) {
            meta.insert((*key).into(), v.clone());
        }
    }
    meta.insert("last_updated".into(), json!(now));
    meta.insert("status".into(), json!("idle"));
    meta.insert("depth".into(), json!(0));
    let title = name.map(str::to_string).unwrap_or_else(|| {
        let base = metadata
            .name
            .clone()
            .unwrap_or_else(|| short(&metadata.session_id));
        format!("{base} (fork @{turn})")
    });
    meta.insert("name".into(), json!(title));
    let meta_path = new_dir.join("metadata.json");
    let text = serde_json::to_string_pretty(&Value::Object(meta)).unwrap_or_default();
    std::fs::write(&meta_path, text).map_err(io(&meta_path))?;

    let events = slice_events(&dir, &messages, turn, &new_id, &metadata.session_id);
    let events_path = new_dir.join("events.jsonl");
    std::fs::write(&events_path, jsonl(&events)).map_err(io(&events_path))?;
    std::fs::rename(&new_dir, &final_dir).map_err(io(&final_dir))?;
    Ok(Forked {
        session_id: new_id,
        parent_id: metadata.session_id,
        forked_from_turn: turn,
        message_count: sliced.len(),
        events_count: events.len(),
    })
}

fn short(id: &str) -> String {
    id.chars().take(8).collect()
}

/// The lines of a JSONL file that parse (a torn or bad line is skipped, as
/// foundation's readers do); empty when the file is missing.
fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn jsonl(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

/// Index of the first message of turn `turn + 1`, or the end.
fn end_of_turn(messages: &[Value], turn: u64) -> usize {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| is_user(m))
        .nth(usize::try_from(turn).unwrap_or(usize::MAX))
        .map_or(messages.len(), |(i, _)| i)
}

/// foundation's `slice_to_turn(messages, turn)` with `handle_orphaned_tools="complete"`.
pub fn slice_to_turn(messages: &[Value], turn: u64) -> Vec<Value> {
    let sliced = &messages[..end_of_turn(messages, turn)];
    let answered: Vec<&str> = sliced
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .filter_map(|m| m.get("tool_call_id").and_then(Value::as_str))
        .collect();
    let mut out = Vec::with_capacity(sliced.len());
    for (i, msg) in sliced.iter().enumerate() {
        out.push(msg.clone());
        if msg.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        let orphans: Vec<(String, Option<String>)> = calls_of(msg)
            .into_iter()
            .filter(|(id, _)| !answered.contains(&id.as_str()))
            .collect();
        if orphans.is_empty() {
            continue;
        }
        for (id, name) in orphans {
            let mut result = json!({"role": "tool", "tool_call_id": id, "content": SYNTHETIC_TOOL});
            if let Some(name) = name {
                result["name"] = json!(name);
            }
            out.push(result);
        }
        if sliced.get(i + 1).is_some_and(is_user) {
            out.push(json!({"role": "assistant", "content": SYNTHETIC_ASSISTANT}));
        }
    }
    out
}

/// The tool calls of an assistant message as foundation finds them: `tool_calls[]`
/// (`id`; name from `function.name` or `name`, or arbor's `tool`) and `tool_use`
/// content blocks.
fn calls_of(msg: &Value) -> Vec<(String, Option<String>)> {
    let mut calls = Vec::new();
    for tc in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(id) = tc
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            continue;
        };
        let name = tc
            .pointer("/function/name")
            .or_else(|| tc.get("name"))
            .or_else(|| tc.get("tool"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        calls.push((id.to_string(), name));
    }
    for block in msg
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if block.get("type").and_then(Value::as_str) == Some("tool_use")
            && let Some(id) = block.get("id").and_then(Value::as_str)
        {
            let name = block
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string);
            calls.push((id.to_string(), name));
        }
    }
    calls
}

/// foundation's `slice_events_for_fork`: the events up to the last timestamp of
/// turn `turn`, re-addressed to the fork. None when that turn has no timestamp.
fn slice_events(
    dir: &Path,
    messages: &[Value],
    turn: u64,
    new_id: &str,
    parent: &str,
) -> Vec<Value> {
    let start = end_of_turn(messages, turn - 1);
    let end = end_of_turn(messages, turn);
    let cutoff = messages[start..end].iter().rev().find_map(|m| {
        m.get("timestamp")
            .or_else(|| m.get("ts"))
            .and_then(Value::as_str)
            .and_then(super::store::timestamp_of)
    });
    let Some(cutoff) = cutoff else {
        return Vec::new();
    };
    read_jsonl(&dir.join("events.jsonl"))
        .into_iter()
        .filter(|e| {
            e.get("ts")
                .or_else(|| e.get("timestamp"))
                .and_then(Value::as_str)
                .and_then(super::store::timestamp_of)
                .is_none_or(|ts| ts <= cutoff)
        })
        .map(|mut e| {
            if e.get("session_id").is_some_and(|v| !v.is_null()) {
                e["parent_session_id"] = json!(parent);
            }
            e["session_id"] = json!(new_id);
            e
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Value {
        json!({"role": "assistant", "content": [{"type": "tool_call", "id": id, "name": "bash", "input": {}}],
               "tool_calls": [{"id": id, "tool": "bash", "arguments": {}}]})
    }

    #[test]
    fn slices_at_a_turn_and_completes_unanswered_calls() {
        let messages = vec![
            json!({"role": "user", "content": "one"}),
            call("c1"),
            json!({"role": "user", "content": "two"}),
            json!({"role": "assistant", "content": "done"}),
        ];
        assert_eq!(count_turns(&messages), 2);
        let one = slice_to_turn(&messages, 1);
        assert_eq!(one.len(), 3, "{one:?}");
        assert_eq!(one[2]["role"], "tool");
        assert_eq!(one[2]["tool_call_id"], "c1");
        assert_eq!(one[2]["name"], "bash");
        assert_eq!(one[2]["content"], SYNTHETIC_TOOL);
        // As foundation: a user message after the call (inside the slice) gets a
        // synthetic assistant reply before it.
        let two = slice_to_turn(&messages, 2);
        assert_eq!(two.len(), 6, "{two:?}");
        assert_eq!(two[3]["content"], SYNTHETIC_ASSISTANT);
        assert_eq!(two[4]["content"], "two");
    }

    #[test]
    fn the_synthetic_content_is_foundations_json() {
        let v: Value = serde_json::from_str(SYNTHETIC_TOOL).unwrap();
        assert_eq!(v["forked"], true);
        assert_eq!(v["error"], "Tool execution interrupted by session fork");
    }
}
