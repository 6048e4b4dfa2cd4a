//! One external ACP agent process: started from an agent file's `acp:` with piped
//! stdio, killed when dropped, its stderr kept as a tail for error messages.
//!
//! Owns: spawning ([`AgentProcess::start`]: the command, its args, the node's
//! environment plus `acp.env`, the working directory, a process group of its own),
//! ending it with everything it started (the whole group is killed when the value is
//! dropped or [`AgentProcess::kill`]ed: launchers such as codex-acp's `npx` shim run
//! the agent as a grandchild, and codex-acp does not exit when its stdin closes),
//! the stderr tail (the last
//! [`STDERR_TAIL`] bytes, each line also logged), and the text a failure of the agent
//! shows ([`AgentProcess::failure`]: exit status and stderr tail). Does not own: the
//! JSON-RPC messages (`rpc`), the ACP handshake (`handshake`).

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc::UnboundedReceiver;

use super::AcpClientError;
use super::rpc::{Connection, Incoming};
use crate::config::acp_agent::AcpAgentSpec;

/// Bytes of the agent's stderr kept for error messages.
pub const STDERR_TAIL: usize = 2048;

/// A running ACP agent and the client end of its stdio.
pub struct AgentProcess {
    /// `acp.command` as written (for messages).
    pub command: String,
    /// The client end of its stdio.
    pub conn: Connection,
    /// The agent's requests and notifications, in order; ends when it exits.
    pub incoming: UnboundedReceiver<Incoming>,
    child: Child,
    /// The agent's process group (its pid at start), killed when the node ends.
    group: Option<i32>,
    stderr: Arc<Mutex<String>>,
}

impl AgentProcess {
    /// Starts `spec`'s command in `cwd` with `env` (the whole environment it gets:
    /// the node's, `acp.env` added over it) and stdin, stdout and stderr piped; the
    /// process is killed when this value is dropped.
    ///
    /// Errors: [`AcpClientError::Start`] when the program cannot be started (not
    /// found, not executable), naming it.
    pub fn start(
        spec: &AcpAgentSpec,
        cwd: &Path,
        env: &HashMap<String, String>,
    ) -> Result<Self, AcpClientError> {
        let mut command = Command::new(&spec.command);
        command
            .args(&spec.args)
            .current_dir(cwd)
            .env_clear()
            .envs(env)
            .envs(&spec.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own group, so ending the node ends the processes it started too, and a
        // Ctrl-C at the terminal reaches arbor (which cancels it), not the agent.
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|source| AcpClientError::Start {
            command: spec.command.clone(),
            reason: source.to_string(),
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(AcpClientError::Start {
                command: spec.command.clone(),
                reason: "its stdio could not be piped".into(),
            });
        };
        let tail = Arc::new(Mutex::new(String::new()));
        let kept = tail.clone();
        let name = spec.command.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(agent = %name, "stderr: {line}");
                let mut tail = kept.lock().unwrap_or_else(|p| p.into_inner());
                tail.push_str(&line);
                tail.push('\n');
                if tail.len() > STDERR_TAIL {
                    let mut cut = tail.len() - STDERR_TAIL;
                    while !tail.is_char_boundary(cut) {
                        cut += 1;
                    }
                    tail.drain(..cut);
                }
            }
        });
        let (conn, incoming) = Connection::start(stdout, stdin);
        let group = child.id().and_then(|p| i32::try_from(p).ok());
        Ok(Self {
            command: spec.command.clone(),
            conn,
            incoming,
            child,
            group,
            stderr: tail,
        })
    }

    /// The last lines the agent wrote to stderr (at most [`STDERR_TAIL`] bytes).
    pub fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .trim()
            .to_string()
    }

    /// What to tell people when the agent failed with `error`: the error, how the
    /// process ended (waiting up to a second for it), and its stderr tail —
    /// "ACP agent `codex-acp` exited (exit status: 1): <stderr>".
    pub async fn failure(&mut self, error: &AcpClientError) -> String {
        let status = tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await;
        // The stderr reader may still be reading the last lines.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let stderr = self.stderr_tail();
        let ended = match status {
            Ok(Ok(status)) => format!("exited ({status})"),
            _ => match error {
                AcpClientError::Closed => "closed its output".to_string(),
                other => format!("failed: {other}"),
            },
        };
        let mut text = format!("ACP agent `{}` {ended}", self.command);
        if let (AcpClientError::Rpc(_) | AcpClientError::Protocol { .. }, Ok(Ok(_))) =
            (error, &status)
        {
            text.push_str(&format!(" after: {error}"));
        }
        if !stderr.is_empty() {
            text.push_str(": ");
            text.push_str(&stderr);
        }
        text
    }

    /// Ends the process and everything it started now (the node ended).
    pub async fn kill(&mut self) {
        self.kill_group();
        let _ = self.child.kill().await;
    }

    /// SIGKILL to the agent's process group (its id is the agent's pid).
    fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(group) = self.group {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(group),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// A hosted agent between the turns of its node: its process and the ACP session
/// `session/new` opened, kept so the next turn prompts the same session.
pub struct Hosted {
    /// The running agent.
    pub process: AgentProcess,
    /// Its ACP `sessionId`.
    pub session_id: String,
    /// The agent's cumulative cost last reported (`usage_update.cost.amount`, USD).
    pub seen_cost: Option<f64>,
}

/// The hosted agents of one runtime, one per node (by arbor session id). A process
/// is killed when its entry is dropped: with the runtime, or when its node fails.
#[derive(Default)]
pub struct HostedAgents {
    running: Mutex<HashMap<String, Hosted>>,
}

impl HostedAgents {
    /// Takes node `id`'s agent for a turn (`None`: none runs yet).
    pub fn take(&self, id: &str) -> Option<Hosted> {
        self.lock().remove(id)
    }

    /// Keeps node `id`'s agent for its next turn.
    pub fn keep(&self, id: &str, hosted: Hosted) {
        self.lock().insert(id.to_string(), hosted);
    }

    /// How many agents are kept running.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Hosted>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}
