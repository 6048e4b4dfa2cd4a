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
//! lost worker streamed stays as a partial assistant message. The run's own
//! sub-sessions (a remote child delegating on its worker, issue 38 item 7) are counted
//! against the root's tree limits when the worker asks (`Reserve` → `Reserved`), made
//! live in the root's store when it sends their metadata (`SubSession`), and their
//! events applied to them as the child's are; their controls go out marked with their
//! id (`Forward::Of`). Does not own: NATS, the fence (the caller applies only admitted
//! messages), the files (`changes`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use super::{Forward, Registered, RemoteRuns};
use crate::config::MountPlan;
use crate::engine::approvals::{ApprovalMode, PendingApprovals};
use crate::engine::limits::TreeLimits;
use crate::engine::live::LiveSession;
use crate::engine::outcome::{TurnError, TurnOutcome};
use crate::engine::turn::keep_partial;
use crate::remote::RanOn;
use crate::session::protocol::{
    AllowScope, ApprovalDecision, ApprovalRequiredEvent, DeltaKind, OrchestratorCompleteEvent,
    SessionEndEvent,
};
use crate::session::{EngineEvent, Event, Message, Metadata, SessionId, SessionStatus};

/// The reason a headless root gives a worker's approval request it cannot ask about
/// (as the local gate's).
const HEADLESS_DENIAL: &str = "headless run without --yes";

