//! Usage in the session tree: a session's own tokens and cost, a subtree's total, and
//! the root a session belongs to.
//!
//! Owns: [`Spend`], a node's spend against its budget ([`Node::budget_label`]) and those queries (the status bar shows the open session's spend and
//! its root's tree total; tree rows show subtree totals). Does not own: where usage
//! comes from (`provider:response` events and metadata, applied in `tree`).

use super::{Node, SessionTree};
use crate::tui::clock::{format_cost, format_tokens};

/// Tokens (input + output) and cost in USD (`None` when no priced call is included).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub tokens: u64,
    pub cost: Option<f64>,
}

impl Spend {
    /// A node's own spend.
    pub fn of(node: &Node) -> Self {
        Self {
            tokens: node.tokens,
            cost: node.cost,
        }
    }

    /// Adds `other`: tokens sum; cost sums the known costs.
    pub fn add(&mut self, other: Spend) {
        self.tokens += other.tokens;
        self.cost = match (self.cost, other.cost) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }
}

impl Node {
    /// The current grant's spend against the budget, `15/10 tok` (`15/10` when
    /// `compact`) and/or `$0.02/$0.50`, when the session has a budget (its own spend,
    /// not the subtree's).
    pub fn budget_label(&self, compact: bool) -> Option<String> {
        let b = self.budget?;
        let mut parts = Vec::new();
        if let Some(t) = b.tokens {
            let spent = self.tokens.saturating_sub(b.since_tokens);
            let unit = if compact { "" } else { " tok" };
            parts.push(format!(
                "{}/{}{unit}",
                format_tokens(spent),
                format_tokens(t)
            ));
        }
        if let Some(c) = b.cost_usd {
            let spent = (self.cost.unwrap_or(0.0) - b.since_cost_usd.unwrap_or(0.0)).max(0.0);
            parts.push(format!("{}/{}", format_cost(spent), format_cost(c)));
        }
        Some(parts.join(" "))
    }
}

impl SessionTree {
    /// The root of `id`'s tree as shown, following tree parents (`id` itself for a
    /// root, a session whose parent is not in the tree, or a cycle's cut). `None`
    /// when `id` is unknown.
    pub fn root_of(&self, id: &str) -> Option<&str> {
        let mut cur = self.nodes.get(id)?;
        while let Some(parent) = cur.tree_parent().and_then(|p| self.nodes.get(p)) {
            cur = parent;
        }
        Some(cur.id.as_str())
    }

    /// `id`'s own spend, if it is in the tree.
    pub fn own_spend(&self, id: &str) -> Option<Spend> {
        self.nodes.get(id).map(Spend::of)
    }

    /// The spend of `id` and all its descendants (cycles and dangling links ignored).
    pub fn subtree_spend(&self, id: &str) -> Spend {
        let mut total = Spend::default();
        for node in self.subtree(id) {
            total.add(Spend::of(node));
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Event;
    use crate::tui::testing::{event, fork, start, to_tree, tokens};

    fn response(id: &str, parent: Option<&str>, tokens_in: u64, cost: Option<f64>) -> Event {
        event(
            tokens(tokens_in, 0, cost),
            id,
            parent,
            "2025-01-01T00:00:00Z",
        )
    }

    fn forked(id: &str, parent: &str) -> Event {
        event(fork(parent, ""), id, Some(parent), "2025-01-01T00:00:00Z")
    }

    #[test]
    fn cost_rolls_up_where_known_and_roots_are_found() {
        let mut t = SessionTree::default();
        to_tree(&mut t, &event(start(""), "r", None, "2025-01-01T00:00:00Z"));
        to_tree(&mut t, &forked("r-a_x", "r"));
        to_tree(&mut t, &forked("r-a-b_y", "r-a_x"));
        to_tree(&mut t, &forked("r-c_z", "r"));
        to_tree(&mut t, &response("r", None, 100, None));
        to_tree(&mut t, &response("r-a_x", Some("r"), 50, Some(0.25)));
        to_tree(&mut t, &response("r-a_x", Some("r"), 50, Some(0.5)));
        to_tree(&mut t, &response("r-a-b_y", Some("r-a_x"), 10, Some(0.125)));
        to_tree(&mut t, &response("r-c_z", Some("r"), 7, None));
        let rows = t.rows();
        let row = |id: &str| rows.iter().find(|r| r.node.id == id).unwrap();
        assert_eq!((row("r").tokens, row("r").cost), (217, Some(0.875)));
        assert_eq!((row("r-a_x").tokens, row("r-a_x").cost), (110, Some(0.875)));
        assert_eq!((row("r-c_z").tokens, row("r-c_z").cost), (7, None));
        assert_eq!(t.root_of("r-a-b_y"), Some("r"));
        assert_eq!(t.root_of("nope"), None);
        assert_eq!(
            t.subtree_spend("r"),
            Spend {
                tokens: 217,
                cost: Some(0.875)
            }
        );
        assert_eq!(t.own_spend("r").unwrap().cost, None);
    }
}
