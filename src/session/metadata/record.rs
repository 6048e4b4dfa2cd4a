//! arbor's own keys of `metadata.json`, typed: [`ArborKeys`], flattened into
//! [`Metadata`] beside Amplifier's fields, so the file stays one flat object with the
//! keys Amplifier's readers know plus arbor's (which they ignore), and keys neither
//! knows still round-trip through `Metadata::extra`.
//!
//! Owns: the record, its lenient reading (a key holding a value of another shape reads
//! as absent and is not written back, so a hand-edited or foreign value never makes a
//! session unreadable), the accessors front ends and the engine ask
//! ([`Metadata::active_worktree`], …), and the shapes of keys no lower module owns:
//! [`RanOn`], [`AgentSource`], [`TodoItem`] (the worktree's are in `worktree`, the
//! budget's in `session::budget`). Does not own: what the keys mean to git
//! (`isolation`), a remote run (`remote`), approvals (`engine::gate`) or the todo tool
//! (`tool::todo`), which work on these types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::resolved::ResolvedModel;
use super::worktree::{MergePolicy, WorktreeRecord, WorktreeState};
use super::{ContextUse, FileChange, Metadata};
use crate::session::budget::BudgetState;

/// arbor's keys of `metadata.json` (Amplifier ignores every one of them). Each but
/// `files_changed` is absent from the file while unset. Field order is the order
/// written, after Amplifier's keys: the first six where arbor has always written them,
/// the rest in the order arbor used to add them to a session's other keys, so a file
/// written before they were typed is written back the same.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ArborKeys {
    /// `files_changed`: files written or edited by this session's tools, one entry
    /// per path (see [`FileChange`]); empty when none.
    #[serde(default)]
    pub files_changed: Vec<FileChange>,
    /// `active_agent`: the agent of the session's `sub_agents` tree that handles the
    /// next message (SPEC §11 selection, updated at each transfer and at the end of
    /// every turn); absent for a session whose agent has no sub-agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_agent: Option<String>,
    /// `turn_started`: when the session's latest turn began (RFC 3339). Lets a reader
    /// time the last turn rather than the session's whole life (`created` →
    /// `last_updated`, which spans days for a session resumed later); absent for
    /// sessions other tools wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_started: Option<String>,
    /// `budget` (issue 14): the budget of each grant and the spend when the current
    /// one started; absent without a budget.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub budget: Option<BudgetState>,
    /// `awaiting_approval`: the tool call ids that wait for a person's approval now
    /// (written with the status `waiting`; absent when none). Items that are not
    /// strings are skipped.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "string_list"
    )]
    pub awaiting_approval: Vec<String>,
    /// `context` (issue 26): how full the session's context was at its latest model
    /// call; absent before the first call.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub context: Option<ContextUse>,
    /// `model_role`: the `task` call's `model_role`, as the call gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_role: Option<Value>,
    /// `provider_preferences`: the `task` call's `provider_preferences`, as the call
    /// gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_preferences: Option<Value>,
    /// `resolved_model`: the model the session got and why (SPEC §9 precedence).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub resolved_model: Option<ResolvedModel>,
    /// `agent_source`: the tier of the session's agent file, which decides how much
    /// its `approvals:` may say (an absent or unknown tier is tighten-only).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub agent_source: Option<AgentSource>,
    /// `worktree` (issue 25): the sub-session's git worktree.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub worktree: Option<WorktreeRecord>,
    /// `merge_policy` (issue 35): what happens to the worktree's branch when the
    /// `task` call returns. A child stored before issue 35 has none and counts as
    /// `manual` ([`Metadata::merge_policy`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub merge_policy: Option<MergePolicy>,
    /// `remote_runs` (issue 27): how many runs the root has sent to a worker (the
    /// run counter a job carries).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub remote_runs: Option<u64>,
    /// `ran_on` (issue 27): where a remote sub-session ran last.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub ran_on: Option<RanOn>,
    /// `todos`: the session's checklist after its latest `todo` call, for the tree
    /// (`3/7`) of another process or a later one.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub todos: Option<Vec<TodoItem>>,
    /// `merge_conflict` (issue 35): the files a refused automatic merge conflicted
    /// on. Items that are not strings are skipped.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_strings"
    )]
    pub merge_conflict: Option<Vec<String>>,
    /// `isolation_noted`: the parent's thread was told its children are not isolated
    /// (said once).
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "lenient_flag"
    )]
    pub isolation_noted: bool,
}

impl Metadata {
    /// The session's worktree record, in any state.
    pub fn worktree(&self) -> Option<&WorktreeRecord> {
        self.arbor.worktree.as_ref()
    }

    /// The session's worktree while it is active (not yet merged, discarded or
    /// removed as clean).
    pub fn active_worktree(&self) -> Option<&WorktreeRecord> {
        self.worktree().filter(|r| r.state == WorktreeState::Active)
    }

    /// The worktree's merge policy (`manual` for a child stored before issue 35).
    pub fn merge_policy(&self) -> MergePolicy {
        self.arbor.merge_policy.unwrap_or(MergePolicy::Manual)
    }

    /// The turn this session was forked at (`forked_from_turn`, written by
    /// `session::fork` and Amplifier's `fork_session`), if it is a fork. A fork keeps
    /// its original as `parent_id` but is a root for depth, limits and resume.
    pub fn forked_from_turn(&self) -> Option<u64> {
        self.forked_from_turn
    }
}

/// Where a sub-session ran: metadata `ran_on` (arbor's own key), the lease holder and
/// the presence entry. `worker` is unique to one `arbor worker` process (`w-` and 8
/// hex digits); `host` the machine's host name; `pid` the worker's process id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RanOn {
    /// The worker's id (`w-` and 8 hex digits).
    pub worker: String,
    /// The machine's host name.
    pub host: String,
    /// The worker's process id.
    pub pid: u32,
}

/// Where an agent definition came from, highest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentSource {
    /// `AMPLIFIER_AGENT_<NAME>` names the file.
    Env,
    /// `$AMPLIFIER_HOME/agents`.
    User,
    /// `.amplifier/agents` in the current directory or nearest ancestor.
    Project,
    /// The active bundle (built-in by default).
    Bundle,
}

impl AgentSource {
    /// `env`, `user`, `project` or `bundle`, as `agent list` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Env => "env",
            Self::User => "user",
            Self::Project => "project",
            Self::Bundle => "bundle",
        }
    }
}

/// One checklist item of the `todo` tool, as the model writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Imperative description (`Run tests`).
    pub content: String,
    /// Present continuous (`Running tests`), shown while it is in progress.
    #[serde(rename = "activeForm")]
    pub active_form: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: TodoStatus,
}

/// A checklist item's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// `T` when the value reads as one, else `None` (a key other tools may have written
/// in another form never makes the whole file unreadable).
pub(super) fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

/// `true` only for `true`.
fn lenient_flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Value::deserialize(d)? == Value::Bool(true))
}

/// The strings of a list (anything else reads as empty).
fn string_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(lenient_strings(d)?.unwrap_or_default())
}

/// The strings of a list, `None` for anything but a list.
fn lenient_strings<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<String>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => Some(
            items
                .into_iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    })
}

#[cfg(test)]
mod tests;
