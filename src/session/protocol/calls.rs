//! The typed data of tool calls that front ends read, so none of them re-parses a
//! tool's input or output text: a delegation call's input ([`TaskInput`]) and what a
//! call did beyond its text ([`ToolEffect`]: a file changed, a checklist set, a
//! delegated turn's result, a transfer), which `tool:post` carries.
//!
//! Owns: these types and their one parser each. Does not own: validating a whole
//! call (`tool::task::parse_request`), which tools delegate (the tool table,
//! `config::modules`), or making an effect (each tool, `tool::*`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::session::SessionStatus;
use crate::session::ids::SessionId;
use crate::session::metadata::FileChange;

/// What one tool call did beyond the text the model reads, typed: set by the tool on
/// its output and carried by `tool:post`, so front ends show it without matching the
/// tool's name or parsing its text. In `tool:post`'s data it is one key, absent when
/// the call had no effect: `file_changed` (arbor wrote this key before effects
/// existed), `todos`, `task_result` or `transferred_to` — arbor's own keys, which
/// Amplifier's readers ignore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToolEffect {
    /// The file a `write_file` / `edit_file` call changed, for the session's
    /// `files_changed` (`{path, tool, lines_added, lines_removed, created, changes,
    /// hunks?}`).
    #[serde(rename = "file_changed")]
    FileChange(FileChange),
    /// The whole checklist a `todo` call set (`create` / `update`).
    #[serde(rename = "todos")]
    Todo(Vec<TodoItem>),
    /// How the turn a delegation (`task`, `delegate`) ran ended.
    #[serde(rename = "task_result")]
    Task(TaskResult),
    /// The agent a `transfer_to_agent` call handed the conversation to.
    #[serde(rename = "transferred_to")]
    Transfer(String),
}

/// One checklist item, as the model writes it (`todo`'s `todos[]`), and its state:
/// the shape metadata keeps as `todos`.
pub use crate::session::metadata::{TodoItem, TodoStatus};

/// How a delegated turn ended: the task tool's result, serialized as its output
/// `{"response","session_id","agent","status","turn_count"}`, plus `error` when failed
/// and `budget` (the spend against the budget) when the child has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The sub-session's last answer.
    pub response: String,
    /// The sub-session (pass it as `session_id` to continue it).
    pub session_id: SessionId,
    /// The sub-session's agent.
    pub agent: String,
    /// How its turn ended.
    pub status: SessionStatus,
    /// Its turns so far.
    pub turn_count: u32,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The current grant's spend against the budget (`35/10 tokens`), when budgeted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// Where a spawned child works: its worktree and branch, or (once per parent)
    /// why it has none (issue 25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
}

/// The fields of a delegation call's input (`task`, `delegate`) that say what it
/// asks: `{agent?, instruction?, session_id?}`, each a string, read trimmed; blank
/// counts as absent. The task tool validates a call through [`TaskInput::parse`];
/// front ends show one through [`TaskInput::of`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskInput {
    /// The agent to spawn (absent when the call resumes `session_id`).
    pub agent: Option<String>,
    /// What the agent is asked to do.
    pub instruction: Option<String>,
    /// The earlier sub-session the call continues.
    pub session_id: Option<SessionId>,
}

impl TaskInput {
    /// The fields of `input`, or the first (`instruction`, `agent`, `session_id`)
    /// that is not a string (`'agent' must be a string, got 3`).
    ///
    /// Errors: [`BadTaskField`] naming the field and what it got.
    pub fn parse(input: &Value) -> Result<Self, BadTaskField> {
        let instruction = text(input, "instruction")?;
        Ok(Self {
            agent: text(input, "agent")?,
            instruction,
            session_id: text(input, "session_id")?.map(SessionId::from),
        })
    }

    /// The fields of `input` that are strings (for showing a call, valid or not).
    pub fn of(input: &Value) -> Self {
        Self {
            agent: text(input, "agent").ok().flatten(),
            instruction: text(input, "instruction").ok().flatten(),
            session_id: text(input, "session_id")
                .ok()
                .flatten()
                .map(SessionId::from),
        }
    }
}

/// A field of a `task` call's input that is not a string: `'agent' must be a
/// string, got 3`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{key}' must be a string, got {got}")]
pub struct BadTaskField {
    /// The field (`instruction`, `agent`, `session_id`).
    pub key: String,
    /// Its value as JSON.
    pub got: String,
}

/// String field `key` of `input`, trimmed; `None` when absent, null or blank.
fn text(input: &Value, key: &str) -> Result<Option<String>, BadTaskField> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(other) => Err(BadTaskField {
            key: key.to_string(),
            got: other.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_input_reads_its_strings_and_parse_names_a_bad_one() {
        let input = json!({"agent": " zen ", "instruction": "do it\nwell", "session_id": ""});
        let parsed = TaskInput::parse(&input).unwrap();
        assert_eq!(parsed.agent.as_deref(), Some("zen"));
        assert_eq!(parsed.instruction.as_deref(), Some("do it\nwell"));
        assert_eq!(parsed.session_id, None);
        let bad = json!({"agent": 3, "instruction": "x"});
        assert_eq!(
            TaskInput::parse(&bad).unwrap_err().to_string(),
            "'agent' must be a string, got 3"
        );
        assert_eq!(TaskInput::of(&bad).agent, None);
        assert_eq!(TaskInput::of(&bad).instruction.as_deref(), Some("x"));
    }
}
