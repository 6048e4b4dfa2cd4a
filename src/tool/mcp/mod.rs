//! `tool-mcp`: tools of Model Context Protocol servers (SPEC §12), through the official
//! Rust SDK (`rmcp`), over stdio (a child process) or streamable HTTP.
//!
//! Owns: the process's servers ([`McpHub`]: one per name, started at most once per
//! process and shared by every session of every tree, stopped at [`McpHub::shutdown`]
//! or when the hub is dropped), each server's lifecycle (`server`: `initialize` within
//! its timeout, a crashed server restarted by the next call with a note, a server that
//! cannot start reported by name while the other servers' tools still work), and the
//! tool adapter (`adapter`: `mcp__<server>__<tool>`, results as text capped like
//! `bash` output, cancel or `call_timeout` stops a call), and confining stdio servers
//! in the kernel sandbox ([`McpSandboxing`]: what a server may write, its network).
//! Does not own: which servers a session mounts or whether a project may start
//! them (the engine reads `config::mcp` and `config::trust`), approvals (MCP tools ask
//! by default, `config::approvals`), or showing anything.

pub mod adapter;
pub mod error;
pub mod server;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

pub use adapter::{McpTool, PREFIX, server_of, tool_name};
pub use error::McpError;
pub use server::{EnvLookup, McpSandboxing, Server, ServerState};

use super::Tool;
use crate::config::mcp::{McpOrigin, McpServer};

/// The tools a set of servers offers, and the servers that failed.
#[derive(Default)]
pub struct Mounted {
    /// Every running server's tools, in server order then the server's order.
    pub tools: Vec<Arc<dyn Tool>>,
    /// `(server, reason)` for each server that is not available.
    pub failures: Vec<(String, McpError)>,
}

/// One server as the MCP view and `doctor` show it: never an `env` or `headers` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerStatus {
    pub name: String,
    /// Where it is configured (`config.yaml`, a `.mcp.json` path, `agent tool-mcp`).
    pub origin: String,
    /// The command line or URL ([`McpServer::describe`]).
    pub target: String,
    pub state: ServerState,
}

impl McpServerStatus {
    fn of(spec: &McpServer, state: ServerState) -> Self {
        Self {
            name: spec.name.clone(),
            origin: spec.origin.to_string(),
            target: spec.describe(),
            state,
        }
    }
}

/// The MCP servers of one process, by name.
pub struct McpHub {
    servers: Mutex<BTreeMap<String, Arc<Server>>>,
    env: EnvLookup,
    /// The HTTP client of streamable-HTTP servers, built when the first server is
    /// registered (loading the system's root certificates costs milliseconds that a
    /// process without MCP servers, and every startup, should not pay).
    http: OnceLock<Result<reqwest::Client, McpError>>,
    /// How stdio servers are confined (default: not at all).
    sandboxing: McpSandboxing,
}

impl McpHub {
    /// An empty hub; `env` expands `${VAR}` when a server starts. Its stdio servers
    /// run unconfined until [`McpHub::sandboxed`].
    pub fn new(env: EnvLookup) -> Self {
        Self {
            servers: Mutex::new(BTreeMap::new()),
            env,
            http: OnceLock::new(),
            sandboxing: McpSandboxing::default(),
        }
    }

    /// The same hub with its stdio servers started in `sandbox` (issue #22), writing
    /// beneath `project` (arbor's working directory) and their own temp dir; see
    /// [`McpSandboxing`] for every rule. Call before the first [`McpHub::mount`].
    pub fn sandboxed(mut self, sandbox: crate::sandbox::Sandbox, project: PathBuf) -> Self {
        self.sandboxing = McpSandboxing { sandbox, project };
        self
    }

    /// The shared HTTP client, built on first use.
    fn http(&self) -> Result<reqwest::Client, McpError> {
        self.http
            .get_or_init(|| {
                reqwest::Client::builder()
                    .build()
                    .map_err(|e| McpError::HttpClient(e.to_string()))
            })
            .clone()
    }

