//! Running the hooks one event matches, one after another, and reading what they
//! decided (see the module docs of `hooks`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::config::{HookCommand, HookEvent, HookSource, Hooks};
use super::listing::ListedHook;
use crate::config::ArborConfig;
use crate::paths::Paths;
use crate::sandbox::{Decision, Sandbox};
use crate::session::protocol::{HookOutcome, HookRanEvent};

/// Bytes of a hook's stdout kept at most: the last ones (a decision comes at the
/// end), read whole up to this size; what came before is dropped (issue 34: a
/// decision after 64 KiB of output was ignored).
const STDOUT_MAX: usize = 1024 * 1024;

/// Bytes of a hook's stderr (a block's reason) kept at most: the last ones.
const STDERR_MAX: usize = 64 * 1024;

/// What the hooks of one event decided.
#[derive(Debug, Clone, Default)]
pub struct HookVerdict {
    /// Set when a hook blocked the action: the reason for the model.
    pub blocked: Option<String>,
    /// `additionalContext` (and, for `UserPromptSubmit` / `SessionStart`, plain
    /// stdout) of the hooks, for the model.
    pub context: Vec<String>,
    /// One record per hook that ran (or was refused), in run order, for `hook:ran`.
    pub runs: Vec<HookRanEvent>,
}

/// The configured hooks of a process and how to run them.
#[derive(Debug, Clone, Default)]
pub struct HookRunner {
    hooks: Hooks,
    sandbox: Sandbox,
    /// Every hook, active or skipped ([`HookRunner::listing`]).
    listing: Vec<ListedHook>,
    /// Sections that cannot be used.
    problems: Vec<String>,
}

