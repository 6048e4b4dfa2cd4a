//! `tool-todo` (Amplifier's module of that name): the model keeps a checklist of its
//! multi-step work.
//!
//! Owns: the `todo` tool — `{action: create | update | list, todos?: [{content,
//! activeForm, status}]}`, `status` one of `pending`, `in_progress`, `completed` (the
//! shape of Amplifier's `tool-todo`, whose results it mirrors: `{status: "created",
//! count, todos}`, `{status: "updated", count, pending, in_progress, completed}`,
//! `{status: "listed", count, todos}`) — and keeping the list in the session's
//! directory (`todo.json`, written atomically), so it survives a resume. A call that
//! sets the list has it as its output's effect ([`ToolEffect::Todo`]), which the engine
//! keeps in the session's metadata and front ends show. Does not own: showing the list
//! (front ends, from the effect), where the session directory is
//! (`ToolContext::session_dir`, set by the engine).

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolOutput, ToolSpec};
use crate::session::protocol::ToolEffect;
pub use crate::session::protocol::{TodoItem, TodoStatus};

/// The module id.
pub const MODULE: &str = "tool-todo";
/// The tool's name.
pub const TOOL_NAME: &str = "todo";
/// The file in the session's directory holding its list.
pub const STATE_FILE: &str = "todo.json";
/// Items one list may hold at most.
const MAX_ITEMS: usize = 200;

/// `(completed, total)` of a list, as the tree shows it (`3/7`).
pub fn progress(items: &[TodoItem]) -> (usize, usize) {
    let done = items
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    (done, items.len())
}

/// The module's tools.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(Todo)]
}

/// The `todo` tool.
#[derive(Debug, Clone, Copy)]
pub struct Todo;

/// Why a `todo` call failed (the text is the tool result, Amplifier's wording where
/// `tool-todo` has one).
#[derive(Debug, thiserror::Error)]
enum TodoError {
    /// An `action` other than create, update, list.
    #[error("Unknown action: {0}. Valid actions: create, update, list")]
    UnknownAction(String),
    /// No `action`.
    #[error("todo needs an 'action': create, update or list")]
    NoAction,
    /// `todos` is not a list (the value as JSON).
    #[error("'todos' must be a list, got {0}")]
    NotAList(String),
    /// More than [`MAX_ITEMS`] items.
    #[error("at most {MAX_ITEMS} todos, got {0}")]
    TooMany(usize),
    /// Item `0` lacks a required key.
    #[error("Todo {0} missing required fields (content, status, activeForm)")]
    MissingFields(usize),
    /// Item `index` has a key of the wrong shape.
    #[error("Todo {index} has an invalid field: {source}")]
    InvalidField {
        index: usize,
        source: serde_json::Error,
    },
    /// The list could not be written to the session directory.
    #[error("cannot save the todo list: {0}")]
    Save(#[from] std::io::Error),
    /// The list could not be encoded.
    #[error("cannot save the todo list: {0}")]
    Encode(serde_json::Error),
}

impl Tool for Todo {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL_NAME.into(),
            description: "Manage your todo list for tracking complex multi-step tasks. Create \
                a list when you start multi-step work, update it after each step (the whole \
                list each time), keep exactly one item in_progress, mark items completed as \
                soon as they are done. Items: content (imperative: 'Run tests'), activeForm \
                (present continuous: 'Running tests'), status (pending | in_progress | \
                completed)."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "action": {
                        "type": "string",
                        "enum": ["create", "update", "list"],
                        "description": "create or update (replace the whole list), list (read it)"
                    },
                    "todos": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {"type": "string"},
                                "activeForm": {"type": "string"},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                            },
                            "required": ["content", "status", "activeForm"]
                        },
                        "description": "The whole list (create and update)"
                    }
                },
                "required": ["action"]
            }),
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let dir = ctx.session_dir.clone();
            match tokio::task::spawn_blocking(move || run(&input, dir.as_deref())).await {
                Ok(Ok((out, None))) => ToolOutput::ok(out.to_string()),
                Ok(Ok((out, Some(set)))) => {
                    ToolOutput::ok(out.to_string()).with_effect(ToolEffect::Todo(set))
                }
                Ok(Err(e)) => ToolOutput::error(e.to_string()),
                Err(e) => ToolOutput::error(format!("the todo tool failed: {e}")),
            }
        })
    }
}