    /// The server for `spec`, registered on first use. Errors when the name is taken
    /// by a server configured differently (the first one keeps it).
    fn server(&self, spec: &McpServer) -> Result<Arc<Server>, McpError> {
        let mut servers = self
            .servers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(existing) = servers.get(&spec.name) {
            let same = existing.spec.transport == spec.transport
                && existing.spec.init_timeout == spec.init_timeout
                && existing.spec.call_timeout == spec.call_timeout
                && existing.spec.sandbox == spec.sandbox;
            return if same {
                Ok(existing.clone())
            } else {
                Err(McpError::NameTaken(existing.spec.origin.to_string()))
            };
        }
        let server = Arc::new(Server::new(
            spec.clone(),
            self.env.clone(),
            self.http(),
            self.sandboxing.clone(),
        ));
        servers.insert(spec.name.clone(), server.clone());
        Ok(server)
    }

    /// Starts every server of `specs` that is not running yet (all at once, each
    /// within its `initialize` timeout) and returns their tools. A server that cannot
    /// start is in `failures`; the others' tools are still returned.
    pub async fn mount(&self, specs: &[McpServer]) -> Mounted {
        let mut mounted = Mounted::default();
        let mut servers = Vec::new();
        for spec in specs {
            match self.server(spec) {
                Ok(server) => servers.push(server),
                Err(reason) => mounted.failures.push((spec.name.clone(), reason)),
            }
        }
        let started =
            futures::future::join_all(servers.iter().map(|server| server.connection())).await;
        for (server, result) in servers.iter().zip(started) {
            match result {
                Ok((conn, _)) => mounted.tools.extend(conn.tools.iter().map(|def| {
                    Arc::new(McpTool::new(server.clone(), def.clone())) as Arc<dyn Tool>
                })),
                Err(reason) => mounted.failures.push((server.spec.name.clone(), reason)),
            }
        }
        mounted
    }

    /// Every server registered so far, by name, with its state.
    pub fn servers(&self) -> Vec<Arc<Server>> {
        self.servers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// `configured` (each with its state here, `NotStarted` when this process has not
    /// used it yet), then the servers registered by sessions that are not among them
    /// (an agent's `tool-mcp` servers).
    pub fn status(&self, configured: &[McpServer]) -> Vec<McpServerStatus> {
        let running = self.servers();
        let state_of = |name: &str| {
            running
                .iter()
                .find(|s| s.spec.name == name)
                .map_or(ServerState::NotStarted, |s| s.state())
        };
        let mut out: Vec<McpServerStatus> = configured
            .iter()
            .map(|spec| McpServerStatus::of(spec, state_of(&spec.name)))
            .collect();
        for server in &running {
            if !configured.iter().any(|c| c.name == server.spec.name) {
                out.push(McpServerStatus::of(&server.spec, server.state()));
            }
        }
        out
    }

    /// Stops and forgets every server a project's `.mcp.json` configured that `keep`
    /// (the servers the process mounts now) no longer lists the same way — the
    /// project was untrusted, or its file changed (issue 39) — so none of its tools
    /// reaches a later turn and a server of that name starts afresh when listed
    /// again. Returns their names; they stop in the background (must be called
    /// inside a tokio runtime for that; elsewhere they stop when dropped).
    pub fn retire_project_servers(&self, keep: &[McpServer]) -> Vec<String> {
        let retired: Vec<Arc<Server>> = {
            let mut servers = self
                .servers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let gone: Vec<String> = servers
                .values()
                .filter(|s| matches!(s.spec.origin, McpOrigin::Project(_)))
                .filter(|s| !keep.iter().any(|k| k == &s.spec))
                .map(|s| s.spec.name.clone())
                .collect();
            gone.iter()
                .filter_map(|name| servers.remove(name))
                .collect()
        };
        let names = retired.iter().map(|s| s.spec.name.clone()).collect();
        if !retired.is_empty()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(async move {
                for server in retired {
                    server.stop().await;
                }
            });
        }
        names
    }

    /// Stops every running server (child processes are killed).
    pub async fn shutdown(&self) {
        for server in self.servers() {
            server.stop().await;
        }
    }
}
