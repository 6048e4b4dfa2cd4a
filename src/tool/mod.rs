//! Tools a model can call, and the registry that mounts them from a mount plan.
//!
//! Owns: the `Tool` trait, tool outputs, the built-in modules `tool-task`,
//! `tool-filesystem` (`read_file`, `list_directory`, `write_file`, `edit_file`),
//! `tool-search` (`glob`, `grep`), `tool-bash` (`bash`), `tool-todo` (`todo`), `tool-web` (`web_fetch`, and `web_search` with config `web: {search_url}`) and `transfer_to_agent` for
//! agents in a `sub_agents` tree (`transfer`). Reads are confined to the
//! session's working directory, writes to `allowed_write_paths` (`confine`). Does not
//! own: running tool calls concurrently, recording `files_changed` or scrubbing secrets
//! from outputs (`engine`), spawning sessions (`engine::runtime`), or deciding whether
//! a call may run at all (approvals).

pub mod bash;
pub mod confine;
pub mod delegate;
pub mod error;
pub mod filesystem;
pub mod mcp;
pub mod mount;
pub mod search;
pub mod task;
pub mod todo;
pub mod transfer;
pub mod web;

use crate::session::ids::SessionId;
use crate::session::ids::ToolCallId;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::provider::ToolSpec;
use crate::session::protocol::{TaskResult, ToolEffect};
pub use error::ToolError;

/// The result of one tool call; `content` goes back to the model verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// The call failed; `content` is the error text the model sees.
    pub is_error: bool,
    /// What the call did beyond its text, typed, for the engine and front ends (the
    /// file `write_file` / `edit_file` changed, the list `todo` set, a delegation's
    /// result, a transfer's target); `None` for every other call.
    pub effect: Option<ToolEffect>,
}

/// A text is a successful output.
impl From<String> for ToolOutput {
    fn from(content: String) -> Self {
        Self::ok(content)
    }
}

impl ToolOutput {
    /// A successful call's output with no effect.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            effect: None,
        }
    }

    /// A failed call's output: `content` is the error the model reads.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            effect: None,
        }
    }

    /// This output with `effect`.
    pub fn with_effect(self, effect: ToolEffect) -> Self {
        Self {
            effect: Some(effect),
            ..self
        }
    }
}

/// The effect the stored result `content` of a call of tool `name` holds, for a
/// transcript read back (a stored message keeps the text, not the effect): a
/// delegation's result (`task::result_of_text`); `None` for other tools' results.
pub fn stored_effect(name: &str, content: &str) -> Option<ToolEffect> {
    if crate::config::modules::describe(name).delegates() {
        task::result_of_text(content).map(ToolEffect::Task)
    } else {
        None
    }
}

/// The text delegation tool `name` gives the model for a completed `result` made
/// outside a call (a sub-session that finished after its parent stopped): `delegate`'s
/// shape of it, else the task tool's result JSON.
pub fn delegation_text(name: &str, result: &TaskResult) -> String {
    if name == delegate::TOOL_NAME {
        delegate::shape(result)
    } else {
        task::output_of(result.clone()).content
    }
}

/// What a tool call knows about where it runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The calling session.
    pub session_id: SessionId,
    /// The calling session's parent, if a sub-session.
    pub parent_id: Option<SessionId>,
    /// The calling session's depth (root 0).
    pub depth: u32,
    /// The tool call's id from the model.
    pub tool_call_id: ToolCallId,
    /// Files are confined to this directory.
    pub working_dir: PathBuf,
    /// Cancelled when the calling turn is cancelled.
    pub cancel: CancellationToken,
    /// For `task` calls: the sub-session this call spawns or resumes, decided by
    /// [`Tool::prepare`] before `tool:pre` is published (`None` for other tools).
    pub sub_session_id: Option<SessionId>,
    /// The calling session's directory in the store, for tools that keep per-session
    /// state there (`todo`); `None` when there is none (tool unit tests).
    pub session_dir: Option<PathBuf>,
    /// For delegation calls: the input as [`Tool::prepare`] parsed it (`Err`: the
    /// error the call returns; shared, so the context stays `Clone`), so the call does
    /// not parse it again; `None` for other tools and when nothing was prepared (tool
    /// unit tests).
    pub task: Option<Result<task::TaskRequest, std::sync::Arc<ToolError>>>,
    /// `bash` only: this run may use the network although the sandbox denies it — the
    /// person allowed it once for a command the sandbox had cut off (Codex's
    /// escalation: `engine::escalate`). False everywhere else.
    pub network_once: bool,
}

