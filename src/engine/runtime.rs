//! The runtime: the one object every consumer (TUI, `arbor run`, the task tool) drives.
//!
//! Owns: paths, config, bundle, the live registry handle, environment and event bus;
//! the project's [`SessionStore`]; the map of live sessions (created here or resumed
//! from disk); creating root sessions, resuming stored ones, continuing stopped ones
//! (one, or every interrupted session of a tree), steering and queueing messages for a
//! session's running turn (forwarded to its worker when it runs remotely, issue 27),
//! cancelling subtrees, ending every
//! turn before the process exits ([`Runtime::shutdown`]), and
//! building the [`TurnEnv`] that turns, spawns and provider setup share (it implements
//! spawn's [`Sessions`], so delegation reaches the live map without naming the runtime).
//! Does not own: the turn loop (`turn`), delegation (`spawn`), mount plans of the root
//! (`root_plan`), choosing a session's provider (`providers`), wire protocols
//! (`provider`).
//!
//! Locking: the live map is a `std::sync::Mutex` held only for lookups and inserts,
//! never across an await; resuming (load + lock, both synchronous) happens under it so
//! one session is never opened twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;

use super::approvals::{ApprovalMode, PendingApprovals, TreeGrants};
use super::env::{Env, ProviderFactory, TurnEnv};
use super::limits::TreeLimits;
use super::live::{LiveSession, lock};
use super::model_choice;
use super::outcome::{EngineError, TurnOutcome};
use super::panics;
use super::providers;
use super::remote::{self, RemoteRuns};
use super::root_plan;
use super::spawn::{self, Host, Sessions};
use super::stored_plan;
use super::turn;
use crate::agent::Bundle;
use crate::agent::bundle::locate;
use crate::agent::registry::RegistryHandle;
use crate::config::{ArborConfig, MountPlan};
use crate::paths::Paths;
use crate::provider::HttpPool;
use crate::routing::{ModelCache, ResolvedModel};
use crate::session::message::now_rfc3339;
use crate::session::protocol::{
    ApprovalDecision, CancelRequestedEvent, SessionRebuiltEvent, SessionRenamedEvent,
    SessionResumeEvent, SessionStartEvent,
};
use crate::session::title::title_from;
use crate::session::tree::{build_tree, children_first_waves, find};
use crate::session::{
    EngineEvent, Event, EventBus, Message, Metadata, SessionStatus, SessionStore, StoreError,
    ids::SessionId,
};
use crate::tool::Tool;
use crate::tool::mcp::McpHub;

mod compact;
mod handoff;
mod prompts;
mod resume;

/// Everything an engine's runtime is built from ([`Engine::builder`](super::Engine::builder),
/// [`Engine::headless`](super::Engine::headless), [`Engine::interactive`](super::Engine::interactive)).
pub struct RuntimeOptions {
    pub paths: Paths,
    pub config: ArborConfig,
    pub bundle: Bundle,
    /// The live registry (the watcher updates it).
    pub registry: RegistryHandle,
    /// Environment lookup for keys/base URLs (`OPENAI_API_KEY`, …); tests inject it.
    pub env: Env,
    pub bus: EventBus,
    /// Who answers tool calls that need approval: the TUI's person
    /// ([`ApprovalMode::Interactive`]) or nobody (headless `run`, `--yes`).
    pub approval_mode: ApprovalMode,
}

/// Test and embedding hooks of an engine ([`EngineBuilder::hooks`](super::EngineBuilder::hooks)).
#[derive(Clone, Default)]
pub struct RuntimeHooks {
    /// Builds providers instead of `routing::setup::build_provider` (scripted fakes).
    pub provider_factory: Option<ProviderFactory>,
    /// Tools mounted in every session in addition to the plan's modules.
    pub extra_tools: Vec<Arc<dyn Tool>>,
}

