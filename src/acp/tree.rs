//! One ACP session's arbor tree: which ACP session each arbor event belongs to, and
//! the sub-sessions announced as ACP subagent sessions (`subagent_update`, stable
//! since schema 1.20; field names as in `@agentclientprotocol/sdk` 2.4).
//!
//! Owns: routing — with the client's `subagents` capability each sub-session's
//! updates carry its own session id (its arbor id) and it is announced on its
//! parent, before any of its traffic, with title `AGENT: TASK`, the task as
//! description, its state (`running`, then `idle` with a stop reason) and `cancel`
//! allowed; without it a sub-session's own traffic is left out (its `task` call on
//! the parent shows its final answer); and what each event makes for the client
//! ([`Tree::route`]: its updates and the permission a waiting call asks for, the one
//! `match` over `EngineEvent` of `arbor acp`): a call waiting for approval is
//! `pending`, `in_progress` once granted; after each model call of a shown session a
//! `usage_update` (its context use — cache tokens counted as its provider's API
//! counts them — of the limit its last `context:usage` gave, and the
//! ACP session's cumulative cost, a hidden child's calls counted on the root); a
//! title (`session:renamed`) as `session_info_update`. Does not own: the update
//! payloads (`updates`) or sending (`agent`).

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol_schema::v1::{
    IdleStateUpdate, IdleStopReason, RunningStateUpdate, SessionCancelCapabilities, SessionUpdate,
    StateUpdate, SubagentSessionCapabilities, SubagentUpdate, ToolCallStatus,
};

use super::updates;
use crate::config::approvals::{Decision, default_decision};
use crate::config::modules::{CacheAccounting, describe};
use crate::session::ids::SessionId;
use crate::session::protocol::{ApprovalRequiredEvent, TaskInput, ToolEffect};
use crate::session::{EngineEvent, Event, SessionStatus};
use serde_json::Value;

/// An update and the ACP session id it is sent with.
pub type Routed = (String, SessionUpdate);

/// What one event makes for the client ([`Tree::route`]).
#[derive(Debug, Default)]
pub struct Routing {
    /// The updates, in order.
    pub updates: Vec<Routed>,
    /// A call waiting for approval: the permission to ask.
    pub ask: Option<Ask>,
}

/// A `session/request_permission` to send.
#[derive(Debug)]
pub struct Ask {
    /// The ACP session asked on (the root's without `subagents`).
    pub on: String,
    /// The request.
    pub required: ApprovalRequiredEvent,
    /// The call's input, from its `tool:pre` (for the diff and locations).
    pub input: Option<Value>,
}

/// The routing state of one ACP session's tree.
#[derive(Debug)]
pub struct Tree {
    /// The ACP session id the client knows the root by.
    pub acp_id: String,
    /// The arbor root, once created (first prompt) or loaded.
    pub root: Option<SessionId>,
    /// Whether the client advertised `subagents`.
    subagents: bool,
    /// Working directory (absolute paths in locations).
    cwd: PathBuf,
    /// Sub-sessions seen: arbor id → parent arbor id.
    children: HashMap<SessionId, SessionId>,
    /// Delegation calls seen: call id → what each asked.
    tasks: HashMap<String, TaskInput>,
    /// Tool inputs by call id (for a permission request's diff and locations).
    inputs: HashMap<String, Value>,
    /// Each arbor session's context limit in tokens, from its last `context:usage`.
    limits: HashMap<SessionId, u64>,
    /// Each ACP session's cumulative cost in USD, over its priced model calls.
    costs: HashMap<String, f64>,
    /// How each provider of the session (by id) counts cache tokens.
    accounting: HashMap<String, CacheAccounting>,
}

impl Tree {
    /// The tree of ACP session `acp_id` working in `cwd`.
    pub fn new(acp_id: String, subagents: bool, cwd: PathBuf) -> Self {
        Self {
            acp_id,
            root: None,
            subagents,
            cwd,
            children: HashMap::new(),
            tasks: HashMap::new(),
            inputs: HashMap::new(),
            limits: HashMap::new(),
            costs: HashMap::new(),
            accounting: HashMap::new(),
        }
    }

    /// Learns the session's providers: `(id, module)` pairs.
    pub fn providers(&mut self, providers: impl IntoIterator<Item = (String, String)>) {
        for (id, module) in providers {
            self.accounting
                .insert(id, CacheAccounting::for_module(&module));
        }
    }

    /// Starts the root's cumulative cost at `cost` (USD; a stored session's metadata
    /// `usage.cost`) and its context limit at `limit` (its last recorded one).
    pub fn seed_usage(&mut self, cost: Option<f64>, limit: Option<u64>) {
        if let Some(cost) = cost {
            self.costs.insert(self.acp_id.clone(), cost);
        }
        if let (Some(root), Some(limit)) = (self.root.clone(), limit) {
            self.limits.insert(root, limit);
        }
    }

    /// Whether arbor session `id` is the root or a sub-session seen so far.
    pub fn contains(&self, id: &str) -> bool {
        self.root.as_deref() == Some(id) || self.children.contains_key(id)
    }

