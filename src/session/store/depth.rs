//! Depth from the `parent_id` chain, for sessions whose metadata does not carry it.
//!
//! Amplifier writes no `depth` (its sub-sessions' ids start with sixteen zeros
//! instead of the parent's span, so the id says nothing either): a sub-session read
//! with `depth` 0 — a value arbor never writes for one — gets the length of its
//! `parent_id` chain. Owns: [`fill_depths`] (listings) and [`chain_depth`] (one
//! session). Does not own: reading metadata files (`rebuild`).

use std::collections::HashMap;

use crate::session::SessionId;
use crate::session::metadata::Metadata;

/// The longest chain followed; past it (or on a cycle) the chain is cut there.
const MAX_CHAIN: u32 = 256;

/// Whether `meta` needs its depth from the chain: a sub-session (it has a parent)
/// whose metadata says depth 0 — not a fork, which is a root at depth 0.
fn needs_depth(meta: &Metadata) -> bool {
    meta.parent_id.is_some() && meta.depth == 0 && meta.forked_from_turn().is_none()
}

/// Sets the depth of every sub-session in `sessions` that lacks one: its parent's
/// depth + 1, where a parent not in `sessions` counts as a root (depth 0) unless
/// `sessions` says otherwise. Parents that carry a depth are trusted.
pub(crate) fn fill_depths(sessions: &mut [Metadata]) {
    let known: HashMap<SessionId, (Option<SessionId>, u32)> = sessions
        .iter()
        .map(|m| (m.session_id.clone(), (m.parent_id.clone(), m.depth)))
        .collect();
    for meta in sessions.iter_mut().filter(|m| needs_depth(m)) {
        meta.depth = chain_length(meta.parent_id.as_deref(), |id| known.get(id).cloned());
    }
}

/// The depth of `meta`: as stored, or (for a sub-session stored without one) the
/// length of its `parent_id` chain, each parent looked up with `parent_of` (its
/// `parent_id` and stored depth; `None` when missing, which ends the chain there).
pub(crate) fn chain_depth(
    meta: &Metadata,
    parent_of: impl Fn(&str) -> Option<(Option<SessionId>, u32)>,
) -> u32 {
    if !needs_depth(meta) {
        return meta.depth;
    }
    chain_length(meta.parent_id.as_deref(), parent_of)
}

/// 1 + the depth of `parent`: its stored depth when it has one (or it is a root),
/// else its own chain.
fn chain_length(
    parent: Option<&str>,
    lookup: impl Fn(&str) -> Option<(Option<SessionId>, u32)>,
) -> u32 {
    let mut depth = 0;
    let mut current = parent.map(SessionId::from);
    while let Some(id) = current {
        depth += 1;
        if depth >= MAX_CHAIN {
            break;
        }
        match lookup(&id) {
            Some((Some(grand), 0)) => current = Some(grand),
            Some((_, stored)) => return depth + stored,
            None => break,
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionId;

    fn meta(id: &str, parent: Option<&str>, depth: u32) -> Metadata {
        Metadata {
            session_id: id.into(),
            parent_id: parent.map(SessionId::from),
            depth,
            ..Default::default()
        }
    }

    #[test]
    fn amplifier_children_get_their_depth_from_the_parent_chain() {
        let root = "9b1d5c1e-0000-4000-8000-000000000001";
        let child = "0000000000000000-1111111111111111_explorer";
        let grandchild = "0000000000000000-2222222222222222_reviewer";
        let mut list = vec![
            meta(grandchild, Some(child), 0),
            meta(root, None, 0),
            meta(child, Some(root), 0),
        ];
        fill_depths(&mut list);
        let depths: Vec<u32> = list.iter().map(|m| m.depth).collect();
        assert_eq!(depths, [2, 0, 1]);
    }

    #[test]
    fn stored_depths_are_kept_and_trusted() {
        let mut list = vec![meta("c", Some("p"), 0), meta("p", Some("r"), 3)];
        fill_depths(&mut list);
        assert_eq!((list[0].depth, list[1].depth), (4, 3));
    }

    #[test]
    fn a_missing_parent_counts_as_a_root_and_a_cycle_ends() {
        let mut list = vec![meta("orphan", Some("gone"), 0)];
        fill_depths(&mut list);
        assert_eq!(list[0].depth, 1);
        let mut cycle = vec![meta("a", Some("b"), 0), meta("b", Some("a"), 0)];
        fill_depths(&mut cycle);
        assert_eq!(cycle[0].depth, MAX_CHAIN);
    }

    #[test]
    fn one_session_walks_its_parents() {
        let child = meta("c", Some("p"), 0);
        let depth = chain_depth(&child, |id| match id {
            "p" => Some((Some("r".into()), 0)),
            "r" => Some((None, 0)),
            _ => None,
        });
        assert_eq!(depth, 2);
        assert_eq!(chain_depth(&meta("r", None, 0), |_| None), 0);
    }
}
