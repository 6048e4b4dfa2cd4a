//! Delegation: the runtime side of the task tool (SPEC §9).
//!
//! Owns: [`Host`], the [`TaskHost`] the task tool calls — spawning a sub-session
//! (merged mount plan, child id, depth, its model by SPEC §9 precedence recorded as
//! `resolved_model` in metadata and in `session:fork` / `task:agent_spawned`, the call's
//! `model_role` / `provider_preferences` kept in metadata `extra`, `session:fork` on
//! the child, `task:agent_spawned` on the parent), resuming one by id
//! (`task:agent_resumed`; the child keeps the model it resolved at spawn unless the
//! resume call passes `provider_preferences` / `model_role`, which re-resolve it),
//! the child's budget (its agent's `budget` tightened by the call's, metadata
//! `extra.budget`, reported with the result), running the child's turn under a child
//! token of the caller's turn, and
//! `task:agent_completed`; handing the run of a child its config puts on a worker to
//! `remote` (issue 27) instead of running its turn here; where a writing child works (`isolate`: its own git
//! worktree, issue 25) and its work merged home when its call returns (`homecoming`,
//! issue 35); and the routed plan of a would-be sub-session
//! ([`routed_child_plan`]: what `Runtime::resolve_child_model` and
//! `agent show --merged` report). Reaches the live sessions only through the
//! [`Sessions`] trait the runtime implements, and everything else through
//! [`TurnEnv`]. Before a sub-session is created or resumed, the config's tree-wide
//! limits are checked (`limits`); a refusal is the call's error result, naming the
//! limit. Does not own: validating the call (`tool::task`), the turn itself
//! (`turn`), the live-session map (`runtime`), the routing rules (`routing`).

use super::compact;
use crate::config::context::ContextConfig;
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use serde_json::Value;

use super::context::with_context;
use super::env::TurnEnv;
use super::limits::{LimitReached, RunPermit, agent_plan};
use super::live::LiveSession;
use super::outcome::{EngineError, TurnOutcome};
use super::providers;
use super::remote::{self, RemoteRuns};
use super::root_plan;
use super::stored_plan;
use super::turn;
use crate::agent::{AgentDef, Registry};
use crate::config::MountPlan;
use crate::config::budget::{Budget, BudgetState, Spent};
use crate::provider::Provider;
use crate::routing::{ModelRequest, ProviderPreference, ResolvedModel, Routed, apply_resolved};
use crate::session::message::now_rfc3339;
use crate::session::metadata::ArborKeys;
use crate::session::protocol::{
    SessionForkEvent, TaskAgentCompletedEvent, TaskAgentResumedEvent, TaskAgentSpawnedEvent,
};
use crate::session::{EngineEvent, Message, Metadata, SessionStatus};
use crate::tool::ToolContext;
use crate::tool::ToolError;
use crate::tool::task::{TaskHost, TaskRequest, TaskResult};
use futures::TryFutureExt;

/// Why a sub-session could not be spawned, resumed or run: the task call's error
/// result (its text is what the model reads).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    /// The runtime is gone (the process is ending).
    #[error("the runtime is shutting down")]
    ShuttingDown,
    /// The session making the call is not live here.
    #[error("the calling session '{0}' is not loaded")]
    CallerNotLoaded(String),
    /// A tree-wide limit refused it (the text names the limit and where to change it).
    #[error(transparent)]
    Refused(#[from] LimitReached),
    /// The agent's `budget:` does not parse (`reason`: the budget's own error text).
    #[error("agent '{agent}' has a bad budget: {reason}")]
    BadBudget { agent: String, reason: String },
    /// Creating, resuming, routing or running the sub-session failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Its worktree could not be made (issue 25).
    #[error("could not isolate the sub-session: {0}")]
    Isolate(crate::isolation::IsolationError),
}

/// What delegation needs from the owner of the live sessions (the runtime implements
/// it), so this file never names the runtime.
pub(crate) trait Sessions: Send + Sync {
    /// The shared setup every session's turns use.
    fn turn_env(&self) -> &TurnEnv;

    /// The runtime's remote runs (issue 27): where a remote child's run registers so
    /// steers, queued messages and approval answers reach its worker.
    fn remote(&self) -> &RemoteRuns;

