//! What the bus's events do to the tree: one typed handler per event the tree hears
//! (the TUI's dispatcher, `state::dispatch`, calls them), each given the session the
//! event is about.
//!
//! Owns: those updates. Does not own: which event reaches which handler (the
//! dispatcher), stored sessions (`SessionTree::load`, `refresh_stored`).

use jiff::Timestamp;

use super::{SessionTree, model_label, set_resolved, set_status};
use crate::session::metadata::record_file_change;
use crate::session::protocol::{
    ContextCompactionEvent, ContextUsageEvent, ProviderResponseEvent, SessionBudgetEvent,
    SessionForkEvent, SessionResumeEvent, SessionStartEvent, ToolEffect,
};
use crate::session::title::title_from;
use crate::session::{Event, Message, SessionStatus};
use crate::tui::clock::parse_ts;
use crate::tui::state::context::ContextMeter;

impl SessionTree {
    /// Any event: its session has a node (its parent from the envelope's
    /// `parent_id`), started and created when it first appears.
    pub fn seen(&mut self, event: &Event) {
        let new = self.ensure(&event.session_id, event.parent_id.as_deref(), None);
        if new && let Some(node) = self.nodes.get_mut(event.session_id.as_str()) {
            let at = parse_ts(&event.timestamp);
            node.started = at;
            node.created = at;
        }
    }

    /// `session:start` of `id`: its agent and model.
    pub fn on_start(&mut self, id: &str, start: &SessionStartEvent) {
        self.set_agent(id, &start.agent);
        if let Some(node) = self.nodes.get_mut(id)
            && let Some(model) = &start.model
        {
            node.model = Some(model.clone());
        }
    }

    /// `session:fork` of `id`: its agent, its parent when the envelope named none,
    /// and the model its routing resolved.
    pub fn on_fork(&mut self, id: &str, fork: &SessionForkEvent) {
        self.set_agent(id, &fork.agent);
        let Some(node) = self.nodes.get_mut(id) else {
            return;
        };
        if let Some(resolved) = &fork.resolved_model {
            set_resolved(node, resolved);
        }
        if node.parent.is_none() && !fork.parent.is_empty() {
            node.parent = Some(fork.parent.to_string());
            self.relink();
        }
    }

    /// `session:resume` of `id`: its agent.
    pub fn on_resume(&mut self, id: &str, resume: &SessionResumeEvent) {
        self.set_agent(id, &resume.agent);
    }

    /// `session:status` or `orchestrator:complete` of `id` at `at`: its status and
    /// the turn's times. A sub-session leaving the queue (or taken over after an
    /// interruption) may have started on a worker: the tree asks for a listing to
    /// learn its `ran_on`.
    pub fn on_status(&mut self, id: &str, status: SessionStatus, at: Option<Timestamp>) {
        let Some(node) = self.nodes.get_mut(id) else {
            return;
        };
        if node.parent.is_some()
            && status == SessionStatus::Running
            && matches!(
                node.status,
                SessionStatus::Queued | SessionStatus::Interrupted
            )
        {
            self.listing.wanted = true;
        }
        set_status(node, status, at);
    }

    /// `session:budget` of `id`.
    pub fn on_budget(&mut self, id: &str, budget: SessionBudgetEvent) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.budget = Some(budget);
        }
    }

    /// `context:usage` of `id`: its context meter.
    pub fn on_context_usage(&mut self, id: &str, usage: &ContextUsageEvent) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.context = Some(ContextMeter::from_usage(usage));
        }
    }

    /// `context:compaction` of `id`: its context meter after compacting.
    pub fn on_compaction(&mut self, id: &str, compaction: &ContextCompactionEvent) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.context = Some(ContextMeter::compacted(node.context, compaction));
        }
    }

    /// `message:appended` of `id`: a sub-session's first user message is its task (a
    /// fork is a root: it gets none).
    pub fn on_appended(&mut self, id: &str, message: &Message) {
        if let Some(node) = self.nodes.get_mut(id)
            && node.parent.is_some()
            && node.fork.is_none()
            && node.task.is_none()
            && let Message::User(_) = message
        {
            node.task = title_from(&message.text());
        }
    }

    /// `tool:post` of `id` with its `effect`: a file changed, or a checklist set.
    pub fn on_tool_post(&mut self, id: &str, effect: Option<&ToolEffect>) {
        let Some(node) = self.nodes.get_mut(id) else {
            return;
        };
        match effect {
            Some(ToolEffect::FileChange(change)) => {
                record_file_change(&mut node.files_changed, change);
            }
            Some(ToolEffect::Todo(list)) => {
                node.todo = Some(crate::tool::todo::progress(list));
            }
            Some(ToolEffect::Task(_) | ToolEffect::Transfer(_)) | None => {}
        }
    }

    /// `provider:response` of `id`: the model the API reports (a bare model gets
    /// the provider), its tokens and cost.
    pub fn on_response(&mut self, id: &str, response: &ProviderResponseEvent) {
        let Some(node) = self.nodes.get_mut(id) else {
            return;
        };
        if !response.model.is_empty() {
            let provider = Some(response.provider.as_str());
            node.model = Some(model_label(provider, &response.model));
        }
        node.tokens += response.usage.input_tokens + response.usage.output_tokens;
        if let Some(c) = response.usage.cost {
            node.cost = Some(node.cost.unwrap_or(0.0) + c);
        }
    }

    /// The agent an event named for `id` (an empty name says nothing).
    fn set_agent(&mut self, id: &str, agent: &str) {
        if !agent.is_empty()
            && let Some(node) = self.nodes.get_mut(id)
        {
            node.agent = agent.to_string();
        }
    }
}
