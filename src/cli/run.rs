//! `arbor run PROMPT` and the headless output shared with `arbor session resume` and
//! `arbor session continue`.
//!
//! Output formats (documented in the README):
//! - `text`: the answer's text streamed as it arrives, each assistant message after a
//!   blank line (`print`); errors and warnings (a response that skipped malformed
//!   stream events) on stderr.
//! - `json`: one object `{status, response, session_id, agent, error?}`.
//! - `text` and `json` also note on stderr when a resume moved the session to the
//!   current endpoint (`arbor: endpoint changed: openai http://a/v1 → http://b/v1`).
//! - `jsonl`: every bus event as one JSON object a line (`session::protocol`'s wire
//!   form `{event, session_id, parent_id, timestamp, data}`), then the same final object;
//!   for `run` the first line is the new root's `session:start`.
//! - every format: a call denied for want of `--yes` or by the approval policy is named
//!   on stderr with what would allow it (`print`); the exit code still says how the
//!   turn ended.
//!
//! The prompt `-` is read from stdin; text piped to stdin is added after the prompt
//! (`stdin`).
//!
//! Every format prints with the process's registered secrets (provider keys from the
//! config and the environment, MCP secrets) replaced by `[REDACTED]` — the prompt
//! echoed in events, tool arguments and results, the answer (streamed pieces
//! included: `print`) — as the session's files are (issue 22).
//!
//! `status` is `success` | `error` | `cancelled`; the exit code is 0 only on success.
//! SIGINT (Ctrl+C), SIGTERM, SIGHUP and SIGQUIT all cancel the turn the same way (its
//! `bash` commands' process groups are killed, the final object says `cancelled`).
//! A stdout that can no longer be written (its reader closed the pipe) cancels the
//! turn and ends the command through `out` (quietly for a closed pipe).

use std::sync::Arc;

use clap::Args;
use color_eyre::Result;
use serde_json::{Value, json};

use super::OutputFormat;
use super::context::{Context, ContextOptions};
use super::out;
use crate::engine::{EngineError, RootOptions, Runtime, TurnOutcome};
use crate::outln;
use crate::session::redact::{scrub, scrub_secrets};
use crate::session::{Event, SessionStatus};

mod print;
mod stdin;

use print::Printer;

/// `arbor run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The instruction for the agent; `-` reads it from stdin. Text piped to stdin is
    /// added after the instruction (`git diff | arbor run "review this"`).
    pub prompt: String,
    /// text (default), json or jsonl.
    #[arg(long, value_enum, default_value_t)]
    pub output_format: OutputFormat,
    /// Allow the tool calls that would ask for approval (writes, bash). Without it
    /// they are denied and the model is told how to allow them; calls the approval
    /// policy denies stay denied either way.
    #[arg(long)]
    pub yes: bool,
}

/// Creates a root session (with `--agent` and `--model` if given: routed as
/// `Runtime::create_root_with` says), runs one turn, prints the result.
pub async fn run(args: RunArgs, mut root: RootOptions, options: ContextOptions) -> Result<i32> {
    let agent = root.agent.clone();
    let mut prompt = match stdin::prompt_with_stdin(args.prompt) {
        Ok(prompt) => prompt,
        Err(e) => {
            let e = EngineError::Other(e);
            return report_error(args.output_format, None, agent.as_deref(), &e);
        }
    };
    let mut ctx = Context::load(&options)?;
    // `/name args` of a command file (issue 29): its prompt, and its `agent` / `model`
    // unless the flags chose.
    if let Some((command, expanded)) = crate::agent::commands::expand_message(&ctx.paths, &prompt) {
        root.agent = root.agent.or(command.agent);
        root.model = root.model.or(command.model);
        prompt = expanded;
    }
    if let Some(notice) = ctx.use_local_servers() {
        out::error(notice);
    }
    let (runtime, _registry_tx) = ctx.runtime(args.yes);
    // Subscribed before the root exists, so `session:start` is the first event.
    let events = runtime.bus().subscribe();
    let session_id = match runtime.create_root_with(root).await {
        Ok(id) => id,
        Err(e) => return report_error(args.output_format, None, agent.as_deref(), &e),
    };
    drive_turn_with(&runtime, &session_id, prompt, args.output_format, events).await
}

