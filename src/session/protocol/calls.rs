//! The typed data of tool calls that front ends read, so none of them re-parses a
//! tool's input or output text: a delegation call's input ([`TaskInput`]).
//!
//! Owns: these types and their one parser each. Does not own: validating a whole
//! call (`tool::task::parse_request`) or which tools delegate (the tool table,
//! `config::modules`).

use serde_json::Value;

use crate::session::ids::SessionId;

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
    /// The fields of `input`, or the first that is not a string (`'agent' must be a
    /// string, got 3`).
    pub fn parse(input: &Value) -> Result<Self, String> {
        Ok(Self {
            agent: text(input, "agent")?,
            instruction: text(input, "instruction")?,
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

/// String field `key` of `input`, trimmed; `None` when absent, null or blank.
fn text(input: &Value, key: &str) -> Result<Option<String>, String> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(other) => Err(format!("'{key}' must be a string, got {other}")),
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
            TaskInput::parse(&bad).unwrap_err(),
            "'agent' must be a string, got 3"
        );
        assert_eq!(TaskInput::of(&bad).agent, None);
        assert_eq!(TaskInput::of(&bad).instruction.as_deref(), Some("x"));
    }
}
