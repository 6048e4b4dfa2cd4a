//! Module `tool-bash`: the `bash` tool (SPEC §12).
//!
//! Owns: running one command as `sh -c` in the session's working directory, in a
//! session and process group of its own with no controlling terminal (issue 34:
//! through the sandbox helper, which calls `setsid`, sandboxed or not) and stdin
//! closed, without arbor's secret variables ([`Sandbox::strip_env`]); its timeout (default 120 s, at most
//! 600 s); killing the whole group (SIGKILL to `-pgid`) when the command times out, when
//! the turn is cancelled, when the call's future is dropped, and when the shell exits
//! (processes it left in the background would otherwise hold the output pipes open);
//! and capping what it printed ([`output::Capped`]: head and tail kept, the cut
//! stated). Does not own: approvals, or scrubbing secrets from the output (the engine
//! scrubs every tool's output).
//!
//! Result (Amplifier's keys): `{"stdout", "stderr", "returncode"}`, plus
//! `"truncated": true` when a stream was cut, `"error"` when the command did not
//! finish (timeout, cancel), and `"sandbox"` when its output shows the sandbox blocked
//! something (the network, a write outside the allowed paths, a hidden key file:
//! what, and how the person allows it; `sandbox::explain`); `returncode` is `-N` for a command ended by signal `N`
//! and `null` when it did not finish. The call is an error result unless the command
//! exited with 0.
//!
//! Sandbox (issue #22): when `sandbox.mode` is `auto` and the kernel can, the shell runs
//! through `arbor __sandbox` ([`crate::sandbox`]): writes only beneath the session's
//! `allowed_write_paths` (the `tool-filesystem` entry's, default the working
//! directory) and a private temp dir that is its `TMPDIR` (removed when the call
//! ends), key files hidden, no network unless `sandbox.network: allow`. The helper
//! `exec`s the shell, so the pid, process group, kill and timeout are the same. When
//! the sandbox cannot be used the command runs unconfined, or, with
//! `sandbox.required: true`, is refused with the reason (an error result, nothing
//! ran). [`Bash::sandbox_note`] tells the approval prompt which.
//!
//! Limits: a process that leaves the group (`setsid`) escapes the kill; once the
//! shell has exited, its output is read for at most [`DRAIN`] more. Without a helper
//! binary (a test harness's `Sandbox::default()`) the command keeps arbor's terminal.

pub mod output;

use std::path::Path;
use std::pin::pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::{Tool, ToolContext, ToolOutput, ToolSpec};
use crate::sandbox::{Decision, Sandbox};
use output::Capped;

/// The module name in a mount plan's `tools[]`.
pub const MODULE: &str = crate::config::modules::BASH.name;
/// The tool's name.
pub const TOOL_NAME: &str = "bash";
/// A call's timeout when neither the call nor the module config sets one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest timeout a call or the config may ask for; longer ones are lowered.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// After the shell exited (or was killed), how long its pipes are still read.
pub const DRAIN: Duration = Duration::from_secs(2);

/// The tools of this module for its entry `config` (`timeout`: the default timeout in
/// seconds, Amplifier's key), confined by `sandbox` to `writable` (entries as in
/// `allowed_write_paths`; empty: only the private temp dir).
pub fn tools(config: &Value, sandbox: &Sandbox, writable: Vec<String>) -> Vec<Arc<dyn Tool>> {
    let timeout = seconds(config.get("timeout")).unwrap_or(DEFAULT_TIMEOUT);
    vec![Arc::new(
        Bash::new(timeout).sandboxed(sandbox.clone(), writable),
    )]
}

/// `bash {command, timeout?}`: see the module doc.
#[derive(Debug, Clone)]
pub struct Bash {
    default_timeout: Duration,
    /// The sandbox settings (the default: off).
    sandbox: Sandbox,
    /// Where a sandboxed command may write (`allowed_write_paths` entries).
    writable: Arc<[String]>,
}

impl Default for Bash {
    fn default() -> Self {
        Self::new(DEFAULT_TIMEOUT)
    }
}

impl Bash {
    /// A bash tool whose calls time out after `default_timeout` unless they set their
    /// own (both capped at [`MAX_TIMEOUT`]).
    pub fn new(default_timeout: Duration) -> Self {
        Self {
            default_timeout: default_timeout.min(MAX_TIMEOUT),
            sandbox: Sandbox::default(),
            writable: Arc::from([".".to_string()]),
        }
    }

    /// The same tool with its commands confined by `sandbox` to `writable` (entries
    /// as in `allowed_write_paths`).
    pub fn sandboxed(mut self, sandbox: Sandbox, writable: Vec<String>) -> Self {
        self.sandbox = sandbox;
        self.writable = writable.into();
        self
    }

    /// Whether a command in `working_dir` runs sandboxed (see
    /// [`Sandbox::decide`]; may run the probe, blocking).
    pub fn decide(&self, working_dir: &Path) -> Decision {
        self.sandbox.decide(working_dir, &self.writable)
    }
}

