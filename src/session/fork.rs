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
//!   `last_updated` and a title `name`, written as a [`Metadata`] (so with the keys
//!   arbor writes for every session, `usage` and `files_changed` included);
//! - `events.jsonl`: the original's events up to the timestamp of turn N's last
//!   timestamped message, each with `session_id` rewritten to the fork's and
//!   `parent_session_id` set to the original (`slice_events_for_fork`).
//!
//! Lines are read with the transcript's own reader (`session::message`, plus the
//! Anthropic `tool_use` blocks foundation counts as calls and that reader drops) and
//! the event log's (`protocol::StoredEvent`), and copied as written. A transcript line
//! the reader refuses is copied and never counts as a turn; message timestamps are
//! `timestamp` (foundation also tries `ts`, which neither writer puts on a message).
//!
//! Owns: [`fork`] and [`count_turns`]. Does not own: resolving ids (`store`), the
//! command (`cli::session`).

use std::path::Path;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::json;

use super::ids::SessionId;
use super::message::{Message, now_rfc3339};
use super::metadata::{ArborKeys, Metadata, SessionStatus};
use super::protocol::StoredEvent;
use super::store::{SessionStore, StoreError};

/// foundation's `_DEFAULT_SYNTHETIC_TOOL_CONTENT` (a JSON string, compact as
/// Python's `json.dumps` writes it: `", "` and `": "` separators).
const SYNTHETIC_TOOL: &str = "{\"error\": \"Tool execution interrupted by session fork\", \"forked\": true, \"message\": \"This tool call was in progress when the session was forked. The result is not available in this forked session.\"}";

/// foundation's `_DEFAULT_SYNTHETIC_ASSISTANT_CONTENT`.
const SYNTHETIC_ASSISTANT: &str = "The previous tool calls were interrupted by a session fork. Results are not available in this forked session.";

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

/// One transcript line as the fork copies it: the line as written and the message
/// the transcript's reader (`session::message`) makes of it.
#[derive(Debug, Clone)]
pub struct Line {
    /// The line as written; the fork copies it unchanged.
    text: String,
    /// The message; `None` for a line the reader refuses (copied, never a turn).
    message: Option<Message>,
    /// The calls of its content blocks of type `tool_use` (Anthropic's form, which
    /// foundation's fork counts and arbor's reader drops): `(id, name)`.
    tool_uses: Vec<(String, Option<String>)>,
}