impl HookRunner {
    /// A runner over `hooks`; project hooks run in `sandbox`.
    pub fn new(hooks: Hooks, sandbox: Sandbox) -> Self {
        Self {
            hooks,
            sandbox,
            listing: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The hooks of this process ([`super::listing::load`]): `config`'s `hooks:` (the
    /// user's own, unconfined), then those of `project` (the working directory's,
    /// with its trust state, as the caller looked it up; `None`: there is none) from
    /// its `.amplifier/settings.yaml` / `.claude/settings.json` when it is trusted
    /// (sandboxed). The strings are problems: a bad section (it adds no hooks), or an
    /// untrusted project whose hooks were skipped.
    pub fn for_process(
        config: &ArborConfig,
        sandbox: Sandbox,
        project: Option<&crate::config::trust::Project>,
    ) -> (Self, Vec<String>) {
        let loaded = super::listing::load(config, project);
        let mut problems = loaded.problems.clone();
        if let Some(skipped) = loaded.listing.iter().find_map(|h| h.skipped.as_ref()) {
            problems.push(format!("the project's hooks do not run: {skipped}"));
        }
        let runner = Self {
            hooks: loaded.active,
            sandbox,
            listing: loaded.listing,
            problems: loaded.problems,
        };
        (runner, problems)
    }

    /// Every hook of this process, active or skipped with why (`arbor doctor`, the
    /// TUI's `/hooks`).
    pub fn listing(&self) -> &[ListedHook] {
        &self.listing
    }

    /// The hook sections that cannot be used, one line each.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Whether any hook is configured for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        !self.hooks.matching(event, None).is_empty()
    }

    /// Runs the hooks of `event` matching `tool` in config order with `input` (the
    /// event's JSON object; `hook_event_name` is added) on stdin, in `cwd`; stops at the
    /// first that blocks. Never fails: a hook that cannot run is a `failed` record.
    /// The work is boxed, so a caller's future (a turn's) stays small.
    pub async fn run(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        input: Map<String, Value>,
        cwd: &Path,
    ) -> HookVerdict {
        let hooks = self.hooks.matching(event, tool);
        if hooks.is_empty() {
            return HookVerdict::default();
        }
        Box::pin(self.run_all(event, tool, hooks, input, cwd)).await
    }

    async fn run_all(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        hooks: Vec<HookCommand>,
        mut input: Map<String, Value>,
        cwd: &Path,
    ) -> HookVerdict {
        let mut verdict = HookVerdict::default();
        input.insert("hook_event_name".into(), event.as_str().into());
        input
            .entry("cwd")
            .or_insert_with(|| cwd.to_string_lossy().into_owned().into());
        let stdin = Value::Object(input.clone()).to_string();
        let tool_call_id = input
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(crate::session::ids::ToolCallId::from);
        for hook in hooks {
            let started = Instant::now();
            let ended = self.run_one(&hook, &stdin, cwd).await;
            let mut record = HookRanEvent {
                hook_event_name: event.as_str().into(),
                command: hook.command.clone(),
                source: hook.source.label().into(),
                tool_name: tool.map(str::to_string),
                tool_call_id: tool_call_id.clone(),
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                ..HookRanEvent::default()
            };
            decide(event, ended, &mut record, &mut verdict);
            let blocked = record.outcome == HookOutcome::Blocked;
            verdict.runs.push(record);
            if blocked {
                break;
            }
        }
        verdict
    }

    async fn run_one(&self, hook: &HookCommand, stdin: &str, cwd: &Path) -> Ended {
        let mut tmp = None;
        let mut cmd = match &hook.source {
            // The user's own hooks: unconfined, with the user's environment, but (like
            // every hook) in a session of their own with no controlling terminal.
            HookSource::User => self
                .sandbox
                .unconfined_command("sh", ["-c", hook.command.as_str()]),
            HookSource::Project(_) => {
                let (sandbox, dir) = (self.sandbox.clone(), cwd.to_path_buf());
                let decision =
                    tokio::task::spawn_blocking(move || sandbox.decide(&dir, &[".".to_string()]))
                        .await
                        .unwrap_or_else(|e| Decision::Refused {
                            reason: format!("cannot set up the sandbox: {e}"),
                        });
                let mut cmd = match decision {
                    Decision::Refused { reason } => return Ended::Refused(reason),
                    Decision::Unsandboxed { .. } => self
                        .sandbox
                        .unconfined_command("sh", ["-c", hook.command.as_str()]),
                    Decision::Sandboxed { mut policy, .. } => {
                        let dir = match tempfile::Builder::new().prefix("arbor-hook-").tempdir() {
                            Ok(d) => d,
                            Err(e) => {
                                return Ended::Failed(format!("cannot create a temp dir: {e}"));
                            }
                        };
                        policy.writable.push(dir.path().to_path_buf());
                        let Some(mut cmd) = self.sandbox.tokio_command(
                            &policy,
                            "sh",
                            ["-c", hook.command.as_str()],
                        ) else {
                            return Ended::Refused("the sandbox helper is missing".into());
                        };
                        cmd.env("TMPDIR", dir.path());
                        tmp = Some(dir);
                        cmd
                    }
                };
                self.sandbox.strip_env(&mut cmd);
                cmd
            }
        };
        cmd.current_dir(cwd)
            .env("CLAUDE_PROJECT_DIR", cwd)
            .env("ARBOR_PROJECT_DIR", cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let ended = spawn_and_wait(cmd, stdin, hook.timeout).await;
        drop(tmp);
        ended
    }
}

/// How one hook process ended.
enum Ended {
    Exited {
        code: Option<i32>,
        stdout: Output,
        stderr: Output,
    },
    TimedOut(Duration),
    Failed(String),
    Refused(String),
}

async fn spawn_and_wait(mut cmd: tokio::process::Command, stdin: &str, timeout: Duration) -> Ended {
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Ended::Failed(format!("cannot start `sh -c`: {e}")),
    };
    let pid = child.id();
    let input = stdin.as_bytes().to_vec();
    let mut pipe_in = child.stdin.take();
    let mut pipe_out = child.stdout.take();
    let mut pipe_err = child.stderr.take();
    let work = async {
        let write = async {
            if let Some(p) = pipe_in.as_mut() {
                // A hook that does not read stdin closes it early: not an error.
                let _ = p.write_all(&input).await;
            }
            drop(pipe_in.take());
        };
        let (_, out, err, status) = tokio::join!(
            write,
            read_tail(pipe_out.as_mut(), STDOUT_MAX),
            read_tail(pipe_err.as_mut(), STDERR_MAX),
            child.wait()
        );
        (out, err, status)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((stdout, stderr, Ok(status))) => Ended::Exited {
            code: status.code(),
            stdout,
            stderr,
        },
        Ok((_, _, Err(e))) => Ended::Failed(format!("cannot wait for the hook: {e}")),
        Err(_) => {
            kill_group(pid);
            Ended::TimedOut(timeout)
        }
    }
}

/// Kills the process group `pid` leads (the hook and everything it started).
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// What a hook printed on one stream: its last bytes (lossy UTF-8) and whether
/// earlier ones were dropped.
#[derive(Debug, Default)]
struct Output {
    text: String,
    cut: bool,
}

/// Reads `pipe` to its end (so the hook never blocks on a full pipe), keeping the
/// last `max` bytes.
async fn read_tail<R: tokio::io::AsyncRead + Unpin>(pipe: Option<&mut R>, max: usize) -> Output {
    let Some(pipe) = pipe else {
        return Output::default();
    };
    let mut buf = Vec::new();
    let mut cut = false;
    let mut chunk = [0u8; 8192];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                // Trimmed in steps of `max`, so the copying stays linear.
                if buf.len() > 2 * max {
                    buf.drain(..buf.len() - max);
                    cut = true;
                }
            }
        }
    }
    if buf.len() > max {
        buf.drain(..buf.len() - max);
        cut = true;
    }
    Output {
        text: String::from_utf8_lossy(&buf).into_owned(),
        cut,
    }
}

