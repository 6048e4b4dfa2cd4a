//! Tools a model can call, and the registry that mounts them from a mount plan.
//!
//! Owns: the `Tool` trait, tool outputs, the built-in modules `tool-task`,
//! `tool-filesystem` (read-only: `read_file`, `list_directory`) and `tool-search`
//! (`glob`, `grep`), all confined to the session's working directory. Does not own:
//! running tool calls concurrently (`engine`) or spawning sessions (`engine::runtime`).

pub mod confine;
pub mod filesystem;
pub mod mount;
pub mod search;
pub mod task;

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::provider::ToolSpec;

/// The result of one tool call; `content` goes back to the model verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    /// The call failed; `content` is the error text the model sees.
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

/// What a tool call knows about where it runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The calling session.
    pub session_id: String,
    /// The calling session's parent, if a sub-session.
    pub parent_id: Option<String>,
    /// The calling session's depth (root 0).
    pub depth: u32,
    /// The tool call's id from the model.
    pub tool_call_id: String,
    /// Files are confined to this directory.
    pub working_dir: PathBuf,
    /// Cancelled when the calling turn is cancelled.
    pub cancel: CancellationToken,
    /// For `task` calls: the sub-session this call spawns or resumes, decided by
    /// [`Tool::prepare`] before `tool:pre` is published (`None` for other tools).
    pub sub_session_id: Option<String>,
}

/// One callable tool.
pub trait Tool: Send + Sync {
    /// The module this tool belongs to (`tool-filesystem`).
    fn module(&self) -> &str;
    /// Name, description and input schema as offered to the model.
    fn spec(&self) -> ToolSpec;
    /// Runs one call. Never panics; failures are `ToolOutput::error`.
    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
    /// Called by the turn loop before `tool:pre` is published, so a tool can decide
    /// identifiers the event must carry (the task tool sets `ctx.sub_session_id`).
    /// The default does nothing.
    fn prepare(&self, input: &Value, ctx: &mut ToolContext) {
        let _ = (input, ctx);
    }
}