impl Line {
    /// Reads one line: `None` for a blank line or one that is not JSON (a torn or
    /// bad line is skipped, as foundation's readers do).
    pub fn read(text: &str) -> Option<Self> {
        if text.trim().is_empty() || serde_json::from_str::<IgnoredAny>(text).is_err() {
            return None;
        }
        let message = serde_json::from_str::<Message>(text).ok();
        let tool_uses = match &message {
            Some(Message::Assistant(_)) => serde_json::from_str::<ToolUses>(text)
                .map(|t| t.content)
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Some(Self {
            text: text.to_string(),
            message,
            tool_uses,
        })
    }

    /// A line arbor writes itself (foundation's synthetic messages).
    fn synthetic(value: &serde_json::Value) -> Self {
        Self {
            text: value.to_string(),
            message: serde_json::from_value(value.clone()).ok(),
            tool_uses: Vec::new(),
        }
    }

    fn is_user(&self) -> bool {
        matches!(self.message, Some(Message::User(_)))
    }

    /// The tool calls of an assistant message as foundation finds them: `tool_calls[]`
    /// (`id`; name from `function.name`, or arbor's `tool`, or `name`) and Anthropic's
    /// `tool_use` content blocks.
    fn calls(&self) -> Vec<(String, Option<String>)> {
        let Some(Message::Assistant(m)) = &self.message else {
            return Vec::new();
        };
        let named = |name: &str| Some(name.to_string()).filter(|n| !n.is_empty());
        m.tool_calls
            .iter()
            .filter(|c| !c.id.is_empty())
            .map(|c| (c.id.clone(), named(&c.tool)))
            .chain(
                self.tool_uses
                    .iter()
                    .map(|(id, name)| (id.clone(), name.as_deref().and_then(named))),
            )
            .collect()
    }
}

/// The `tool_use` blocks of a line's `content`; anything else in it is skipped.
#[derive(Deserialize)]
struct ToolUses {
    #[serde(default, deserialize_with = "tool_use_blocks")]
    content: Vec<(String, Option<String>)>,
}

fn tool_use_blocks<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, Option<String>)>, D::Error> {
    #[derive(Deserialize)]
    struct Block {
        #[serde(rename = "type")]
        kind: String,
        id: String,
        #[serde(default)]
        name: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Item {
        Block(Block),
        Other(IgnoredAny),
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Content {
        Blocks(Vec<Item>),
        Other(IgnoredAny),
    }
    Ok(match Content::deserialize(d)? {
        Content::Blocks(items) => items
            .into_iter()
            .filter_map(|item| match item {
                Item::Block(b) if b.kind == "tool_use" => Some((b.id, b.name)),
                _ => None,
            })
            .collect(),
        Content::Other(_) => Vec::new(),
    })
}

/// The number of turns (user messages) of `messages`.
pub fn count_turns(messages: &[Line]) -> u64 {
    messages.iter().filter(|m| m.is_user()).count() as u64
}

/// Forks session `id` of `store` at turn `turn` (`None`: the latest), as a new
/// session beside it with a new UUID, titled `title` (`None`: the original's title
/// with ` (fork @N)`).
///
/// Errors: the original's store errors (not found, invalid id); `NoTurns`;
/// `OutOfRange` naming the valid range; `Io`.
pub fn fork(
    store: &SessionStore,
    id: &str,
    turn: Option<u64>,
    title: Option<&str>,
) -> Result<Forked, ForkError> {
    let (metadata, _) = store.load_metadata(id)?;
    let dir = store.session_dir(id)?;
    let messages: Vec<Line> = read_lines(&dir.join("transcript.jsonl"))
        .iter()
        .filter_map(|l| Line::read(l))
        .collect();
    let max = count_turns(&messages);
    if max == 0 {
        return Err(ForkError::NoTurns);
    }
    let turn = turn.unwrap_or(max);
    if turn < 1 || turn > max {
        return Err(ForkError::OutOfRange { turn, max });
    }
    let sliced = slice_to_turn(&messages, turn);
    let new_id = SessionId::new_root();
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
    std::fs::write(&transcript, jsonl(sliced.iter().map(|l| l.text.as_str())))
        .map_err(io(&transcript))?;

    let meta = fork_metadata(&metadata, &new_id, turn, count_turns(&sliced), title);
    let meta_path = new_dir.join("metadata.json");
    let text = serde_json::to_string_pretty(&meta).unwrap_or_default();
    std::fs::write(&meta_path, text).map_err(io(&meta_path))?;

    let events = slice_events(&dir, &messages, turn, &new_id, &metadata.session_id);
    let events_path = new_dir.join("events.jsonl");
    std::fs::write(&events_path, jsonl(events.iter().map(String::as_str)))
        .map_err(io(&events_path))?;
    std::fs::rename(&new_dir, &final_dir).map_err(io(&final_dir))?;
    Ok(Forked {
        session_id: new_id,
        parent_id: metadata.session_id,
        forked_from_turn: turn,
        message_count: sliced.len(),
        events_count: events.len(),
    })
}

/// `title` without a trailing ` (fork @N)` (a fork of a fork is marked once).
fn without_fork_mark(title: &str) -> &str {
    match title.rsplit_once(" (fork @") {
        Some((base, rest))
            if rest
                .strip_suffix(')')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            base
        }
        _ => title,
    }
}

/// The fork's `metadata.json`: foundation's keys (`session_id`, `parent_id` — the
/// original —, `forked_from_turn`, `forked_at`, `created`, `turn_count` of the slice,
/// `bundle`, `model`), what arbor needs to resume it as the original would (its
/// `agent_name`, `working_dir`, `config`, `agent_overlay`, and of arbor's keys the
/// resolved model, agent tier and the task call's model choice), `status: idle`,
/// `depth: 0`, `last_updated` and a title `name` (`title`, else the original's title
/// or short id with one ` (fork @N)`).
fn fork_metadata(
    original: &Metadata,
    id: &SessionId,
    turn: u64,
    turns: u64,
    title: Option<&str>,
) -> Metadata {
    let now = now_rfc3339();
    let title = title.map(str::to_string).unwrap_or_else(|| {
        let base = original
            .name
            .clone()
            .unwrap_or_else(|| short(&original.session_id));
        format!("{} (fork @{turn})", without_fork_mark(&base))
    });
    let kept = &original.arbor;
    Metadata {
        session_id: id.clone(),
        parent_id: Some(original.session_id.clone()),
        agent_name: original.agent_name.clone(),
        created: now.clone(),
        last_updated: now.clone(),
        turn_count: u32::try_from(turns).unwrap_or(u32::MAX),
        working_dir: original.working_dir.clone(),
        bundle: original.bundle.clone(),
        model: original.model.clone(),
        status: SessionStatus::Idle,
        depth: 0,
        config: original.config.clone(),
        agent_overlay: original.agent_overlay.clone(),
        name: Some(title),
        forked_from_turn: Some(turn),
        forked_at: Some(now),
        arbor: ArborKeys {
            resolved_model: kept.resolved_model.clone(),
            agent_source: kept.agent_source,
            model_role: kept.model_role.clone(),
            provider_preferences: kept.provider_preferences.clone(),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn short(id: &str) -> String {
    id.chars().take(8).collect()
}

/// The lines of a file (none when it is missing or unreadable).
fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn jsonl<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    lines.map(|l| format!("{l}\n")).collect()
}

/// Index of the first message of turn `turn + 1`, or the end.
fn end_of_turn(messages: &[Line], turn: u64) -> usize {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_user())
        .nth(usize::try_from(turn).unwrap_or(usize::MAX))
        .map_or(messages.len(), |(i, _)| i)
}

/// foundation's `slice_to_turn(messages, turn)` with `handle_orphaned_tools="complete"`.
pub fn slice_to_turn(messages: &[Line], turn: u64) -> Vec<Line> {
    let sliced = &messages[..end_of_turn(messages, turn)];
    let answered: Vec<&str> = sliced
        .iter()
        .filter_map(|m| match &m.message {
            Some(Message::Tool(t)) => Some(t.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(sliced.len());
    for (i, msg) in sliced.iter().enumerate() {
        out.push(msg.clone());
        let orphans: Vec<(String, Option<String>)> = msg
            .calls()
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
            out.push(Line::synthetic(&result));
        }
        if sliced.get(i + 1).is_some_and(Line::is_user) {
            out.push(Line::synthetic(
                &json!({"role": "assistant", "content": SYNTHETIC_ASSISTANT}),
            ));
        }
    }
    out
}

/// foundation's `slice_events_for_fork`: the events up to the last timestamp of
/// turn `turn`, re-addressed to the fork. None when that turn has no timestamp.
fn slice_events(
    dir: &Path,
    messages: &[Line],
    turn: u64,
    new_id: &str,
    parent: &str,
) -> Vec<String> {
    let start = end_of_turn(messages, turn - 1);
    let end = end_of_turn(messages, turn);
    let cutoff = messages[start..end].iter().rev().find_map(|m| {
        m.message
            .as_ref()
            .and_then(Message::timestamp)
            .and_then(super::store::timestamp_of)
    });
    let Some(cutoff) = cutoff else {
        return Vec::new();
    };
    read_lines(&dir.join("events.jsonl"))
        .iter()
        .filter_map(|l| StoredEvent::parse(l))
        .filter(|e| {
            e.time()
                .and_then(super::store::timestamp_of)
                .is_none_or(|ts| ts <= cutoff)
        })
        .map(|mut e| {
            e.readdress(new_id, parent);
            e.to_line()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn call(id: &str) -> Value {
        json!({"role": "assistant", "content": [{"type": "tool_call", "id": id, "name": "bash", "input": {}}],
               "tool_calls": [{"id": id, "tool": "bash", "arguments": {}}]})
    }

    /// `values` as transcript lines, read as the fork reads them.
    fn lines(values: &[Value]) -> Vec<Line> {
        values
            .iter()
            .map(|v| Line::read(&v.to_string()).unwrap())
            .collect()
    }

    /// The lines a slice writes, as JSON.
    fn written(lines: &[Line]) -> Vec<Value> {
        lines
            .iter()
            .map(|l| serde_json::from_str(&l.text).unwrap())
            .collect()
    }

    #[test]
    fn slices_at_a_turn_and_completes_unanswered_calls() {
        let messages = lines(&[
            json!({"role": "user", "content": "one"}),
            call("c1"),
            json!({"role": "user", "content": "two"}),
            json!({"role": "assistant", "content": "done"}),
        ]);
        assert_eq!(count_turns(&messages), 2);
        let one = written(&slice_to_turn(&messages, 1));
        assert_eq!(one.len(), 3, "{one:?}");
        assert_eq!(one[2]["role"], "tool");
        assert_eq!(one[2]["tool_call_id"], "c1");
        assert_eq!(one[2]["name"], "bash");
        assert_eq!(one[2]["content"], SYNTHETIC_TOOL);
        // As foundation: a user message after the call (inside the slice) gets a
        // synthetic assistant reply before it.
        let two = written(&slice_to_turn(&messages, 2));
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

    #[test]
    fn lines_are_copied_as_written_and_every_form_of_call_counts() {
        let raw = [
            // Key order, spacing and keys arbor does not read stay as written.
            r#"{"content": "one",  "role": "user", "extra": {"k": [1, 2.50]}}"#,
            // OpenAI's form: the name in `function`.
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"o1","type":"function","function":{"name":"grep","arguments":"{}"}}]}"#,
            // Anthropic's form: a `tool_use` block, which arbor's reader drops.
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"a1","name":"glob","input":{}}]}"#,
            // Not a message arbor reads: copied, never a turn.
            r#"{"role":"developer","content":"note"}"#,
            "{torn",
            "",
            r#"{"role":"tool","tool_call_id":"o1","content":"found"}"#,
        ];
        let messages: Vec<Line> = raw.iter().filter_map(|l| Line::read(l)).collect();
        assert_eq!(messages.len(), 5, "the torn and the blank line are skipped");
        assert_eq!(count_turns(&messages), 1);
        let out = slice_to_turn(&messages, 1);
        let texts: Vec<&str> = out.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts[..3], [raw[0], raw[1], raw[2]]);
        // `o1` has its result; `a1` gets foundation's synthetic one, named.
        let synthetic: Value = serde_json::from_str(texts[3]).unwrap();
        assert_eq!(
            synthetic,
            json!({"role": "tool", "tool_call_id": "a1", "content": SYNTHETIC_TOOL, "name": "glob"})
        );
        assert_eq!(texts[4..], [raw[3], raw[6]]);
    }

    #[test]
    fn events_up_to_the_turn_are_readdressed_to_the_fork() {
        let dir = tempfile::tempdir().unwrap();
        let events = [
            r#"{"ts":"2025-03-01T12:00:00Z","lvl":"INFO","event":"session:start","session_id":"orig","data":{}}"#,
            // An event arbor does not know, with `timestamp` only: kept.
            r#"{"timestamp":"2025-03-01T12:00:01Z","event":"amplifier:custom","session_id":"orig","data":{"x":1}}"#,
            // No session: addressed, no parent named.
            r#"{"ts":"2025-03-01T12:00:02Z","event":"note"}"#,
            "{torn",
            r#"{"ts":"2025-03-01T12:09:00Z","event":"prompt:submit","session_id":"orig","data":{"prompt":"later"}}"#,
        ];
        std::fs::write(dir.path().join("events.jsonl"), events.join("\n")).unwrap();
        let messages = lines(&[
            json!({"role": "user", "content": "one", "timestamp": "2025-03-01T12:00:00Z"}),
            json!({"role": "assistant", "content": "done", "timestamp": "2025-03-01T12:05:00Z"}),
            json!({"role": "user", "content": "two", "timestamp": "2025-03-01T12:09:00Z"}),
        ]);
        let out: Vec<Value> = slice_events(dir.path(), &messages, 1, "fork", "orig")
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(out.iter().all(|e| e["session_id"] == "fork"));
        assert_eq!(out[0]["parent_session_id"], "orig");
        assert_eq!(out[1]["data"]["x"], 1);
        assert_eq!(out[2].get("parent_session_id"), None);
        // Key order as written, the new key last.
        let keys: Vec<&str> = out[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "ts",
                "lvl",
                "event",
                "session_id",
                "data",
                "parent_session_id"
            ]
        );
    }
}
