//! Agent trees for transfer (SPEC §11, Google ADK's `sub_agents`).
//!
//! Owns: the tree shape ([`AgentTree`]: agents, parents, the `disallow_transfer_to_*`
//! flags), building a session's tree from the registry ([`AgentTree::from_agents`]),
//! the transfer targets of an agent ([`AgentTree::transfer_targets`], ADK's
//! `_get_transfer_targets`), transferability up to the root
//! ([`AgentTree::is_transferable_across_agent_tree`]), and the registry-wide checks that
//! make an agent invalid: a `sub_agents` cycle, an unknown name, an agent listed under
//! two parents ([`check`]). Does not own: which agent answers next (`agent::select`),
//! the `transfer_to_agent` tool (`tool::transfer`) or switching agents in a turn
//! (`engine::turn`).
//!
//! A session's tree is rooted at the session's own agent (ADK's runner `root_agent`):
//! `arbor run --agent billing` starts at billing even when helpdesk lists billing.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{AgentDef, AgentIssue, frontmatter, validate};

/// ADK agent modes that run as delegated tasks, never as transfer targets
/// (`DELEGATED_TASK_MODES` in google-adk 2.13.0 `utils/_agent_mode.py`).
pub const DELEGATED_TASK_MODES: &[&str] = &["task", "single_turn"];

/// One agent of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeAgent {
    pub name: String,
    /// The agent's description (shown with it in the transfer tool's description).
    pub description: String,
    /// An agent able to transfer (ADK `LlmAgent`; every arbor agent is one). `false`
    /// models ADK's workflow agents in the conformance cases.
    pub llm: bool,
    pub disallow_transfer_to_parent: bool,
    pub disallow_transfer_to_peers: bool,
    /// ADK's agent `mode` (`chat`, `task`, `single_turn`); `None` for arbor agents.
    pub mode: Option<String>,
    /// Index of the parent in [`AgentTree::agents`]; `None` for the root.
    pub parent: Option<usize>,
    /// Indices of the sub-agents, in `sub_agents` order.
    pub children: Vec<usize>,
}

impl TreeAgent {
    /// An LLM agent `name` with both transfer flags off.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            llm: true,
            disallow_transfer_to_parent: false,
            disallow_transfer_to_peers: false,
            mode: None,
            parent: None,
            children: Vec::new(),
        }
    }

    fn is_delegated_task(&self) -> bool {
        self.mode
            .as_deref()
            .is_some_and(|m| DELEGATED_TASK_MODES.contains(&m))
    }
}

/// A tree of agents; index 0 is the root. Names are unique (a name met twice while
/// building is skipped: the registry check reports it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTree {
    agents: Vec<TreeAgent>,
}

impl AgentTree {
    /// A tree holding only `root` (its `parent`/`children` are reset).
    pub fn new(mut root: TreeAgent) -> Self {
        root.parent = None;
        root.children.clear();
        Self { agents: vec![root] }
    }

    /// Adds `agent` as the last sub-agent of `parent`; returns its index, or `None`
    /// when `parent` is out of range or the name is already in the tree.
    pub fn add(&mut self, parent: usize, mut agent: TreeAgent) -> Option<usize> {
        if parent >= self.agents.len() || self.find(&agent.name).is_some() {
            return None;
        }
        let index = self.agents.len();
        agent.parent = Some(parent);
        agent.children.clear();
        self.agents.push(agent);
        self.agents[parent].children.push(index);
        Some(index)
    }

