//! Session trees: sessions linked by `parent_id` (SPEC §13 tree pane, §14
//! `arbor session tree`). The one tree model both front ends draw: the TUI's
//! `SessionTree` links its nodes with [`forest`], `arbor session tree` and exports use
//! [`build_tree`] (which is [`forest`] over stored metadata).
//!
//! Owns: turning sessions that name their parent into a forest in which every session
//! appears exactly once, the reason a session that names a parent is shown as a root
//! ([`Detached`]), walking a subtree, and each parent's children
//! ([`children_index`]). Does not own: reading the list (`store`), live state of a
//! session (`tui::state::tree`), or drawing (`tui`, `cli`).
//!
//! Metadata can be wrong (a deleted parent, a hand-edited file, a copy between
//! projects), and a front end must still show every session:
//! - a parent that is not in the list, or the session itself, makes a root;
//! - a parent cycle (`a.parent = b`, `b.parent = a`) is cut once, above its oldest
//!   member in spawn order, which becomes a root; the others stay below it;
//! - with duplicate ids a parent link goes to the first of them.

use std::collections::{BTreeMap, HashMap};

use super::ids::SessionId;
use super::metadata::Metadata;
use super::store::{newest_first, timestamp_of};

/// Why a session that names a parent is shown as a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detached {
    /// The parent is not among the sessions (deleted, or in another project).
    MissingParent,
    /// The session names itself as its parent.
    SelfParent,
    /// Following parents leads back to this session; the link was cut here.
    Cycle,
}

impl Detached {
    /// A short note for front ends: `parent missing`, `own parent`, `parent cycle`.
    pub fn note(self) -> &'static str {
        match self {
            Detached::MissingParent => "parent missing",
            Detached::SelfParent => "own parent",
            Detached::Cycle => "parent cycle",
        }
    }
}

/// The shape of a forest over sessions given in spawn order, as indices into that
/// input: every input index is either in `roots` or in exactly one `children` list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Forest {
    /// Roots, in input order.
    pub roots: Vec<usize>,
    /// Sub-sessions of each input, in input order.
    pub children: Vec<Vec<usize>>,
    /// The tree parent of each input (`None` for roots).
    pub parent: Vec<Option<usize>>,
    /// For each input: why it is a root although it names a parent (`None` when it
    /// names none, or is linked below its parent).
    pub detached: Vec<Option<Detached>>,
}

/// Links `(session id, parent id)` pairs, given in spawn order (oldest first), into a
/// forest (see the module docs for bad links). Linear in the number of sessions, no
/// recursion: any depth is fine.
pub fn forest<'a, I>(links: I) -> Forest
where
    I: IntoIterator<Item = (&'a str, Option<&'a str>)>,
{
    let links: Vec<(&str, Option<&str>)> = links.into_iter().collect();
    let n = links.len();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(n);
    for (i, (id, _)) in links.iter().enumerate() {
        index.entry(id).or_insert(i);
    }
    let mut f = Forest {
        roots: Vec::new(),
        children: vec![Vec::new(); n],
        parent: vec![None; n],
        detached: vec![None; n],
    };
    for (i, (_, parent)) in links.iter().enumerate() {
        let Some(parent) = parent else { continue };
        match index.get(parent) {
            Some(&p) if p == i => f.detached[i] = Some(Detached::SelfParent),
            Some(&p) => f.parent[i] = Some(p),
            None => f.detached[i] = Some(Detached::MissingParent),
        }
    }
    for (i, p) in f.parent.iter().enumerate() {
        if let Some(p) = p {
            f.children[*p].push(i);
        }
    }
    // Sessions reachable from no root hang below a parent cycle: cut each cycle once.
    let mut reached = vec![false; n];
    let mut visit = vec![0; n];
    let starts: Vec<usize> = (0..n).filter(|&i| f.parent[i].is_none()).collect();
    mark(&starts, &f.children, &mut reached);
    for i in 0..n {
        if reached[i] {
            continue;
        }
        let cut = oldest_in_cycle_above(i, &f.parent, &mut visit);
        if let Some(p) = f.parent[cut].take() {
            f.children[p].retain(|&c| c != cut);
        }
        f.detached[cut] = Some(Detached::Cycle);
        mark(&[cut], &f.children, &mut reached);
    }
    f.roots = (0..n).filter(|&i| f.parent[i].is_none()).collect();
    f
}

/// Marks everything below `start` (inclusive) as reached.
fn mark(start: &[usize], children: &[Vec<usize>], reached: &mut [bool]) {
    let mut stack: Vec<usize> = start.to_vec();
    while let Some(i) = stack.pop() {
        if !reached[i] {
            reached[i] = true;
            stack.extend(children[i].iter().copied());
        }
    }
}

