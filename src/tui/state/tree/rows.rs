//! The tree's visible rows and selection: which nodes show (roots, and the
//! descendants of expanded nodes) with their subtree totals, the counts of running,
//! waiting and interrupted sessions below a node, and moving, expanding, collapsing
//! and revealing.
//!
//! Owns: reading and steering the visible shape. Does not own: the nodes themselves
//! (`tree`, from stored metadata and engine events) or drawing (`views::tree`).

use std::collections::{HashMap, HashSet};

use super::*;

impl SessionTree {
    /// Visible rows: roots and, under expanded nodes, their descendants.
    pub fn rows(&self) -> Vec<TreeRow<'_>> {
        let mut totals: HashMap<&str, Spend> = HashMap::new();
        let mut visiting = HashSet::new();
        for r in &self.roots {
            self.total(r, &mut totals, &mut visiting);
        }
        let mut out = Vec::new();
        let mut stack: Vec<(&str, usize)> =
            self.roots.iter().rev().map(|r| (r.as_str(), 0)).collect();
        let mut seen = HashSet::new();
        while let Some((id, depth)) = stack.pop() {
            let Some(node) = self.nodes.get(id) else {
                continue;
            };
            if !seen.insert(id) {
                continue;
            }
            let (hidden_running, hidden_needs_you) = if node.collapsed {
                (self.running_below(id), self.needs_you_below(id))
            } else {
                (0, 0)
            };
            let spend = totals.get(id).copied().unwrap_or(Spend::of(node));
            out.push(TreeRow {
                node,
                depth,
                tokens: spend.tokens,
                cost: spend.cost,
                hidden_running,
                hidden_needs_you,
                files: self.subtree_files(id),
            });
            if !node.collapsed {
                stack.extend(node.children.iter().rev().map(|c| (c.as_str(), depth + 1)));
            }
        }
        out
    }

    fn total<'a>(
        &'a self,
        id: &'a str,
        totals: &mut HashMap<&'a str, Spend>,
        visiting: &mut HashSet<&'a str>,
    ) -> Spend {
        if let Some(t) = totals.get(id) {
            return *t;
        }
        let Some(node) = self.nodes.get(id) else {
            return Spend::default();
        };
        if !visiting.insert(id) {
            return Spend::default();
        }
        let mut sum = Spend::of(node);
        for c in &node.children {
            sum.add(self.total(c, totals, visiting));
        }
        totals.insert(id, sum);
        sum
    }

    /// Number of running descendants of `id` (cycles and dangling links ignored).
    pub fn running_below(&self, id: &str) -> usize {
        self.count_below(id, |n| n.status == SessionStatus::Running)
    }

    /// Number of descendants of `id` that need the person ([`SessionTree::needs_you`]).
    pub fn needs_you_below(&self, id: &str) -> usize {
        self.count_below(id, |n| self.needs_you(&n.id))
    }

    /// Number of interrupted sessions in `id`'s tree: `id` itself and its descendants.
    pub fn interrupted_below(&self, id: &str) -> usize {
        let own = self
            .nodes
            .get(id)
            .is_some_and(|n| n.status == SessionStatus::Interrupted);
        usize::from(own) + self.count_below(id, |n| n.status == SessionStatus::Interrupted)
    }

    /// Number of descendants of `id` that `pred` holds for (cycles and dangling links
    /// ignored).
    fn count_below(&self, id: &str, pred: impl Fn(&Node) -> bool) -> usize {
        let mut seen = HashSet::from([id]);
        let mut stack: Vec<&str> = self
            .nodes
            .get(id)
            .map(|n| n.children.iter().map(String::as_str).collect())
            .unwrap_or_default();
        let mut count = 0;
        while let Some(c) = stack.pop() {
            if !seen.insert(c) {
                continue;
            }
            let Some(node) = self.nodes.get(c) else {
                continue;
            };
            if pred(node) {
                count += 1;
            }
            stack.extend(node.children.iter().map(String::as_str));
        }
        count
    }

    /// Expands `id` so its children are visible.
    pub fn expand(&mut self, id: &str) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.collapsed = false;
        }
    }

    /// Moves the selection by `delta` visible rows.
    pub fn move_selection(&mut self, delta: isize) {
        let rows = self.rows();
        if rows.is_empty() {
            return;
        }
        let cur = self
            .selected
            .as_deref()
            .and_then(|s| rows.iter().position(|r| r.node.id == s))
            .unwrap_or(0);
        let next = cur.saturating_add_signed(delta).min(rows.len() - 1);
        self.selected = Some(rows[next].node.id.clone());
    }

    /// Collapses (`true`) or expands the selected node. Collapsing a leaf selects its
    /// parent instead.
    pub fn set_collapsed(&mut self, collapsed: bool) {
        let Some(id) = self.selected.clone() else {
            return;
        };
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if collapsed && (node.children.is_empty() || node.collapsed) {
            if let Some(p) = node.tree_parent() {
                self.selected = Some(p.to_string());
            }
            return;
        }
        node.collapsed = collapsed;
    }

    /// Selects `id` and expands its ancestors so it is visible.
    pub fn reveal(&mut self, id: &str) {
        let mut cur = self
            .nodes
            .get(id)
            .and_then(|n| n.tree_parent().map(str::to_string));
        while let Some(p) = cur {
            cur = self.nodes.get_mut(&p).and_then(|n| {
                n.collapsed = false;
                n.tree_parent().map(str::to_string)
            });
        }
        if self.nodes.contains_key(id) {
            self.selected = Some(id.to_string());
        }
    }
}
