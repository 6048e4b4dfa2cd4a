//! Applying what a worker sends to the root's live copy of a remote sub-session
//! (issue 27 item 3): its events into the store the root owns, `ran_on`, a lost
//! lease, the final metadata.
//!
//! Owns: [`Applier`] — one per remote run — which turns each admitted message into
//! the same writes a local turn makes: `message:appended` → `LiveSession::append`
//! (transcript file and memory), `session:status` → `set_status` (metadata), a
//! rename → metadata `name`, every other event → `emit` (bus and `events.jsonl`).
//! An `approval:required` is registered in the runtime's `PendingApprovals` so the
//! person's answer (`EngineCommand::ResolveApproval`) travels back as a
//! `Control::Approval`; a headless root answers at once as its gate would. The text a
//! lost worker streamed stays as a partial assistant message. Does not own: NATS,
//! the fence (the caller applies only admitted messages), the files (`changes`).

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use super::Forward;
use crate::engine::approvals::{ApprovalMode, PendingApprovals};
use crate::engine::live::LiveSession;
use crate::engine::outcome::{TurnError, TurnOutcome};
use crate::engine::turn::keep_partial;
use crate::remote::RanOn;
use crate::session::protocol::{
    AllowScope, ApprovalDecision, ApprovalRequiredEvent, DeltaKind, OrchestratorCompleteEvent,
    SessionEndEvent,
};
use crate::session::{EngineEvent, Event, Message, Metadata, SessionStatus};

/// The reason a headless root gives a worker's approval request it cannot ask about
/// (as the local gate's).
const HEADLESS_DENIAL: &str = "headless run without --yes";

/// Applies one remote run's admitted messages to `child`.
pub(crate) struct Applier<'a> {
    child: Arc<LiveSession>,
    approvals: &'a PendingApprovals,
    mode: ApprovalMode,
    forward: UnboundedSender<Forward>,
    /// The answer text streamed since the last model request or assistant message: kept
    /// as a partial message when the worker is lost.
    streamed: String,
    /// Calls of the current holder waiting for the person at the root.
    waiting: Vec<String>,
    /// The holder applied last.
    holder: Option<RanOn>,
    /// Whether an event of that holder was applied since its `Started`.
    heard: bool,
}

impl<'a> Applier<'a> {
    /// An applier for `child`'s run: approvals go to `approvals` (answered by a person
    /// when `mode` is interactive) and answers out through `forward`.
    pub fn new(
        child: Arc<LiveSession>,
        approvals: &'a PendingApprovals,
        mode: ApprovalMode,
        forward: UnboundedSender<Forward>,
    ) -> Self {
        Self {
            child,
            approvals,
            mode,
            forward,
            streamed: String::new(),
            waiting: Vec::new(),
            holder: None,
            heard: false,
        }
    }

    /// The sub-session this applier writes to.
    pub fn child(&self) -> &Arc<LiveSession> {
        &self.child
    }

    /// The worker applied last, if any.
    pub fn holder(&self) -> Option<&RanOn> {
        self.holder.as_ref()
    }

    /// Whether the current holder listens on the session's control subject: it sent
    /// an event since its `Started` (a worker subscribes to controls after `Started`,
    /// before its engine publishes anything).
    pub fn listening(&self) -> bool {
        self.holder.is_some() && self.heard
    }

    /// `Started` of `worker`: a holder before it lost its lease (the session is marked
    /// interrupted first, see [`Applier::lease_lost`]); metadata `ran_on` (`{worker,
    /// host, pid}`) is recorded.
    pub fn started(&mut self, worker: RanOn, attempt: u32) {
        if self.holder.is_some() {
            self.lease_lost();
        }
        tracing::info!(
            session = %self.child.id, worker = %worker.worker, host = %worker.host,
            pid = worker.pid, attempt, "remote sub-session started"
        );
        let ran_on = worker.clone();
        self.child
            .update_metadata(|m| m.arbor.ran_on = Some(ran_on));
        self.holder = Some(worker);
        self.heard = false;
    }

    /// The previous holder lost its lease (a new holder started, or asked for the
    /// session's state): the text it streamed stays as a partial message, its waiting
    /// approvals are withdrawn, and the session is marked `interrupted` so the new
    /// holder resumes it with crash repair. Once per holder.
    pub fn lease_lost(&mut self) {
        let Some(lost) = self.holder.take() else {
            return;
        };
        self.heard = false;
        tracing::warn!(
            session = %self.child.id, worker = %lost.worker,
            "remote sub-session: the worker lost its lease; marked interrupted"
        );
        let streamed = std::mem::take(&mut self.streamed);
        let reason = format!("worker {} lost its lease", lost.worker);
        keep_partial(
            &self.child,
            &self.child.agent_name,
            &streamed,
            Some(&reason),
        );
        self.withdraw_all();
        if self.child.metadata().status != SessionStatus::Interrupted {
            self.child.set_status(SessionStatus::Interrupted);
        }
    }

