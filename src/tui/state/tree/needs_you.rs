//! "Needs you" (SPEC §13): the sessions a person must act on — an approval prompt
//! waits, or the status is `waiting`, `paused`, `failed` or `interrupted`
//! ([`SessionStatus::needs_you`]). A failed or interrupted session the person has
//! opened since it stopped (`Node::seen`) no longer counts: they have seen it, and
//! nothing else would ever clear an old failure. Waiting and paused sessions count
//! until they move on, seen or not.
//!
//! Owns: that rule, the count, and the order the jump key walks (the tree's order:
//! roots newest first, each followed by its descendants in spawn order, collapsed
//! ones included). Does not own: acknowledging (the `App` marks the open thread's
//! session seen), the status bar or the notification (`app`).

use std::collections::HashSet;

use super::SessionTree;
use crate::session::SessionStatus;

impl SessionTree {
    /// Whether session `id` needs the person now (see the module doc). `false` for an
    /// unknown id.
    pub fn needs_you(&self, id: &str) -> bool {
        if self.is_waiting(id) {
            return true;
        }
        self.nodes.get(id).is_some_and(|n| {
            let acknowledged =
                n.seen && matches!(n.status, SessionStatus::Failed | SessionStatus::Interrupted);
            n.status.needs_you() && !acknowledged
        })
    }

    /// The sessions that need the person, in tree order.
    pub fn needs_you_ids(&self) -> Vec<&str> {
        self.tree_order()
            .into_iter()
            .filter(|id| self.needs_you(id))
            .collect()
    }

    /// How many sessions need the person (the status bar's count).
    pub fn needs_you_count(&self) -> usize {
        self.nodes.keys().filter(|id| self.needs_you(id)).count()
    }

    /// The next session after `after` (in tree order, wrapping around) that needs the
    /// person: the first one when `after` is `None`, unknown or the only one. `None`
    /// when no session does.
    pub fn next_needs_you(&self, after: Option<&str>) -> Option<&str> {
        let order = self.tree_order();
        let start = after
            .and_then(|a| order.iter().position(|id| *id == a))
            .map_or(0, |i| i + 1);
        (0..order.len())
            .map(|k| order[(start + k) % order.len()])
            .find(|id| self.needs_you(id))
    }

    /// Marks `id` as seen by the person (its thread is open): a failed or interrupted
    /// session stops needing them until its status changes again.
    pub fn mark_seen(&mut self, id: &str) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.seen = true;
        }
    }

    /// Every session id, depth first: each root (newest first) then its descendants
    /// in spawn order, collapsed or not; each once.
    fn tree_order(&self) -> Vec<&str> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut seen = HashSet::new();
        let mut stack: Vec<&str> = self.roots.iter().rev().map(String::as_str).collect();
        while let Some(id) = stack.pop() {
            let Some(node) = self.nodes.get(id) else {
                continue;
            };
            if !seen.insert(id) {
                continue;
            }
            out.push(id);
            stack.extend(node.children.iter().rev().map(String::as_str));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use crate::session::{EngineEvent, SessionStatus};
    use crate::tui::state::tree::SessionTree;
    use crate::tui::testing::{event, fork, start, to_tree};

    fn status(tree: &mut SessionTree, id: &str, parent: Option<&str>, s: SessionStatus) {
        to_tree(
            tree,
            &event(EngineEvent::status(s), id, parent, "2025-03-01T12:00:05Z"),
        );
    }

    /// `root` with children a (failed), b (running), c (paused), d (completed).
    fn tree() -> SessionTree {
        let mut tree = SessionTree::default();
        let t0 = "2025-03-01T12:00:00Z";
        to_tree(&mut tree, &event(start("arbor"), "root", None, t0));
        for child in ["a", "b", "c", "d"] {
            to_tree(
                &mut tree,
                &event(fork("root", child), child, Some("root"), t0),
            );
        }
        status(&mut tree, "a", Some("root"), SessionStatus::Failed);
        status(&mut tree, "b", Some("root"), SessionStatus::Running);
        status(&mut tree, "c", Some("root"), SessionStatus::Paused);
        status(&mut tree, "d", Some("root"), SessionStatus::Completed);
        tree
    }

    #[test]
    fn failed_paused_interrupted_and_approvals_need_you() {
        let mut tree = tree();
        assert_eq!(tree.needs_you_ids(), ["a", "c"]);
        assert_eq!(tree.needs_you_count(), 2);
        tree.set_waiting(HashMap::from([("b".into(), 1)]));
        assert_eq!(tree.needs_you_ids(), ["a", "b", "c"]);
        status(&mut tree, "d", Some("root"), SessionStatus::Interrupted);
        assert_eq!(tree.needs_you_ids(), ["a", "b", "c", "d"]);
        assert_eq!(tree.needs_you_below("root"), 4);
    }

    #[test]
    fn a_seen_failure_stops_counting_until_its_status_changes() {
        let mut tree = tree();
        tree.mark_seen("a");
        tree.mark_seen("c");
        // Paused still needs a decision; the seen failure does not.
        assert_eq!(tree.needs_you_ids(), ["c"]);
        status(&mut tree, "a", Some("root"), SessionStatus::Running);
        status(&mut tree, "a", Some("root"), SessionStatus::Failed);
        assert_eq!(tree.needs_you_ids(), ["a", "c"]);
    }

    #[test]
    fn the_next_one_cycles_in_tree_order() {
        let mut tree = tree();
        assert_eq!(tree.next_needs_you(None), Some("a"));
        assert_eq!(tree.next_needs_you(Some("root")), Some("a"));
        assert_eq!(tree.next_needs_you(Some("a")), Some("c"));
        assert_eq!(tree.next_needs_you(Some("b")), Some("c"));
        assert_eq!(tree.next_needs_you(Some("c")), Some("a"));
        // Collapsed nodes are walked too.
        tree.selected = Some("root".into());
        tree.set_collapsed(true);
        assert_eq!(tree.next_needs_you(Some("a")), Some("c"));
        for id in ["a", "c"] {
            status(&mut tree, id, Some("root"), SessionStatus::Completed);
        }
        assert_eq!(tree.next_needs_you(Some("a")), None);
    }
}
