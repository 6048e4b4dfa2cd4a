//! Where a worktree sub-session's work stands (issue 35 item 3): `merged`,
//! `discarded`, `unmerged ✎3` (files changed) or `conflict`, the one word every front
//! end shows (`session show`, `session tree`, `session list`, the TUI's tree row).
//!
//! Owns: [`Standing`], read from a session's metadata (its `worktree` record and
//! the files of a refused merge, `merge_conflict`). Does not own: how a worktree gets
//! there (`engine::homecoming`, `engine::handle::undo`).

use super::worktree::State;
use crate::session::Metadata;

/// Where a worktree child's work stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Merged into its parent's checkout.
    Merged,
    /// Dropped by `session discard` (or the TUI's key).
    Discarded,
    /// On its branch, not merged: the files it changed, when counted at the end of
    /// its last turn.
    Unmerged(Option<usize>),
    /// An automatic merge was refused: the files that clashed. Still on its branch.
    Conflict(Vec<String>),
}

impl Standing {
    /// The standing of the session with `metadata`; `None` without a worktree, or
    /// for one removed because it changed nothing.
    pub fn of(metadata: &Metadata) -> Option<Self> {
        let record = metadata.worktree()?;
        match record.state {
            State::Clean => None,
            State::Merged => Some(Self::Merged),
            State::Discarded => Some(Self::Discarded),
            State::Active => Some(match &metadata.arbor.merge_conflict {
                Some(files) => Self::Conflict(files.clone()),
                None => Self::Unmerged(record.changed),
            }),
        }
    }

    /// The state's word alone: `merged`, `discarded`, `unmerged`, `conflict`.
    pub fn word(&self) -> &'static str {
        match self {
            Self::Merged => "merged",
            Self::Discarded => "discarded",
            Self::Unmerged(_) => "unmerged",
            Self::Conflict(_) => "conflict",
        }
    }

    /// Whether the work is still on its branch (unmerged or in conflict).
    pub fn is_pending(&self) -> bool {
        matches!(self, Self::Unmerged(_) | Self::Conflict(_))
    }
}

impl std::fmt::Display for Standing {
    /// `merged`, `discarded`, `unmerged ✎3` (`unmerged` when not counted), `conflict`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unmerged(Some(n)) => write!(f, "unmerged ✎{n}"),
            other => f.write_str(other.word()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Metadata with the keys of `value` (an object) beside a session id, read as
    /// `metadata.json` is.
    fn extra(mut value: Value) -> Metadata {
        value["session_id"] = json!("s");
        serde_json::from_value(value).unwrap()
    }

    fn worktree(state: &str) -> Value {
        json!({"path": "/w", "branch": "arbor/1a2b3c4d", "base": "0", "repo": "/r", "state": state})
    }

    #[test]
    fn each_state_has_its_word() {
        let of = |v: Value| Standing::of(&extra(v)).map(|s| s.to_string());
        assert_eq!(of(json!({})), None);
        assert_eq!(of(json!({"worktree": worktree("clean")})), None);
        assert_eq!(
            of(json!({"worktree": worktree("merged")})).as_deref(),
            Some("merged")
        );
        assert_eq!(
            of(json!({"worktree": worktree("discarded")})).as_deref(),
            Some("discarded")
        );
        assert_eq!(
            of(json!({"worktree": worktree("active")})).as_deref(),
            Some("unmerged")
        );
        let mut counted = worktree("active");
        counted["changed"] = json!(3);
        assert_eq!(
            of(json!({"worktree": counted})).as_deref(),
            Some("unmerged ✎3")
        );
        assert_eq!(
            Standing::of(&extra(
                json!({"worktree": worktree("active"), "merge_conflict": ["app.py"]})
            )),
            Some(Standing::Conflict(vec!["app.py".into()]))
        );
        // A conflict later merged by hand (`--markers`) is merged.
        assert_eq!(
            of(json!({"worktree": worktree("merged"), "merge_conflict": ["app.py"]})).as_deref(),
            Some("merged")
        );
    }
}
