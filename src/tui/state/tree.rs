//! The session tree: stored sessions of this project plus live ones from the bus,
//! parent/child links from `parent_id`, status, timing, tokens, selection, collapse.
//!
//! Bus events it hears (from the TUI's dispatcher, `state::dispatch`; the handlers are
//! in `live`): any event of an unknown session adds its node (parent from the
//! envelope's `parent_id`); `session:start` / `session:fork` / `session:resume` (its
//! agent; a fork's `parent` when the envelope named none; model from the start's
//! `model` or the fork's `resolved_model`), `session:status` and
//! `orchestrator:complete` (status), `session:renamed` (title), `provider:response`
//! (model, input + output tokens, and the cost in USD when the model has a price),
//! `tool:post` with its effect (a file changed — stored sessions bring their metadata's
//! `files_changed` — or a checklist set, `3/7`), `session:budget` (the budget, stored
//! sessions bring metadata `extra.budget`), `context:usage` / `context:compaction`
//! (the context meter), `message:appended` (a sub-session's task, from its first
//! user message).
//!
//! Owns: the live state of each session, its flattening into rows, selection and
//! collapse, usage rolled up the subtree (`usage`: tokens always, cost where any
//! session below has one), and the distinct files changed in a subtree (`files`). Does not own: how sessions are linked — that is
//! `session::tree::forest`, the model `arbor session tree` uses too, so a missing
//! parent or a parent cycle shows every session here as there — or drawing
//! (`views::tree`).

mod files;
mod isolation;
mod live;
mod needs_you;
mod ran_on;
mod rows;
mod usage;

pub use ran_on::place_long;
pub use usage::Spend;

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;

use crate::config::budget::BudgetState;
use crate::remote::RanOn;
use crate::session::metadata::FileChange;
use crate::session::protocol::{ResolvedModel, SessionBudgetEvent};
use crate::session::title::title_from;
use crate::session::tree::{Detached, forest};
use crate::session::{Metadata, SessionId, SessionStatus};
use crate::tui::clock::{millis_between, parse_ts};
use crate::tui::state::context::ContextMeter;

/// One session in the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: String,
    pub parent: Option<String>,
    pub agent: String,
    /// The session's title (metadata `name`, `session:renamed`), when it has one.
    pub title: Option<String>,
    pub status: SessionStatus,
    /// Start of the current or last turn (or creation).
    pub started: Option<Timestamp>,
    /// When the session was created (metadata `created`, else its first bus event).
    pub created: Option<Timestamp>,
    /// A sub-session's task: the title (`session::title::title_from`) of the
    /// instruction it was given (its first user message, or its parent's `task` card),
    /// so siblings running the same agent can be told apart.
    pub task: Option<String>,
    /// End of the last turn; `None` while running.
    pub ended: Option<Timestamp>,
    /// This session's own tokens (input + output).
    pub tokens: u64,
    /// This session's own cost in USD, when any of its model calls had a price.
    pub cost: Option<f64>,
    /// `provider/model` the session runs on, when known (metadata `resolved_model` or
    /// `model`, `session:fork`, `provider:response`).
    pub model: Option<String>,
    /// How the model was chosen (`resolved_model.via`, e.g. `agent role (general)`).
    pub model_via: Option<String>,
    /// Sub-sessions in spawn order (linked by `session::tree::forest`).
    pub children: Vec<String>,
    /// Why this node is a root although it names a `parent` (`None` otherwise).
    pub detached: Option<Detached>,
    pub collapsed: bool,
    /// Files this session wrote or edited, one entry per path (metadata
    /// `files_changed`, then `tool:post.file_changed` as calls finish).
    pub files_changed: Vec<FileChange>,
    /// The person has looked at this session (opened its thread) since its status
    /// last changed: a failed or interrupted session then no longer needs them
    /// (`needs_you`). Cleared by every status change.
    pub seen: bool,
    /// The session's budget and its spend when the current grant started (metadata
    /// `extra.budget`, then `session:budget`); `None` without a budget.
    pub budget: Option<SessionBudgetEvent>,
    /// The session's todo list as `(completed, total)` (metadata `extra.todos`, then
    /// each `todo` call's `tool:pre`); `None` without a list.
    pub todo: Option<(usize, usize)>,
    /// The branch of its unmerged worktree (`arbor/<short id>`), and the turn it was
    /// forked at (metadata `extra.worktree`, `forked_from_turn`; issue 25).
    pub branch: Option<String>,
    pub fork: Option<u64>,
    /// Where its worktree work stands (issue 35: `merged`, `discarded`, `unmerged
    /// ✎3`, `conflict`); `None` without a worktree that changed something.
    pub standing: Option<crate::isolation::Standing>,
    /// How full the session's context is (metadata `context`, then `context:usage`
    /// and `context:compaction`); `None` before its first model call.
    pub context: Option<ContextMeter>,
    /// Where a remote sub-session runs or ran (metadata `ran_on`, issue 27); `None`
    /// for a session run here.
    pub ran_on: Option<RanOn>,
}

