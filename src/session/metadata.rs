//! `metadata.json`: one session's identity, status, usage and merged config (SPEC §7,
//! Amplifier's keys), arbor's own keys ([`ArborKeys`], flattened beside them) and any
//! other key as read.
//!
//! Owns: [`Metadata`] and the shapes of its keys (`record`: arbor's keys and their
//! accessors; `worktree`: the worktree record and merge policy; `resolved`: the
//! resolved model). Does not own: reading and writing the file (`store`).

use crate::session::ids::SessionId;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Usage;

mod record;
mod resolved;
mod worktree;

pub use record::{AgentSource, ArborKeys, RanOn, TodoItem, TodoStatus};
pub use resolved::{ResolvedModel, Via};
pub use worktree::{MergePolicy, WorktreeRecord, WorktreeState};

/// A session's lifecycle state, as `metadata.json` and `session:status` write it
/// (SPEC §7: `running|queued|waiting|paused|idle|completed|failed|cancelled`, plus the
/// derived `interrupted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// A turn is in progress.
    Running,
    /// A turn is accepted but waits to start or to send its next model call (a slot of
    /// its provider endpoint, `max_concurrent`; a queued message).
    Queued,
    /// A turn is in progress and a tool call waits for a person's approval (SPEC §12:
    /// "needs you").
    Waiting,
    /// The last turn stopped at the session's budget, everything kept; a resume
    /// grants one more budget ("needs you").
    Paused,
    /// Created or between turns.
    #[default]
    Idle,
    /// The last turn finished normally.
    Completed,
    /// The last turn ended with an error.
    Failed,
    /// The last turn was cancelled.
    Cancelled,
    /// Derived by readers (SPEC §7; `store` decides it when reading): the metadata
    /// says `running`, `queued` or `waiting` but the process that wrote it is gone
    /// (nobody holds the session's lock), or the metadata was lost to a kill and
    /// rebuilt from the transcript and events. arbor never sets it on a running
    /// session; a resumed one carries it until its turn starts.
    Interrupted,
}

impl SessionStatus {
    /// The status as written to `metadata.json` (`running`, `waiting`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Queued => "queued",
            SessionStatus::Waiting => "waiting",
            SessionStatus::Paused => "paused",
            SessionStatus::Idle => "idle",
            SessionStatus::Completed => "completed",
            SessionStatus::Failed => "failed",
            SessionStatus::Cancelled => "cancelled",
            SessionStatus::Interrupted => "interrupted",
        }
    }

    /// Whether a turn is in progress: running, queued for a provider slot, or waiting
    /// for an approval. A paused session's turn has ended (it stopped at its budget and
    /// waits for a resume), like idle and the other ended states.
    pub fn turn_in_progress(self) -> bool {
        matches!(
            self,
            SessionStatus::Running | SessionStatus::Queued | SessionStatus::Waiting
        )
    }

    /// Whether a person must act on a session with this status (SPEC §13 "needs
    /// you"): it waits for an approval, is paused (a budget reached), failed, or was
    /// interrupted. The TUI's count, jump key and notification all ask this (the tree
    /// adds pending approval prompts and what the person has already looked at).
    pub fn needs_you(self) -> bool {
        matches!(
            self,
            SessionStatus::Waiting
                | SessionStatus::Paused
                | SessionStatus::Failed
                | SessionStatus::Interrupted
        )
    }
}

/// Usage rolled into metadata: tokens summed over every turn, cost when a price is known.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_creation_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl SessionUsage {
    pub fn add(&mut self, u: &Usage) {
        self.input_tokens += u.input_tokens;
        self.output_tokens += u.output_tokens;
        self.cache_read_tokens += u.cache_read_tokens;
        self.cache_creation_tokens += u.cache_creation_tokens;
    }
}

/// One file a session wrote or edited (SPEC §12 "Every file a session writes or edits is
/// recorded"): produced by `write_file` / `edit_file`, summed per path in
/// [`Metadata::files_changed`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FileChange {
    /// The file, relative to the session's working directory with `/` separators, or
    /// absolute when it lies outside it (another `allowed_write_paths` entry).
    pub path: String,
    /// The tool of the latest change (`write_file`, `edit_file`).
    pub tool: String,
    /// Lines added (a line diff of old → new content, summed over the changes).
    #[serde(default)]
    pub lines_added: u64,
    /// Lines removed, summed the same way.
    #[serde(default)]
    pub lines_removed: u64,
    /// Whether the first recorded change created the file.
    #[serde(default)]
    pub created: bool,
    /// How many writes/edits were folded into this entry.
    #[serde(default = "one")]
    pub changes: u64,
    /// This one change as unified-diff hunks (`@@ -l,n +l,n @@` with 3 lines of
    /// context, no `---`/`+++` header), made from the file's content before and after
    /// the call: present on a `tool:post` of a change to a file that existed (so
    /// `session diff` can print a patch that applies), absent for a created file (its
    /// content is the call's input), a file over 8 MiB, and in
    /// [`Metadata::files_changed`], which sums changes and keeps no text. An arbor key
    /// Amplifier readers ignore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<String>,
}

