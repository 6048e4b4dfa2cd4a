//! Payloads of the tool-call events (`tool:pre`, `tool:post`, `tool:error`) and the
//! task tool's delegation events (`task:agent_*`).
//!
//! Keys are Amplifier's: `tool_name`, `tool_call_id`, `tool_input` (as its
//! `hooks-logging` and hooks such as `hooks-process-guard` read it), `result` (as its
//! trace collector reads `tool:post`), and for task calls `tool-delegate`'s
//! `sub_session_id` / `parent_session_id`. Field order is the key order of `data`.

use crate::session::ids::SessionId;
use crate::session::ids::ToolCallId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::calls::ToolEffect;
use super::model::ResolvedModel;
use crate::session::metadata::SessionStatus;

/// The keys every event of a task call repeats, so a reader links the call to its
/// sub-session: `{sub_session_id, parent_session_id, depth}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskCallFields {
    /// The sub-session the call spawns or resumes.
    pub sub_session_id: SessionId,
    /// The calling session.
    pub parent_session_id: SessionId,
    /// The sub-session's depth (caller's depth + 1).
    pub depth: u32,
}

/// `tool:pre`: `{tool_name, tool_call_id, tool_input}` plus, for a task call, the
/// [`TaskCallFields`]. Older arbor wrote the input as `arguments`; both are read.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolPreEvent {
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The call's id (the assistant message's `tool_calls[].id`).
    pub tool_call_id: ToolCallId,
    /// The call's input object, as the model sent it.
    #[serde(alias = "arguments")]
    pub tool_input: Value,
    /// Set for task calls.
    #[serde(flatten)]
    pub task: Option<TaskCallFields>,
}

/// `tool:post`: `{tool_name, tool_call_id, result, truncated?, tool_response?}`, the
/// call's [`ToolEffect`] as one key when it had one (`file_changed`, `todos`,
/// `task_result` or `transferred_to`), plus, for a task call, the [`TaskCallFields`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolPostEvent {
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The call's id (the assistant message's `tool_calls[].id`).
    pub tool_call_id: ToolCallId,
    /// The result text, cut to 16 KiB (the whole text is in the transcript and in
    /// `message:appended`).
    pub result: String,
    /// `true` (key present) when `result` was cut.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// Amplifier's key for the result (its hooks read `tool_response`, e.g.
    /// foundation's `hooks-todo-display`): `{success: true, output}` with the same
    /// (cut) text as `result`. Absent in events arbor wrote before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<ToolResponse>,
    /// What the call did beyond its text (arbor's own keys; absent for a call with no
    /// effect): the file it changed (`file_changed`, as the session's
    /// `files_changed` records it), the checklist it set (`todos`), the delegated
    /// turn's result (`task_result`, its `response` cut like `result`), the agent it
    /// transferred to (`transferred_to`).
    #[serde(flatten)]
    pub effect: Option<ToolEffect>,
    /// Set for task calls.
    #[serde(flatten)]
    pub task: Option<TaskCallFields>,
}

/// `tool:error`: `{tool_name, tool_call_id, error, truncated?}` plus, for a task call,
/// the [`TaskCallFields`]. `error` is the error result given to the model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolErrorEvent {
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The call's id (the assistant message's `tool_calls[].id`).
    pub tool_call_id: ToolCallId,
    /// The error text, cut like [`ToolPostEvent::result`].
    pub error: String,
    /// `true` (key present) when `error` was cut.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// Amplifier's key: `{success: false, output: null, error: {message}}` with the
    /// same (cut) text as `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<ToolResponse>,
    /// Set for task calls.
    #[serde(flatten)]
    pub task: Option<TaskCallFields>,
}

/// A tool's result in Amplifier's shape (amplifier-core `ToolResult`: `success`,
/// `output`, `error.message`), carried as `tool_response` by `tool:post` and
/// `tool:error` for Amplifier's hooks and log readers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolResponse {
    /// Whether the call succeeded.
    pub success: bool,
    /// The result text (`null` for an error).
    pub output: Option<String>,
    /// Set for an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolResponseError>,
}

/// `tool_response.error`: `{message}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolResponseError {
    /// The error text given to the model.
    pub message: String,
}

impl ToolResponse {
    /// A successful call's response.
    pub fn ok(output: &str) -> Self {
        Self {
            success: true,
            output: Some(output.to_string()),
            error: None,
        }
    }

    /// A failed call's response.
    pub fn failed(message: &str) -> Self {
        Self {
            success: false,
            output: None,
            error: Some(ToolResponseError {
                message: message.to_string(),
            }),
        }
    }
}

/// `mcp:server_failed` (arbor's own): an MCP server a session mounts could not start
/// or is unusable; the session runs on without its tools. `{server, error}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct McpServerFailedEvent {
    /// The server's configured name (`mcp__<server>__…`).
    pub server: String,
    /// Why, for people (never an `env` or `headers` value).
    pub error: String,
}

impl McpServerFailedEvent {
    /// `MCP server 'calc' is not available: <error>`, as front ends print it.
    pub fn note(&self) -> String {
        format!(
            "MCP server '{}' is not available: {}",
            self.server, self.error
        )
    }
}

/// `task:agent_spawned`: `{agent, sub_session_id, tool_call_id, depth, resolved_model}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskAgentSpawnedEvent {
    /// The sub-session's agent.
    pub agent: String,
    /// The new sub-session.
    pub sub_session_id: SessionId,
    /// The parent's task call that spawned it.
    pub tool_call_id: ToolCallId,
    /// The sub-session's depth.
    pub depth: u32,
    /// The model it got and why.
    pub resolved_model: ResolvedModel,
}

/// `task:agent_resumed`: `{agent, sub_session_id, tool_call_id, depth,
/// resolved_model?}`; `resolved_model` only when the resume call re-routed the model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskAgentResumedEvent {
    /// The sub-session's agent.
    pub agent: String,
    /// The resumed sub-session.
    pub sub_session_id: SessionId,
    /// The parent's task call that resumed it.
    pub tool_call_id: ToolCallId,
    /// The sub-session's depth.
    pub depth: u32,
    /// The re-resolved model, when the call asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_model: Option<ResolvedModel>,
}

/// `task:agent_completed`: `{agent, sub_session_id, tool_call_id, status,
/// turn_count}`, the sub-session's turn outcome.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskAgentCompletedEvent {
    /// The sub-session's agent.
    pub agent: String,
    /// The sub-session.
    pub sub_session_id: SessionId,
    /// The parent's task call that ran it.
    pub tool_call_id: ToolCallId,
    /// How the sub-session's turn ended.
    pub status: SessionStatus,
    /// Its turns so far.
    pub turn_count: u32,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// arbor's own `agent:transfer`: `{from, to, tool_call_id}`. The agent `from` called
/// `transfer_to_agent`; `to` answers next in the same session and turn (SPEC §11).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentTransferEvent {
    /// The agent that handed the conversation over.
    pub from: String,
    /// The agent that answers from now on.
    pub to: String,
    /// The `transfer_to_agent` call.
    pub tool_call_id: ToolCallId,
}