/// The oldest (lowest index) member of the parent cycle that `i` leads into; `i`
/// must be unreachable from every root, so following parents from it must repeat.
/// `visit` marks nodes walked from `i` with `i + 1` (shared between calls, so each
/// call costs only the path it walks).
fn oldest_in_cycle_above(i: usize, parent: &[Option<usize>], visit: &mut [usize]) -> usize {
    let mut cur = i;
    while visit[cur] != i + 1 {
        visit[cur] = i + 1;
        match parent[cur] {
            Some(p) => cur = p,
            None => return cur,
        }
    }
    // `cur` is on the cycle: walk it once for its lowest index.
    let mut oldest = cur;
    let mut j = parent[cur].unwrap_or(cur);
    while j != cur {
        oldest = oldest.min(j);
        j = parent[j].unwrap_or(cur);
    }
    oldest
}

/// One session and its sub-sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionNode {
    pub metadata: Metadata,
    /// Why this root names a parent it is not shown under (`None` otherwise).
    pub detached: Option<Detached>,
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

/// The ids of the sessions under `node` (itself included) that `pick` keeps, in waves
/// that put every session after all of its descendants (children first): wave `h`
/// holds the picked sessions whose deepest chain of descendants is `h` long, so the
/// sessions of one wave never contain each other and may run at once. Each wave in
/// pre-order; empty waves are left out. No recursion: any depth is fine.
pub fn children_first_waves(
    node: &SessionNode,
    pick: impl Fn(&Metadata) -> bool,
) -> Vec<Vec<String>> {
    // Heights bottom-up without recursion: a node is measured once its children are.
    let mut height: HashMap<&str, usize> = HashMap::new();
    let mut stack = vec![(node, false)];
    while let Some((n, measured_children)) = stack.pop() {
        if measured_children {
            let h = n
                .children
                .iter()
                .map(|c| height.get(c.id()).map_or(0, |h| h + 1))
                .max()
                .unwrap_or(0);
            height.insert(n.id(), h);
        } else {
            stack.push((n, true));
            stack.extend(n.children.iter().map(|c| (c, false)));
        }
    }
    let mut waves: Vec<Vec<String>> = vec![Vec::new(); height.get(node.id()).map_or(0, |h| h + 1)];
    for n in node.walk() {
        if pick(&n.metadata)
            && let Some(wave) = height.get(n.id()).and_then(|&h| waves.get_mut(h))
        {
            wave.push(n.id().to_string());
        }
    }
    waves.retain(|w| !w.is_empty());
    waves
}

/// Builds the forest of `list` with [`forest`]: sub-sessions in spawn order (oldest
/// `created` first, then id), roots newest `last_updated` first. Every session of
/// `list` appears once (duplicate ids keep the first); see the module docs for missing
/// parents and cycles.
pub fn build_tree(list: Vec<Metadata>) -> Vec<SessionNode> {
    let mut seen = std::collections::HashSet::new();
    let mut list: Vec<Metadata> = list
        .into_iter()
        .filter(|m| seen.insert(m.session_id.clone()))
        .collect();
    list.sort_by(|a, b| {
        timestamp_of(&a.created)
            .cmp(&timestamp_of(&b.created))
            .then_with(|| a.created.cmp(&b.created))
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
    let f = forest(
        list.iter()
            .map(|m| (m.session_id.as_str(), m.parent_id.as_deref())),
    );
    let mut roots = f.roots.clone();
    roots.sort_by(|a, b| newest_first(&list[*a], &list[*b]));
    // Build bottom-up without recursion: a node is assembled once all its children are.
    let mut slots: Vec<Option<Metadata>> = list.into_iter().map(Some).collect();
    let mut built: Vec<Option<SessionNode>> = vec![None; slots.len()];
    let mut stack: Vec<(usize, bool)> = roots.iter().rev().map(|&r| (r, false)).collect();
    while let Some((i, expanded)) = stack.pop() {
        if !expanded {
            stack.push((i, true));
            stack.extend(f.children[i].iter().map(|&c| (c, false)));
            continue;
        }
        let children = f.children[i]
            .iter()
            .filter_map(|&c| built[c].take())
            .collect();
        if let Some(metadata) = slots[i].take() {
            built[i] = Some(SessionNode {
                metadata,
                detached: f.detached[i],
                children,
            });
        }
    }
    roots.iter().filter_map(|&r| built[r].take()).collect()
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

/// Each parent's children among `list`, oldest (`created`) first: what `arbor session
/// list --json` / `show --json` print as `children`.
pub fn children_index(list: &[Metadata]) -> BTreeMap<SessionId, Vec<SessionId>> {
    let mut index: BTreeMap<SessionId, Vec<(String, SessionId)>> = BTreeMap::new();
    for m in list {
        if let Some(parent) = &m.parent_id {
            index
                .entry(parent.clone())
                .or_default()
                .push((m.created.clone(), m.session_id.clone()));
        }
    }
    index
        .into_iter()
        .map(|(k, mut v)| {
            v.sort();
            (k, v.into_iter().map(|(_, id)| id).collect())
        })
        .collect()
}

#[cfg(test)]
mod tests;