/// Fills `record` from how the hook ended and adds its decision to `verdict`.
fn decide(event: HookEvent, ended: Ended, record: &mut HookRanEvent, verdict: &mut HookVerdict) {
    match ended {
        Ended::Refused(reason) => {
            record.outcome = HookOutcome::Refused;
            record.reason = Some(reason);
        }
        Ended::Failed(reason) => {
            record.outcome = HookOutcome::Failed;
            record.reason = Some(reason);
        }
        Ended::TimedOut(after) => {
            record.outcome = HookOutcome::TimedOut;
            record.reason = Some(format!(
                "killed after its timeout of {} s",
                after.as_secs_f64()
            ));
        }
        Ended::Exited {
            code,
            stdout,
            stderr,
        } => {
            record.exit_code = code;
            match code {
                Some(0) => passed(event, &stdout, record),
                Some(2) => {
                    record.outcome = HookOutcome::Blocked;
                    let reason = stderr.text.trim();
                    record.reason = Some(if reason.is_empty() {
                        format!(
                            "blocked by the {} hook `{}`",
                            event.as_str(),
                            record.command
                        )
                    } else {
                        reason.to_string()
                    });
                }
                _ => {
                    record.outcome = HookOutcome::Failed;
                    let reason = stderr.text.trim();
                    record.reason = (!reason.is_empty()).then(|| reason.to_string());
                }
            }
        }
    }
    if record.outcome == HookOutcome::Blocked {
        verdict.blocked = record.reason.clone();
    }
    if let Some(context) = &record.additional_context {
        verdict.context.push(context.clone());
    }
}