    /// The tree of a session whose agent is `root`: `root` and, recursively, the
    /// agents its `sub_agents` name, looked up with `get` (the registry's `get`);
    /// unknown names and repeats are skipped.
    pub fn from_agents<'a>(get: &dyn Fn(&str) -> Option<&'a AgentDef>, root: &str) -> Self {
        let node = |name: &str| match get(name) {
            Some(def) => tree_agent(def),
            None => TreeAgent::new(name),
        };
        let mut tree = Self::new(node(root));
        let mut next = 0;
        while next < tree.agents.len() {
            let names = get(&tree.agents[next].name)
                .map(sub_agent_names)
                .unwrap_or_default();
            for name in names {
                if get(&name).is_some() {
                    tree.add(next, node(&name));
                }
            }
            next += 1;
        }
        tree
    }

    /// Every agent, root first.
    pub fn agents(&self) -> &[TreeAgent] {
        &self.agents
    }

    /// The root agent.
    pub fn root(&self) -> &TreeAgent {
        &self.agents[0]
    }

    /// The agent at `index` (from [`AgentTree::find`] or a node's links).
    pub fn get(&self, index: usize) -> Option<&TreeAgent> {
        self.agents.get(index)
    }

    /// The index of the agent named `name` (ADK `root_agent.find_agent`).
    pub fn find(&self, name: &str) -> Option<usize> {
        self.agents.iter().position(|a| a.name == name)
    }

    /// True when some agent has a sub-agent: the session gets `transfer_to_agent`.
    pub fn has_transfers(&self) -> bool {
        self.agents.len() > 1
    }

    /// The agents `index` may transfer to, ADK's `_get_transfer_targets`: its
    /// sub-agents (not task-mode ones), then its parent unless
    /// `disallow_transfer_to_parent`, then its peers unless
    /// `disallow_transfer_to_peers`. A non-LLM agent, or one under a non-LLM parent,
    /// gets no parent or peers.
    pub fn transfer_targets(&self, index: usize) -> Vec<usize> {
        let Some(agent) = self.agents.get(index) else {
            return Vec::new();
        };
        if !agent.llm {
            return Vec::new();
        }
        let mut out: Vec<usize> = agent
            .children
            .iter()
            .copied()
            .filter(|&c| !self.agents[c].is_delegated_task())
            .collect();
        let Some(parent) = agent.parent else {
            return out;
        };
        if !self.agents[parent].llm {
            return out;
        }
        if !agent.disallow_transfer_to_parent {
            out.push(parent);
        }
        if !agent.disallow_transfer_to_peers {
            out.extend(
                self.agents[parent]
                    .children
                    .iter()
                    .copied()
                    .filter(|&p| p != index && !self.agents[p].is_delegated_task()),
            );
        }
        out
    }

    /// Whether `index` and every ancestor up to the root is an LLM agent without
    /// `disallow_transfer_to_parent` (ADK `is_transferable_across_agent_tree`).
    pub fn is_transferable_across_agent_tree(&self, index: usize) -> bool {
        let mut at = Some(index);
        while let Some(i) = at {
            let Some(agent) = self.agents.get(i) else {
                return false;
            };
            if !agent.llm || agent.disallow_transfer_to_parent {
                return false;
            }
            at = agent.parent;
        }
        true
    }

    /// The tree as indented lines, root first: `helpdesk`, `  billing`, … with
    /// `(no parent)` / `(no peers)` after agents that disallow those transfers.
    pub fn outline(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.outline_from(0, 0, &mut out);
        out
    }

    fn outline_from(&self, index: usize, depth: usize, out: &mut Vec<String>) {
        let agent = &self.agents[index];
        let mut line = format!("{}{}", "  ".repeat(depth), agent.name);
        if agent.parent.is_some() && agent.disallow_transfer_to_parent {
            line.push_str(" (no parent)");
        }
        if agent.parent.is_some() && agent.disallow_transfer_to_peers {
            line.push_str(" (no peers)");
        }
        out.push(line);
        for &c in &agent.children {
            self.outline_from(c, depth + 1, out);
        }
    }
}

/// The outline ([`AgentTree::outline`]) of the `sub_agents` tree that agent `name`
/// of `agents` belongs to, from its topmost parent; `None` when it is in no tree.
/// What `agent show` and the agent browser display.
pub fn outline_of_tree_with(agents: &[AgentDef], name: &str) -> Option<Vec<String>> {
    let parent_of = |child: &str| {
        agents
            .iter()
            .find(|a| sub_agent_names(a).iter().any(|n| n == child))
            .map(|a| a.name.as_str())
    };
    let mut root = name;
    // Bounded: a cycle (an error `check` reports) must not loop forever.
    for _ in 0..agents.len() {
        match parent_of(root) {
            Some(p) if p != name => root = p,
            _ => break,
        }
    }
    let get = |n: &str| agents.iter().find(|a| a.name == n);
    let tree = AgentTree::from_agents(&get, root);
    tree.has_transfers().then(|| tree.outline())
}