/// Runs one turn of `session_id` (a new root or a resume), printing in `format`.
/// Ctrl+C (or SIGTERM, SIGHUP, SIGQUIT), or a stdout that can no longer be written,
/// cancels the turn (the session stays resumable); the latter ends with that write
/// error.
pub async fn drive_turn(
    runtime: &Arc<Runtime>,
    session_id: &str,
    prompt: String,
    format: OutputFormat,
) -> Result<i32> {
    let events = runtime.bus().subscribe();
    drive_turn_with(runtime, session_id, prompt, format, events).await
}

/// [`drive_turn`] printing `events`, a subscription taken earlier (`run` takes it
/// before creating the root, so `session:start` is printed too).
pub async fn drive_turn_with(
    runtime: &Arc<Runtime>,
    session_id: &str,
    prompt: String,
    format: OutputFormat,
    events: tokio::sync::mpsc::UnboundedReceiver<Arc<Event>>,
) -> Result<i32> {
    let turn = {
        let runtime = runtime.clone();
        let id = session_id.to_string();
        async move { runtime.run_turn(&id, prompt).await }
    };
    drive_work_with(runtime, session_id, format, events, turn).await
}

/// Runs `work` (turns of `session_id`'s tree, e.g. `arbor session continue`), printing
/// `session_id`'s events and `work`'s outcome in `format` as [`drive_turn`] does
/// (Ctrl+C cancels `session_id` and its running sub-sessions). Returns the exit code:
/// 0 only when the outcome is a success.
pub async fn drive_work<F>(
    runtime: &Arc<Runtime>,
    session_id: &str,
    format: OutputFormat,
    work: F,
) -> Result<i32>
where
    F: std::future::Future<Output = Result<TurnOutcome, EngineError>> + Send + 'static,
{
    let events = runtime.bus().subscribe();
    drive_work_with(runtime, session_id, format, events, work).await
}

/// [`drive_work`] printing `events`, a subscription taken earlier.
async fn drive_work_with<F>(
    runtime: &Arc<Runtime>,
    session_id: &str,
    format: OutputFormat,
    events: tokio::sync::mpsc::UnboundedReceiver<Arc<Event>>,
    work: F,
) -> Result<i32>
where
    F: std::future::Future<Output = Result<TurnOutcome, EngineError>> + Send + 'static,
{
    let code = drive(runtime, session_id, format, events, work).await;
    // The MCP servers this turn started end with the process.
    runtime.mcp().shutdown().await;
    code
}

async fn drive<F>(
    runtime: &Arc<Runtime>,
    session_id: &str,
    format: OutputFormat,
    mut events: tokio::sync::mpsc::UnboundedReceiver<Arc<Event>>,
    work: F,
) -> Result<i32>
where
    F: std::future::Future<Output = Result<TurnOutcome, EngineError>> + Send + 'static,
{
    let mut turn = tokio::spawn(work);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut stops = StopSignals::new();
    let mut cancelled = false;
    let mut unwritable: Option<std::io::Error> = None;
    let mut printer = Printer::new(format, session_id);
    let mut print = |event: Option<&Event>, cancelled: &mut bool| {
        if unwritable.is_some() {
            return;
        }
        let printed = match event {
            Some(event) => printer.event(event),
            None => printer.flush(None),
        };
        if let Err(e) = printed {
            unwritable = Some(e);
            if !*cancelled {
                *cancelled = true;
                runtime.cancel(session_id);
            }
        }
    };
    let result = loop {
        tokio::select! {
            Some(event) = events.recv() => print(Some(&event), &mut cancelled),
            _ = &mut ctrl_c, if !cancelled => {
                cancelled = true;
                runtime.cancel(session_id);
            }
            () = stops.recv(), if !cancelled => {
                cancelled = true;
                runtime.cancel(session_id);
            }
            joined = &mut turn => {
                // Everything the turn published is already queued: print it all.
                while let Ok(event) = events.try_recv() {
                    print(Some(&event), &mut cancelled);
                }
                // The end of a streamed answer a possible key's start was held from.
                print(None, &mut cancelled);
                break joined;
            }
        }
    };
    if let Some(e) = unwritable {
        return Err(e.into());
    }
    let result = match result {
        Ok(r) => r,
        Err(join) => Err(EngineError::Other(format!("the turn task failed: {join}"))),
    };
    match result {
        Ok(outcome) => report_outcome(format, &outcome),
        Err(e) => report_error(format, Some(session_id), None, &e),
    }
}