/// Exit 0: reads JSON stdout (`decision`, `reason`, `continue`, `stopReason`,
/// `hookSpecificOutput.{permissionDecision, permissionDecisionReason,
/// additionalContext}`, `additionalContext`); plain stdout of `UserPromptSubmit` and
/// `SessionStart` is context (Claude Code's rule). Stdout over [`STDOUT_MAX`] is read
/// from its kept end: the whole of it when that is a JSON object, else its last line
/// that is one; when neither is, the hook is `failed` (its decision could not be
/// read), not `passed`.
fn passed(event: HookEvent, stdout: &Output, record: &mut HookRanEvent) {
    record.outcome = HookOutcome::Passed;
    let text = stdout.text.trim();
    let parse = |t: &str| {
        t.starts_with('{')
            .then(|| serde_json::from_str::<Value>(t).ok())
            .flatten()
            .filter(Value::is_object)
    };
    let mut json = parse(text);
    if json.is_none() && stdout.cut {
        json = text.lines().next_back().and_then(|l| parse(l.trim()));
        if json.is_none() {
            record.outcome = HookOutcome::Failed;
            record.reason = Some(format!(
                "its stdout is over {} KiB and does not end in a JSON decision",
                STDOUT_MAX / 1024
            ));
            return;
        }
    }
    let Some(json) = json else {
        if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            && !text.is_empty()
        {
            record.additional_context = Some(text.to_string());
        }
        return;
    };
    let specific = json.get("hookSpecificOutput");
    let str_of = |v: Option<&Value>, key: &str| {
        v.and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let reason = str_of(Some(&json), "reason");
    if json.get("decision").and_then(Value::as_str) == Some("block") {
        record.outcome = HookOutcome::Blocked;
        record.reason = Some(reason.unwrap_or_else(|| "blocked by a hook".into()));
    } else if str_of(specific, "permissionDecision").as_deref() == Some("deny") {
        record.outcome = HookOutcome::Blocked;
        record.reason = Some(
            str_of(specific, "permissionDecisionReason")
                .or(reason)
                .unwrap_or_else(|| "denied by a hook".into()),
        );
    } else if json.get("continue").and_then(Value::as_bool) == Some(false) {
        record.outcome = HookOutcome::Blocked;
        record.reason = Some(
            str_of(Some(&json), "stopReason")
                .or(reason)
                .unwrap_or_else(|| "stopped by a hook".into()),
        );
    }
    record.additional_context =
        str_of(specific, "additionalContext").or_else(|| str_of(Some(&json), "additionalContext"));
}

/// The `transcript_path` of session `id` in this project's store.
pub fn transcript_path(paths: &Paths, id: &str) -> PathBuf {
    paths.sessions_dir().join(id).join("transcript.jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn runner(yaml: Value) -> HookRunner {
        HookRunner::new(
            Hooks::parse(&yaml, &HookSource::User, "test").unwrap(),
            Sandbox::default(),
        )
    }

    fn input() -> Map<String, Value> {
        json!({"session_id": "s", "tool_name": "bash", "tool_input": {"command": "ls"}, "tool_use_id": "c1"})
            .as_object()
            .cloned()
            .unwrap()
    }

    #[tokio::test]
    async fn exit_2_blocks_with_stderr_and_stdin_carries_the_event() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(json!({"PreToolUse": [
            {"matcher": "bash", "hooks": [{"command": "cat > seen.json; echo 'no ls here' >&2; exit 2"}]},
            {"hooks": [{"command": "touch second-ran"}]}
        ]}));
        let v = r
            .run(HookEvent::PreToolUse, Some("bash"), input(), dir.path())
            .await;
        assert_eq!(v.blocked.as_deref(), Some("no ls here"));
        assert_eq!(v.runs.len(), 1, "the first block stops the rest");
        assert!(!dir.path().join("second-ran").exists());
        let seen: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("seen.json")).unwrap())
                .unwrap();
        assert_eq!(seen["hook_event_name"], "PreToolUse");
        assert_eq!(seen["tool_input"]["command"], "ls");
        assert_eq!(seen["cwd"], dir.path().to_string_lossy().as_ref());
        assert_eq!(
            v.runs[0]
                .tool_call_id
                .as_ref()
                .map(|c| c.to_string())
                .as_deref(),
            Some("c1")
        );
    }

    #[tokio::test]
    async fn json_output_exit_codes_and_timeouts() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(json!({
            "PostToolUse": [{"hooks": [
                {"command": "echo '{\"hookSpecificOutput\": {\"additionalContext\": \"lint ok\"}}'"},
                {"command": "echo oops >&2; exit 3"},
                {"command": "sleep 5", "timeout": 0.2}
            ]}],
            "PreToolUse": [{"hooks": [{"command": "echo '{\"decision\": \"block\", \"reason\": \"json says no\"}'"}]}]
        }));
        let v = r
            .run(HookEvent::PostToolUse, Some("bash"), input(), dir.path())
            .await;
        assert_eq!(v.blocked, None);
        assert_eq!(v.context, ["lint ok"]);
        let outcomes: Vec<_> = v.runs.iter().map(|r| r.outcome).collect();
        assert_eq!(
            outcomes,
            [
                HookOutcome::Passed,
                HookOutcome::Failed,
                HookOutcome::TimedOut
            ]
        );
        assert_eq!(v.runs[1].exit_code, Some(3));
        assert_eq!(v.runs[1].reason.as_deref(), Some("oops"));
        assert!(v.runs[2].duration_ms < 4000);
        let v = r
            .run(HookEvent::PreToolUse, Some("x"), input(), dir.path())
            .await;
        assert_eq!(v.blocked.as_deref(), Some("json says no"));
    }
}