    /// The ACP session id the updates of arbor session `id` go to: the ACP id for
    /// the root; a sub-session's own id with `subagents`; `None` otherwise (left out).
    pub fn acp_session(&self, id: &str) -> Option<String> {
        if self.root.as_deref() == Some(id) {
            return Some(self.acp_id.clone());
        }
        (self.subagents && self.children.contains_key(id)).then(|| id.to_string())
    }

    /// The ACP sessions a `session/cancel` of `acp_id` stops: the arbor session it
    /// names (the root for the ACP id; a sub-session by its own id).
    pub fn arbor_session(&self, acp_id: &str) -> Option<SessionId> {
        if acp_id == self.acp_id {
            return self.root.clone();
        }
        self.children
            .contains_key(acp_id)
            .then(|| SessionId::from(acp_id))
    }

    /// What `event` makes: the updates, each with the ACP session it goes to (none for
    /// an event of another tree, or one the client does not show), and the permission
    /// to ask for a call that waits for approval. The one `match` over [`EngineEvent`]
    /// of `arbor acp` (a new event is named here by the compiler).
    pub fn route(&mut self, event: &Event) -> Routing {
        let mut routing = Routing::default();
        let Some(new_child) = self.admit(event) else {
            return routing;
        };
        let out = &mut routing.updates;
        let to = self.acp_session(&event.session_id);
        // Without `subagents`, a child's approval is asked on the root.
        let asked_on = to.clone().unwrap_or_else(|| self.acp_id.clone());
        let mut forked = None;
        let update = match &event.msg {
            EngineEvent::SessionFork(fork) => {
                forked = Some(fork.agent.clone());
                None
            }
            EngineEvent::ContentBlockDelta(d) => Some(updates::chunk(d.kind, &d.delta)),
            EngineEvent::ToolPre(pre) => {
                if describe(&pre.tool_name).delegates() {
                    self.tasks
                        .insert(pre.tool_call_id.to_string(), TaskInput::of(&pre.tool_input));
                }
                self.inputs
                    .insert(pre.tool_call_id.to_string(), pre.tool_input.clone());
                Some(updates::tool_pre(pre, &self.cwd))
            }
            EngineEvent::ToolPost(post) => {
                if let (Some(ToolEffect::Todo(list)), Some(to)) = (&post.effect, &to) {
                    out.push((to.clone(), updates::plan(list)));
                }
                Some(updates::tool_post(post))
            }
            EngineEvent::ToolError(error) => Some(updates::tool_error(error)),
            EngineEvent::ApprovalRequired(required) => {
                routing.ask = Some(self.ask(asked_on, required));
                // A tool that runs unasked by default showed `in_progress` at
                // `tool:pre`; the others are `pending` already.
                let shown_running = default_decision(&required.tool_name) == Decision::Allow;
                let id = &required.tool_call_id;
                shown_running.then(|| updates::status(id, ToolCallStatus::Pending))
            }
            EngineEvent::ApprovalGranted(granted) => Some(updates::status(
                &granted.tool_call_id,
                ToolCallStatus::InProgress,
            )),
            EngineEvent::ContextUsage(usage) => {
                self.limits
                    .insert(event.session_id.clone(), usage.max_tokens);
                None
            }
            EngineEvent::ProviderResponse(response) => {
                let u = &response.usage;
                if let Some(cost) = u.cost {
                    *self.costs.entry(asked_on).or_default() += cost;
                }
                // A provider not learnt yet: its id is usually its module's short name.
                let accounting = self
                    .accounting
                    .get(&response.provider)
                    .copied()
                    .unwrap_or_else(|| {
                        CacheAccounting::for_module(&format!("provider-{}", response.provider))
                    });
                let used = updates::context_used(u, accounting);
                let limit = self.limits.get(&event.session_id).copied();
                match (&to, limit) {
                    (Some(to), Some(size)) => {
                        Some(updates::usage(used, size, self.costs.get(to).copied()))
                    }
                    _ => None,
                }
            }
            EngineEvent::SessionRenamed(renamed) => {
                Some(updates::session_info(&renamed.name, &event.timestamp))
            }
            EngineEvent::TaskAgentSpawned(spawned) => {
                let (child, call) = (&spawned.sub_session_id, &spawned.tool_call_id);
                self.spawned(&event.session_id, child, call, out);
                None
            }
            EngineEvent::TaskAgentResumed(resumed) => {
                let (child, call) = (&resumed.sub_session_id, &resumed.tool_call_id);
                self.spawned(&event.session_id, child, call, out);
                None
            }
            EngineEvent::TaskAgentCompleted(done) => {
                if let Some(to) = to.as_ref().filter(|_| self.subagents) {
                    out.push((to.clone(), idle(done.status, &done.sub_session_id)));
                }
                None
            }
            // Not shown to an ACP client (the transcript and tool calls say it), or
            // shown by the prompt's answer (a turn's end).
            EngineEvent::SessionStart(_)
            | EngineEvent::SessionResume(_)
            | EngineEvent::ProviderEndpointChanged(_)
            | EngineEvent::SessionRebuilt(_)
            | EngineEvent::SessionEnd(_)
            | EngineEvent::PromptSubmit(_)
            | EngineEvent::ProviderRequest(_)
            | EngineEvent::ProviderError(_)
            | EngineEvent::ProviderWarning(_)
            | EngineEvent::CancelRequested(_)
            | EngineEvent::CancelCompleted(_)
            | EngineEvent::OrchestratorComplete(_)
            | EngineEvent::ApprovalDenied(_)
            | EngineEvent::SessionStatus(_)
            | EngineEvent::SessionNotice(_)
            | EngineEvent::MessageAppended(_)
            | EngineEvent::PromptQueued(_)
            | EngineEvent::PromptSent(_)
            | EngineEvent::PromptUnqueued(_)
            | EngineEvent::SessionBudget(_)
            | EngineEvent::AgentTransfer(_)
            | EngineEvent::McpServerFailed(_)
            | EngineEvent::HookRan(_)
            | EngineEvent::ContextCompacting(_)
            | EngineEvent::ContextCompaction(_) => None,
        };
        if let Some(parent) = new_child {
            let mut announced = Vec::new();
            self.announce(&event.session_id, &parent, forked, None, &mut announced);
            routing.updates.splice(0..0, announced);
        }
        if let (Some(to), Some(update)) = (to, update) {
            routing.updates.push((to, update));
        }
        routing
    }