/// SIGTERM, SIGHUP and SIGQUIT, listened to while a turn runs so that each cancels it
/// as Ctrl+C does (issue 22: a supervisor's SIGTERM or a closed terminal's SIGHUP must
/// not leave the running command alive). A signal that cannot be listened to keeps its
/// default action (off Unix there are none to listen to).
struct StopSignals {
    #[cfg(unix)]
    streams: Vec<tokio::signal::unix::Signal>,
}

impl StopSignals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let streams = [
                SignalKind::terminate(),
                SignalKind::hangup(),
                SignalKind::quit(),
            ]
            .into_iter()
            .filter_map(|kind| match signal(kind) {
                Ok(stream) => Some(stream),
                Err(e) => {
                    tracing::warn!("cannot listen to signal {}: {e}", kind.as_raw_value());
                    None
                }
            })
            .collect();
            Self { streams }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// Resolves when one of the signals arrives (never when none could be listened to).
    async fn recv(&mut self) {
        #[cfg(unix)]
        if !self.streams.is_empty() {
            let waits = self.streams.iter_mut().map(|s| Box::pin(s.recv()));
            futures::future::select_all(waits).await;
            return;
        }
        futures::future::pending::<()>().await;
    }
}

/// The final object of `json`/`jsonl` output for a finished turn.
pub fn outcome_json(outcome: &TurnOutcome) -> Value {
    let status = match outcome.status {
        SessionStatus::Completed | SessionStatus::Idle => "success",
        SessionStatus::Cancelled => "cancelled",
        // Stopped at its budget (issue 14): resumable, not a success.
        SessionStatus::Paused => "paused",
        // A finished turn is never running, queued or waiting: say error rather than
        // claim success.
        SessionStatus::Failed
        | SessionStatus::Running
        | SessionStatus::Queued
        | SessionStatus::Waiting
        | SessionStatus::Interrupted => "error",
    };
    let mut v = json!({
        "status": status,
        "response": scrub_secrets(&outcome.response),
        "session_id": outcome.session_id,
        "agent": outcome.agent,
    });
    if let Some(err) = &outcome.error {
        v["error"] = json!(scrub(err));
    }
    v
}

fn report_outcome(format: OutputFormat, outcome: &TurnOutcome) -> Result<i32> {
    let v = outcome_json(outcome);
    let success = v["status"] == "success";
    match format {
        OutputFormat::Text => {
            outln!()?;
            if let Some(err) = &outcome.error {
                out::error(err);
            } else if outcome.status == SessionStatus::Cancelled {
                out::error(format!(
                    "cancelled (resume with: arbor session resume {} \"…\")",
                    outcome.session_id
                ));
            } else if outcome.status == SessionStatus::Paused {
                out::error(format!(
                    "paused at its budget (resume with one more budget: arbor session resume {} \"…\")",
                    outcome.session_id
                ));
            }
        }
        OutputFormat::Json | OutputFormat::Jsonl => outln!("{v}")?,
    }
    Ok(if success { 0 } else { 1 })
}

fn report_error(
    format: OutputFormat,
    session_id: Option<&str>,
    agent: Option<&str>,
    error: &EngineError,
) -> Result<i32> {
    match format {
        OutputFormat::Text => out::error(error),
        OutputFormat::Json | OutputFormat::Jsonl => outln!(
            "{}",
            json!({
                "status": "error",
                "response": "",
                "session_id": session_id,
                "agent": agent,
                "error": scrub(&error.to_string()),
            })
        )?,
    }
    Ok(1)
}
