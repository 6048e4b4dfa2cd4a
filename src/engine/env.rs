//! What a turn, a spawn and provider setup need from the runtime, handed down as one
//! value instead of the runtime itself.
//!
//! Owns: [`TurnEnv`] — the paths, config, bundle and live registry the runtime was
//! built with, the environment lookup, the per-process model cache and HTTP client
//! pool, the injected provider factory and extra tools, the task tool's host, the
//! delegation limits every spawn checks (`limits::TreeLimits`), the per-endpoint
//! request slots (`slots::ProviderSlots`), the approval mode and
//! the registry of calls waiting for approval — and mounting a
//! session's tools for its next turn ([`TurnEnv::mount_tools`]); the [`Env`] and
//! [`ProviderFactory`] types. `runtime` builds one `TurnEnv` and shares it; `turn`,
//! `spawn`, `providers` and `root_plan` read it and never reach back into the
//! runtime. Does not own: the map of live sessions, the store or the bus (`runtime`),
//! building providers (`providers`), the turn loop (`turn`), delegation (`spawn`).

use std::sync::Arc;

use super::approvals::{ApprovalMode, PendingApprovals, TreeGrants};
use super::limits::TreeLimits;
use super::live::LiveSession;
use super::slots::ProviderSlots;
use crate::agent::Bundle;
use crate::agent::Registry;
use crate::agent::registry::RegistryHandle;
use crate::config::{ArborConfig, ModuleEntry, MountPlan};
use crate::paths::Paths;
use crate::provider::{HttpPool, Provider, ProviderError};
use crate::routing::ModelCache;
use crate::tool::Tool;
use crate::tool::mount::ToolSet;
use crate::tool::task::{TaskHost, TaskTool};

/// Builds a live provider from a mount-plan entry (keys are attached by the builder;
/// plan entries hold none, or `[REDACTED]`). Injected by tests and embedders.
pub type ProviderFactory =
    Arc<dyn Fn(&ModuleEntry) -> Result<Arc<dyn Provider>, ProviderError> + Send + Sync>;

/// Environment lookup shared by the runtime.
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The runtime's shared, read-only setup, as turns, spawns and provider setup use it.
pub(crate) struct TurnEnv {
    pub paths: Paths,
    pub config: ArborConfig,
    pub bundle: Bundle,
    /// The live registry (the watcher updates it).
    pub registry: RegistryHandle,
    /// Environment lookup for keys/base URLs (`OPENAI_API_KEY`, …).
    pub env: Env,
    /// Provider model lists (routing, and the model of a provider that leaves it to
    /// the server), fetched once per provider per process.
    pub models: Arc<ModelCache>,
    /// The HTTP clients of every session's provider: one per endpoint per process.
    pub http: HttpPool,
    /// Builds providers instead of `routing::setup::build_provider` (scripted fakes).
    pub provider_factory: Option<ProviderFactory>,
    /// Tools mounted in every session in addition to the plan's modules.
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// The task tool's handle on the runtime (holds it weakly).
    pub task_host: Arc<dyn TaskHost>,
    /// The config's `limits:` (sessions per tree, sub-sessions at once), counted for
    /// this process.
    pub limits: TreeLimits,
    /// Who answers tool calls that need approval.
    pub approval_mode: ApprovalMode,
    /// Tool calls waiting for a person's answer (SPEC §12).
    pub approvals: PendingApprovals,
    /// The "always" answers of each session tree.
    pub grants: TreeGrants,
    /// Model requests in flight per provider endpoint (`max_concurrent`).
    pub slots: ProviderSlots,
}

impl TurnEnv {
    /// The current agent registry (a snapshot; the watcher may replace it any time).
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.borrow().clone()
    }

    /// The tools of `live` for its next turn, from `plan` (the session's own, or that
    /// of the agent a transfer handed the session to). The task tool's description
    /// reads the registry at that moment, so hot-reloaded agents show up.
    pub fn mount_tools(&self, live: &LiveSession, plan: &MountPlan) -> ToolSet {
        let host = self.task_host.clone();
        let agents = plan.agents().cloned();
        let build = |config| -> Arc<dyn Tool> {
            Arc::new(TaskTool::new(host.clone(), agents.clone(), config))
        };
        let mut set = ToolSet::mount(plan, live.depth, Some(&build));
        set.extend(self.extra_tools.iter().cloned());
        set
    }
}
