//! What one arbor event or stored message looks like as ACP `session/update`s: text and
//! thinking chunks, `tool_call` / `tool_call_update` (kind, title, status, locations,
//! diff content for edits; kind and title from the tool table), `plan` from a
//! checklist a call set (its `tool:post` effect), and the session-level updates:
//! `usage_update` (context use and cost), `session_info_update` (title).
//!
//! Owns: these pure mappings. Does not own: which ACP session an update goes to, or
//! announcing sub-sessions (`tree`), nor sending (`agent`).

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, Cost, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionInfoUpdate, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::Value;

use crate::config::approvals::{Decision, default_decision};
use crate::config::modules::{CacheAccounting, ToolKind as Kind, describe};
use crate::session::Message;
use crate::session::message::ContentBlock as Block;
use crate::session::metadata::SessionUsage;
use crate::session::protocol::{
    DeltaKind, TodoItem, TodoStatus, ToolEffect, ToolErrorEvent, ToolPostEvent, ToolPreEvent,
};

/// A text content block.
pub fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

/// A streamed piece: `agent_message_chunk` for answer text, `agent_thought_chunk` for
/// thinking.
pub fn chunk(kind: DeltaKind, piece: &str) -> SessionUpdate {
    let chunk = ContentChunk::new(text(piece));
    match kind {
        DeltaKind::Text => SessionUpdate::AgentMessageChunk(chunk),
        DeltaKind::Thinking => SessionUpdate::AgentThoughtChunk(chunk),
    }
}

fn str_of<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

/// The path argument of a file tool (`file_path`, else `path`).
fn file_arg(input: &Value) -> Option<&str> {
    str_of(input, "file_path").or_else(|| str_of(input, "path"))
}

fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// The ACP kind of tool `name`: its descriptor's in the tool table (`other` for MCP
/// and unknown tools).
pub fn kind(name: &str) -> ToolKind {
    match describe(name).kind {
        Kind::Read => ToolKind::Read,
        Kind::Edit => ToolKind::Edit,
        Kind::Delete => ToolKind::Delete,
        Kind::Move => ToolKind::Move,
        Kind::Search => ToolKind::Search,
        Kind::Execute => ToolKind::Execute,
        Kind::Think => ToolKind::Think,
        Kind::Fetch => ToolKind::Fetch,
        Kind::Other => ToolKind::Other,
    }
}

/// One line saying what call `name(input)` does: its descriptor's summary, as the
/// approval prompt shows it (`cargo test`, `edit src/a.rs`, `task zen: look`).
pub fn title(name: &str, input: &Value) -> String {
    describe(name).summarize(name, input)
}

/// The file a file tool touches, absolute (relative paths against `cwd`).
fn locations(name: &str, input: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    match (kind(name), file_arg(input)) {
        (ToolKind::Read | ToolKind::Edit, Some(p)) => vec![ToolCallLocation::new(absolute(cwd, p))],
        _ => Vec::new(),
    }
}

/// The diff of an edit call (kind `edit`), from its input: `content` → the new
/// content (old unknown here), `old_string` → `new_string`.
fn diff(name: &str, input: &Value, cwd: &Path) -> Vec<ToolCallContent> {
    if kind(name) != ToolKind::Edit {
        return Vec::new();
    }
    let Some(path) = file_arg(input).map(|p| absolute(cwd, p)) else {
        return Vec::new();
    };
    let diff = match (
        str_of(input, "content"),
        str_of(input, "old_string"),
        str_of(input, "new_string"),
    ) {
        (Some(new), _, _) => Some(Diff::new(path, new)),
        (None, Some(old), Some(new)) => Some(Diff::new(path, new).old_text(old.to_string())),
        _ => None,
    };
    diff.map(ToolCallContent::Diff).into_iter().collect()
}

/// `tool_call` for call `id` of tool `name` with `input`, in `status`.
pub fn tool_call(
    id: &str,
    name: &str,
    input: &Value,
    status: ToolCallStatus,
    cwd: &Path,
) -> ToolCall {
    ToolCall::new(id.to_string(), title(name, input))
        .kind(kind(name))
        .status(status)
        .locations(locations(name, input, cwd))
        .content(diff(name, input, cwd))
        .raw_input(input.clone())
}