/// Applies one remote run's admitted messages to `child`.
pub(crate) struct Applier<'a> {
    child: Arc<LiveSession>,
    approvals: &'a PendingApprovals,
    mode: ApprovalMode,
    forward: UnboundedSender<Forward>,
    /// The root's tree limits and runs, which count and keep the run's own
    /// sub-sessions (`None`: their reservations are refused).
    tree: Option<(&'a TreeLimits, &'a RemoteRuns)>,
    /// The run's own sub-sessions reserved here (issue 38 item 7).
    reserved: HashSet<String>,
    /// The stored sub-sessions the run's job carries (`Job::subtree`): resumed here
    /// when the worker's engine resumes one.
    carried: HashSet<SessionId>,
    /// Those made live here, each registered in the runs for its controls.
    own: HashMap<SessionId, Own<'a>>,
    /// The answer text streamed since the last model request or assistant message: kept
    /// as a partial message when the worker is lost.
    streamed: String,
    /// Calls of the current holder waiting for the person at the root: (session, call).
    waiting: Vec<(SessionId, String)>,
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
            tree: None,
            reserved: HashSet::new(),
            carried: HashSet::new(),
            own: HashMap::new(),
            streamed: String::new(),
            waiting: Vec::new(),
            holder: None,
            heard: false,
        }
    }

    /// The same, keeping the run's own sub-sessions: counted by `limits`, made live
    /// and reachable for controls through `runs`.
    pub fn in_tree(mut self, limits: &'a TreeLimits, runs: &'a RemoteRuns) -> Self {
        self.tree = Some((limits, runs));
        self
    }

    /// The stored sub-sessions the run's job carries (see `Job::subtree`).
    pub fn carry(&mut self, carried: Vec<SessionId>) {
        self.carried.extend(carried);
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
    /// host, pid}`) is recorded (written with the next metadata write: the status of
    /// the worker's first events).
    pub fn started(&mut self, worker: RanOn, attempt: u32) {
        if self.holder.is_some() {
            self.lease_lost();
        }
        tracing::info!(
            session = %self.child.id, worker = %worker.worker, host = %worker.host,
            pid = worker.pid, attempt, "remote sub-session started"
        );
        // Written with the status the worker's first events bring, milliseconds later
        // (one file write fewer per child).
        let ran_on = worker.clone();
        self.child.stage_metadata(|m| m.arbor.ran_on = Some(ran_on));
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
        self.interrupt_own();
    }

    /// The run's own sub-sessions still running or waiting are marked `interrupted`
    /// (their worker is gone or the run ended without them).
    fn interrupt_own(&self) {
        for own in self.own.values() {
            let status = own.live.metadata().status;
            if matches!(status, SessionStatus::Running | SessionStatus::Waiting) {
                own.live.set_status(SessionStatus::Interrupted);
            }
            own.live.sync();
        }
    }

    /// One event the worker's engine published, applied to its session: the child, or
    /// one of the run's own sub-sessions made live here (others are skipped). The
    /// worker's loading of its scratch copy (`session:start`, `session:resume`,
    /// `session:rebuilt`, `provider:endpoint_changed`) is not applied.
    pub fn event(&mut self, event: Event) {
        self.heard = true;
        let target = if event.session_id == self.child.id {
            self.child.clone()
        } else if let Some(own) = self.own.get(&event.session_id) {
            own.live.clone()
        } else {
            tracing::debug!(
                session = %self.child.id, other = %event.session_id,
                event = event.msg.name(), "remote event of another session skipped"
            );
            return;
        };
        self.apply_to(&target, event.msg);
    }

    /// `msg` of `target` (the child or one of the run's own sub-sessions) applied as a
    /// local turn writes it.
    fn apply_to(&mut self, target: &Arc<LiveSession>, msg: EngineEvent) {
        // The text a lost worker streamed is kept for the child only.
        let top = Arc::ptr_eq(target, &self.child);
        match msg {
            EngineEvent::MessageAppended(appended) => {
                if top && matches!(appended.message, Message::Assistant(_)) {
                    self.streamed.clear();
                }
                target.append(appended.message);
            }
            EngineEvent::SessionStatus(status) => target.set_status(status.status),
            EngineEvent::SessionRenamed(renamed) => {
                let name = renamed.name.clone();
                target.update_metadata(|m| m.name = Some(name));
                target.emit(EngineEvent::SessionRenamed(renamed));
            }
            EngineEvent::ContentBlockDelta(delta) => {
                if top && delta.kind == DeltaKind::Text {
                    self.streamed.push_str(&delta.delta);
                }
                target.emit(EngineEvent::ContentBlockDelta(delta));
            }
            EngineEvent::ProviderRequest(request) => {
                if top {
                    self.streamed.clear();
                }
                target.emit(EngineEvent::ProviderRequest(request));
            }
            EngineEvent::ApprovalRequired(required) => self.approval_required(target, required),
            EngineEvent::ApprovalGranted(granted) => {
                self.withdraw(&target.id, granted.tool_call_id.as_str());
                target.emit(EngineEvent::ApprovalGranted(granted));
            }
            EngineEvent::ApprovalDenied(denied) => {
                self.withdraw(&target.id, denied.tool_call_id.as_str());
                target.emit(EngineEvent::ApprovalDenied(denied));
            }
            // The worker loading its scratch copy.
            EngineEvent::SessionStart(_)
            | EngineEvent::SessionResume(_)
            | EngineEvent::SessionRebuilt(_)
            | EngineEvent::ProviderEndpointChanged(_) => {}
            // What the session's turn did: published on the root's bus and logged, as
            // a local turn's.
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
            | EngineEvent::ContextUsage(_)) => target.emit(other),
        }
    }

    /// The worker's `Reserve`: `child` of agent `agent`, under `parent` (the child or
    /// one of the run's own sub-sessions), counted against the root's tree limits;
    /// the answer (`Forward::Reserved`) goes back to the worker.
    pub fn reserve(&mut self, parent: &str, child: &str, agent: &str) {
        let known = parent == self.child.id.as_str() || self.own.contains_key(parent);
        let refused = match self.tree {
            _ if !known => Some(format!(
                "no sub-session was started: '{parent}' is not a session of this remote run"
            )),
            None => Some(
                "no sub-session was started: this root does not keep a remote \
                          sub-session's own sub-sessions"
                    .to_string(),
            ),
            Some((limits, _)) => match limits.reserve(parent, child) {
                Ok(()) => {
                    self.reserved.insert(child.to_string());
                    None
                }
                Err(limit) => Some(limit.to_string()),
            },
        };
        match &refused {
            Some(why) => tracing::warn!(
                session = %self.child.id, child, agent, "a remote sub-session's spawn refused: {why}"
            ),
            None => tracing::info!(
                session = %self.child.id, child, agent, parent, "a remote sub-session's sub-session counted"
            ),
        }
        let _ = self.forward.send(Forward::Reserved {
            child: child.to_string(),
            refused,
        });
    }

    /// The worker's `SubSession`: one of the run's own sub-sessions as its store holds
    /// it. The first time it is made live here and registered for controls: a new one
    /// (it must have been reserved, under the child or another of them) with the
    /// child's working directory, no worktree of the worker's and `ran_on` the holder;
    /// one the job carried (resumed on the worker) loaded from the store, with what its
    /// turn changed merged in. Later ones merge its turns, usage and status in (as
    /// `Done` does for the child).
    pub fn sub_session(&mut self, worker: Metadata) {
        let id = worker.session_id.clone();
        if let Some(own) = self.own.get(&id) {
            own.live
                .update_metadata(|m| merge_metadata(m, &worker, worker.status));
            own.live.sync();
            return;
        }
        if self.carried.contains(&id) {
            self.resumed_own(worker);
            return;
        }
        let parent_known = worker
            .parent_id
            .as_ref()
            .is_some_and(|p| *p == self.child.id || self.own.contains_key(p.as_str()));
        let Some((_, runs)) = self
            .tree
            .filter(|_| self.reserved.contains(id.as_str()) && parent_known)
        else {
            tracing::warn!(
                session = %self.child.id, other = %id,
                "a remote sub-session's sub-session that was not counted here: not kept"
            );
            return;
        };
        let metadata = own_for_root(worker, &self.child.metadata(), self.holder.as_ref());
        let plan = MountPlan::from_value(metadata.config.clone().unwrap_or_default());
        let live = match runs.adopt(metadata, plan) {
            Ok(live) => live,
            Err(e) => {
                tracing::warn!(session = %self.child.id, other = %id, "cannot keep a remote sub-session's sub-session: {e}");
                return;
            }
        };
        self.keep_own(runs, id, live);
    }

    /// Keeps `live` as one of the run's own sub-sessions: its events applied here, its
    /// controls (a steer, a cancel, an approval answer) out with the child's, marked
    /// with its id.
    fn keep_own(&mut self, runs: &'a RemoteRuns, id: SessionId, live: Arc<LiveSession>) {
        let registered = runs.register_own(&id, self.forward.clone());
        self.own.insert(
            id,
            Own {
                live,
                _registered: registered,
            },
        );
    }

    /// A carried sub-session the worker resumed: loaded here, `ran_on` the holder, its
    /// turn's changes merged in, and registered for controls.
    fn resumed_own(&mut self, worker: Metadata) {
        let id = worker.session_id.clone();
        let Some((_, runs)) = self.tree else {
            return;
        };
        let live = match runs.resume_stored(id.as_str()) {
            Ok(live) => live,
            Err(e) => {
                tracing::warn!(session = %self.child.id, other = %id, "cannot resume a remote sub-session's sub-session here: {e}");
                return;
            }
        };
        let holder = self.holder.clone();
        live.update_metadata(|m| {
            merge_metadata(m, &worker, worker.status);
            m.arbor.ran_on = holder;
        });
        self.keep_own(runs, id, live);
    }

    /// Shows the request on `target` (the TUI asks the person as for a local call)
    /// and arranges the answer's way back: interactive — registered in the runtime's
    /// pending approvals, the answer forwarded when it comes; headless — answered
    /// now (`--yes` allows once, otherwise denied, as the local gate does).
    fn approval_required(
        &mut self,
        target: &Arc<LiveSession>,
        mut required: ApprovalRequiredEvent,
    ) {
        let call = required.tool_call_id.as_str().to_string();
        if let (Some(note), Some(holder)) = (required.sandbox.take(), &self.holder) {
            required.sandbox = Some(on_worker(&note, holder));
        }
        target.emit(EngineEvent::ApprovalRequired(required));
        // An answer for one of the run's own sub-sessions is marked with its id.
        let of = (!Arc::ptr_eq(target, &self.child)).then(|| target.id.to_string());
        let answer_of = move |decision: ApprovalDecision, call: String| {
            let answer = Forward::Approval {
                tool_call_id: call,
                decision,
            };
            match of.clone() {
                Some(session_id) => Forward::Of {
                    session_id,
                    forward: Box::new(answer),
                },
                None => answer,
            }
        };
        let decision = match self.mode {
            ApprovalMode::Headless { yes: true } => ApprovalDecision::Allow {
                scope: AllowScope::Once,
            },
            ApprovalMode::Headless { yes: false } => ApprovalDecision::Deny {
                reason: Some(HEADLESS_DENIAL.into()),
            },
            ApprovalMode::Interactive => {
                let answer = self.approvals.register(&target.id, &call);
                self.waiting.push((target.id.clone(), call.clone()));
                let forward = self.forward.clone();
                tokio::spawn(async move {
                    if let Ok(decision) = answer.await {
                        let _ = forward.send(answer_of(decision, call));
                    }
                });
                return;
            }
        };
        let _ = self.forward.send(answer_of(decision, call));
    }

    fn withdraw(&mut self, session: &str, call: &str) {
        self.waiting
            .retain(|(s, c)| !(s.as_str() == session && c == call));
        self.approvals.withdraw(session, call);
    }

    fn withdraw_all(&mut self) {
        for (session, call) in std::mem::take(&mut self.waiting) {
            self.approvals.withdraw(&session, &call);
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
        self.interrupt_own();
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
        self.interrupt_own();
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

/// One of the run's own sub-sessions, live here, and its entry in the runs (removed
/// with it, when the run ends).
struct Own<'a> {
    live: Arc<LiveSession>,
    _registered: Registered<'a>,
}

/// A remote child's own sub-session's metadata `worker` as the root keeps it: the
/// child's (`child`) working directory (the worker's paths are of its machine), no
/// worktree or merge policy of the worker's (its work came home into the child's
/// worktree there, and reaches the root with the child's patch), `ran_on` the
/// worker that runs it.
fn own_for_root(mut worker: Metadata, child: &Metadata, holder: Option<&RanOn>) -> Metadata {
    worker.working_dir.clone_from(&child.working_dir);
    worker.arbor.worktree = None;
    worker.arbor.merge_policy = None;
    worker.arbor.ran_on = holder.cloned();
    worker
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
