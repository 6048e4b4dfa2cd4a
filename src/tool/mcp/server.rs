//! One MCP server's lifecycle: start (child process or streamable HTTP), `initialize`
//! within its timeout, list its tools, call them, restart after a crash, stop.
//!
//! A server is started at most once at a time: every caller waits on one lock while it
//! starts, then shares the connection. A server that fails to start stays failed, with
//! its reason, for the rest of the process (restarting it every turn would repeat a
//! slow timeout); a server that was running and exited is started again by the next
//! call, whose result says so. A call that has no result within the server's
//! `call_timeout` is cancelled and ends as an error result.
//!
//! Sandbox (issue #22): a stdio server starts through `arbor __sandbox`
//! ([`crate::sandbox`]) when the hub has a sandbox and the kernel can, with the rules of
//! [`McpSandboxing`]; with `sandbox.required: true` a server that cannot be sandboxed
//! is not started and its failure says why. Sandboxed or not, a stdio server runs in
//! a session of its own with no controlling terminal and inherits none of arbor's
//! secret variables but those `sandbox.env_pass` names; its own `env:` still sets
//! what it names (issue 34). Streamable-HTTP servers are not processes of arbor's and
//! are not confined.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool as ToolDef};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use super::error::McpError;
use crate::config::mcp::{McpOrigin, McpServer, McpTransport};
use crate::sandbox::{Decision, Sandbox};
use crate::session::redact;

/// Environment lookup for `${VAR}` expansion.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Lines of a stdio server's stderr kept to explain a failed start.
const STDERR_TAIL: usize = 5;

/// What a server is doing, for `doctor` and the MCP view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Configured; not started yet in this process.
    NotStarted,
    /// Running, offering these tools (their MCP names).
    Running { tools: Vec<String> },
    /// Could not start; the reason names what failed.
    Failed { reason: String },
}

/// A live connection and the tools listed when it started.
pub(super) struct Connection {
    client: RunningService<RoleClient, ()>,
    pub tools: Vec<ToolDef>,
    /// A sandboxed server's private temp dir (its `TMPDIR`), removed with the
    /// connection.
    _tmp: Option<tempfile::TempDir>,
}

/// How a hub confines its stdio servers: the kernel sandbox (its config, deny list
/// and helper; the default is off) and the project directory arbor runs in.
///
/// A sandboxed server may write beneath the project directory and a private temp
/// dir (`TMPDIR`, removed when it stops); a server from the user's `config.yaml` may
/// also write beneath its `cwd` and its `sandbox.writable` entries. It reads
/// everything but the sandbox's deny list (`~/.ssh`, `~/.aws`, arbor's config,
/// Amplifier's keys, …) and has the network as `sandbox.network` says, or as its own
/// `sandbox.network` in `config.yaml` says. A project's `.mcp.json` or an agent's
/// `tool-mcp` entry gets no more: its `cwd` is where it runs, not where it may write.
#[derive(Debug, Clone)]
pub struct McpSandboxing {
    /// The process's sandbox (`Sandbox::default()`: off, servers run unconfined).
    pub sandbox: Sandbox,
    /// The project directory (arbor's working directory; a relative `cwd` resolves
    /// against it).
    pub project: std::path::PathBuf,
}

impl Default for McpSandboxing {
    /// No sandbox; the process's current directory as the project.
    fn default() -> Self {
        Self {
            sandbox: Sandbox::default(),
            project: std::env::current_dir().unwrap_or_else(|_| ".".into()),
        }
    }
}

impl McpSandboxing {
    /// Whether `spec`, a stdio server that runs in `cwd` (as configured, expanded),
    /// starts sandboxed, unconfined or not at all (may run the sandbox probe:
    /// blocking).
    pub fn decide(&self, spec: &McpServer, cwd: Option<&str>) -> Decision {
        let dir = cwd.map_or_else(|| self.project.clone(), |c| self.project.join(c));
        let mut writable = vec![self.project.to_string_lossy().into_owned()];
        if spec.origin == McpOrigin::Config {
            writable.push(".".into());
            writable.extend(spec.sandbox.writable.iter().cloned());
        }
        let sandbox = match spec.sandbox.network {
            Some(network) => self.sandbox.clone().with_network(network),
            None => self.sandbox.clone(),
        };
        sandbox.decide(&dir, &writable)
    }
}

