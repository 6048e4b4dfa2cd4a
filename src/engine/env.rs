//! What a turn, a spawn and provider setup need from the runtime, handed down as one
//! value instead of the runtime itself.
//!
//! Owns: [`TurnEnv`] — the paths, config, bundle and live registry the runtime was
//! built with, the environment lookup, the per-process model cache and HTTP client
//! pool, the injected provider factory and extra tools, the task tool's host, the
//! delegation limits every spawn checks (`limits::TreeLimits`), the per-endpoint
//! request slots (`slots::ProviderSlots`), the approval mode and
//! the registry of calls waiting for approval, the process's MCP servers and hooks
//! (`project_powers`), the sandbox settings `bash` runs with — and
//! mounting a session's tools for its next turn ([`TurnEnv::mount_tools`], which starts
//! the MCP servers the session mounts); the [`Env`] and
//! [`ProviderFactory`] types. `runtime` builds one `TurnEnv` and shares it; `turn`,
//! `spawn`, `providers` and `root_plan` read it and never reach back into the
//! runtime. Does not own: the map of live sessions, the store or the bus (`runtime`),
//! building providers (`providers`), the turn loop (`turn`), delegation (`spawn`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::approvals::{ApprovalMode, PendingApprovals, TreeGrants};
use super::limits::TreeLimits;
use super::live::LiveSession;
use super::project_powers::{Powers, ProjectPowers};
use super::slots::ProviderSlots;
use crate::agent::Bundle;
use crate::agent::Registry;
use crate::agent::registry::RegistryHandle;
use crate::config::mcp::{MCP_MODULE, McpServer, module_servers};
use crate::config::{ArborConfig, ModuleEntry, MountPlan};
use crate::paths::Paths;
use crate::provider::{HttpPool, Provider, ProviderError};
use crate::routing::ModelCache;
use crate::sandbox::Sandbox;
use crate::session::protocol::{EngineEvent, McpServerFailedEvent};
use crate::tool::Tool;
use crate::tool::delegate::{self, DelegateTool};
use crate::tool::mcp::McpHub;
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
    /// The HTTP clients of every session's provider: one per endpoint per process
    /// (shared with other runtimes when the engine was built with a pool).
    pub http: Arc<HttpPool>,
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
    /// The MCP servers of this process (started on first use, shared by every tree).
    pub mcp: Arc<McpHub>,
    /// `(session, server)` pairs whose failure was already published.
    pub mcp_reported: Mutex<HashSet<(String, String)>>,
    /// The kernel sandbox `bash` runs in (config `sandbox:`, the deny list); `mcp`
    /// starts its stdio servers in the same one.
    pub sandbox: Sandbox,
    /// The person's hook commands (config `hooks:`, a trusted project's settings),
    /// run around tool calls (`calls`), and the MCP servers every session mounts
    /// (config `mcp_servers:` and a trusted project's `.mcp.json`): read again at the
    /// start of every turn (`project_powers`), so a change of trust applies at once.
    pub powers: ProjectPowers,
    /// The external ACP agents of hosted nodes between their turns, one process per
    /// node (issue 37 item 3), ended with the runtime.
    pub hosted: crate::acp_client::HostedAgents,
}

impl TurnEnv {
    /// Reads the project's hooks and MCP servers again and puts them in force for
    /// every session (`project_powers`); returns them.
    pub fn refresh_powers(&self) -> Arc<Powers> {
        self.powers
            .refresh(&self.paths, &self.config, &self.sandbox, &self.mcp)
    }

    /// The project's hooks and MCP servers in force (as last read).
    pub fn powers(&self) -> Arc<Powers> {
        self.powers.current()
    }

    /// The current agent registry (a snapshot; the watcher may replace it any time).
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.borrow().clone()
    }

    /// The tools of `live` for its next turn, from `plan` (the session's own, or that
    /// of the agent a transfer handed the session to). The task tool's description
    /// reads the registry at that moment, so hot-reloaded agents show up. With them the
    /// tools of every MCP server it mounts ([`Self::mcp_servers_of`]), starting those
    /// not running yet: a server that is not available is published once per session
    /// as `mcp:server_failed` and the other tools are mounted; a cancel of the turn
    /// stops waiting for servers to start (the turn then ends cancelled).
    pub async fn mount_tools(&self, live: &LiveSession, plan: &MountPlan) -> ToolSet {
        let host = self.task_host.clone();
        let agents = plan.agents().cloned();
        let build = |module: &str, config| -> Arc<dyn Tool> {
            let task = TaskTool::new(host.clone(), agents.clone(), config);
            if module == delegate::MODULE {
                Arc::new(DelegateTool::new(Arc::new(task)))
            } else {
                Arc::new(task)
            }
        };
        let web = crate::tool::web::WebConfig::from_config(&self.config);
        let mut set = ToolSet::mount_with(plan, live.depth, Some(&build), &self.sandbox, web);
        set.extend(self.extra_tools.iter().cloned());
        let servers = self.mcp_servers_of(live, plan);
        if servers.is_empty() {
            return set;
        }
        let token = live.cancel_token();
        let mounted = tokio::select! {
            m = self.mcp.mount(&servers) => m,
            () = token.cancelled() => return set,
        };
        set.extend(mounted.tools);
        for (server, error) in mounted.failures {
            let first = self
                .mcp_reported
                .lock()
                .map(|mut r| r.insert((live.id.to_string(), server.clone())))
                .unwrap_or(true);
            if first {
                tracing::warn!("MCP server '{server}': {error}");
                live.emit(EngineEvent::McpServerFailed(McpServerFailedEvent {
                    server,
                    error: error.to_string(),
                }));
            }
        }
        set
    }

    /// The MCP servers `live` mounts under `plan`: the process's
    /// (`powers`, as last read) and the plan's `tool-mcp` entries (`config.servers`),
    /// first name wins.
    pub fn mcp_servers_of(&self, live: &LiveSession, plan: &MountPlan) -> Vec<McpServer> {
        let mut servers = self.powers.current().mcp_servers.clone();
        for entry in plan.tools() {
            if entry.module != MCP_MODULE {
                continue;
            }
            let (more, problems) = module_servers(&entry.config);
            for p in problems {
                tracing::warn!("session {}: {p}", live.id);
            }
            for server in more {
                if !servers.iter().any(|s| s.name == server.name) {
                    servers.push(server);
                }
            }
        }
        servers
    }
}
