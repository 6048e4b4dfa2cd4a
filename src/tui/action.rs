//! What input widgets report to the `App`: a [`KeyOutcome`], perhaps carrying a
//! [`UiAction`] (re-exported by `app_event`).
//!
//! Owns: these shapes only. Kept apart from `app_event` so UI state (`state`), which
//! returns them, does not depend on the events that carry state's own results.

use crate::session::ids::SessionId;
use crate::session::ids::ToolCallId;
use std::path::PathBuf;

use crate::session::protocol::ApprovalDecision;

/// What an input widget did with a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyOutcome {
    /// The widget used the key; nothing else to do but redraw.
    Consumed,
    /// The widget does not handle this key; the caller may try elsewhere.
    Ignored,
    /// The widget used the key and asks the `App` to perform an action.
    Emit(UiAction),
}

/// A request from a widget to the `App`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UiAction {
    /// Send the composer's text as the next user message of the open thread.
    Submit(String),
    /// Open this session's thread in the chat pane.
    OpenThread(String),
    /// Cancel this session's running turn and its subtree.
    Cancel(SessionId),
    /// Start a new root session with this agent (the next submit carries it).
    StartWithAgent(String),
    /// Open this agent file in `$EDITOR`.
    EditFile(PathBuf),
    /// Show a short note in the status bar.
    Note(String),
    /// Answer the approval that tool call `tool_call_id` of `session_id` waits for
    /// (sent to the engine as `EngineCommand::ResolveApproval`).
    ResolveApproval {
        session_id: SessionId,
        tool_call_id: ToolCallId,
        decision: ApprovalDecision,
    },
    /// Answer like [`UiAction::ResolveApproval`] (an "always" answer) and save `rule`
    /// (a policy key such as `bash(cargo test*)`) as `allow` in the user's config
    /// file's `approvals:` (issue 22).
    ResolveAndSave {
        session_id: SessionId,
        tool_call_id: ToolCallId,
        decision: ApprovalDecision,
        rule: String,
    },
    /// Answer the trust prompt: `trust` records the project in the trust store; either
    /// way the prompt closes.
    AnswerTrust { trust: bool },
}