impl Connection {
    fn is_closed(&self) -> bool {
        self.client.is_closed() || self.client.peer().is_transport_closed()
    }
}

enum Slot {
    Idle,
    Up(Arc<Connection>),
    Failed(McpError),
}

/// One configured server, shared by every session of the process.
pub struct Server {
    pub spec: McpServer,
    env: EnvLookup,
    /// The client HTTP servers use (the reason it could not be built).
    http: Result<reqwest::Client, McpError>,
    slot: tokio::sync::Mutex<Slot>,
    /// A copy of the state readable without waiting (views).
    state: Mutex<ServerState>,
    /// How a stdio server is confined.
    sandboxing: McpSandboxing,
    /// How the last start was confined (`sandboxed: writes ./, no network`).
    sandbox_note: Mutex<Option<String>>,
}

/// How one call ended, before it becomes a tool output.
pub(super) enum CallEnd {
    Done(CallToolResult),
    Failed(String),
    Cancelled,
}

impl Server {
    pub(super) fn new(
        spec: McpServer,
        env: EnvLookup,
        http: Result<reqwest::Client, McpError>,
        sandboxing: McpSandboxing,
    ) -> Self {
        Self {
            spec,
            env,
            http,
            slot: tokio::sync::Mutex::new(Slot::Idle),
            state: Mutex::new(ServerState::NotStarted),
            sandboxing,
            sandbox_note: Mutex::new(None),
        }
    }

    /// How the server's last start was confined (`sandboxed: writes ./, no network`,
    /// `NOT sandboxed (sandbox.mode is off)`, or the refusal); `None` before a stdio
    /// start and for an HTTP server.
    pub fn sandbox_note(&self) -> Option<String> {
        self.sandbox_note.lock().ok().and_then(|n| n.clone())
    }

    /// The current state (never waits).
    pub fn state(&self) -> ServerState {
        self.state
            .lock()
            .map(|s| s.clone())
            .unwrap_or(ServerState::NotStarted)
    }

    fn set_state(&self, state: ServerState) {
        if let Ok(mut s) = self.state.lock() {
            *s = state;
        }
    }

    /// The running connection, starting the server first if it is idle. A server
    /// that failed to start returns its reason again without retrying; one that
    /// exited is restarted (`Ok((conn, true))`).
    pub(super) async fn connection(&self) -> Result<(Arc<Connection>, bool), McpError> {
        let mut slot = self.slot.lock().await;
        let restarted = match &*slot {
            Slot::Up(conn) if !conn.is_closed() => return Ok((conn.clone(), false)),
            Slot::Failed(reason) => return Err(reason.clone()),
            Slot::Up(_) => true,
            Slot::Idle => false,
        };
        if restarted {
            tracing::warn!("MCP server '{}' exited; restarting it", self.spec.name);
        }
        match self.connect().await {
            Ok(conn) => {
                let conn = Arc::new(conn);
                self.set_state(ServerState::Running {
                    tools: conn.tools.iter().map(|t| t.name.to_string()).collect(),
                });
                *slot = Slot::Up(conn.clone());
                Ok((conn, restarted))
            }
            Err(reason) => {
                let reason = redact::scrub(&reason.to_string()).into_owned();
                self.set_state(ServerState::Failed {
                    reason: reason.clone(),
                });
                let failed = McpError::Failed(reason);
                *slot = Slot::Failed(failed.clone());
                Err(failed)
            }
        }
    }