/// `tool_call` for `tool:pre`: `in_progress` for a tool that runs without asking by
/// default, else `pending` (ACP v1: not started, "awaiting approval") until its
/// `approval:granted` ([`status`] `in_progress`) or its end.
pub fn tool_pre(pre: &ToolPreEvent, cwd: &Path) -> SessionUpdate {
    let status = match default_decision(&pre.tool_name) {
        Decision::Allow => ToolCallStatus::InProgress,
        Decision::Ask | Decision::Deny => ToolCallStatus::Pending,
    };
    let call = tool_call(
        &pre.tool_call_id,
        &pre.tool_name,
        &pre.tool_input,
        status,
        cwd,
    );
    SessionUpdate::ToolCall(call)
}

/// `tool_call_update` moving call `id` to `status` alone (`pending` while it waits
/// for approval, `in_progress` once allowed).
pub fn status(id: &str, status: ToolCallStatus) -> SessionUpdate {
    let fields = ToolCallUpdateFields::new().status(status);
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields))
}

/// The tokens a model call's context held: its input (with the cache tokens where
/// the API counts them apart from it, `accounting`) plus its output — the rule of
/// `engine::compact::estimate::measured`.
pub fn context_used(usage: &SessionUsage, accounting: CacheAccounting) -> u64 {
    let cache = match accounting {
        CacheAccounting::IncludedInInput => 0,
        CacheAccounting::SeparateFromInput => usage.cache_read_tokens + usage.cache_creation_tokens,
    };
    usage.input_tokens + cache + usage.output_tokens
}

/// `usage_update` (ACP v1 schema 1.20): `used` tokens in the context after a model
/// call, of `size` (the session's context limit, tokens), and `cost`, the session's
/// cumulative cost in USD when the config's price table knows its models.
pub fn usage(used: u64, size: u64, cost: Option<f64>) -> SessionUpdate {
    let update = UsageUpdate::new(used, size).cost(cost.map(|c| Cost::new(c, "USD")));
    SessionUpdate::UsageUpdate(update)
}

/// `session_info_update` (ACP v1 schema 1.20) with the session's new `title` and the
/// time of the change (RFC 3339) as `updatedAt`.
pub fn session_info(title: &str, updated_at: &str) -> SessionUpdate {
    let info = SessionInfoUpdate::new()
        .title(title.to_string())
        .updated_at(updated_at.to_string());
    SessionUpdate::SessionInfoUpdate(info)
}

/// `tool_call_update` ending call `id` in `status` with `result` as its text content
/// (an image it holds, an MCP tool's, as `📎 image (…)`, not its base64).
pub fn tool_end(id: &str, status: ToolCallStatus, result: &str) -> SessionUpdate {
    let shown;
    let result = if crate::session::image::has_images(result) {
        shown = crate::session::image::shown(result);
        shown.as_str()
    } else {
        result
    };
    let fields = ToolCallUpdateFields::new()
        .status(status)
        .content(vec![ToolCallContent::from(text(result))])
        .raw_output(Value::String(result.to_string()));
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields))
}

/// `tool:post` → the call `completed` with its result as content; an edit (a call
/// whose effect is a file change) keeps its diff as content, the result goes to
/// `rawOutput`.
pub fn tool_post(post: &ToolPostEvent) -> SessionUpdate {
    if let Some(ToolEffect::FileChange(_)) = post.effect {
        // Content given in an update replaces the call's: keep the edit's diff.
        let fields = ToolCallUpdateFields::new()
            .status(ToolCallStatus::Completed)
            .raw_output(Value::String(post.result.clone()));
        return SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            post.tool_call_id.to_string(),
            fields,
        ));
    }
    tool_end(&post.tool_call_id, ToolCallStatus::Completed, &post.result)
}

/// `tool:error` → the call `failed` with the error given to the model.
pub fn tool_error(error: &ToolErrorEvent) -> SessionUpdate {
    tool_end(&error.tool_call_id, ToolCallStatus::Failed, &error.error)
}