/// How a root session starts: its agent and model choice (`arbor run`; inside the
/// engine, `Runtime::create_root_with`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RootOptions {
    /// The agent (the bundle's root agent when `None`); its `provider_preferences` /
    /// `model_role` route the root as they would a spawned child of that agent.
    pub agent: Option<String>,
    /// A model choice (`--model`; `MODEL` or `PROVIDER/MODEL`, see
    /// `engine::model_choice`) that wins over the agent's routing; `None`: the
    /// engine's model of new roots ([`Engine::with_root_model`](super::Engine::with_root_model)),
    /// else no choice.
    pub model: Option<String>,
}

/// Drives sessions. Shared as `Arc<Runtime>`. Private to the engine: every front end
/// and every test drives it through the [`Engine`](super::Engine) handle.
pub(crate) struct Runtime {
    /// Paths, config, bundle, registry, environment, model cache and hooks, as turns
    /// and spawns read them.
    turn_env: TurnEnv,
    bus: EventBus,
    store: SessionStore,
    live: Mutex<HashMap<SessionId, Arc<LiveSession>>>,
    /// A transcript a viewer parsed, for the next resume of its session
    /// ([`Runtime::park_transcript`]). Locked after `live` when both are held.
    parked: Mutex<Option<handoff::Parked>>,
    /// The model choice of new root sessions that bring none (`--model` of the TUI).
    root_model: Mutex<Option<String>>,
    /// Sub-sessions running on workers now (issue 27), with the fence's count.
    remote: RemoteRuns,
}

/// How often [`Runtime::shutdown`] looks whether the cancelled turns have ended.
const SHUTDOWN_POLL: Duration = Duration::from_millis(10);

/// How long [`Runtime::resolve_provider_label`] waits for a server to list its models.
pub const LABEL_TIMEOUT: Duration = Duration::from_secs(3);

impl Runtime {
    /// [`Runtime::with_parts`] with an HTTP pool of its own and the process's tree
    /// limits (the engine's tests).
    #[cfg(test)]
    pub fn with_hooks(options: RuntimeOptions, hooks: RuntimeHooks) -> Arc<Self> {
        Self::with_parts(options, hooks, Arc::default(), None)
    }

    /// A runtime with injected providers and/or extra tools (tests, embedders), its
    /// providers taking their HTTP clients from `http` (its own, or shared with
    /// other runtimes of the process), its sub-sessions counted by `room` when given
    /// instead of against this process's `limits.max_sessions_per_tree` (a worker's
    /// job: its root counts them, issue 38 item 7).
    ///
    /// The config's and the environment's provider keys join the process's secret
    /// register (`session::redact::register_secrets`) so no error text shows them.
    pub(crate) fn with_parts(
        options: RuntimeOptions,
        hooks: RuntimeHooks,
        http: Arc<HttpPool>,
        room: Option<Arc<dyn super::TreeRoom>>,
    ) -> Arc<Self> {
        crate::session::redact::register_secrets(providers::secrets(
            &MountPlan::default(),
            &options.config,
            &options.env,
        ));
        let store = SessionStore::new(options.paths.sessions_dir());
        store.sweep_abandoned_creations(crate::session::store::ABANDONED_AFTER);
        let limits = TreeLimits::new(
            options.config.limits,
            SessionStore::new(options.paths.sessions_dir()),
        )
        .with_room(room);
        let sandbox = crate::sandbox::Sandbox::new(options.config.sandbox.clone(), &options.paths);
        let powers = super::project_powers::Powers::read(&options.paths, &options.config, &sandbox);
        let mcp = Arc::new(
            McpHub::new(options.env.clone()).sandboxed(sandbox.clone(), options.paths.cwd.clone()),
        );
        Arc::new_cyclic(|me: &Weak<Runtime>| {
            let sessions: Weak<dyn Sessions> = me.clone();
            Self {
                turn_env: TurnEnv {
                    paths: options.paths,
                    config: options.config,
                    bundle: options.bundle,
                    registry: options.registry,
                    env: options.env,
                    models: Arc::new(ModelCache::new()),
                    http,
                    provider_factory: hooks.provider_factory,
                    extra_tools: hooks.extra_tools,
                    task_host: Arc::new(Host::new(sessions)),
                    limits,
                    approval_mode: options.approval_mode,
                    approvals: PendingApprovals::default(),
                    grants: TreeGrants::default(),
                    slots: Default::default(),
                    mcp,
                    mcp_reported: Default::default(),
                    hosted: Default::default(),
                    sandbox,
                    powers: super::project_powers::ProjectPowers::new(powers),
                },
                bus: options.bus,
                store,
                live: Mutex::new(HashMap::new()),
                parked: Mutex::new(None),
                root_model: Mutex::new(None),
                remote: RemoteRuns::new(me.clone()),
            }
        })
    }