    /// Starts the server; a failure after the process started has its stderr tail
    /// added ([`McpError::Failed`]), not yet scrubbed: [`Server::connection`] does that
    /// before keeping it.
    async fn connect(&self) -> Result<Connection, McpError> {
        let expanded = self.spec.expand(self.env.as_ref())?;
        redact::register_secrets(&expanded.secrets);
        let timeout = self.spec.init_timeout;
        let stderr_tail = Arc::new(Mutex::new(Vec::<String>::new()));
        let start = async {
            let (client, tmp) = match expanded.transport {
                McpTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let (mut cmd, tmp) = self
                        .stdio_command(&command, &args, &env, cwd.as_deref())
                        .await?;
                    self.sandboxing.sandbox.strip_env(&mut cmd);
                    cmd.envs(&env).kill_on_drop(true);
                    if let Some(cwd) = cwd {
                        cmd.current_dir(self.sandboxing.project.join(cwd));
                    }
                    let (transport, stderr) = TokioChildProcess::builder(cmd)
                        .stderr(Stdio::piped())
                        .spawn()
                        .map_err(|e| McpError::Spawn {
                            command: command.clone(),
                            reason: e.to_string(),
                        })?;
                    if let Some(stderr) = stderr {
                        drain_stderr(self.spec.name.clone(), stderr, stderr_tail.clone());
                    }
                    let client =
                        ().serve(transport)
                            .await
                            .map_err(|e| McpError::Initialize(e.to_string()))?;
                    (client, tmp)
                }
                McpTransport::Http { url, headers } => {
                    let mut map = HashMap::new();
                    for (name, value) in headers {
                        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                            .map_err(|_| McpError::HeaderName(name.clone()))?;
                        let value = reqwest::header::HeaderValue::from_str(&value)
                            .map_err(|_| McpError::HeaderValue(name.clone()))?;
                        map.insert(header, value);
                    }
                    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(map);
                    let client = self.http.clone()?;
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    let client =
                        ().serve(transport)
                            .await
                            .map_err(|e| McpError::InitializeAt {
                                url: url.clone(),
                                reason: e.to_string(),
                            })?;
                    (client, None)
                }
            };
            let tools = client
                .list_all_tools()
                .await
                .map_err(|e| McpError::ListTools(e.to_string()))?;
            Ok::<_, McpError>(Connection {
                client,
                tools,
                _tmp: tmp,
            })
        };
        let result = match tokio::time::timeout(timeout, start).await {
            Ok(result) => result,
            Err(_) => Err(McpError::InitTimeout(seconds(timeout))),
        };
        result.map_err(|reason| {
            let tail = stderr_tail
                .lock()
                .map(|t| t.join(" | "))
                .unwrap_or_default();
            if tail.is_empty() {
                reason
            } else {
                McpError::Failed(format!("{reason} (stderr: {tail})"))
            }
        })
    }

    /// The command that starts a stdio server (`command args`, in `cwd` relative to
    /// the project): through the sandbox helper with a private temp dir as `TMPDIR`
    /// when [`McpSandboxing::decide`] says so, plain when it runs unconfined. Errors
    /// (nothing starts) when the sandbox refuses it (`sandbox.required`) or cannot be
    /// set up.
    async fn stdio_command(
        &self,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: Option<&str>,
    ) -> Result<(tokio::process::Command, Option<tempfile::TempDir>), McpError> {
        let (sandboxing, spec, cwd_owned) = (
            self.sandboxing.clone(),
            self.spec.clone(),
            cwd.map(str::to_string),
        );
        // The first decision runs the sandbox probe (a child process): off the workers.
        let decision =
            tokio::task::spawn_blocking(move || sandboxing.decide(&spec, cwd_owned.as_deref()))
                .await
                .map_err(|e| McpError::SandboxSetup(e.to_string()))?;
        if let Ok(mut note) = self.sandbox_note.lock() {
            *note = Some(decision.note());
        }
        if let Decision::Refused { reason } = decision {
            return Err(McpError::Refused(reason));
        }
        // The helper (sandboxed or only detached from the terminal) starts fine
        // whatever the command is: say what a plain spawn would, rather than an
        // `initialize` failure.
        let dir = cwd.map_or_else(
            || self.sandboxing.project.clone(),
            |c| self.sandboxing.project.join(c),
        );
        let path = env
            .get("PATH")
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os("PATH"));
        if !program_exists(command, &dir, path.as_deref()) {
            return Err(McpError::Spawn {
                command: command.to_string(),
                reason: format!(
                    "no such program{}",
                    if command.contains('/') {
                        ""
                    } else {
                        " in PATH"
                    }
                ),
            });
        }
        match decision {
            Decision::Refused { reason } => Err(McpError::Refused(reason)),
            Decision::Unsandboxed { .. } => Ok((
                self.sandboxing.sandbox.unconfined_command(command, args),
                None,
            )),
            Decision::Sandboxed { mut policy, .. } => {
                let tmp = tempfile::Builder::new()
                    .prefix("arbor-mcp-")
                    .tempdir()
                    .map_err(|e| McpError::SandboxTemp(e.to_string()))?;
                policy.writable.push(tmp.path().to_path_buf());
                let mut cmd = self
                    .sandboxing
                    .sandbox
                    .tokio_command(&policy, command, args)
                    .ok_or(McpError::NoHelper)?;
                cmd.env("TMPDIR", tmp.path());
                Ok((cmd, Some(tmp)))
            }
        }
    }

    /// Calls `tool` with `arguments`. A cancel, or no result within the server's
    /// `call_timeout` (then `CallEnd::Failed` saying so), drops the request, which
    /// tells the server (`notifications/cancelled`). Returns whether the server was
    /// restarted for this call.
    pub(super) async fn call(
        &self,
        tool: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> (CallEnd, bool) {
        let (conn, restarted) = tokio::select! {
            c = self.connection() => match c {
                Ok(c) => c,
                Err(reason) => {
                    return (CallEnd::Failed(format!(
                        "MCP server '{}' is not available: {reason}",
                        self.spec.name
                    )), false);
                }
            },
            () = cancel.cancelled() => return (CallEnd::Cancelled, false),
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        match arguments {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            other => {
                return (
                    CallEnd::Failed(format!("arguments must be a JSON object, got {other}")),
                    restarted,
                );
            }
        }
        let limit = self.spec.call_timeout;
        let end = tokio::select! {
            r = tokio::time::timeout(limit, conn.client.call_tool(params)) => match r {
                Err(_) => CallEnd::Failed(format!(
                    "MCP server '{}': no result from '{tool}' within {} (its call_timeout); \
                     the call was cancelled",
                    self.spec.name,
                    seconds(limit)
                )),
                Ok(r) => match r {
                Ok(result) => CallEnd::Done(result),
                Err(e) if conn.is_closed() => CallEnd::Failed(format!(
                    "MCP server '{}' exited during the call ({e}); it restarts on the next call",
                    self.spec.name
                )),
                Err(e) => CallEnd::Failed(format!("MCP server '{}': {e}", self.spec.name)),
                },
            },
            () = cancel.cancelled() => CallEnd::Cancelled,
        };
        (end, restarted)
    }

    /// Stops the server (closes the connection; a child process is killed).
    pub(super) async fn stop(&self) {
        let mut slot = self.slot.lock().await;
        if let Slot::Up(conn) = std::mem::replace(&mut *slot, Slot::Idle) {
            conn.client.cancellation_token().cancel();
        }
        self.set_state(ServerState::NotStarted);
    }
}

/// Whether `command` names a file: a path (with a `/`) relative to `dir`, or a name
/// found in one of `path`'s directories (as `exec` looks it up).
fn program_exists(command: &str, dir: &std::path::Path, path: Option<&std::ffi::OsStr>) -> bool {
    if command.contains('/') {
        return dir.join(command).is_file();
    }
    path.is_some_and(|p| std::env::split_paths(p).any(|d| d.join(command).is_file()))
}

/// Logs a stdio server's stderr and keeps its last lines.
fn drain_stderr(name: String, stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<String>>>) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!("mcp {name} stderr: {line}");
            if let Ok(mut tail) = tail.lock() {
                if tail.len() == STDERR_TAIL {
                    tail.remove(0);
                }
                tail.push(redact::scrub(&line).chars().take(200).collect());
            }
        }
    });
}

fn seconds(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}s")
    } else {
        format!("{secs:.1}s")
    }
}