impl Node {
    fn new(id: &str, parent: Option<String>, agent: Option<String>) -> Self {
        Self {
            id: id.to_string(),
            parent,
            agent: agent.unwrap_or_else(|| agent_from_id(id)),
            title: None,
            status: SessionStatus::Idle,
            model: None,
            model_via: None,
            started: None,
            created: None,
            task: None,
            ended: None,
            tokens: 0,
            cost: None,
            children: Vec::new(),
            detached: None,
            collapsed: false,
            files_changed: Vec::new(),
            seen: false,
            budget: None,
            todo: None,
            branch: None,
            fork: None,
            standing: None,
            context: None,
            ran_on: None,
        }
    }

    /// What the tree shows for this node: its title, else its agent.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.agent)
    }

    /// The parent this node is shown under: `parent`, unless the tree could not link
    /// it there (`detached`).
    pub fn tree_parent(&self) -> Option<&str> {
        match self.detached {
            Some(_) => None,
            None => self.parent.as_deref(),
        }
    }

    /// Milliseconds since the session was created (`None` when unknown).
    pub fn age_ms(&self, now: Timestamp) -> Option<u64> {
        self.created.map(|c| millis_between(c, now))
    }

    /// Milliseconds of the current turn (running) or of the last one.
    pub fn elapsed_ms(&self, now: Timestamp) -> Option<u64> {
        let start = self.started?;
        match (self.status, self.ended) {
            (s, _) if s.turn_in_progress() => Some(millis_between(start, now)),
            (_, Some(end)) => Some(millis_between(start, end)),
            (_, None) => None,
        }
    }
}

/// `children` sorted by their place in `order` (stable: those without one keep their
/// order, after the others).
fn in_thread_order(children: &mut [String], order: &HashMap<String, usize>) {
    children.sort_by_key(|c| order.get(c).copied().unwrap_or(usize::MAX));
}

/// The agent part of a sub-session id (`…_explorer` → `explorer`); `session` for roots.
pub fn agent_from_id(id: &str) -> String {
    match id.rsplit_once('_') {
        Some((_, agent)) if !agent.is_empty() => agent.to_string(),
        _ => "session".to_string(),
    }
}

/// One visible row of the flattened tree.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeRow<'a> {
    pub node: &'a Node,
    pub depth: usize,
    /// Tokens of the node and all its descendants.
    pub tokens: u64,
    /// Cost (USD) of the node and all its descendants; `None` when none is known.
    pub cost: Option<f64>,
    /// Running descendants hidden under this collapsed node (0 when expanded).
    pub hidden_running: usize,
    /// Descendants that need the person ([`SessionTree::needs_you`]: an approval,
    /// paused, failed, interrupted) hidden under this collapsed node (0 when expanded).
    pub hidden_needs_you: usize,
    /// Distinct files changed by the node and all its descendants.
    pub files: usize,
}