    /// The live session `id`, if loaded.
    fn live(&self, id: &str) -> Option<Arc<LiveSession>>;

    /// The live session `id`, resuming it from disk when not loaded (errors as
    /// `Runtime::run_turn` before its turn).
    fn live_or_resume(&self, id: &str) -> Result<Arc<LiveSession>, EngineError>;

    /// Creates the session directory for `metadata` and makes it live (`Store` when
    /// it cannot be written).
    fn register(
        &self,
        metadata: Metadata,
        plan: MountPlan,
        transcript: Vec<Message>,
    ) -> Result<Arc<LiveSession>, EngineError>;
}

/// The task tool's handle on the runtime (weak: tools never keep the runtime alive).
pub(crate) struct Host {
    runtime: Weak<dyn Sessions>,
}

impl Host {
    pub fn new(runtime: Weak<dyn Sessions>) -> Self {
        Self { runtime }
    }

    fn runtime(&self) -> Result<Arc<dyn Sessions>, SpawnError> {
        self.runtime.upgrade().ok_or(SpawnError::ShuttingDown)
    }
}

impl TaskHost for Host {
    fn registry(&self) -> Arc<Registry> {
        self.runtime
            .upgrade()
            .map(|rt| rt.turn_env().registry())
            .unwrap_or_default()
    }