    /// Whether `event` belongs to this tree (`None`: another tree's); `Some(Some(parent))`
    /// when its session is a sub-session seen for the first time (now recorded under
    /// `parent`; announced there, with its agent from its `session:fork`, before any of
    /// its own updates). The first root event names the root.
    fn admit(&mut self, event: &Event) -> Option<Option<SessionId>> {
        if self.root.is_none() && event.parent_id.is_none() {
            self.root = Some(event.session_id.clone());
        }
        match &event.parent_id {
            _ if self.contains(&event.session_id) => Some(None),
            Some(parent) if self.contains(parent) => {
                self.children
                    .insert(event.session_id.clone(), parent.clone());
                Some(Some(parent.clone()))
            }
            _ => None,
        }
    }

    /// The permission to ask on ACP session `on` for `required`, with the call's input
    /// from its `tool:pre`.
    fn ask(&self, on: String, required: &ApprovalRequiredEvent) -> Ask {
        Ask {
            on,
            required: required.clone(),
            input: self.inputs.get(&*required.tool_call_id).cloned(),
        }
    }

    /// A task call of `parent` spawned or resumed `child`: announced (or its title
    /// and state updated) as running.
    fn spawned(&mut self, parent: &str, child: &str, call: &str, out: &mut Vec<Routed>) {
        let task = self.tasks.get(call).cloned();
        self.children
            .entry(SessionId::from(child))
            .or_insert_with(|| SessionId::from(parent));
        let (agent, instruction) = task.map_or((None, None), |t| {
            (
                Some(t.agent.unwrap_or_default()),
                Some(t.instruction.unwrap_or_default()),
            )
        });
        self.announce(child, parent, agent, instruction, out);
    }

    /// `subagent_update` for `child` on `parent`'s ACP session, when the client shows
    /// subagents.
    fn announce(
        &self,
        child: &str,
        parent: &str,
        agent: Option<String>,
        instruction: Option<String>,
        out: &mut Vec<Routed>,
    ) {
        let Some(on) = self.acp_session(parent).filter(|_| self.subagents) else {
            return;
        };
        let mut update = SubagentUpdate::new(child.to_string())
            .capabilities(
                SubagentSessionCapabilities::new().cancel(SessionCancelCapabilities::new()),
            )
            .state(StateUpdate::Running(RunningStateUpdate::new()))
            .cwd(self.cwd.clone());
        let first_line = instruction
            .as_deref()
            .and_then(|i| i.lines().next())
            .unwrap_or_default()
            .to_string();
        update = match (&agent, first_line.is_empty()) {
            (Some(agent), false) => update.title(format!("{agent}: {first_line}")),
            (Some(agent), true) => update.title(agent.clone()),
            (None, _) => update,
        };
        if let Some(instruction) = instruction.filter(|i| !i.is_empty()) {
            update = update.description(instruction);
        }
        out.push((on, SessionUpdate::SubagentUpdate(update)));
    }
}

/// The `subagent_update` saying sub-session `child` is idle after its turn ended with
/// `status` (cancelled, paused at its budget, or its turn's end).
fn idle(status: SessionStatus, child: &str) -> SessionUpdate {
    let reason = match status {
        SessionStatus::Cancelled => IdleStopReason::Cancelled,
        SessionStatus::Paused => IdleStopReason::MaxTurnRequests,
        _ => IdleStopReason::EndTurn,
    };
    let state = StateUpdate::Idle(IdleStateUpdate::new().stop_reason(reason));
    SessionUpdate::SubagentUpdate(SubagentUpdate::new(child.to_string()).state(state))
}
