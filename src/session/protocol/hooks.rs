//! Payload of arbor's own `hook:ran` event: one configured hook command ran (or was
//! refused), and what it decided. Does not own: hook configuration or running hooks
//! (`hooks`).

use serde::{Deserialize, Serialize};

use crate::session::ids::ToolCallId;

/// How one hook run ended, as `hook:ran.outcome` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// Exit 0 (the action goes on; JSON output may still add context).
    #[default]
    Passed,
    /// Exit 2, or JSON `{"decision": "block"}`: the action is blocked, `reason` goes
    /// to the model.
    Blocked,
    /// Another exit code, or it could not start: reported, the action goes on.
    Failed,
    /// It ran past its timeout and was killed: reported, the action goes on.
    TimedOut,
    /// It did not run (a project hook that cannot be sandboxed).
    Refused,
}

impl HookOutcome {
    /// The wire spelling (`passed`, `blocked`, `failed`, `timed_out`, `refused`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Blocked => "blocked",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::Refused => "refused",
        }
    }
}

/// arbor's own `hook:ran`: `{hook_event_name, command, source, outcome, exit_code?,
/// reason?, additional_context?, tool_name?, tool_call_id?, duration_ms}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HookRanEvent {
    /// The hook event (`PreToolUse`, Claude Code's names).
    pub hook_event_name: String,
    /// The command as configured.
    pub command: String,
    /// `user` (the user's config, unconfined) or `project` (sandboxed).
    pub source: String,
    /// How it ended.
    pub outcome: HookOutcome,
    /// Its exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why it blocked (stderr or JSON `reason`), or what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// JSON `additionalContext` it returned, passed to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
    /// The tool of a tool event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The call of a tool event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<ToolCallId>,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

impl HookRanEvent {
    /// One line for a thread or a log: `hook PreToolUse `check.sh` blocked: reason`.
    pub fn note(&self) -> String {
        let mut line = format!(
            "hook {} `{}` {}",
            self.hook_event_name,
            self.command,
            self.outcome.as_str()
        );
        if let Some(code) = self.exit_code.filter(|c| *c != 0) {
            line.push_str(&format!(" (exit {code})"));
        }
        if let Some(reason) = &self.reason {
            line.push_str(": ");
            line.push_str(reason);
        }
        line
    }
}