    /// The event bus all sessions publish to.
    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// This project's session store.
    pub fn store(&self) -> &SessionStore {
        &self.store
    }

    /// The HTTP clients the runtime's providers share (one per endpoint).
    pub fn http_pool(&self) -> &HttpPool {
        &self.turn_env.http
    }

    /// The project's powers read at the build serve the first turn
    /// (`EngineBuilder::starts_now`).
    pub(crate) fn powers_read_just_now(&self) {
        self.turn_env.powers.read_just_now();
    }

    /// The paths the runtime was built with.
    pub fn paths(&self) -> &Paths {
        &self.turn_env.paths
    }

    /// The active bundle.
    pub fn bundle(&self) -> &Bundle {
        &self.turn_env.bundle
    }

    /// `provider/model` of what a new root session would use (just the provider id
    /// while a local server's model is unresolved), or the NoProvider text. Never
    /// waits: see [`Runtime::resolve_provider_label`] for a server-decided model.
    /// With a model set for new roots ([`Runtime::set_root_model`]) the label is
    /// that choice as written (`openai/gpt-4o`; a glob stays a glob until a session
    /// resolves it).
    pub fn provider_label(&self) -> Result<String, EngineError> {
        let plan = root_plan::build(&self.turn_env, None)?.0;
        let (provider, _) = providers::select_provider(&self.turn_env, &plan)?;
        if let Some(model) = self.root_model() {
            let (mount, model) = model_choice::split_choice(&plan, provider.id(), &model)?;
            return Ok(format!("{mount}/{model}"));
        }
        Ok(providers::label(provider.as_ref(), None))
    }

    /// Sets the model choice of new root sessions that bring none of their own
    /// ([`RootOptions::model`]): the TUI's `--model`, or switching the model while the
    /// open thread is a root not yet started. `None` clears it. Not checked here: a
    /// bad choice fails the session's creation, naming it.
    pub fn set_root_model(&self, model: Option<String>) {
        *lock(&self.root_model) = model.filter(|m| !m.trim().is_empty());
    }

    /// The model choice of new root sessions, if set ([`Runtime::set_root_model`]).
    pub fn root_model(&self) -> Option<String> {
        lock(&self.root_model).clone()
    }

    /// [`Runtime::provider_label`] with a server-decided model resolved: when a new
    /// root session's provider leaves the model to the server (a local
    /// OpenAI-compatible server with no configured model), its `GET /models` is listed
    /// — through the runtime's per-process model cache, so neither that session's first
    /// request nor routing lists again — and the label names the first id
    /// (`openai/qwen2.5-coder`). Waits at most [`LABEL_TIMEOUT`]; when the server fails,
    /// lists nothing or is slower, the bare provider id is returned (the model is then
    /// resolved on the first request, as before). A configured model returns at once.
    ///
    /// Errors: as [`Runtime::provider_label`] (`NoProvider`, a bad bundle).
    pub async fn resolve_provider_label(&self) -> Result<String, EngineError> {
        if self.root_model().is_some() {
            return self.provider_label();
        }
        let plan = root_plan::build(&self.turn_env, None)?.0;
        let (provider, entry) = providers::select_entry(&self.turn_env, &plan)?;
        if provider.default_model().is_empty() {
            let key = providers::cache_key(&entry);
            let listed = tokio::time::timeout(
                LABEL_TIMEOUT,
                providers::server_model(&self.turn_env.models, &key, &provider),
            )
            .await;
            match listed {
                Ok(Ok(model)) => tracing::debug!(provider = provider.id(), %model, "server model"),
                Ok(Err(e)) => {
                    tracing::info!(provider = provider.id(), "server model not known yet: {e}");
                }
                Err(_) => tracing::info!(
                    provider = provider.id(),
                    "server model not known yet: no model list within {}s",
                    LABEL_TIMEOUT.as_secs()
                ),
            }
        }
        Ok(providers::label(provider.as_ref(), None))
    }