    /// One event the worker's engine published. Events of other sessions (a remote
    /// child's own children, which live in the worker's scratch store) and the
    /// worker's loading of its scratch copy (`session:start`, `session:resume`,
    /// `session:rebuilt`, `provider:endpoint_changed`) are not applied.
    pub fn event(&mut self, event: Event) {
        self.heard = true;
        if event.session_id != self.child.id {
            tracing::debug!(
                session = %self.child.id, other = %event.session_id,
                event = event.msg.name(), "remote event of another session skipped"
            );
            return;
        }
        match event.msg {
            EngineEvent::MessageAppended(appended) => {
                if matches!(appended.message, Message::Assistant(_)) {
                    self.streamed.clear();
                }
                self.child.append(appended.message);
            }
            EngineEvent::SessionStatus(status) => self.child.set_status(status.status),
            EngineEvent::SessionRenamed(renamed) => {
                let name = renamed.name.clone();
                self.child.update_metadata(|m| m.name = Some(name));
                self.child.emit(EngineEvent::SessionRenamed(renamed));
            }
            EngineEvent::ContentBlockDelta(delta) => {
                if delta.kind == DeltaKind::Text {
                    self.streamed.push_str(&delta.delta);
                }
                self.child.emit(EngineEvent::ContentBlockDelta(delta));
            }
            EngineEvent::ProviderRequest(request) => {
                self.streamed.clear();
                self.child.emit(EngineEvent::ProviderRequest(request));
            }
            EngineEvent::ApprovalRequired(required) => self.approval_required(required),
            EngineEvent::ApprovalGranted(granted) => {
                self.withdraw(granted.tool_call_id.as_str());
                self.child.emit(EngineEvent::ApprovalGranted(granted));
            }
            EngineEvent::ApprovalDenied(denied) => {
                self.withdraw(denied.tool_call_id.as_str());
                self.child.emit(EngineEvent::ApprovalDenied(denied));
            }
            // The worker loading its scratch copy.
            EngineEvent::SessionStart(_)
            | EngineEvent::SessionResume(_)
            | EngineEvent::SessionRebuilt(_)
            | EngineEvent::ProviderEndpointChanged(_) => {}
            // What the child's turn did: published on the root's bus and logged, as a
            // local turn's.
            other @ (EngineEvent::SessionFork(_)
            | EngineEvent::SessionEnd(_)
            | EngineEvent::PromptSubmit(_)
            | EngineEvent::ProviderResponse(_)
            | EngineEvent::ProviderError(_)
            | EngineEvent::ProviderWarning(_)
            | EngineEvent::ToolPre(_)
            | EngineEvent::ToolPost(_)
            | EngineEvent::ToolError(_)
            | EngineEvent::TaskAgentSpawned(_)
            | EngineEvent::TaskAgentResumed(_)
            | EngineEvent::TaskAgentCompleted(_)
            | EngineEvent::CancelRequested(_)
            | EngineEvent::CancelCompleted(_)
            | EngineEvent::OrchestratorComplete(_)
            | EngineEvent::PromptQueued(_)
            | EngineEvent::PromptSent(_)
            | EngineEvent::PromptUnqueued(_)
            | EngineEvent::SessionBudget(_)
            | EngineEvent::AgentTransfer(_)
            | EngineEvent::McpServerFailed(_)
            | EngineEvent::SessionNotice(_)
            | EngineEvent::HookRan(_)
            | EngineEvent::ContextCompaction(_)
            | EngineEvent::ContextCompacting(_)
            | EngineEvent::ContextUsage(_)) => self.child.emit(other),
        }
    }

    /// Shows the request on the child (the TUI asks the person as for a local call)
    /// and arranges the answer's way back: interactive — registered in the runtime's
    /// pending approvals, the answer forwarded when it comes; headless — answered
    /// now (`--yes` allows once, otherwise denied, as the local gate does).
    fn approval_required(&mut self, mut required: ApprovalRequiredEvent) {
        let call = required.tool_call_id.as_str().to_string();
        if let (Some(note), Some(holder)) = (required.sandbox.take(), &self.holder) {
            required.sandbox = Some(on_worker(&note, holder));
        }
        self.child.emit(EngineEvent::ApprovalRequired(required));
        let decision = match self.mode {
            ApprovalMode::Headless { yes: true } => ApprovalDecision::Allow {
                scope: AllowScope::Once,
            },
            ApprovalMode::Headless { yes: false } => ApprovalDecision::Deny {
                reason: Some(HEADLESS_DENIAL.into()),
            },
            ApprovalMode::Interactive => {
                let answer = self.approvals.register(&self.child.id, &call);
                self.waiting.push(call.clone());
                let forward = self.forward.clone();
                tokio::spawn(async move {
                    if let Ok(decision) = answer.await {
                        let _ = forward.send(Forward::Approval {
                            tool_call_id: call,
                            decision,
                        });
                    }
                });
                return;
            }
        };
        let _ = self.forward.send(Forward::Approval {
            tool_call_id: call,
            decision,
        });
    }

