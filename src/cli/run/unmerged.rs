//! The end of `arbor run` (issue 35 item 3): each sub-session of the run's tree left
//! unmerged — by `merge: manual` or `review`, or by a conflict — listed on stderr with
//! its branch and the exact commands to merge or discard it.
//!
//! Owns: the listing's words. Does not own: the merge (`engine::homecoming`,
//! `engine::handle::undo`), the records (`isolation::worktree`).

use std::collections::BTreeSet;

use crate::engine::{Engine, EngineReply};
use crate::session::{EngineCommand, Metadata};

/// The lines listing the unmerged sub-sessions below `root` among `sessions`; empty
/// when every child's work came home (or none had a worktree).
pub fn lines(sessions: &[Metadata], root: &str) -> Vec<String> {
    let mut tree: BTreeSet<String> = BTreeSet::from([root.to_string()]);
    // Parents before children is not guaranteed: grow the set until it stops.
    loop {
        let before = tree.len();
        for m in sessions {
            if m.parent_id
                .as_ref()
                .is_some_and(|p| tree.contains(p.as_str()))
            {
                tree.insert(m.session_id.to_string());
            }
        }
        if tree.len() == before {
            break;
        }
    }
    let mut left: Vec<String> = sessions
        .iter()
        .filter(|m| m.session_id.as_str() != root && tree.contains(m.session_id.as_str()))
        .filter_map(|m| {
            let record = m.active_worktree()?;
            let id = m.session_id.as_str();
            let why = match &m.arbor.merge_conflict {
                Some(files) => format!("conflict in {}", files.join(", ")),
                None => format!("merge: {}", m.merge_policy().as_str()),
            };
            Some(format!(
                "  {} ({why}): merge: arbor session merge {id}   discard: arbor session discard {id}",
                record.branch
            ))
        })
        .collect();
    if left.is_empty() {
        return left;
    }
    let n = left.len();
    left.insert(
        0,
        format!(
            "{n} sub-session{} left unmerged (the work is on arbor/* branches, not in your checkout):",
            if n == 1 { "" } else { "s" }
        ),
    );
    left
}

/// Prints [`lines`] for the tree of `root` on stderr (nothing when there are none;
/// sessions that cannot be listed are logged), listed by the engine (`ListSessions`).
pub async fn report(engine: &Engine, root: &str) {
    let sessions = match crate::cli::call::reply(engine, EngineCommand::ListSessions).await {
        Ok(EngineReply::SessionsListed(Ok(sessions))) => sessions,
        Ok(EngineReply::SessionsListed(Err(e))) | Err(e) => {
            tracing::warn!("listing sessions for the unmerged report: {e}");
            return;
        }
        Ok(other) => {
            tracing::warn!("listing sessions for the unmerged report: {other:?}");
            return;
        }
    };
    let lines = lines(&sessions, root);
    if let Some((head, rest)) = lines.split_first() {
        super::out::error(head);
        for line in rest {
            super::out::plain_error(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Session `id` under `parent` with the metadata keys of `extra`, read as
    /// `metadata.json` is.
    fn meta(id: &str, parent: Option<&str>, mut extra: serde_json::Value) -> Metadata {
        extra["session_id"] = json!(id);
        extra["parent_id"] = json!(parent);
        serde_json::from_value(extra).unwrap()
    }

    fn worktree(branch: &str, state: &str) -> serde_json::Value {
        json!({"path": "/w", "branch": branch, "base": "0", "repo": "/r", "state": state})
    }

    #[test]
    fn only_the_trees_active_worktrees_are_listed_with_why() {
        let sessions = vec![
            meta(
                "grandkid",
                Some("kid"),
                json!({"worktree": worktree("arbor/g", "active"), "merge_policy": "review"}),
            ),
            meta("root", None, json!({})),
            meta(
                "kid",
                Some("root"),
                json!({"worktree": worktree("arbor/k", "active"), "merge_policy": "auto", "merge_conflict": ["app.py"]}),
            ),
            meta(
                "done",
                Some("root"),
                json!({"worktree": worktree("arbor/d", "merged")}),
            ),
            meta(
                "other",
                Some("another-root"),
                json!({"worktree": worktree("arbor/o", "active")}),
            ),
        ];
        let lines = lines(&sessions, "root");
        assert_eq!(
            lines,
            [
                "2 sub-sessions left unmerged (the work is on arbor/* branches, not in your checkout):",
                "  arbor/g (merge: review): merge: arbor session merge grandkid   discard: arbor session discard grandkid",
                "  arbor/k (conflict in app.py): merge: arbor session merge kid   discard: arbor session discard kid",
            ]
        );
        assert!(super::lines(&sessions[1..2], "root").is_empty());
    }
}