    /// Creates (and persists) a new root session with `agent` (the bundle's root agent
    /// when `None`) on the plan's first provider that builds — no model routing and no
    /// model choice (see [`Runtime::create_root_with`], which front ends use). Runs
    /// nothing. Publishes `session:start` (`{agent, depth, bundle, model,
    /// working_dir}`) and `session:status` (`idle`).
    ///
    /// Errors: `UnknownAgent` / `InvalidAgent`; `NoProvider` when no provider is
    /// configured or none builds; `Store` when the session cannot be written.
    pub fn create_root(&self, agent: Option<&str>) -> Result<SessionId, EngineError> {
        let (plan, overlay) = root_plan::build(&self.turn_env, agent)?;
        let provider = providers::select_provider(&self.turn_env, &plan)?;
        self.start_root(agent, (plan, overlay), provider, None)
    }

    /// [`Runtime::create_root`] with the model chosen as for a spawned child (SPEC §9):
    /// the agent's `provider_preferences`, else its `model_role`, else the plan's
    /// provider — recorded as `resolved_model` in metadata with the reason for any
    /// fallback — and then `options.model` (or [`Runtime::set_root_model`]), which
    /// wins (`resolved_model.via` = `user`). Globs list models (cached per process).
    ///
    /// Errors: as [`Runtime::create_root`]; a model choice that is empty, names a
    /// provider that cannot be built, or is a glob matching no listed model (`Model`).
    pub async fn create_root_with(&self, options: RootOptions) -> Result<SessionId, EngineError> {
        let agent = options.agent.as_deref();
        let (plan, overlay) = root_plan::build(&self.turn_env, agent)?;
        let model = options.model.or_else(|| self.root_model());
        let (plan, provider, resolved) =
            model_choice::route_root(&self.turn_env, plan, agent, model.as_deref()).await?;
        self.start_root(agent, (plan, overlay), provider, resolved)
    }

    /// Switches the model of `session_id` (live, or resumed from disk; root or
    /// sub-session) for its next turns: `model` is read as in `engine::model_choice`
    /// (`MODEL` on its current provider, or `PROVIDER/MODEL`), its plan entry moves
    /// first with `default_model` set, and metadata records it — `config` (the plan
    /// a resume rebuilds from and children inherit), `model` (`provider/model`) and
    /// `resolved_model` (`via: user`). A turn running now keeps its model. Returns the
    /// new `provider/model`. What the TUI's model switch (and `/model`) calls.
    ///
    /// Errors: the session cannot be loaded or locked (`Store`); no usable provider
    /// (`NoProvider`); a bad choice (`Model`, naming it).
    pub async fn set_model(&self, session_id: &str, model: &str) -> Result<String, EngineError> {
        let env = &self.turn_env;
        let live = self.live_or_resume(session_id)?;
        let plan = live
            .metadata()
            .config
            .map(MountPlan::from_value)
            .unwrap_or_else(|| live.plan.clone());
        let (current, _) = providers::provider_for(env, &live)?;
        let choice = model_choice::choose(env, &plan, current.as_ref(), model).await?;
        let (plan, (provider, config)) = model_choice::apply(env, &plan, &choice)?;
        let label = providers::label(provider.as_ref(), None);
        let record = model_choice::chosen(&choice);
        live.set_provider(provider, config);
        let stored = stored_plan::stored_config(env, &plan);
        live.update_metadata(|m| {
            m.config = Some(stored);
            m.model = Some(label.clone());
            m.arbor.resolved_model = Some(record);
        });
        live.sync();
        tracing::info!(session = session_id, model = %label, "model switched");
        Ok(label)
    }