/// The result of a call, and the list it set (`create` / `update`).
fn run(input: &Value, dir: Option<&Path>) -> Result<(Value, Option<Vec<TodoItem>>), TodoError> {
    let action = input.get("action").and_then(Value::as_str);
    match action {
        Some("list") => {
            let todos = dir.map(load).unwrap_or_default();
            let out = json!({"status": "listed", "count": todos.len(), "todos": todos});
            Ok((out, None))
        }
        Some(action @ ("create" | "update")) => {
            let todos = parse_items(input.get("todos"))?;
            if let Some(dir) = dir {
                save(dir, &todos)?;
            }
            let out = if action == "create" {
                json!({"status": "created", "count": todos.len(), "todos": todos})
            } else {
                let count = |s| todos.iter().filter(|t| t.status == s).count();
                json!({
                    "status": "updated",
                    "count": todos.len(),
                    "pending": count(TodoStatus::Pending),
                    "in_progress": count(TodoStatus::InProgress),
                    "completed": count(TodoStatus::Completed),
                })
            };
            Ok((out, Some(todos)))
        }
        Some(other) => Err(TodoError::UnknownAction(other.to_string())),
        None => Err(TodoError::NoAction),
    }
}

fn parse_items(value: Option<&Value>) -> Result<Vec<TodoItem>, TodoError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(TodoError::NotAList(other.to_string())),
    };
    if items.len() > MAX_ITEMS {
        return Err(TodoError::TooMany(items.len()));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            for key in ["content", "status", "activeForm"] {
                if item.get(key).is_none() {
                    return Err(TodoError::MissingFields(index));
                }
            }
            serde_json::from_value(item.clone())
                .map_err(|source| TodoError::InvalidField { index, source })
        })
        .collect()
}

/// The list saved in session directory `dir` (none, or unreadable: empty).
pub fn load(dir: &Path) -> Vec<TodoItem> {
    std::fs::read_to_string(dir.join(STATE_FILE))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

fn save(dir: &Path, todos: &[TodoItem]) -> Result<(), TodoError> {
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(&mut tmp, todos).map_err(TodoError::Encode)?;
    tmp.persist(dir.join(STATE_FILE)).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(dir: &Path, input: Value) -> ToolOutput {
        let mut ctx = ToolContext::in_dir(dir);
        ctx.session_dir = Some(dir.join("session"));
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(Todo.call(input, ctx))
    }

    #[test]
    fn the_list_is_kept_in_the_session_directory() {
        let dir = tempfile::tempdir().unwrap();
        let todos = json!([
            {"content": "Run tests", "activeForm": "Running tests", "status": "completed"},
            {"content": "Fix bug", "activeForm": "Fixing bug", "status": "in_progress"},
            {"content": "Ship", "activeForm": "Shipping", "status": "pending"}
        ]);
        let out = call(dir.path(), json!({"action": "create", "todos": todos}));
        assert!(!out.is_error, "{}", out.content);
        let set: Vec<TodoItem> = serde_json::from_value(todos.clone()).unwrap();
        assert_eq!(out.effect, Some(ToolEffect::Todo(set.clone())));
        let out = call(dir.path(), json!({"action": "update", "todos": todos}));
        assert_eq!(out.effect, Some(ToolEffect::Todo(set)));
        let body: Value = serde_json::from_str(&out.content).unwrap();
        assert_eq!(body["completed"], 1);
        assert_eq!(body["in_progress"], 1);
        let out = call(dir.path(), json!({"action": "list"}));
        assert_eq!(out.effect, None, "a list sets nothing");
        let body: Value = serde_json::from_str(&out.content).unwrap();
        assert_eq!(body["todos"], todos);
        assert_eq!(progress(&load(&dir.path().join("session"))), (1, 3));
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let out = call(
            dir.path(),
            json!({"action": "create", "todos": [{"content": "x"}]}),
        );
        assert!(
            out.is_error && out.content.contains("missing required fields"),
            "{}",
            out.content
        );
        let out = call(
            dir.path(),
            json!({"action": "create", "todos": [{"content": "x", "activeForm": "x", "status": "done"}]}),
        );
        assert!(
            out.is_error && out.content.contains("Todo 0"),
            "{}",
            out.content
        );
        let out = call(dir.path(), json!({"action": "remove"}));
        assert!(
            out.is_error && out.content.contains("Valid actions"),
            "{}",
            out.content
        );
    }
}