/// Sessions as a forest, roots newest first, children in start order.
#[derive(Debug, Clone, Default)]
pub struct SessionTree {
    nodes: HashMap<String, Node>,
    /// Session ids in the order they joined (spawn order: stored ones by creation,
    /// then live ones as they appear), each with its start time when it joined, which
    /// orders the roots.
    joined: Vec<(String, Option<Timestamp>)>,
    roots: Vec<String>,
    /// Sessions with approval prompts waiting, with how many (set by the `App` from
    /// its approval queue).
    waiting: HashMap<SessionId, usize>,
    /// The selected session.
    pub selected: Option<String>,
    /// This machine's host name (`ran_on`: a worker here is named by its id).
    local_host: Option<String>,
    /// Listings asked for to learn sub-sessions' `ran_on` (see `ran_on`).
    listing: ran_on::Listing,
    /// Each sub-session's place among its siblings as its parent's thread lists its
    /// `task` calls ([`SessionTree::set_thread_order`]); siblings not listed follow,
    /// in spawn order.
    thread_order: HashMap<String, usize>,
}

impl SessionTree {
    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no sessions.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node of session `id`.
    pub fn get(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// Sessions with a running turn.
    pub fn running_count(&self) -> usize {
        self.nodes
            .values()
            .filter(|n| n.status == SessionStatus::Running)
            .count()
    }

    /// Replaces the sessions that have approval prompts waiting (session → count).
    pub fn set_waiting(&mut self, waiting: HashMap<SessionId, usize>) {
        self.waiting = waiting;
    }

    /// Whether session `id` waits for the person: an approval prompt of it waits, or
    /// its status is `waiting`.
    pub fn is_waiting(&self, id: &str) -> bool {
        self.waiting.get(id).is_some_and(|n| *n > 0)
            || self
                .nodes
                .get(id)
                .is_some_and(|n| n.status == SessionStatus::Waiting)
    }

    /// Root sessions, newest first.
    pub fn roots(&self) -> &[String] {
        &self.roots
    }

    /// Sets session `id`'s title (a rename the bus did not carry: a stored session).
    pub fn set_title(&mut self, id: &str, title: &str) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.title = Some(title.to_string());
        }
    }

    /// The most recent root (first root), for `--continue`.
    pub fn latest_root(&self) -> Option<&str> {
        self.roots.first().map(String::as_str)
    }

    /// Adds stored sessions (newest first, as `SessionStore::list` returns them).
    /// Sessions already known from the bus keep their live state.
    pub fn load(&mut self, sessions: &[Metadata]) {
        let mut ordered: Vec<&Metadata> = sessions.iter().collect();
        // Oldest first by creation (not by last update, the store's order) so children
        // are appended in spawn order and newer roots end up first.
        ordered.reverse();
        ordered.sort_by_cached_key(|m| parse_ts(&m.created));
        for m in ordered {
            if self.nodes.contains_key(m.session_id.as_str()) {
                continue;
            }
            let mut node = Node::new(
                &m.session_id,
                m.parent_id.clone().map(String::from),
                m.agent_name.clone(),
            );
            node.status = m.status;
            node.title = m.name.clone().filter(|n| !n.trim().is_empty());
            node.started = last_turn_start(m);
            node.created = parse_ts(&m.created);
            node.ended = parse_ts(&m.last_updated);
            node.tokens = m.usage.input_tokens + m.usage.output_tokens;
            node.cost = m.usage.cost;
            node.files_changed.clone_from(&m.arbor.files_changed);
            node.todo = stored_todo(m).or(node.todo);
            (node.branch, node.fork) = isolation::mark(m);
            node.standing = isolation::standing(m);
            node.context = m.arbor.context.as_ref().map(ContextMeter::from_stored);
            node.ran_on = m.arbor.ran_on.clone();
            node.budget = BudgetState::of(m).map(|b| SessionBudgetEvent {
                tokens: b.budget.tokens,
                cost_usd: b.budget.cost_usd,
                since_tokens: b.since.tokens,
                since_cost_usd: b.since.cost_usd,
            });
            match &m.arbor.resolved_model {
                Some(resolved) => set_resolved(&mut node, resolved),
                None => node.model = m.model.clone(),
            }
            node.collapsed = m.parent_id.is_none() && m.status != SessionStatus::Running;
            self.joined.push((node.id.clone(), node.started));
            self.nodes.insert(node.id.clone(), node);
        }
        self.relink();
        if self.selected.is_none() {
            self.selected = self.roots.first().cloned();
        }
    }

    /// Updates an existing node from its stored metadata `m`, as another process
    /// rewrote it (`AppEvent::StoredSessionChanged`): status (with the turn's start
    /// and end), title, usage and files. Unknown ids are ignored; the caller makes sure
    /// the session is not live in this process (its bus events are newer).
    pub fn refresh_stored(&mut self, m: &Metadata) {
        let Some(node) = self.nodes.get_mut(m.session_id.as_str()) else {
            return;
        };
        if m.status.turn_in_progress() {
            set_status(node, m.status, last_turn_start(m));
        } else {
            set_status(node, m.status, parse_ts(&m.last_updated));
            // A whole turn may have passed between two reads (completed → completed):
            // its times are the stored ones.
            node.started = last_turn_start(m).or(node.started);
            node.ended = parse_ts(&m.last_updated).or(node.ended);
        }
        if let Some(name) = m.name.as_ref().filter(|n| !n.trim().is_empty()) {
            node.title = Some(name.clone());
        }
        node.tokens = m.usage.input_tokens + m.usage.output_tokens;
        node.cost = m.usage.cost;
        node.files_changed.clone_from(&m.arbor.files_changed);
        node.todo = stored_todo(m).or(node.todo);
        (node.branch, node.fork) = isolation::mark(m);
        node.standing = isolation::standing(m);
        if let Some(context) = &m.arbor.context {
            node.context = Some(ContextMeter::from_stored(context));
        }
        node.ran_on = m.arbor.ran_on.clone().or(node.ran_on.take());
    }

    /// Ensures a node exists for `id`; returns whether it was new.
    pub fn ensure(&mut self, id: &str, parent: Option<&str>, agent: Option<&str>) -> bool {
        if let Some(node) = self.nodes.get_mut(id) {
            if let Some(a) = agent {
                node.agent = a.to_string();
            }
            return false;
        }
        self.insert(Node::new(
            id,
            parent.map(str::to_string),
            agent.map(str::to_string),
        ));
        if self.selected.is_none() {
            self.selected = Some(id.to_string());
        }
        true
    }

    fn insert(&mut self, node: Node) {
        self.joined.push((node.id.clone(), node.started));
        self.nodes.insert(node.id.clone(), node);
        self.relink();
    }

    /// Links every node under its parent with the shared tree model (children in spawn
    /// order; a missing parent or a cycle makes a marked root) and orders the roots
    /// newest first by the start time they joined with, live ones (no start yet) first,
    /// later joins before earlier ones on ties.
    fn relink(&mut self) {
        let f = forest(self.joined.iter().map(|(id, _)| {
            let parent = self.nodes.get(id).and_then(|n| n.parent.as_deref());
            (id.as_str(), parent)
        }));
        for (i, (id, _)) in self.joined.iter().enumerate() {
            let mut children: Vec<String> = f.children[i]
                .iter()
                .map(|&c| self.joined[c].0.clone())
                .collect();
            in_thread_order(&mut children, &self.thread_order);
            if let Some(node) = self.nodes.get_mut(id) {
                node.children = children;
                node.detached = f.detached[i];
            }
        }
        let mut roots = f.roots;
        roots.sort_by(|&a, &b| {
            let started = |i: usize| self.joined[i].1;
            match (started(a), started(b)) {
                (None, Some(_)) => std::cmp::Ordering::Less,
                (Some(_), None) => std::cmp::Ordering::Greater,
                (x, y) => y.cmp(&x).then(b.cmp(&a)),
            }
        });
        self.roots = roots
            .into_iter()
            .map(|i| self.joined[i].0.clone())
            .collect();
    }

    /// Lists `parent`'s sub-sessions in the order its thread shows their `task`
    /// calls (`children`, the cards' sub-sessions in order), not the order they were
    /// spawned or created in (parallel calls spawn in any order).
    pub fn set_thread_order(&mut self, parent: &str, children: &[String]) {
        for (i, child) in children.iter().enumerate() {
            self.thread_order.insert(child.clone(), i);
        }
        if let Some(node) = self.nodes.get_mut(parent) {
            in_thread_order(&mut node.children, &self.thread_order);
        }
    }

    /// Sets sub-session `id`'s task from its `instruction` unless it has one (a
    /// loaded transcript: the parent's `task` card, or the session's first message).
    /// A fork is a root (issue 25): it gets no task, its row keeps `(fork @N)`.
    pub fn set_task(&mut self, id: &str, instruction: &str) {
        if let Some(node) = self.nodes.get_mut(id)
            && node.task.is_none()
            && node.parent.is_some()
            && node.fork.is_none()
        {
            node.task = title_from(instruction);
        }
    }

    /// Selects the first (`last` false) or the last visible row.
    pub fn select_end(&mut self, last: bool) {
        let rows = self.rows();
        let row = if last { rows.last() } else { rows.first() };
        if let Some(r) = row {
            self.selected = Some(r.node.id.clone());
        }
    }

    /// Sets `id`'s status directly (a turn outcome reported by a command).
    pub fn set_status(&mut self, id: &str, status: SessionStatus, at: Timestamp) {
        if let Some(node) = self.nodes.get_mut(id) {
            set_status(node, status, Some(at));
        }
    }

    /// Sets `id`'s model (`provider/model`) chosen by the person (a model switch).
    pub fn set_model(&mut self, id: &str, label: &str) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.model = Some(label.to_string());
            node.model_via = Some("user".to_string());
        }
    }

    /// `id` and all its descendants, each once (cycles and dangling links ignored);
    /// empty for an unknown id.
    pub fn subtree(&self, id: &str) -> Vec<&Node> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![id];
        while let Some(cur) = stack.pop() {
            if !seen.insert(cur) {
                continue;
            }
            let Some(node) = self.nodes.get(cur) else {
                continue;
            };
            out.push(node);
            stack.extend(node.children.iter().map(String::as_str));
        }
        out
    }
}