    /// The models each provider of session `session_id`'s plan lists (live: its plan
    /// now; stored: the plan in its metadata; a stored root without one: the plan new
    /// roots get), through the per-process model cache. Resumes nothing.
    ///
    /// Errors: the session cannot be read (`Store`); no plan can be built for it.
    pub async fn session_models(
        &self,
        session_id: &str,
    ) -> Result<Vec<model_choice::ProviderModels>, EngineError> {
        let stored = match self.live(session_id) {
            Some(live) => live
                .metadata()
                .config
                .or_else(|| Some(live.plan.to_value())),
            None => self.store().load_metadata(session_id)?.0.config,
        };
        let plan = match stored {
            Some(config) => MountPlan::from_value(config),
            None => root_plan::build(&self.turn_env, None)?.0,
        };
        Ok(model_choice::plan_models(&self.turn_env, &plan).await)
    }

    /// A warning when `label` (`PROVIDER/MODEL`, as [`Runtime::set_model`] returns it)
    /// names a model its provider's list lacks; `None` when listed or no list is
    /// available (see `model_choice::unlisted`). What the TUI says after a switch.
    pub async fn unlisted_model(&self, label: &str) -> Option<String> {
        let plan = root_plan::build(&self.turn_env, None).ok()?.0;
        model_choice::unlisted(&self.turn_env, &plan, label).await
    }

    /// Registers and announces a new root session with its routed plan and provider.
    fn start_root(
        &self,
        agent: Option<&str>,
        (plan, overlay): (MountPlan, Value),
        (provider, provider_config): (Arc<dyn crate::provider::Provider>, Value),
        resolved: Option<ResolvedModel>,
    ) -> Result<SessionId, EngineError> {
        let env = &self.turn_env;
        let now = now_rfc3339();
        let mut metadata = Metadata {
            session_id: SessionId::new_root(),
            parent_id: None,
            agent_name: Some(agent.map_or_else(|| env.bundle.name.clone(), str::to_string)),
            created: now.clone(),
            last_updated: now,
            turn_count: 0,
            working_dir: Some(env.paths.cwd.display().to_string()),
            bundle: Some(locate::reference_of(&env.bundle, &env.paths)),
            model: Some(providers::label(provider.as_ref(), None)),
            status: SessionStatus::Idle,
            depth: 0,
            config: Some(stored_plan::stored_config(env, &plan)),
            agent_overlay: overlay,
            ..Default::default()
        };
        metadata.arbor.resolved_model = resolved;
        // The tier of the agent file decides how much its `approvals:` may say.
        metadata.arbor.agent_source = agent
            .and_then(|name| root_plan::valid_agent(env, name).ok())
            .map(|def| def.source);
        let live = self.register(metadata, plan, Vec::new())?;
        env.limits.root_created(&live.id);
        live.set_provider(provider, provider_config);
        let meta = live.metadata();
        live.emit(EngineEvent::SessionStart(SessionStartEvent {
            agent: live.agent_name.clone(),
            depth: 0,
            bundle: meta.bundle,
            model: meta.model,
            working_dir: meta.working_dir,
        }));
        live.set_status(SessionStatus::Idle);
        Ok(live.id.clone())
    }

    /// Runs one turn of `session_id` with `prompt`: a live session continues, a stored
    /// one (root or sub-session) is resumed from disk first. Returns when the turn ends;
    /// all progress is published on the bus meanwhile.
    ///
    /// `Ok` for every turn that ran, whatever its status (failed and cancelled turns
    /// leave a resumable session; a panic inside the turn loop is a `failed` turn).
    /// Errors before the turn: an invalid, missing or corrupted session, a lock held by
    /// another process (`Store`), a turn already running in that session (`Busy`), no
    /// usable provider (`NoProvider`); a panic outside the loop (`Panicked`, the session
    /// then recorded as `failed`). Never panics itself.
    pub async fn run_turn(
        self: &Arc<Self>,
        session_id: &str,
        prompt: String,
    ) -> Result<TurnOutcome, EngineError> {
        self.start_turn(session_id, turn::Input::Prompt(prompt))
            .await
    }

