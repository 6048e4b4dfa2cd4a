//! What a tree node says about isolation (issue 25): the branch of a sub-session's
//! unmerged worktree (`⎇ arbor/1a2b3c4d unmerged`) and the turn a fork was cut at
//! (`fork @3`), from its metadata, and where its work stands (`merged`, `discarded`,
//! `unmerged ✎3`, `conflict`; issue 35).
//!
//! Owns: [`mark`], refreshing it from a listing, and clearing it once the worktree
//! is gone. Does not own: the worktree itself (`isolation`), drawing
//! (`views::tree`).

use crate::isolation::Standing;
use crate::session::Metadata;

/// The isolation marks of `m`: `(branch of an active worktree, turn it was forked
/// at)`.
pub fn mark(m: &Metadata) -> (Option<String>, Option<u64>) {
    let branch = m.active_worktree().map(|r| r.branch.clone());
    (branch, m.forked_from_turn())
}

/// Where `m`'s worktree work stands (`merged`, `discarded`, `unmerged ✎3`,
/// `conflict`; issue 35), `None` without a worktree that changed something.
pub fn standing(m: &Metadata) -> Option<Standing> {
    Standing::of(m)
}

impl super::SessionTree {
    /// Takes the isolation marks and `ran_on` of every listed session the tree
    /// already has from its stored metadata (`load` adds only new ones): a sub-session
    /// spawned in this process learns its worktree's branch once its turn ended and
    /// was recorded, and loses it once merged, discarded or removed clean; a remote
    /// one learns its worker once the root recorded it. Answers a listing request
    /// (`take_listing_request`).
    pub fn refresh_marks(&mut self, listed: &[Metadata]) {
        for m in listed {
            if let Some(node) = self.nodes.get_mut(m.session_id.as_str()) {
                (node.branch, node.fork) = mark(m);
                node.standing = standing(m);
                if let Some(r) = &m.arbor.ran_on {
                    node.ran_on = Some(r.clone());
                }
            }
        }
        self.listing_answered();
    }

    /// Session `id`'s worktree was merged or discarded: its node loses its branch
    /// and "unmerged" mark. Unknown ids are ignored.
    pub fn worktree_gone(&mut self, id: &str) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.branch = None;
            node.standing = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_active_worktree_shows_its_branch_and_a_fork_its_turn() {
        let mut m: Metadata = serde_json::from_value(json!({
            "session_id": "s",
            "worktree": {"path": "/w", "branch": "arbor/1a2b3c4d", "base": "0", "repo": "/r", "state": "active"},
            "forked_from_turn": 3,
        }))
        .unwrap();
        assert_eq!(mark(&m), (Some("arbor/1a2b3c4d".into()), Some(3)));
        if let Some(record) = m.arbor.worktree.as_mut() {
            record.state = crate::session::metadata::WorktreeState::Merged;
        }
        assert_eq!(mark(&m).0, None);
    }
}