/// The tree node of a registry agent (flags from its overlay).
fn tree_agent(def: &AgentDef) -> TreeAgent {
    let flag = |key: &str| def.overlay.get(key).and_then(Value::as_bool) == Some(true);
    TreeAgent {
        description: def.summary().to_string(),
        disallow_transfer_to_parent: flag("disallow_transfer_to_parent"),
        disallow_transfer_to_peers: flag("disallow_transfer_to_peers"),
        ..TreeAgent::new(def.name.clone())
    }
}

/// The `sub_agents` names of `def`, in order.
pub fn sub_agent_names(def: &AgentDef) -> Vec<String> {
    def.overlay
        .get("sub_agents")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Checks the trees formed by every `sub_agents` list in `agents` and adds an error
/// to each agent involved (SPEC §11):
/// - a name no agent has → on the lister: `sub_agents: unknown agent 'x'`;
/// - an agent listed by two parents → on that agent:
///   `two parents: listed in sub_agents of 'a' and 'b'`;
/// - a cycle → on every agent of it: `sub_agents cycle: a → b → a`.
pub fn check(agents: &mut [AgentDef]) {
    let names: BTreeSet<String> = agents.iter().map(|a| a.name.clone()).collect();
    let children: BTreeMap<String, Vec<String>> = agents
        .iter()
        .map(|a| (a.name.clone(), sub_agent_names(a)))
        .collect();
    let mut errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut parents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (parent, kids) in &children {
        let mut seen = BTreeSet::new();
        for kid in kids {
            if !names.contains(kid) {
                errors
                    .entry(parent.clone())
                    .or_default()
                    .push(format!("sub_agents: unknown agent '{kid}'"));
            } else if seen.insert(kid.as_str()) {
                parents.entry(kid).or_default().push(parent);
            }
        }
    }
    for (kid, list) in &parents {
        if list.len() > 1 {
            let quoted: Vec<String> = list.iter().map(|p| format!("'{p}'")).collect();
            errors.entry((*kid).to_string()).or_default().push(format!(
                "two parents: listed in sub_agents of {}",
                quoted.join(" and ")
            ));
        }
    }
    for cycle in cycles(&children) {
        let path = cycle.join(" → ");
        for name in &cycle[..cycle.len() - 1] {
            errors
                .entry(name.clone())
                .or_default()
                .push(format!("sub_agents cycle: {path}"));
        }
    }
    for agent in agents.iter_mut() {
        let Some(messages) = errors.remove(&agent.name) else {
            continue;
        };
        let path = agent.display_path();
        let (line, column) = sub_agents_position(agent);
        for message in messages {
            agent.errors.push(AgentIssue {
                path: path.clone(),
                line,
                column,
                message,
            });
        }
    }
}

/// Where `sub_agents` sits in `agent`'s file (1-based line, column); `(0, 0)` when the
/// file cannot be read again (embedded agents, a file gone since).
fn sub_agents_position(agent: &AgentDef) -> (usize, usize) {
    let Some(text) = agent
        .path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
    else {
        return (0, 0);
    };
    match frontmatter::split(&text) {
        Ok(fm) => validate::key_position(&fm.yaml, fm.yaml_line, "sub_agents"),
        Err(_) => (0, 0),
    }
}

/// Every elementary cycle reachable in `children`, each once, as a path that starts
/// and ends with its smallest name (`a → b → a`).
fn cycles(children: &BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for start in children.keys() {
        // Depth-first walk from `start` over names >= start: each cycle is found from
        // its smallest member only.
        let mut stack: Vec<(String, usize)> = vec![(start.clone(), 0)];
        let mut on_path: Vec<String> = vec![start.clone()];
        while let Some((node, next)) = stack.pop() {
            let kids = children.get(&node).map(Vec::as_slice).unwrap_or_default();
            if next >= kids.len() {
                on_path.pop();
                continue;
            }
            stack.push((node, next + 1));
            let kid = &kids[next];
            if kid == start {
                let mut cycle = on_path.clone();
                cycle.push(start.clone());
                found.insert(cycle);
            } else if kid > start && !on_path.contains(kid) && children.contains_key(kid) {
                on_path.push(kid.clone());
                stack.push((kid.clone(), 0));
            }
        }
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests;