    /// Continues the stopped session `session_id` (SPEC §13 `r`; live, or resumed from
    /// disk as [`Runtime::run_turn`] does): orphaned tool calls get their synthetic
    /// results, then the model call that never got an answer runs again, or — when
    /// the model had answered the last message — `Continue.` is sent as a user message.
    ///
    /// Errors: as [`Runtime::run_turn`] before its turn.
    pub async fn continue_turn(
        self: &Arc<Self>,
        session_id: &str,
    ) -> Result<TurnOutcome, EngineError> {
        self.start_turn(session_id, turn::Input::Continue).await
    }

    /// One top-level turn of `session_id` started by `input` (live, or resumed from
    /// disk) — on a worker when it is a sub-session placed remotely (issue 27; NATS
    /// unreachable fails the turn naming the URL); a panic outside the turn loop
    /// becomes `EngineError::Panicked`.
    async fn start_turn(
        self: &Arc<Self>,
        session_id: &str,
        input: turn::Input,
    ) -> Result<TurnOutcome, EngineError> {
        let what = format!("the turn of session '{session_id}'");
        let turn = async {
            let live = self.live_or_resume(session_id)?;
            // A sub-session its config and agent put on a worker runs there (issue 27).
            if let Some(placement) = remote::placement_for_person(&self.turn_env, &live) {
                let instruction = remote::instruction_of(input);
                return remote::person_turn(
                    &self.turn_env,
                    &self.remote,
                    live,
                    instruction,
                    placement,
                )
                .await;
            }
            turn::run_input(&self.turn_env, live, input, None).await
        };
        panics::catch(&what, turn)
            .await
            .unwrap_or_else(|message| Err(EngineError::Panicked { what, message }))
    }

    /// Continues every `interrupted` session of the tree under `session_id` (itself
    /// included), as stored now, children before their parents: in waves
    /// (`session::tree::children_first_waves`), the sessions of one wave at once.
    /// Returns one result per continued session, in that order; empty when none is
    /// interrupted.
    ///
    /// Errors: the store cannot be listed, or `session_id` is not in it (`Store`).
    pub async fn continue_interrupted(
        self: &Arc<Self>,
        session_id: &str,
    ) -> Result<Vec<Result<TurnOutcome, EngineError>>, EngineError> {
        let roots = build_tree(self.store.list()?);
        let Some(node) = find(&roots, session_id) else {
            return Err(StoreError::NotFound(session_id.to_string()).into());
        };
        let waves = children_first_waves(node, |m| m.status == SessionStatus::Interrupted);
        let mut out = Vec::new();
        for wave in waves {
            let turns = wave.iter().map(|id| self.continue_turn(id));
            out.extend(futures::future::join_all(turns).await);
        }
        Ok(out)
    }

    /// Ends this process's work before it exits (the TUI quitting): cancels every
    /// running turn (sub-sessions included: each keeps the text it streamed so far as a
    /// partial message, SPEC §8) and waits until they have ended — their transcripts
    /// and metadata written and synced — or `grace` has passed. Returns how many turns
    /// were still running then (0 normally).
    pub async fn shutdown(&self, grace: Duration) -> usize {
        let running = || -> Vec<Arc<LiveSession>> {
            lock(&self.live)
                .values()
                .filter(|s| s.is_running())
                .cloned()
                .collect()
        };
        for session in running() {
            session.cancel_token().cancel();
        }
        let settled = tokio::time::timeout(grace, async {
            while !running().is_empty() {
                tokio::time::sleep(SHUTDOWN_POLL).await;
            }
        })
        .await;
        let left = running().len();
        if settled.is_err() {
            tracing::warn!("{left} turn(s) still running after {grace:?}; exiting anyway");
        }
        self.turn_env.mcp.shutdown().await;
        left
    }

    /// The MCP servers of this process: each one's configuration and state (the MCP
    /// view and `doctor` list them).
    pub fn mcp(&self) -> &McpHub {
        &self.turn_env.mcp
    }

    /// Every MCP server of this process with its state and tools (the MCP view), as
    /// the project stands now.
    pub fn mcp_status(&self) -> Vec<crate::tool::mcp::McpServerStatus> {
        let powers = self.turn_env.refresh_powers();
        self.turn_env.mcp.status(&powers.mcp_servers)
    }