fn one() -> u64 {
    1
}

impl FileChange {
    /// Folds a later change of the same path into this entry: lines and change counts
    /// add up, `tool` becomes the later one's, `created` stays the first one's.
    pub fn absorb(&mut self, later: &FileChange) {
        self.tool.clone_from(&later.tool);
        self.lines_added += later.lines_added;
        self.lines_removed += later.lines_removed;
        self.changes += later.changes;
    }
}

/// Adds `change` to `list` (kept sorted by path: concurrent tool calls finish in any
/// order): folded into the entry of the same path, else inserted.
pub fn record_file_change(list: &mut Vec<FileChange>, change: &FileChange) {
    match list.binary_search_by(|c| c.path.cmp(&change.path)) {
        Ok(at) => list[at].absorb(change),
        Err(at) => list.insert(
            at,
            FileChange {
                hunks: None,
                ..change.clone()
            },
        ),
    }
}

/// `metadata.json` `context` (arbor's own): `{tokens, max_tokens}` — the tokens of
/// the session's latest request view (measured or estimated, see
/// `engine::compact`) and its context limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ContextUse {
    /// Tokens of the latest request view.
    pub tokens: u64,
    /// The session's context limit.
    pub max_tokens: u64,
}

/// `metadata.json` (SPEC §7): Amplifier's keys as fields, arbor's in [`ArborKeys`]
/// (flattened: one flat object on disk), every other key in `extra`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Metadata {
    pub session_id: SessionId,
    #[serde(default)]
    pub parent_id: Option<SessionId>,
    #[serde(default)]
    pub agent_name: Option<String>,
    /// RFC 3339.
    #[serde(default)]
    pub created: String,
    /// RFC 3339.
    #[serde(default)]
    pub last_updated: String,
    #[serde(default)]
    pub turn_count: u32,
    #[serde(default)]
    pub working_dir: Option<String>,
    #[serde(default)]
    pub bundle: Option<String>,
    /// `provider/model` or the model id.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub status: SessionStatus,
    #[serde(default)]
    pub depth: u32,
    /// The full merged mount plan, secrets replaced by `[REDACTED]`. `None` when the
    /// file lacks it (such a session cannot be resumed: "Corrupted session metadata").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    #[serde(default)]
    pub agent_overlay: Value,
    #[serde(default)]
    pub usage: SessionUsage,
    #[serde(default)]
    pub name: Option<String>,
    /// `forked_from_turn`: the last turn of the original this fork holds (foundation's
    /// `fork_session` key, which `session::fork` writes too); absent unless a fork.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "record::lenient"
    )]
    pub forked_from_turn: Option<u64>,
    /// `forked_at`: when the fork was made (RFC 3339, foundation's key).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "record::lenient"
    )]
    pub forked_at: Option<String>,
    /// arbor's own keys (Amplifier ignores them), written after Amplifier's.
    #[serde(flatten)]
    pub arbor: ArborKeys,
    /// Every other key, as read (keys of other tools and of newer versions).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_status_parses_and_writes_back() {
        for name in [
            "running",
            "queued",
            "waiting",
            "paused",
            "idle",
            "completed",
            "failed",
            "cancelled",
            "interrupted",
        ] {
            let status: SessionStatus = serde_json::from_value(Value::from(name)).unwrap();
            assert_eq!(status.as_str(), name);
            assert_eq!(serde_json::to_value(status).unwrap(), Value::from(name));
        }
        let meta: Metadata =
            serde_json::from_str(r#"{"session_id": "s1", "status": "waiting"}"#).unwrap();
        assert_eq!(meta.status, SessionStatus::Waiting);
    }

    /// Every status, in declaration order.
    const ALL: [SessionStatus; 9] = [
        SessionStatus::Running,
        SessionStatus::Queued,
        SessionStatus::Waiting,
        SessionStatus::Paused,
        SessionStatus::Idle,
        SessionStatus::Completed,
        SessionStatus::Failed,
        SessionStatus::Cancelled,
        SessionStatus::Interrupted,
    ];

    #[test]
    fn a_turn_is_in_progress_until_it_ends() {
        use SessionStatus::*;
        let in_progress: Vec<SessionStatus> =
            ALL.into_iter().filter(|s| s.turn_in_progress()).collect();
        assert_eq!(in_progress, [Running, Queued, Waiting]);
    }

    #[test]
    fn a_person_must_act_on_waiting_paused_failed_and_interrupted() {
        use SessionStatus::*;
        let needs: Vec<SessionStatus> = ALL.into_iter().filter(|s| s.needs_you()).collect();
        assert_eq!(needs, [Waiting, Paused, Failed, Interrupted]);
    }
}