    fn spawn(
        &self,
        agent: AgentDef,
        request: TaskRequest,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<TaskResult, ToolError>> {
        let runtime = self.runtime();
        Box::pin(
            async move { spawn_child(runtime?, agent, request, ctx).await }
                .map_err(|e| ToolError::Failed(e.to_string())),
        )
    }

    fn resume(
        &self,
        request: TaskRequest,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<TaskResult, ToolError>> {
        let runtime = self.runtime();
        Box::pin(
            async move { resume_child(runtime?, request, ctx).await }
                .map_err(|e| ToolError::Failed(e.to_string())),
        )
    }
}

fn caller(rt: &dyn Sessions, ctx: &ToolContext) -> Result<Arc<LiveSession>, SpawnError> {
    rt.live(&ctx.session_id)
        .ok_or_else(|| SpawnError::CallerNotLoaded(ctx.session_id.to_string()))
}

async fn spawn_child(
    rt: Arc<dyn Sessions>,
    agent: AgentDef,
    request: TaskRequest,
    ctx: ToolContext,
) -> Result<TaskResult, SpawnError> {
    let parent = caller(rt.as_ref(), &ctx)?;
    // `parent` is the live session of `ctx.session_id` (see `caller`).
    let child_id = ctx.child_id(&agent.name);
    let env = rt.turn_env();
    // The limits first, before anything is resolved or written.
    let permit = start_run(env, &parent)?;
    env.limits
        .reserve_child(&parent.id, &child_id, &agent.name)
        .await
        .map_err(|e| refused(&parent, e))?;
    let agent_budget =
        Budget::of_overlay(&agent.overlay).map_err(|reason| SpawnError::BadBudget {
            agent: agent.name.clone(),
            reason: reason.to_string(),
        })?;
    let budget = Budget::tighten(agent_budget, request.budget);
    let (plan, (provider, provider_config), resolved) =
        route_child(env, &parent, &agent, &request).await?;
    // Where it works: its own worktree when it can write (issue 25), before anything
    // of it is stored.
    let place = super::isolate::prepare(
        &env.paths,
        env.config.isolation,
        &parent,
        &child_id,
        (request.isolation, &agent.overlay),
        plan,
    )
    .await
    .map_err(SpawnError::Isolate)?;
    let plan = place.plan;
    let mut metadata = Metadata {
        session_id: child_id.clone(),
        parent_id: Some(parent.id.clone()),
        agent_name: Some(agent.name.clone()),
        working_dir: Some(place.working_dir.display().to_string()),
        bundle: parent.metadata().bundle.clone(),
        model: Some(providers::label(provider.as_ref(), None)),
        depth: parent.depth + 1,
        config: Some(stored_plan::stored_config(env, &plan)),
        agent_overlay: agent.overlay.clone(),
        arbor: ArborKeys {
            model_role: request.model_role.clone(),
            provider_preferences: request.provider_preferences.clone(),
            resolved_model: Some(resolved.clone()),
            agent_source: Some(agent.source),
            merge_policy: place.record.as_ref().map(|_| place.merge),
            worktree: place.record.clone(),
            ..Default::default()
        },
        ..new_metadata()
    };
    let budget = budget.map(|budget| BudgetState {
        budget,
        since: Spent::default(),
    });
    if let Some(state) = &budget {
        state.store(&mut metadata);
    }
    let child = rt.register(metadata, plan, Vec::new())?;
    child.set_provider(provider, provider_config);
    announce(&parent, &child, &ctx, resolved, budget.as_ref());
    let mut result = run_child(rt, &parent, child, &request, &ctx, permit).await?;
    if place.record.is_none() {
        result.isolation = place.note;
    }
    Ok(result)
}

/// The plan a child of `agent` spawned by `parent` for `request` runs with (the
/// parent's plan merged with the agent's, its `spawn` settings applied), routed: the
/// provider and model its call, agent and parent pick, with how they were resolved.
async fn route_child(
    env: &TurnEnv,
    parent: &LiveSession,
    agent: &AgentDef,
    request: &TaskRequest,
) -> Result<(MountPlan, SessionProvider, ResolvedModel), SpawnError> {
    let calling_spawn = parent
        .agent_overlay
        .get("spawn")
        .cloned()
        .unwrap_or(Value::Null);
    let plan = agent_plan(&current_plan(parent), agent, &calling_spawn);
    let model_request = ModelRequest {
        call_preferences: request.provider_preferences.clone(),
        call_role: request.model_role.clone(),
        ..Default::default()
    }
    .with_agent(&agent.overlay);
    // What the child inherits from its parent when no model setting applies: the
    // provider its merged plan selects (the parent's, unless the agent reconfigures it).
    let inherited = providers::select_provider(env, &plan)?;
    let fallback = model_of(&inherited.0);
    let routed = providers::route(env, &plan, &model_request, pair(&fallback)).await;
    let (plan, provider) = apply_routing(env, plan, &routed, inherited)?;
    Ok((plan, provider, routed.resolved))
}

/// A new session's metadata: created and updated now, idle, no turn yet.
fn new_metadata() -> Metadata {
    let now = now_rfc3339();
    Metadata {
        created: now.clone(),
        last_updated: now,
        turn_count: 0,
        status: SessionStatus::Idle,
        ..Default::default()
    }
}

/// Publishes a new child's birth: `session:fork` (and its budget) on the child, its
/// `idle` status (the metadata was created idle: not written again), and
/// `task:agent_spawned` on the parent, for `ctx`'s call.
fn announce(
    parent: &LiveSession,
    child: &LiveSession,
    ctx: &ToolContext,
    resolved: ResolvedModel,
    budget: Option<&BudgetState>,
) {
    let agent = child.agent_name.clone();
    child.emit(EngineEvent::SessionFork(SessionForkEvent {
        parent: parent.id.to_string(),
        agent: agent.clone(),
        depth: child.depth,
        resolved_model: Some(resolved.clone()),
    }));
    if let Some(state) = budget {
        child.emit(turn::budget_event(state));
    }
    child.emit(EngineEvent::status(SessionStatus::Idle));
    parent.emit(EngineEvent::TaskAgentSpawned(TaskAgentSpawnedEvent {
        agent,
        sub_session_id: child.id.clone(),
        tool_call_id: ctx.tool_call_id.clone(),
        depth: child.depth,
        resolved_model: resolved,
    }));
}

/// A permit to run one more sub-session turn for `parent`
/// (`limits.max_concurrent_sub_sessions`), else the refusal.
fn start_run(env: &TurnEnv, parent: &LiveSession) -> Result<RunPermit, SpawnError> {
    env.limits.start_run().map_err(|e| refused(parent, e))
}

/// The error of a spawn `limit` refused, logged against `parent`.
fn refused(parent: &LiveSession, limit: LimitReached) -> SpawnError {
    tracing::warn!(session = %parent.id, "sub-session refused: {limit}");
    SpawnError::Refused(limit)
}

/// A built provider with its plan entry's config (what `LiveSession` caches).
type SessionProvider = (Arc<dyn Provider>, Value);

/// `(provider id, model)` of a built provider.
pub(crate) fn model_of(provider: &Arc<dyn Provider>) -> (String, String) {
    (
        provider.id().to_string(),
        provider.default_model().to_string(),
    )
}

pub(crate) fn pair(model: &(String, String)) -> (&str, &str) {
    (&model.0, &model.1)
}

/// The plan and provider a routed session uses: with a choice, the plan rewritten for
/// it (entry first, `default_model`, preference config) and the provider that plan
/// selects; without one, the plan unchanged and `fallback`.
pub(crate) fn apply_routing(
    env: &TurnEnv,
    plan: MountPlan,
    routed: &Routed,
    fallback: SessionProvider,
) -> Result<(MountPlan, SessionProvider), EngineError> {
    let Some(choice) = &routed.choice else {
        return Ok((plan, fallback));
    };
    let plan = MountPlan::from_value(apply_resolved(&plan.to_value(), choice));
    let provider = providers::select_provider(env, &plan)?;
    Ok((plan, provider))
}

/// The plan a live session runs with now: its metadata `config` (updated when a resume
/// re-routed it), else the plan it was loaded with.
fn current_plan(session: &LiveSession) -> MountPlan {
    session
        .metadata()
        .config
        .map(MountPlan::from_value)
        .unwrap_or_else(|| session.plan.clone())
}

/// Before a resumed sub-session's turn: a resume call with `provider_preferences` /
/// `model_role` re-resolves its model (call tiers only; nothing resolving keeps the
/// current model, with the reason recorded); otherwise a session freshly loaded from
/// disk gets the provider of its stored `resolved_model` back.
async fn route_resume(
    env: &TurnEnv,
    child: &LiveSession,
    request: &TaskRequest,
) -> Result<Option<ResolvedModel>, EngineError> {
    if child.is_running() {
        return Ok(None);
    }
    let stored = child.metadata().arbor.resolved_model;
    let model_request = ModelRequest {
        call_preferences: request.provider_preferences.clone(),
        call_role: request.model_role.clone(),
        ..Default::default()
    };
    if model_request.is_empty() {
        if let Some(stored) = &stored
            && child.provider().is_none()
        {
            let choice = ProviderPreference::new(stored.provider.clone(), stored.model.clone());
            let plan =
                MountPlan::from_value(apply_resolved(&current_plan(child).to_value(), &choice));
            let (provider, config) = providers::select_provider(env, &plan)?;
            child.set_provider(provider, config);
        }
        return Ok(None);
    }
    let current = providers::provider_for(env, child)?;
    let fallback = model_of(&current.0);
    let plan = current_plan(child);
    let routed = providers::route(env, &plan, &model_request, pair(&fallback)).await;
    if routed.choice.is_none() {
        let Some(mut kept) = stored else {
            return Ok(None);
        };
        let failed = routed.resolved.reason.unwrap_or_default();
        let failed = failed
            .rsplit_once("; used the parent's ")
            .map_or(failed.as_str(), |(head, _)| head);
        kept.reason = Some(format!(
            "resume override not applied ({failed}); kept {}",
            kept.label()
        ));
        let record = kept.clone();
        child.update_metadata(|m| m.arbor.resolved_model = Some(record));
        return Ok(Some(kept));
    }
    let (plan, (provider, config)) = apply_routing(env, plan, &routed, current)?;
    let record = routed.resolved.clone();
    let label = providers::label(provider.as_ref(), None);
    child.set_provider(provider, config);
    let stored = stored_plan::stored_config(env, &plan);
    child.update_metadata(|m| {
        m.config = Some(stored);
        m.arbor.resolved_model = Some(record);
        if let Some(role) = &request.model_role {
            m.arbor.model_role = Some(role.clone());
        }
        if let Some(prefs) = &request.provider_preferences {
            m.arbor.provider_preferences = Some(prefs.clone());
        }
        m.model = Some(label);
    });
    Ok(Some(routed.resolved))
}

/// The mount plan a sub-session of `agent` spawned from a new root session would get,
/// with routing applied — the chosen provider entry first, with `default_model` and
/// the preference's config — plus the resolution (agent `provider_preferences` >
/// agent `model_role` > the root's provider, with the reason for any fallback);
/// secrets redacted. What `Runtime::routed_child_mount_plan` and
/// `Runtime::resolve_child_model` report.
///
/// Errors: `UnknownAgent` / `InvalidAgent`; `NoProvider` when no provider builds.
pub(crate) async fn routed_child_plan(
    env: &TurnEnv,
    agent: &str,
) -> Result<(MountPlan, ResolvedModel), EngineError> {
    let root = root_plan::build(env, None)?.0;
    let def = root_plan::valid_agent(env, agent)?;
    let (provider, _) = providers::select_provider(env, &root)?;
    let child = agent_plan(&root, &def, &Value::Null);
    let request = ModelRequest::default().with_agent(&def.overlay);
    let parent = (provider.id(), provider.default_model());
    let routed = providers::route(env, &child, &request, parent).await;
    let plan = match &routed.choice {
        Some(choice) => apply_resolved(&child.to_value(), choice),
        None => child.to_value(),
    };
    Ok((
        MountPlan::from_value(crate::session::redact::redact(&plan)),
        routed.resolved,
    ))
}

async fn resume_child(
    rt: Arc<dyn Sessions>,
    request: TaskRequest,
    ctx: ToolContext,
) -> Result<TaskResult, SpawnError> {
    let parent = caller(rt.as_ref(), &ctx)?;
    let id = request.session_id.clone().unwrap_or_default();
    let permit = start_run(rt.turn_env(), &parent)?;
    let child = rt.live_or_resume(&id)?;
    let rerouted = route_resume(rt.turn_env(), &child, &request).await?;
    parent.emit(EngineEvent::TaskAgentResumed(TaskAgentResumedEvent {
        agent: child.agent_name.clone(),
        sub_session_id: child.id.clone(),
        tool_call_id: ctx.tool_call_id.clone(),
        depth: child.depth,
        resolved_model: rerouted,
    }));
    run_child(rt, &parent, child, &request, &ctx, permit).await
}

async fn run_child(
    rt: Arc<dyn Sessions>,
    parent: &LiveSession,
    child: Arc<LiveSession>,
    request: &TaskRequest,
    ctx: &ToolContext,
    permit: RunPermit,
) -> Result<TaskResult, SpawnError> {
    let instruction = with_context(
        &parent.transcript_snapshot(),
        request.context_depth,
        request.context_turns,
        &request.instruction,
    );
    // A child its config and agent put on a worker runs there (issue 27), never here.
    let outcome: TurnOutcome = match remote::placement_of(rt.turn_env(), &child) {
        Some(placement) => {
            let env = rt.turn_env();
            remote::run(
                env,
                rt.remote(),
                child.clone(),
                remote::RunInput::Prompt(instruction),
                &ctx.cancel,
                placement,
            )
            .await?
        }
        None => {
            turn::run(
                rt.turn_env(),
                child.clone(),
                instruction,
                Some(ctx.cancel.clone()),
            )
            .await?
        }
    };
    drop(permit);
    super::isolate::release_if_clean(&child).await;
    // Its work comes home before the parent model reads the result (issue 35).
    let isolation =
        super::homecoming::bring_home(rt.turn_env(), parent, &child, outcome.status, &ctx.cancel)
            .await;
    parent.emit(EngineEvent::TaskAgentCompleted(TaskAgentCompletedEvent {
        agent: outcome.agent.clone(),
        sub_session_id: outcome.session_id.clone(),
        tool_call_id: ctx.tool_call_id.clone(),
        status: outcome.status,
        turn_count: outcome.turn_count,
    }));
    let metadata = child.metadata();
    let budget = BudgetState::of(&metadata).map(|b| b.progress(&metadata));
    // The parent gets at most `context.child_answer_max_chars` of the answer.
    let (bundle, _) = ContextConfig::of_plan(&child.plan);
    let max = bundle.overridden_by(ContextConfig::from_config(&rt.turn_env().config).0);
    Ok(TaskResult {
        budget,
        response: compact::answer::cap(
            outcome.response,
            max.child_answer_max(),
            &outcome.session_id,
        ),
        session_id: outcome.session_id,
        agent: outcome.agent,
        status: outcome.status,
        turn_count: outcome.turn_count,
        error: outcome.error.map(|e| e.to_string()),
        isolation,
    })
}