impl ToolContext {
    /// The sub-session a delegation by this call runs in: the one already decided
    /// ([`ToolContext::sub_session_id`]), else a new child id of the calling session for
    /// `agent_name` ([`SessionId::child`]). The one place a delegation names its child.
    pub fn child_id(&self, agent_name: &str) -> SessionId {
        self.sub_session_id
            .clone()
            .unwrap_or_else(|| SessionId::child(&self.session_id, agent_name))
    }
}

#[cfg(test)]
impl ToolContext {
    /// A root session's call `c` in `dir`, never cancelled (tool unit tests).
    pub(crate) fn in_dir(dir: &Path) -> Self {
        Self {
            session_id: "s".into(),
            parent_id: None,
            depth: 0,
            tool_call_id: "c".into(),
            working_dir: dir.to_path_buf(),
            cancel: CancellationToken::new(),
            sub_session_id: None,
            session_dir: None,
            task: None,
            network_once: false,
        }
    }
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
    /// identifiers the event must carry and parse its input once (the task tool sets
    /// `ctx.sub_session_id` and `ctx.task`). The default does nothing.
    fn prepare(&self, input: &Value, ctx: &mut ToolContext) {
        let _ = (input, ctx);
    }
    /// What a call with `input` would change, shown before it runs (the approval
    /// prompt): a unified diff for `write_file` / `edit_file`, `Err` with the reason
    /// the call would fail. `None` (the default) for tools that change no file. Reads
    /// the current file (blocking) but writes nothing.
    fn preview(&self, input: &Value, working_dir: &Path) -> Option<Result<String, ToolError>> {
        let _ = (input, working_dir);
        None
    }
    /// For tools that run processes (`bash`): one line saying whether a call in
    /// `working_dir` runs in the kernel sandbox (`sandboxed: writes ./, no network`,
    /// `NOT sandboxed (sandbox.mode is off)`, or why it is refused), for the approval
    /// prompt. `None` (the default) for every other tool. May block (the first call
    /// probes the kernel).
    fn sandbox_note(&self, working_dir: &Path) -> Option<String> {
        let _ = working_dir;
        None
    }
    /// Why a call with `input` would be refused whatever the person answered (its
    /// error text, naming the setting that allows it), checked before anyone is asked
    /// (`web_fetch` of a private or loopback address: issue 39 item 4). `None` (the
    /// default): ask as usual.
    fn refuse_before_asking(&self, input: &Value) -> BoxFuture<'static, Option<String>> {
        let _ = input;
        Box::pin(std::future::ready(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionStatus;

    /// A delegation's result is the effect of its output, read back from a stored
    /// text by its tool alone, and written in each tool's shape.
    #[test]
    fn a_delegation_result_round_trips_through_its_tools_text() {
        let result = TaskResult {
            response: "done".into(),
            session_id: "s_x".into(),
            agent: "zen".into(),
            status: SessionStatus::Completed,
            turn_count: 2,
            error: None,
            budget: None,
            isolation: None,
        };
        let task = delegation_text("task", &result);
        assert_eq!(
            task,
            r#"{"response":"done","session_id":"s_x","agent":"zen","status":"completed","turn_count":2}"#
        );
        let delegate = delegation_text("delegate", &result);
        assert!(
            delegate.contains(r#""status":"success","metadata":{}"#),
            "{delegate}"
        );
        for (name, text) in [("task", &task), ("delegate", &delegate)] {
            assert_eq!(
                stored_effect(name, text),
                Some(ToolEffect::Task(result.clone())),
                "{name}"
            );
        }
        assert_eq!(stored_effect("bash", &task), None, "not a delegation");
        assert_eq!(stored_effect("task", "Unknown agent 'x'"), None);
        let paused = task::output_of(TaskResult {
            status: SessionStatus::Paused,
            ..result.clone()
        });
        assert!(paused.content.starts_with("status: paused\n"));
        assert!(
            matches!(paused.effect, Some(ToolEffect::Task(ref r)) if r.status == SessionStatus::Paused)
        );
        assert!(!paused.is_error);
        let failed = task::output_of(TaskResult {
            status: SessionStatus::Failed,
            ..result
        });
        assert!(failed.is_error && failed.effect.is_some());
    }

    #[test]
    fn a_delegation_keeps_a_decided_child_id_else_makes_one_of_the_caller() {
        let mut ctx = ToolContext::in_dir(Path::new("/tmp"));
        ctx.session_id = "9b1c7e2e-0a4b-4f7e-8f7e-1c2d3e4f5a6b".into();
        let made = ctx.child_id("Zen Architect");
        assert!(made.starts_with("9b1c7e2e0a4b4f7e-"), "{made}");
        assert!(made.ends_with("_zen-architect"), "{made}");
        ctx.sub_session_id = Some(made.clone());
        assert_eq!(ctx.child_id("other"), made);
    }
}