impl Tool for Bash {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL_NAME.into(),
            description: format!(
                "Run a shell command (sh -c) in the working directory and get its stdout, \
                 stderr and exit code. Use it for builds, tests, git and other command-line \
                 tools. stdin is closed, so interactive commands fail; long output keeps its \
                 beginning and end. The command is killed, with every process it started, \
                 after `timeout` seconds (default {}, at most {}); processes left running in \
                 the background are killed when the command ends.",
                self.default_timeout.as_secs(),
                MAX_TIMEOUT.as_secs()
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command to run."},
                    "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT.as_secs(), "description": "Timeout in seconds."}
                },
                "required": ["command"]
            }),
        }
    }

    fn sandbox_note(&self, working_dir: &Path) -> Option<String> {
        Some(self.decide(working_dir).note())
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let default_timeout = self.default_timeout;
        let tool = self.clone();
        Box::pin(async move {
            let command = match input.get("command") {
                Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
                Some(Value::String(_)) | None | Some(Value::Null) => {
                    return ToolOutput::error("bash needs a non-empty 'command'");
                }
                Some(other) => {
                    return ToolOutput::error(format!("'command' must be a string, got {other}"));
                }
            };
            let timeout = match input.get("timeout") {
                None | Some(Value::Null) => default_timeout,
                Some(v) => match seconds(Some(v)) {
                    Some(t) => t,
                    None => {
                        return ToolOutput::error(format!(
                            "'timeout' must be a positive number of seconds, got {v}"
                        ));
                    }
                },
            };
            let (dir, deciding) = (ctx.working_dir.clone(), tool.clone());
            // The first decision runs the sandbox probe (a child process): off the
            // async workers.
            let decision = match tokio::task::spawn_blocking(move || deciding.decide(&dir)).await {
                Ok(d) => d,
                Err(e) => return ToolOutput::error(format!("cannot set up the sandbox: {e}")),
            };
            match decision {
                Decision::Refused { reason } => ToolOutput::error(reason),
                Decision::Unsandboxed { .. } => {
                    let mut cmd = tool.sandbox.unconfined_command("sh", ["-c", &command]);
                    tool.sandbox.strip_env(&mut cmd);
                    run_command(cmd, &ctx.working_dir, timeout, &ctx.cancel).await
                }
                Decision::Sandboxed { policy, .. } => {
                    run_sandboxed(&tool.sandbox, policy, &command, &ctx, timeout).await
                }
            }
        })
    }
}

/// Runs `command` as `sh -c` through the sandbox helper under `policy`, with a
/// private temp dir (writable, `TMPDIR`) removed afterwards.
async fn run_sandboxed(
    sandbox: &Sandbox,
    mut policy: crate::sandbox::Policy,
    command: &str,
    ctx: &ToolContext,
    timeout: Duration,
) -> ToolOutput {
    let tmp = match tempfile::Builder::new().prefix("arbor-sandbox-").tempdir() {
        Ok(t) => t,
        Err(e) => {
            return ToolOutput::error(format!(
                "cannot create the sandbox's temp dir: {e}; the command did not run"
            ));
        }
    };
    if ctx.network_once {
        // Allowed once by the person (`engine::escalate`).
        policy.network = true;
    }
    policy.writable.push(tmp.path().to_path_buf());
    let Some(mut cmd) = sandbox.tokio_command(&policy, "sh", ["-c", command]) else {
        return ToolOutput::error("the sandbox helper is missing; the command did not run");
    };
    cmd.env("TMPDIR", tmp.path());
    sandbox.strip_env(&mut cmd);
    let out = run_command(cmd, &ctx.working_dir, timeout, &ctx.cancel).await;
    let out = with_sandbox_note(out, &policy, &ctx.working_dir);
    // Removing the temp dir reads and deletes what the command left: off the workers.
    let _ = tokio::task::spawn_blocking(move || drop(tmp)).await;
    out
}

/// The key of a `bash` result whose command the sandbox cut off from the network
/// (`true`): the engine may ask the person to run it once more with network.
pub const NETWORK_BLOCKED: &str = "network_blocked";

/// `out` with a `"sandbox"` key when its stdout or stderr shows the sandbox blocked
/// something ([`crate::sandbox::explain`]: what, and how the person allows it).
fn with_sandbox_note(out: ToolOutput, policy: &crate::sandbox::Policy, dir: &Path) -> ToolOutput {
    let Ok(Value::Object(mut body)) = serde_json::from_str::<Value>(&out.content) else {
        return out;
    };
    let printed = ["stdout", "stderr"]
        .iter()
        .filter_map(|k| body.get(*k).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let Some(note) = crate::sandbox::explain(policy, dir, &printed) else {
        return out;
    };
    body.insert("sandbox".into(), Value::String(note));
    if crate::sandbox::network_blocked(policy, &printed) {
        body.insert(NETWORK_BLOCKED.into(), Value::Bool(true));
    }
    ToolOutput {
        content: Value::Object(body).to_string(),
        ..out
    }
}

/// A positive number of seconds (a number or a numeric string), capped at
/// [`MAX_TIMEOUT`]; `None` when absent or not positive.
fn seconds(value: Option<&Value>) -> Option<Duration> {
    let v = value?;
    let secs = v
        .as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))?;
    if !secs.is_finite() || secs <= 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(secs.min(MAX_TIMEOUT.as_secs_f64())))
}

