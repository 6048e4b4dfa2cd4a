//! Approvals (SPEC §12): the payloads of `approval:required`, `approval:granted` and
//! `approval:denied`, and the answer a front end gives ([`ApprovalDecision`], sent as
//! `EngineCommand::ResolveApproval`).
//!
//! Owns: these shapes and their JSON keys. Does not own: deciding whether a call needs
//! a person (the policy, `config`), waiting for the answer (`engine`), or asking the
//! person (`tui`).
//!
//! The event names are Amplifier's (its kernel's `APPROVAL_REQUIRED`,
//! `APPROVAL_GRANTED`, `APPROVAL_DENIED`); the `data` keys are arbor's, with
//! Amplifier's `tool_name` / `tool_call_id` as on the tool events. Field order is the
//! key order of `data`.

use crate::session::ids::ToolCallId;
use serde::{Deserialize, Serialize};

/// `approval:required`: `{tool_call_id, tool_name, agent, summary, command?, diff?,
/// sandbox?}`.
/// The call waits until a front end answers it (or its session is cancelled); the
/// session's status is `waiting` meanwhile.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ApprovalRequiredEvent {
    /// The waiting call's id (the assistant message's `tool_calls[].id`).
    pub tool_call_id: ToolCallId,
    /// The tool's name as the model called it (`bash`, `write_file`, …).
    pub tool_name: String,
    /// The asking session's agent.
    pub agent: String,
    /// One line saying what the call does: the command for `bash`, `write PATH`,
    /// `edit PATH`, else the tool name.
    pub summary: String,
    /// `bash` only: the whole command, as it would run under `sh -c` (may span lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `write_file` / `edit_file` only: the change as a unified diff (`---`/`+++`
    /// headers, `@@` hunks; a new file diffs against nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// `bash` only: whether the command runs in the kernel sandbox, one line
    /// (`sandboxed: writes ./, no network`, `NOT sandboxed (sandbox.mode is off)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// arbor's own: set when this asks to run a command once more with network, the
    /// sandbox having cut it off (Codex's escalation) — why, in one line. Front ends
    /// then offer only yes (once) or no: an "always" does not apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<String>,
}

/// `approval:granted`: `{tool_call_id, tool_name, agent, decision, rule?, reason?}`.
/// The call runs next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalGrantedEvent {
    /// The call's id.
    pub tool_call_id: ToolCallId,
    /// The tool's name.
    pub tool_name: String,
    /// The asking session's agent.
    pub agent: String,
    /// Who or what granted it.
    pub decision: DecisionKind,
    /// For `always` and `remembered`: the rule that now allows such calls in this tree,
    /// written as a policy key (`write_file`, `bash(cargo test*)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Why, when there is more to say (the policy key that allowed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `approval:denied`: `{tool_call_id, tool_name, agent, decision, reason?}`. The call
/// does not run; the model gets a result saying it was denied (with `reason`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalDeniedEvent {
    /// The call's id.
    pub tool_call_id: ToolCallId,
    /// The tool's name.
    pub tool_name: String,
    /// The asking session's agent.
    pub agent: String,
    /// Who or what denied it.
    pub decision: DecisionKind,
    /// The person's reason (returned to the model), or what denied it (the policy key,
    /// "run without --yes").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Who or what answered an approval: the `decision` key of `approval:granted` and
/// `approval:denied`, written in snake case (`once`, `always`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// A person answered for this call only (`y`; or `n` / Esc when denied).
    Once,
    /// A person answered "always" (`a`): calls matching the event's `rule` are allowed
    /// in this tree from now on.
    Always,
    /// An earlier "always" in this tree answered it; nobody was asked again.
    Remembered,
    /// The approval policy (config `approvals:`, agent files) decided; nobody was asked.
    Policy,
    /// Headless `run` / `session resume`: `--yes` granted it, or its absence denied it.
    Headless,
    /// The session was cancelled while the call waited; it did not run.
    Cancelled,
}

/// A person's answer to `approval:required`, carried by
/// `EngineCommand::ResolveApproval`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Run the call; `scope` says whether the answer also covers later calls.
    Allow { scope: AllowScope },
    /// Do not run the call; `reason` (when given) is returned to the model.
    Deny { reason: Option<String> },
}

/// How far an [`ApprovalDecision::Allow`] reaches (SPEC §12: `y` once, `a` always for
/// this tool or command prefix, in this tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowScope {
    /// This call only.
    Once,
    /// Every later call of this tool in this session tree (`write_file`, `edit_file`).
    AlwaysTool,
    /// Every later `bash` call in this session tree whose command starts with this
    /// prefix (the policy key `bash(PREFIX*)`).
    AlwaysPrefix(String),
}