    /// Every hook of this process — the user's and the project's — active or
    /// skipped with why, as the project stands now (the TUI's `/hooks`).
    pub fn hooks_listing(&self) -> Vec<crate::hooks::ListedHook> {
        self.turn_env.refresh_powers().hooks.listing().to_vec()
    }

    /// Titles `session_id` (SPEC §7 metadata `name`): `title` as `session::title`
    /// shapes it (first visible line, at most 60 characters), written to metadata and
    /// logged as `session:renamed`. A session live in this process is renamed in place
    /// (the event also goes to the bus); a stored one is opened for writing for the
    /// moment. `last_updated` is kept for a stored session. Returns the title stored.
    ///
    /// Errors: a title with no visible character (`EmptyTitle`); an invalid, missing or
    /// corrupted session, or one open in another process (`Store`: `Locked`).
    pub fn rename(&self, session_id: &str, title: &str) -> Result<String, EngineError> {
        let name = title_from(title).ok_or(EngineError::EmptyTitle)?;
        let renamed = || EngineEvent::SessionRenamed(SessionRenamedEvent { name: name.clone() });
        if let Some(live) = self.live(session_id) {
            live.update_metadata(|m| m.name = Some(name.clone()));
            live.emit(renamed());
            live.sync();
            return Ok(name);
        }
        let mut writer = self.store.open(session_id)?;
        let mut metadata = writer.metadata().clone();
        metadata.name = Some(name.clone());
        writer.write_metadata(&metadata)?;
        let event = Event::new(session_id, metadata.parent_id.as_deref(), renamed());
        writer.append_event(&event)?;
        writer.sync()?;
        Ok(name)
    }

    /// Cancels the running turn of `session_id` and of all its live descendants.
    /// Publishes `cancel:requested` on `session_id`; every turn that ends cancelled
    /// publishes `cancel:completed`. Unknown or idle sessions: nothing happens.
    pub fn cancel(&self, session_id: &str) {
        let targets: Vec<Arc<LiveSession>> = {
            let live = lock(&self.live);
            live.values()
                .filter(|s| s.id == session_id || descends_from(&live, s, session_id))
                .cloned()
                .collect()
        };
        let Some(root) = targets.iter().find(|s| s.id == session_id) else {
            return;
        };
        // A remote child's own sub-session (issue 38 item 7) runs on its worker.
        if !root.is_running() && self.remote.forward(session_id, remote::Forward::Cancel) {
            root.emit(EngineEvent::CancelRequested(CancelRequestedEvent {}));
            return;
        }
        if targets.iter().any(|s| s.is_running()) {
            root.emit(EngineEvent::CancelRequested(CancelRequestedEvent {}));
        }
        for session in &targets {
            session.cancel_token().cancel();
        }
    }

    /// Answers the approval that tool call `tool_call_id` of `session_id` waits for
    /// (`approval:required`); the waiting call then runs or is denied and publishes
    /// `approval:granted` / `approval:denied`.
    ///
    /// Errors: [`EngineError::NoPendingApproval`] when that call does not wait (already
    /// answered, cancelled, never asked).
    pub fn resolve_approval(
        &self,
        session_id: &str,
        tool_call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), EngineError> {
        self.turn_env
            .approvals
            .resolve(session_id, tool_call_id, decision)
    }

    /// The registry of tool calls waiting for approval: the tool-call gate registers
    /// a call there before publishing `approval:required` and awaits the answer.
    pub fn approvals(&self) -> &PendingApprovals {
        &self.turn_env.approvals
    }

    /// How many messages from `arbor worker`s the epoch fence refused so far (issue
    /// 27: late writes of a worker that lost its session's lease; each is also logged
    /// as "refused a late write from worker W epoch E").
    pub fn refused_remote_writes(&self) -> u64 {
        self.remote.refused_writes()
    }

    /// Whether `session_id` runs on an `arbor worker` now (issue 27).
    pub fn is_remote(&self, session_id: &str) -> bool {
        self.remote.is_remote(session_id)
    }

    /// Whether `session_id` has a turn running now.
    pub fn is_running(&self, session_id: &str) -> bool {
        self.live(session_id).is_some_and(|s| s.is_running())
    }