/// `plan` from the checklist a call set (a `todo` call's effect): one entry per item,
/// its status as the item's, priority `medium`.
pub fn plan(list: &[TodoItem]) -> SessionUpdate {
    let entries = list
        .iter()
        .map(|todo| {
            let status = match todo.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(todo.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// A stored message as the updates that replay it (`session/load`): user text,
/// answer text, thinking, each tool call (then its result as an update).
pub fn replay(message: &Message, cwd: &Path) -> Vec<SessionUpdate> {
    match message {
        Message::User(user) => {
            vec![SessionUpdate::UserMessageChunk(ContentChunk::new(text(
                user.content.to_string(),
            )))]
        }
        Message::System(_) => Vec::new(),
        Message::Assistant(assistant) => {
            let mut updates = Vec::new();
            for block in &assistant.content {
                match block {
                    Block::Text { text: t } => updates.push(chunk(DeltaKind::Text, t)),
                    Block::Thinking { thinking, .. } => {
                        updates.push(chunk(DeltaKind::Thinking, thinking));
                    }
                    Block::ToolCall { .. } | Block::RedactedThinking { .. } | Block::Unknown => {}
                }
            }
            for call in &assistant.tool_calls {
                let input: &Value = &call.arguments;
                updates.push(SessionUpdate::ToolCall(tool_call(
                    &call.id,
                    &call.tool,
                    input,
                    ToolCallStatus::InProgress,
                    cwd,
                )));
            }
            updates
        }
        Message::Tool(tool) => {
            let status = if tool.is_error {
                ToolCallStatus::Failed
            } else {
                ToolCallStatus::Completed
            };
            vec![tool_end(&tool.tool_call_id, status, &tool.content)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_is_an_edit_call_with_its_file_and_diff() {
        let input = json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"});
        let call = tool_call(
            "c1",
            "edit_file",
            &input,
            ToolCallStatus::Pending,
            Path::new("/p"),
        );
        let wire = serde_json::to_value(&call).unwrap();
        assert_eq!(wire["kind"], "edit");
        assert_eq!(wire["title"], "edit src/a.rs");
        assert_eq!(wire["locations"][0]["path"], "/p/src/a.rs");
        assert_eq!(wire["content"][0]["type"], "diff");
        assert_eq!(wire["content"][0]["oldText"], "a");
        assert_eq!(wire["content"][0]["newText"], "b");
    }

    /// Kinds and titles come from the tool table: every tool arbor mounts has the
    /// kind of its row (`list_directory` reads, `delegate` thinks, as `task` does),
    /// names arbor has no tool by are `other`.
    #[test]
    fn kinds_and_titles_come_from_the_tool_table() {
        let wire = |name: &str, input: &Value| {
            let call = tool_call("c", name, input, ToolCallStatus::Pending, Path::new("/p"));
            serde_json::to_value(&call).unwrap()
        };
        let dir = wire("list_directory", &json!({"path": "src"}));
        assert_eq!(dir["kind"], "read");
        assert_eq!(dir["locations"][0]["path"], "/p/src");
        let task = json!({"agent": "zen", "instruction": "look\naround"});
        assert_eq!(wire("delegate", &task)["kind"], "think");
        assert_eq!(wire("delegate", &task)["title"], "delegate zen: look");
        assert_eq!(wire("task", &task)["title"], "task zen: look");
        assert_eq!(kind("transfer_to_agent"), ToolKind::Other);
        for name in ["list_files", "ls", "search", "mcp__x__y"] {
            assert_eq!(kind(name), ToolKind::Other, "{name}");
        }
        let expected = [
            ("read_file", ToolKind::Read),
            ("write_file", ToolKind::Edit),
            ("edit_file", ToolKind::Edit),
            ("glob", ToolKind::Search),
            ("grep", ToolKind::Search),
            ("bash", ToolKind::Execute),
            ("web_fetch", ToolKind::Fetch),
            ("web_search", ToolKind::Fetch),
            ("task", ToolKind::Think),
            ("todo", ToolKind::Think),
        ];
        for (name, kind_of) in expected {
            assert_eq!(kind(name), kind_of, "{name}");
        }
        let bash = json!({"command": "cargo test\ncargo fmt"});
        assert_eq!(wire("bash", &bash)["title"], "cargo test …");
        assert_eq!(wire("bash", &bash)["kind"], "execute");
    }

    #[test]
    fn a_checklist_is_a_plan() {
        let list: Vec<TodoItem> = serde_json::from_value(json!([
            {"content": "read", "activeForm": "reading", "status": "completed"},
            {"content": "write", "activeForm": "writing", "status": "in_progress"},
        ]))
        .unwrap();
        let wire = serde_json::to_value(plan(&list)).unwrap();
        assert_eq!(wire["sessionUpdate"], "plan");
        assert_eq!(wire["entries"][0]["status"], "completed");
        assert_eq!(wire["entries"][1]["content"], "write");
        assert_eq!(wire["entries"][1]["status"], "in_progress");
        assert_eq!(wire["entries"][1]["priority"], "medium");
    }

    #[test]
    fn cache_tokens_count_once() {
        let usage = SessionUsage {
            input_tokens: 100,
            output_tokens: 10,
            cache_read_tokens: 80,
            cache_creation_tokens: 5,
            cost: None,
        };
        assert_eq!(context_used(&usage, CacheAccounting::IncludedInInput), 110);
        assert_eq!(
            context_used(&usage, CacheAccounting::SeparateFromInput),
            195
        );
    }
}