/// How the wait for the shell ended.
enum End {
    Exited(ExitStatus),
    WaitFailed(std::io::Error),
    TimedOut,
    Cancelled,
}

/// Runs `command` as `sh -c` in `dir` (see the module doc), unconfined and without a
/// helper: in a process group of its own that keeps arbor's terminal, without the
/// secret variables of [`crate::sandbox::is_secret_var`]; builds the result.
pub async fn run(
    command: &str,
    dir: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> ToolOutput {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command);
    crate::sandbox::strip_secrets(&mut cmd, &[]);
    #[cfg(unix)]
    cmd.process_group(0);
    run_command(cmd, dir, timeout, cancel).await
}

/// Runs `cmd` (`sh -c …`, through the sandbox helper, or plain in a process group of
/// its own: the group id is the child's pid either way) in `dir` as the module doc
/// says.
async fn run_command(
    mut cmd: tokio::process::Command,
    dir: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> ToolOutput {
    if cancel.is_cancelled() {
        return ToolOutput::error("cancelled: the turn was cancelled before the command started");
    }
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return ToolOutput::error(format!("cannot start `sh -c` in {}: {e}", dir.display()));
        }
    };
    // Declared after `child`, so it drops (killing the group) before the child does.
    let mut group = Group(child.id());
    let (mut stdout, mut stderr) = (Capped::default(), Capped::default());
    let out_pipe = child.stdout.take();
    let err_pipe = child.stderr.take();
    // Boxed so it can be dropped (ending its borrows of the buffers) before they are read.
    let mut reading = Box::pin(async {
        tokio::join!(pump(out_pipe, &mut stdout), pump(err_pipe, &mut stderr));
    });
    let mut read_done = false;
    let deadline = tokio::time::sleep(timeout);
    let mut deadline = pin!(deadline);
    let end = loop {
        tokio::select! {
            () = &mut reading, if !read_done => read_done = true,
            status = child.wait() => break match status {
                Ok(status) => End::Exited(status),
                Err(e) => End::WaitFailed(e),
            },
            () = &mut deadline => break End::TimedOut,
            () = cancel.cancelled() => break End::Cancelled,
        }
    };
    group.kill();
    if !matches!(end, End::Exited(_)) {
        // The helper may not have called `setsid` yet (then there was no group to
        // kill): kill it by its pid too, before it starts anything.
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    if !read_done {
        let _ = tokio::time::timeout(DRAIN, &mut reading).await;
    }
    drop(reading);
    result(end, timeout, stdout, stderr)
}

fn result(end: End, timeout: Duration, stdout: Capped, stderr: Capped) -> ToolOutput {
    let truncated = stdout.was_cut() || stderr.was_cut();
    let mut body = json!({
        "stdout": stdout.into_text(),
        "stderr": stderr.into_text(),
    });
    let (returncode, error) = match end {
        End::Exited(status) => (Some(exit_code(status)), None),
        End::WaitFailed(e) => (None, Some(format!("cannot wait for the command: {e}"))),
        End::TimedOut => (
            None,
            Some(format!(
                "Command timed out after {} seconds; it was killed with every process it started",
                timeout.as_secs_f64()
            )),
        ),
        End::Cancelled => (
            None,
            Some(
                "cancelled: the turn was cancelled; the command was killed with every process \
                 it started"
                    .to_string(),
            ),
        ),
    };
    if let Value::Object(map) = &mut body {
        map.insert("returncode".into(), json!(returncode));
        if truncated {
            map.insert("truncated".into(), json!(true));
        }
        if let Some(e) = &error {
            map.insert("error".into(), json!(e));
        }
    }
    let content = body.to_string();
    if returncode == Some(0) {
        ToolOutput::ok(content)
    } else {
        ToolOutput::error(content)
    }
}

/// The exit code, or `-N` for a command ended by signal `N` (Python's convention, as
/// Amplifier reports it).
fn exit_code(status: ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return -signal;
        }
    }
    status.code().unwrap_or(-1)
}

/// Reads `pipe` to its end into `buf`.
async fn pump(pipe: Option<impl AsyncRead + Unpin>, buf: &mut Capped) {
    let Some(mut pipe) = pipe else { return };
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.push(&chunk[..n]),
        }
    }
}

/// The command's process group (its id is the shell's pid): killed by
/// [`Group::kill`] or on drop, at most once.
struct Group(Option<u32>);

impl Group {
    fn kill(&mut self) {
        let Some(pgid) = self.0.take() else { return };
        #[cfg(unix)]
        {
            use nix::sys::signal::{Signal, killpg};
            use nix::unistd::Pid;
            if let Ok(raw) = i32::try_from(pgid) {
                // ESRCH: every member is gone already.
                let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
            }
        }
        #[cfg(not(unix))]
        let _ = pgid;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests;