/// `provider/model` from a provider id and a model that may already carry it (the
/// engine reports `provider/model` labels; some events give the bare model).
pub fn model_label(provider: Option<&str>, model: &str) -> String {
    match provider {
        Some(p) if !p.is_empty() && !model.starts_with(&format!("{p}/")) => format!("{p}/{model}"),
        _ => model.to_string(),
    }
}

/// Takes `provider/model` and `via (role)` from a `resolved_model` record.
fn set_resolved(node: &mut Node, resolved: &ResolvedModel) {
    if !resolved.provider.is_empty() {
        node.model = Some(resolved.label());
    }
    node.model_via = Some(match resolved.role.as_deref().filter(|r| !r.is_empty()) {
        Some(role) => format!("{} ({role})", resolved.via.as_str()),
        None => resolved.via.as_str().to_string(),
    });
}

/// When a stored session's latest turn began: its `turn_started`, else `created` for
/// a session of at most one turn; unknown (no elapsed time shown) for a longer one that
/// another tool wrote, whose `created` → `last_updated` spans its whole life.
fn last_turn_start(m: &Metadata) -> Option<Timestamp> {
    match &m.arbor.turn_started {
        Some(ts) => parse_ts(ts),
        None if m.turn_count <= 1 => parse_ts(&m.created),
        None => None,
    }
}

/// Sets `status`; the turn's clock starts when a turn begins and stops when it ends
/// (waiting for an approval is part of the turn).
fn set_status(node: &mut Node, status: SessionStatus, ts: Option<Timestamp>) {
    let was_in_turn = node.status.turn_in_progress();
    let in_turn = status.turn_in_progress();
    if in_turn && !was_in_turn {
        node.started = ts.or(node.started);
        node.ended = None;
    } else if !in_turn && (was_in_turn || node.ended.is_none()) {
        node.ended = ts;
    }
    if node.status != status {
        node.seen = false;
    }
    node.status = status;
}

/// `(completed, total)` of the todo list stored in `m` (`todos`, which the engine
/// keeps after each `todo` call).
fn stored_todo(m: &Metadata) -> Option<(usize, usize)> {
    Some(crate::tool::todo::progress(m.arbor.todos.as_ref()?))
}

#[cfg(test)]
mod tests;