    fn withdraw(&mut self, call: &str) {
        self.waiting.retain(|c| c != call);
        self.approvals.withdraw(&self.child.id, call);
    }

    fn withdraw_all(&mut self) {
        for call in std::mem::take(&mut self.waiting) {
            self.approvals.withdraw(&self.child.id, &call);
        }
    }

    /// `Done`: the worker's final metadata merged in (see [`merge_metadata`]), the
    /// status written, and the run's outcome.
    pub fn done(&mut self, done: Finished, worker_metadata: &Metadata) -> TurnOutcome {
        self.withdraw_all();
        self.streamed.clear();
        let status = done.status;
        self.child
            .update_metadata(|m| merge_metadata(m, worker_metadata, status));
        if self.child.metadata().status != status {
            self.child.set_status(status);
        }
        self.child.sync();
        TurnOutcome {
            session_id: self.child.id.clone(),
            agent: self.child.agent_name.clone(),
            status,
            response: done.response,
            turn_count: self.child.metadata().turn_count,
            error: done.error.map(TurnError::Remote),
        }
    }

    /// The run ended without a `Done` (the job could not run, NATS failed, the
    /// worker never answered a cancel): the child's turn ends `status` with `error`
    /// through the closing events a local turn publishes (`session:status`,
    /// `orchestrator:complete`, `session:end`). What streamed stays partial.
    pub fn ended_without_answer(
        &mut self,
        status: SessionStatus,
        error: Option<String>,
    ) -> TurnOutcome {
        self.withdraw_all();
        let streamed = std::mem::take(&mut self.streamed);
        keep_partial(
            &self.child,
            &self.child.agent_name,
            &streamed,
            error.as_deref(),
        );
        if let Some(error) = &error {
            tracing::warn!(session = %self.child.id, "remote sub-session: {error}");
        }
        self.child.set_status(status);
        let turn_count = self.child.metadata().turn_count;
        self.child.emit(EngineEvent::OrchestratorComplete(
            OrchestratorCompleteEvent {
                status,
                turn_count,
                usage: Default::default(),
                error: error.clone(),
            },
        ));
        self.child
            .emit(EngineEvent::SessionEnd(SessionEndEvent { status }));
        self.child.sync();
        TurnOutcome {
            session_id: self.child.id.clone(),
            agent: self.child.agent_name.clone(),
            status,
            response: streamed,
            turn_count,
            error: error.map(TurnError::Remote),
        }
    }
}

/// A worker's `Done`, without its metadata and changes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finished {
    pub status: SessionStatus,
    pub response: String,
    pub error: Option<String>,
}

/// Takes into the root's `metadata` what the worker's turn changed: turn count,
/// usage, the model it used, files changed, active agent, turn start, budget, context
/// use, a title the turn gave it, and `status`. The root keeps its own identity,
/// working directory, stored plan, agent overlay and extras (`worktree`, `ran_on`,
/// `resolved_model`): the worker's are of its scratch copy.
pub(crate) fn merge_metadata(metadata: &mut Metadata, worker: &Metadata, status: SessionStatus) {
    metadata.turn_count = metadata.turn_count.max(worker.turn_count);
    metadata.usage = worker.usage.clone();
    if worker.model.is_some() {
        metadata.model = worker.model.clone();
    }
    metadata.arbor.files_changed = worker.arbor.files_changed.clone();
    metadata.arbor.active_agent = worker.arbor.active_agent.clone();
    metadata.arbor.turn_started = worker.arbor.turn_started.clone();
    metadata.arbor.budget = worker.arbor.budget;
    metadata.arbor.context = worker.arbor.context;
    metadata.arbor.awaiting_approval.clear();
    if metadata.name.is_none() {
        metadata.name = worker.name.clone();
    }
    metadata.status = status;
}

/// The sandbox note of a worker's approval request as the person at the root reads
/// it: where the command runs is the worker (`sandboxed: writes ./, no network; on
/// worker w-88509e8c (host)`), not a worktree of the root's (the worker's own
/// `; runs in worktree …` is dropped: that path is on the worker's machine).
fn on_worker(note: &str, holder: &RanOn) -> String {
    let note = note.split("; runs in worktree ").next().unwrap_or(note);
    format!("{note}; on worker {} ({})", holder.worker, holder.host)
}
