//! Session trees: sessions linked by `parent_id` (SPEC §13 tree pane, §14
//! `arbor session tree`).
//!
//! Owns: turning a flat metadata list into parent → children nodes, and walking a
//! subtree. Does not own: reading the list (`store`) or drawing it (`tui`, `cli`).
//!
//! Works on whatever the list holds: a session whose parent is not in the list is a
//! root; duplicate ids keep the first; parent cycles (corrupt metadata) are broken so
//! every session appears exactly once.

use std::collections::{HashMap, HashSet};

use super::metadata::Metadata;
use super::store::{newest_first, timestamp_of};

/// One session and its sub-sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionNode {
    pub metadata: Metadata,
    /// Sub-sessions, oldest `created` first.
    pub children: Vec<SessionNode>,
}

impl SessionNode {
    /// The session's id.
    pub fn id(&self) -> &str {
        &self.metadata.session_id
    }

    /// This node and its descendants, pre-order (parent before children).
    pub fn walk(&self) -> Vec<&SessionNode> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            out.push(node);
            stack.extend(node.children.iter().rev());
        }
        out
    }
}

/// Builds the forest of `list`: roots are sessions with no parent or whose parent is
/// not in `list`, newest `last_updated` first; children are sorted by `created`
/// (oldest first, then id). Every session of `list` appears once.
pub fn build_tree(list: Vec<Metadata>) -> Vec<SessionNode> {
    let mut seen = HashSet::new();
    let list: Vec<Metadata> = list
        .into_iter()
        .filter(|m| seen.insert(m.session_id.clone()))
        .collect();
    let index: HashMap<&str, usize> = list
        .iter()
        .enumerate()
        .map(|(i, m)| (m.session_id.as_str(), i))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); list.len()];
    let mut roots = Vec::new();
    for (i, m) in list.iter().enumerate() {
        match m.parent_id.as_deref().and_then(|p| index.get(p)) {
            Some(&parent) if parent != i => children[parent].push(i),
            _ => roots.push(i),
        }
    }
    let by_created = |a: &usize, b: &usize| {
        let (a, b) = (&list[*a], &list[*b]);
        timestamp_of(&a.created)
            .cmp(&timestamp_of(&b.created))
            .then_with(|| a.created.cmp(&b.created))
            .then_with(|| a.session_id.cmp(&b.session_id))
    };
    for kids in &mut children {
        kids.sort_by(by_created);
    }
    // Sessions in a parent cycle are reachable from no root: promote one per cycle.
    let mut reached = vec![false; list.len()];
    mark(&roots, &children, &mut reached);
    for i in 0..list.len() {
        if !reached[i] {
            roots.push(i);
            mark(&[i], &children, &mut reached);
        }
    }
    roots.sort_by(|a, b| newest_first(&list[*a], &list[*b]));
    let mut slots: Vec<Option<Metadata>> = list.into_iter().map(Some).collect();
    let mut placed = vec![false; slots.len()];
    roots
        .iter()
        .filter_map(|&r| assemble(r, &children, &mut slots, &mut placed))
        .collect()
}

fn mark(start: &[usize], children: &[Vec<usize>], reached: &mut [bool]) {
    let mut stack: Vec<usize> = start.to_vec();
    while let Some(i) = stack.pop() {
        if !reached[i] {
            reached[i] = true;
            stack.extend(children[i].iter().copied());
        }
    }
}

/// The node for `i` with its children; `placed` stops a cycle re-entering a node.
fn assemble(
    i: usize,
    children: &[Vec<usize>],
    slots: &mut [Option<Metadata>],
    placed: &mut [bool],
) -> Option<SessionNode> {
    if placed[i] {
        return None;
    }
    placed[i] = true;
    let metadata = slots[i].take()?;
    let kids = children[i]
        .iter()
        .filter_map(|&c| assemble(c, children, slots, placed))
        .collect();
    Some(SessionNode {
        metadata,
        children: kids,
    })
}

/// The node with `id` anywhere in `roots`.
pub fn find<'a>(roots: &'a [SessionNode], id: &str) -> Option<&'a SessionNode> {
    roots
        .iter()
        .flat_map(SessionNode::walk)
        .find(|node| node.id() == id)
}

/// `id` and the ids of all its descendants, pre-order; empty when `id` is not in
/// `roots`.
pub fn subtree_ids(roots: &[SessionNode], id: &str) -> Vec<String> {
    find(roots, id)
        .map(|node| node.walk().iter().map(|n| n.id().to_string()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str, parent: Option<&str>, created: &str, updated: &str) -> Metadata {
        Metadata {
            session_id: id.into(),
            parent_id: parent.map(Into::into),
            created: created.into(),
            last_updated: updated.into(),
            ..Default::default()
        }
    }

    const T1: &str = "2025-01-01T00:00:01Z";
    const T2: &str = "2025-01-01T00:00:02Z";
    const T3: &str = "2025-01-01T00:00:03Z";

    #[test]
    fn children_by_created_roots_newest_first() {
        let tree = build_tree(vec![
            meta("c2", Some("r1"), T3, T3),
            meta("r1", None, T1, T1),
            meta("c1", Some("r1"), T2, T2),
            meta("g1", Some("c1"), T3, T3),
            meta("r2", None, T1, T2),
            meta("orphan", Some("gone"), T1, T3),
        ]);
        let roots: Vec<&str> = tree.iter().map(SessionNode::id).collect();
        assert_eq!(roots, ["orphan", "r2", "r1"]);
        let r1 = find(&tree, "r1").unwrap();
        let kids: Vec<&str> = r1.children.iter().map(SessionNode::id).collect();
        assert_eq!(kids, ["c1", "c2"]);
        assert_eq!(subtree_ids(&tree, "r1"), ["r1", "c1", "g1", "c2"]);
        assert_eq!(subtree_ids(&tree, "c1"), ["c1", "g1"]);
        assert!(subtree_ids(&tree, "nope").is_empty());
    }

    #[test]
    fn cycles_self_parents_and_duplicates_keep_every_session_once() {
        let tree = build_tree(vec![
            meta("a", Some("b"), T1, T1),
            meta("b", Some("a"), T2, T2),
            meta("s", Some("s"), T1, T1),
            meta("s", None, T3, T3),
        ]);
        let mut all: Vec<&str> = tree
            .iter()
            .flat_map(SessionNode::walk)
            .map(SessionNode::id)
            .collect();
        all.sort();
        assert_eq!(all, ["a", "b", "s"]);
    }
}
