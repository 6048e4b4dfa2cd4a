//! The runtime: the one object every consumer (TUI, `arbor run`, the task tool) drives.
//!
//! Owns: paths, config, bundle, the live registry handle, environment and event bus;
//! the project's [`SessionStore`]; the map of live sessions (created here or resumed
//! from disk); creating root sessions, resuming stored ones, cancelling subtrees, and
//! mounting a session's tools. Does not own: the turn loop (`turn`), delegation
//! (`spawn`), mount plans of the root (`root_plan`), wire protocols (`provider`).
//!
//! Locking: the live map is a `std::sync::Mutex` held only for lookups and inserts,
//! never across an await; resuming (load + lock, both synchronous) happens under it so
//! one session is never opened twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;

use super::live::{LiveSession, lock};
use super::providers::{self, Env, ProviderFactory};
use super::spawn::Host;
use super::turn;
use crate::agent::Bundle;
use crate::agent::Registry;
use crate::agent::registry::RegistryHandle;
use crate::config::{ArborConfig, ModuleEntry, MountPlan};
use crate::paths::Paths;
use crate::provider::Provider;
use crate::routing::ModelCache;
use crate::session::message::now_rfc3339;
use crate::session::protocol::{CancelRequestedEvent, SessionResumeEvent, SessionStartEvent};
use crate::session::{
    EngineEvent, EventBus, LoadedSession, Message, Metadata, SessionStatus, SessionStore,
    StoreError, ids,
};
use crate::tool::Tool;
use crate::tool::mount::ToolSet;
use crate::tool::task::{TaskHost, TaskTool};

/// Everything a runtime is built from.
pub struct RuntimeOptions {
    pub paths: Paths,
    pub config: ArborConfig,
    pub bundle: Bundle,
    /// The live registry (the watcher updates it).
    pub registry: RegistryHandle,
    /// Environment lookup for keys/base URLs (`OPENAI_API_KEY`, …); tests inject it.
    pub env: Env,
    pub bus: EventBus,
}

/// Test and embedding hooks for [`Runtime::with_hooks`].
#[derive(Clone, Default)]
pub struct RuntimeHooks {
    /// Builds providers instead of `routing::setup::build_provider` (scripted fakes).
    pub provider_factory: Option<ProviderFactory>,
    /// Tools mounted in every session in addition to the plan's modules.
    pub extra_tools: Vec<Arc<dyn Tool>>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub session_id: String,
    pub agent: String,
    pub status: SessionStatus,
    /// The final assistant text of the turn (partial text when failed/cancelled).
    pub response: String,
    pub turn_count: u32,
    /// The error text when `status` is `Failed`.
    pub error: Option<String>,
}

/// Engine failures that stop a command before a turn runs.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("unknown agent '{name}'. Available agents: {}", available.join(", "))]
    UnknownAgent {
        name: String,
        available: Vec<String>,
    },
    #[error("agent '{name}' is invalid: {reason}")]
    InvalidAgent { name: String, reason: String },
    /// No usable provider; the message says what was looked for and how to configure one.
    #[error("{0}")]
    NoProvider(String),
    #[error("{0}")]
    Other(String),
}

/// Drives sessions. Shared as `Arc<Runtime>`.
pub struct Runtime {
    me: Weak<Runtime>,
    pub(crate) paths: Paths,
    pub(crate) config: ArborConfig,
    pub(crate) bundle: Bundle,
    registry: RegistryHandle,
    pub(crate) env: Env,
    bus: EventBus,
    store: SessionStore,
    hooks: RuntimeHooks,
    live: Mutex<HashMap<String, Arc<LiveSession>>>,
    /// Provider model lists (routing, and the model of a provider that leaves it to
    /// the server), fetched once per provider per process.
    pub(crate) models: Arc<ModelCache>,
}

/// How long [`Runtime::resolve_provider_label`] waits for a server to list its models.
pub const LABEL_TIMEOUT: Duration = Duration::from_secs(3);

impl Runtime {
    /// A runtime over `options`; providers come from `routing::setup`.
    pub fn new(options: RuntimeOptions) -> Arc<Self> {
        Self::with_hooks(options, RuntimeHooks::default())
    }

    /// A runtime with injected providers and/or extra tools (tests, embedders).
    ///
    /// The config's and the environment's provider keys join the process's secret
    /// register (`session::redact::register_secrets`) so no error text shows them.
    pub fn with_hooks(options: RuntimeOptions, hooks: RuntimeHooks) -> Arc<Self> {
        crate::session::redact::register_secrets(providers::secrets(
            &MountPlan::default(),
            &options.config,
            &options.env,
        ));
        let store = SessionStore::new(options.paths.sessions_dir());
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            paths: options.paths,
            config: options.config,
            bundle: options.bundle,
            registry: options.registry,
            env: options.env,
            bus: options.bus,
            store,
            hooks,
            live: Mutex::new(HashMap::new()),
            models: Arc::new(ModelCache::new()),
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

    /// The paths the runtime was built with.
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The active bundle.
    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }

    /// The current agent registry (a snapshot; the watcher may replace it any time).
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.borrow().clone()
    }

    /// `provider/model` of what a new root session would use (just the provider id
    /// while a local server's model is unresolved), or the NoProvider text. Never
    /// waits: see [`Runtime::resolve_provider_label`] for a server-decided model.
    pub fn provider_label(&self) -> Result<String, EngineError> {
        let plan = self.build_root_plan(None)?.0;
        let (provider, _) = self.select_provider(&plan)?;
        Ok(providers::label(provider.as_ref(), None))
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
        let plan = self.build_root_plan(None)?.0;
        let (provider, entry) = self.select_provider_entry(&plan)?;
        if provider.default_model().is_empty() {
            let key = providers::cache_key(&entry);
            let listed = tokio::time::timeout(
                LABEL_TIMEOUT,
                providers::server_model(&self.models, &key, &provider),
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
    /// when `None`). Runs nothing. Publishes `session:start`
    /// (`{agent, depth, bundle, model, working_dir}`) and `session:status` (`idle`).
    ///
    /// Errors: `UnknownAgent` / `InvalidAgent`; `NoProvider` when no provider is
    /// configured or none builds; `Store` when the session cannot be written.
    pub fn create_root(&self, agent: Option<&str>) -> Result<String, EngineError> {
        let (plan, overlay) = self.build_root_plan(agent)?;
        let (provider, provider_config) = self.select_provider(&plan)?;
        let now = now_rfc3339();
        let metadata = Metadata {
            session_id: ids::new_root_id(),
            parent_id: None,
            agent_name: Some(agent.map_or_else(|| self.bundle.name.clone(), str::to_string)),
            created: now.clone(),
            last_updated: now,
            turn_count: 0,
            working_dir: Some(self.paths.cwd.display().to_string()),
            bundle: Some(self.bundle.name.clone()),
            model: Some(providers::label(provider.as_ref(), None)),
            status: SessionStatus::Idle,
            depth: 0,
            config: Some(plan.0.clone()),
            agent_overlay: overlay,
            ..Default::default()
        };
        let live = self.register(metadata, plan, Vec::new())?;
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
    /// leave a resumable session). Errors before the turn: an invalid, missing or
    /// corrupted session, a lock held by another process (`Store`), a turn already
    /// running in that session (`Other`), no usable provider (`NoProvider`).
    pub async fn run_turn(
        self: &Arc<Self>,
        session_id: &str,
        prompt: String,
    ) -> Result<TurnOutcome, EngineError> {
        let live = self.live_or_resume(session_id)?;
        turn::run(self.clone(), live, prompt, None).await
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
        if targets.iter().any(|s| s.is_running()) {
            root.emit(EngineEvent::CancelRequested(CancelRequestedEvent {}));
        }
        for session in &targets {
            session.cancel_token().cancel();
        }
    }

    /// Whether `session_id` has a turn running now.
    pub fn is_running(&self, session_id: &str) -> bool {
        self.live(session_id).is_some_and(|s| s.is_running())
    }

    /// Ids of the sessions loaded in this process (created or resumed), unordered.
    pub fn live_session_ids(&self) -> Vec<String> {
        lock(&self.live).keys().cloned().collect()
    }

    /// Reads a session fresh from disk (metadata, transcript, load warnings). A live
    /// session's files are current: every message is flushed as it is appended.
    pub fn load_session(&self, id: &str) -> Result<LoadedSession, EngineError> {
        Ok(self.store.load(id)?)
    }

    /// The full id for an id or unambiguous prefix (`NotFound`, `Ambiguous`).
    pub fn resolve_id(&self, prefix: &str) -> Result<String, EngineError> {
        Ok(self.store.resolve(prefix)?)
    }

    /// The mount plan a new root session with `agent` would get, secrets redacted
    /// (for display).
    pub fn root_mount_plan(&self, agent: Option<&str>) -> Result<MountPlan, EngineError> {
        let plan = self.build_root_plan(agent)?.0;
        Ok(MountPlan(crate::session::redact::redact(&plan.0)))
    }

    /// The mount plan a sub-session of `agent` spawned from a new root session would
    /// get (`merge_for_spawn(root, overlay, …)`), secrets redacted — what
    /// `arbor agent show NAME --merged` prints.
    pub fn child_mount_plan(&self, agent: &str) -> Result<MountPlan, EngineError> {
        let root = self.build_root_plan(None)?.0;
        let def = self.valid_agent(agent)?;
        let child = crate::config::merge::merge_for_spawn(&root, &def.overlay, &Value::Null);
        Ok(MountPlan(crate::session::redact::redact(&child.0)))
    }

    // ---- crate-internal -------------------------------------------------------------

    /// The live session `id`, if loaded.
    pub(crate) fn live(&self, id: &str) -> Option<Arc<LiveSession>> {
        lock(&self.live).get(id).cloned()
    }

    /// The live session `id`, resuming it from disk when not loaded: fresh load,
    /// `config` required (else `Corrupted`), the lock taken (`Locked` when another
    /// process has it), `session:resume` published.
    pub(crate) fn live_or_resume(&self, id: &str) -> Result<Arc<LiveSession>, EngineError> {
        let mut live = lock(&self.live);
        if let Some(session) = live.get(id) {
            return Ok(session.clone());
        }
        ids::validate(id).map_err(|reason| StoreError::InvalidId {
            id: id.to_string(),
            reason,
        })?;
        let loaded = self.store.load(id)?;
        let Some(config) = loaded.metadata.config.clone() else {
            return Err(StoreError::Corrupted {
                id: id.to_string(),
                detail: "metadata.json has no `config` (the merged mount plan), so the session cannot be rebuilt".into(),
            }
            .into());
        };
        for warning in &loaded.warnings {
            tracing::warn!(session = id, "{warning}");
        }
        let plan = MountPlan(config);
        let mut writer = self.store.open(id)?;
        writer.set_secrets(providers::secrets(&plan, &self.config, &self.env));
        let mut metadata = loaded.metadata;
        metadata.session_id = id.to_string();
        let session = Arc::new(LiveSession::new(
            metadata,
            plan,
            writer,
            loaded.transcript,
            self.bus.clone(),
            self.paths.cwd.clone(),
        ));
        live.insert(id.to_string(), session.clone());
        drop(live);
        let meta = session.metadata();
        session.emit(EngineEvent::SessionResume(SessionResumeEvent {
            agent: session.agent_name.clone(),
            depth: session.depth,
            turn_count: meta.turn_count,
            status: meta.status,
        }));
        Ok(session)
    }

    /// Creates the session directory for `metadata` and makes it live.
    pub(crate) fn register(
        &self,
        metadata: Metadata,
        plan: MountPlan,
        transcript: Vec<Message>,
    ) -> Result<Arc<LiveSession>, EngineError> {
        // Secrets are known before the first metadata write, so no file (not even the
        // backup of a later write) ever holds a key.
        let writer = self.store.create_with_secrets(
            &metadata,
            providers::secrets(&plan, &self.config, &self.env),
        )?;
        let session = Arc::new(LiveSession::new(
            metadata,
            plan,
            writer,
            transcript,
            self.bus.clone(),
            self.paths.cwd.clone(),
        ));
        lock(&self.live).insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// The session's provider (built once, then cached) and its entry config.
    pub(crate) fn provider_for(
        &self,
        live: &LiveSession,
    ) -> Result<(Arc<dyn Provider>, Value), EngineError> {
        if let Some(cached) = live.provider() {
            return Ok(cached);
        }
        let (provider, config) = self.select_provider(&live.plan)?;
        live.set_provider(provider.clone(), config.clone());
        Ok((provider, config))
    }

    /// The injected provider factory, if any (routing builds every plan provider with it).
    pub(crate) fn provider_factory(&self) -> Option<&ProviderFactory> {
        self.hooks.provider_factory.as_ref()
    }

    /// The provider a session with `plan` uses and its entry's `config`; `NoProvider`
    /// (every entry's failure, then what was looked for) when none builds.
    pub(crate) fn select_provider(
        &self,
        plan: &MountPlan,
    ) -> Result<(Arc<dyn Provider>, Value), EngineError> {
        let (provider, entry) = self.select_provider_entry(plan)?;
        Ok((provider, entry.config))
    }

    /// [`Runtime::select_provider`] with the whole plan entry.
    pub(crate) fn select_provider_entry(
        &self,
        plan: &MountPlan,
    ) -> Result<(Arc<dyn Provider>, ModuleEntry), EngineError> {
        providers::select(self, plan).map_err(|errors| {
            let mut text = crate::routing::setup::no_provider_message(
                &self.paths.config_file,
                self.env.as_ref(),
            );
            if !errors.is_empty() {
                text = format!("{}\n\n{text}", errors.join("\n"));
            }
            EngineError::NoProvider(text)
        })
    }

    /// The tools of `live` for its next turn (the task tool's description reads the
    /// registry at that moment, so hot-reloaded agents show up).
    pub(crate) fn mount_tools(&self, live: &LiveSession) -> ToolSet {
        let host: Arc<dyn TaskHost> = Arc::new(Host::new(self.me.clone()));
        let agents = live.plan.agents().cloned();
        let build = |config| -> Arc<dyn Tool> {
            Arc::new(TaskTool::new(host.clone(), agents.clone(), config))
        };
        let mut set = ToolSet::mount(&live.plan, live.depth, Some(&build));
        set.extend(self.hooks.extra_tools.iter().cloned());
        set
    }
}

/// Whether `session` has `ancestor` on its live parent chain.
fn descends_from(
    live: &HashMap<String, Arc<LiveSession>>,
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
        if hops > 64 {
            return false;
        }
        parent = live.get(&id).and_then(|s| s.parent_id.clone());
    }
    false
}