    /// Ids of the sessions loaded in this process (created or resumed), unordered.
    pub fn live_session_ids(&self) -> Vec<SessionId> {
        lock(&self.live).keys().cloned().collect()
    }

    /// The mount plan a new root session with `agent` would get, secrets redacted
    /// (for display).
    pub fn root_mount_plan(&self, agent: Option<&str>) -> Result<MountPlan, EngineError> {
        let plan = root_plan::build(&self.turn_env, agent)?.0;
        Ok(MountPlan::from_value(crate::session::redact::redact(
            &plan.to_value(),
        )))
    }

    /// The mount plan a sub-session of `agent` spawned from a new root session would
    /// get (`limits::agent_plan(root, agent, …)`: endpoint marks included, task limits
    /// tightened unless it is a user agent) with routing applied — the chosen provider
    /// entry first, with `default_model` and the preference's config — plus the model
    /// it resolved to (agent `provider_preferences` > agent `model_role` > the root's
    /// provider, with the reason for any fallback); secrets redacted. What `arbor agent
    /// show NAME --merged` prints. Globs list models (cached per process).
    ///
    /// Errors: `UnknownAgent` / `InvalidAgent`; `NoProvider` when no provider builds.
    pub async fn routed_child_mount_plan(
        &self,
        agent: &str,
    ) -> Result<(MountPlan, ResolvedModel), EngineError> {
        spawn::routed_child_plan(&self.turn_env, agent).await
    }

    // ---- crate-internal -------------------------------------------------------------

    /// The live session `id`, if loaded.
    pub(crate) fn live(&self, id: &str) -> Option<Arc<LiveSession>> {
        lock(&self.live).get(id).cloned()
    }
}

impl Sessions for Runtime {
    fn turn_env(&self) -> &TurnEnv {
        &self.turn_env
    }

    fn remote(&self) -> &RemoteRuns {
        &self.remote
    }

    fn live(&self, id: &str) -> Option<Arc<LiveSession>> {
        Runtime::live(self, id)
    }

    fn live_or_resume(&self, id: &str) -> Result<Arc<LiveSession>, EngineError> {
        Runtime::live_or_resume(self, id)
    }

    fn register(
        &self,
        metadata: Metadata,
        plan: MountPlan,
        transcript: Vec<Message>,
    ) -> Result<Arc<LiveSession>, EngineError> {
        Runtime::register(self, metadata, plan, transcript)
    }
}

/// The root of `metadata`'s tree: the parent chain followed through the live sessions
/// (whose root is known) and, for parents not loaded, their stored metadata; the last
/// session reached when a parent is missing or the chain is implausibly long (a cycle).
fn root_of(
    live: &HashMap<SessionId, Arc<LiveSession>>,
    store: &SessionStore,
    metadata: &Metadata,
) -> String {
    let mut top = metadata.session_id.clone();
    // A fork is the root of its own tree (issue 25): its limits and grants are its own.
    let mut parent = metadata
        .parent_id
        .clone()
        .filter(|_| metadata.forked_from_turn().is_none());
    for _ in 0..MAX_TREE_DEPTH {
        let Some(id) = parent else { break };
        if let Some(session) = live.get(&id) {
            return session.root_id.to_string();
        }
        let Ok((stored, _)) = store.load_metadata(&id) else {
            break;
        };
        top = id;
        parent = stored
            .parent_id
            .clone()
            .filter(|_| stored.forked_from_turn().is_none());
    }
    String::from(top)
}

/// How many parent links [`root_of`] and [`descends_from`] follow at most.
const MAX_TREE_DEPTH: usize = 64;

/// Whether `session` has `ancestor` on its live parent chain.
fn descends_from(
    live: &HashMap<SessionId, Arc<LiveSession>>,
    session: &LiveSession,
    ancestor: &str,
) -> bool {
    let mut parent = session.parent_id.clone();
    let mut hops = 0;
    while let Some(id) = parent {
        if id == ancestor {
            return true;
        }
        hops += 1;
        if hops > MAX_TREE_DEPTH {
            return false;
        }
        parent = live.get(&id).and_then(|s| s.parent_id.clone());
    }
    false
}
