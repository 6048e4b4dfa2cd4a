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
//! - every format: `run` ends by listing on stderr each sub-session it left unmerged
//!   (`merge: manual` or `review`, or a conflict), with its branch and the commands to
//!   merge or discard it (`unmerged`).
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
//!
//! Every command drives the engine through its handle (`engine::Engine::headless`),
//! as the TUI does: `Submit` (a new root for `run`), `SetModel` (`--model` of
//! `session resume/continue`), `Continue` / `ContinueInterrupted`, and `Cancel` on a
//! signal. Each reads the one ordered stream of its connection (`Engine::connect`):
//! the events printed and the command's replies arrive in the order they happened,
//! and the command's `Answered` ends it — no draining of a bus after the last reply.

use std::sync::Arc;

use clap::Args;
use color_eyre::Result;
use serde_json::{Value, json};

use super::OutputFormat;
use super::call::{no_answer, reply, unexpected};
use super::context::{Context, ContextOptions};
use super::out;
use crate::engine::{
    CommandId, Engine, EngineClient, EngineError, EngineOutput, EngineReply, EngineStream,
    RootOptions, TurnOutcome,
};
use crate::outln;
use crate::session::ids::SessionId;
use crate::session::redact::{scrub, scrub_secrets};
use crate::session::{EngineCommand, Event, SessionStatus};

mod print;
mod stdin;
mod unmerged;

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
/// `Runtime::create_root_with` says), runs one turn, prints the result: `--model` is
/// the runtime's model of new roots (set up as the TUI's `--model` is), then the
/// engine handle gets `Submit` without a session id, as the TUI sends it. A prompt
/// `/name args` of a command file is expanded first (`agent::commands`).
pub async fn run(args: RunArgs, mut root: RootOptions, options: ContextOptions) -> Result<i32> {
    let agent = root.agent.clone();
    let mut prompt = match stdin::prompt_with_stdin(args.prompt) {
        Ok(prompt) => prompt,
        Err(e) => return report_error(args.output_format, None, agent.as_deref(), &e),
    };
    let mut ctx = Context::load(&options)?;
    // `/name args` of a command file (issue 29): its prompt, and its `agent` / `model`
    // unless the flags chose.
    // A command file or `AGENTS.md` the project links out, or a FIFO (issue 34), is
    // skipped: say so here, where the person sees it.
    let (command, skipped) = crate::agent::commands::expand_message_reporting(&ctx.paths, &prompt);
    for why in skipped {
        out::warning(format!("command file skipped: {why}"));
    }
    if let Some((command, expanded)) = command {
        root.agent = root.agent.or(command.agent);
        root.model = root.model.or(command.model);
        prompt = expanded;
    } else if let Some(refused) = slash_refused(&prompt) {
        return report_error(args.output_format, None, agent.as_deref(), &refused);
    }
    warn_skipped_instructions(&ctx);
    if let Some(notice) = ctx.use_local_servers() {
        out::error(notice);
    }
    let (engine, _registry_tx) = ctx.engine(args.yes);
    // Checked when the root is created (a bad choice fails it, naming the choice).
    let engine = engine.with_root_model(root.model);
    // Connected before the root exists, so `session:start` is the first event.
    let (client, mut stream) = engine.connect();
    let command = client.submit(EngineCommand::Submit {
        session_id: None,
        agent: root.agent,
        prompt,
        cleared: false,
    });
    // The first reply names the new root (its turn already runs) or says why none
    // was created; the events before it (its `session:start`) are printed after it.
    let mut early = Vec::new();
    let session_id = loop {
        match stream.next().await {
            Some(EngineOutput::Event(event)) => early.push(event),
            Some(EngineOutput::Reply {
                reply: EngineReply::SessionCreated { session_id },
                ..
            }) => break session_id,
            Some(EngineOutput::Reply {
                reply: EngineReply::Failed { error, .. },
                ..
            }) => return report_error(args.output_format, None, agent.as_deref(), &error),
            Some(EngineOutput::Reply { reply, .. }) => {
                let e = unexpected(reply);
                return report_error(args.output_format, None, agent.as_deref(), &e);
            }
            Some(EngineOutput::Answered { .. }) | None => {
                let e = no_answer();
                return report_error(args.output_format, None, agent.as_deref(), &e);
            }
        }
    };
    let driven = Driven {
        client: &client,
        command,
        session_id: &session_id,
        format: args.output_format,
    };
    let ended = driven.drive(early, stream).await;
    let code = finish(&engine, &session_id, args.output_format, ended, first_turn).await?;
    // What the run left on branches instead of in the checkout (issue 35 item 3).
    unmerged::report(&engine, session_id.as_str()).await;
    Ok(code)
}

/// Sends `SetModel` for `session_id` (`None`: new root sessions) and waits for its
/// answer: the `provider/model` now in use, or why the choice cannot be used.
pub async fn set_model(
    engine: &Engine,
    session_id: Option<SessionId>,
    model: String,
) -> std::result::Result<String, EngineError> {
    match reply(engine, EngineCommand::SetModel { session_id, model }).await? {
        EngineReply::ModelSwitched { result, .. } => result,
        other => Err(unexpected(other)),
    }
}

/// Why a prompt that is a `/name` with no command file of that name is not sent, as
/// the TUI refuses it (`tui::state::palette_commands::parse`): unknown, or one of the
/// TUI's own commands, which do nothing headless. `None` for any other prompt.
fn slash_refused(prompt: &str) -> Option<String> {
    use crate::tui::state::palette_commands::{Parsed, parse};
    match parse(prompt.trim()) {
        Parsed::Text => None,
        Parsed::Unknown(name) => Some(format!(
            "unknown command /{name}: no command file of that name (arbor run expands the \
             project's and your command files; not sent)"
        )),
        Parsed::Command(spec, _) => Some(format!(
            "/{} is a command of the TUI: it does nothing in arbor run (not sent)",
            spec.name
        )),
    }
}

/// Runs `command` (a turn of `session_id`, e.g. `Submit` for `session resume`,
/// `Continue` or `ContinueInterrupted` for `session continue`) through the engine
/// handle, printing `session_id`'s events (and its sub-sessions' in `jsonl`) in
/// `format`, then the outcome `outcome` makes of the turns it answered. Ctrl+C (or
/// SIGTERM, SIGHUP, SIGQUIT), or a stdout that can no longer be written, sends
/// `Cancel` for `session_id` (the session stays resumable); the latter ends with that
/// write error. Returns the exit code: 0 only when the outcome is a success.
pub async fn drive_command(
    engine: &Engine,
    session_id: &SessionId,
    command: EngineCommand,
    format: OutputFormat,
    outcome: fn(&str, Vec<TurnResult>) -> std::result::Result<TurnOutcome, EngineError>,
) -> Result<i32> {
    let (client, stream) = engine.connect();
    let command = client.submit(command);
    let driven = Driven {
        client: &client,
        command,
        session_id,
        format,
    };
    let ended = driven.drive(Vec::new(), stream).await;
    finish(engine, session_id, format, ended, outcome).await
}

/// A turn a command ran (its outcome), or the error that kept it from running.
pub type TurnResult = std::result::Result<TurnOutcome, EngineError>;

/// The outcome of a command that runs one turn: its first (only) turn's.
pub fn first_turn(_session_id: &str, turns: Vec<TurnResult>) -> TurnResult {
    turns.into_iter().next().unwrap_or_else(|| Err(no_answer()))
}

/// Ends a driven command: stops what the command started that outlives it (the MCP
/// servers), then reports `outcome` of its turns, or the write error that ended it.
async fn finish(
    engine: &Engine,
    session_id: &str,
    format: OutputFormat,
    ended: std::result::Result<Vec<TurnResult>, std::io::Error>,
    outcome: fn(&str, Vec<TurnResult>) -> TurnResult,
) -> Result<i32> {
    // The MCP servers the turns started end with the process.
    engine.close().await;
    match ended.map(|turns| outcome(session_id, turns)) {
        Err(unwritable) => Err(unwritable.into()),
        Ok(Ok(outcome)) => report_outcome(format, &outcome),
        Ok(Err(e)) => report_error(format, Some(session_id), None, &e),
    }
}

/// A command a headless front end runs to its end: the client it was submitted
/// through, its id, the session whose events are printed, and how.
struct Driven<'a> {
    client: &'a EngineClient,
    command: CommandId,
    session_id: &'a SessionId,
    format: OutputFormat,
}

impl Driven<'_> {
    /// Prints the events of `stream` (after `early`, the events read before the
    /// command's first reply) while the command runs (see [`drive_command`]);
    /// returns the turns it answered once it is `Answered`, or the error of a stdout
    /// that could no longer be written.
    async fn drive(
        &self,
        early: Vec<Arc<Event>>,
        mut stream: EngineStream,
    ) -> std::result::Result<Vec<TurnResult>, std::io::Error> {
        let cancel = || {
            self.client.submit(EngineCommand::Cancel {
                session_id: self.session_id.clone(),
            });
        };
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        let mut stops = StopSignals::new();
        let mut cancelled = false;
        let mut unwritable: Option<std::io::Error> = None;
        let mut printer = Printer::new(self.format, self.session_id);
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
                    cancel();
                }
            }
        };
        for event in &early {
            print(Some(event), &mut cancelled);
        }
        let mut turns = Vec::new();
        loop {
            let output = tokio::select! {
                output = stream.next() => output,
                _ = &mut ctrl_c, if !cancelled => {
                    cancelled = true;
                    cancel();
                    continue;
                }
                () = stops.recv(), if !cancelled => {
                    cancelled = true;
                    cancel();
                    continue;
                }
            };
            match output {
                Some(EngineOutput::Event(event)) => print(Some(&event), &mut cancelled),
                Some(EngineOutput::Reply { command, reply }) if command == self.command => {
                    match reply {
                        EngineReply::TurnFinished(outcome) => turns.push(Ok(outcome)),
                        EngineReply::Failed { error, .. } => turns.push(Err(error)),
                        other => tracing::debug!("reply not shown headless: {other:?}"),
                    }
                }
                Some(EngineOutput::Answered { command }) if command == self.command => break,
                // A cancel's (it has no reply), or a stream that ended.
                Some(EngineOutput::Reply { .. } | EngineOutput::Answered { .. }) => {}
                None => break,
            }
        }
        // The end of a streamed answer a possible key's start was held from.
        print(None, &mut cancelled);
        match unwritable {
            Some(e) => Err(e),
            None => Ok(turns),
        }
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
        v["error"] = json!(scrub(&err.to_string()));
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
    error: &dyn std::fmt::Display,
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

/// Prints a warning for each project instruction file (`AGENTS.md`) that the root's
/// prompt will not include because it may not or cannot be read
/// (`agent::instructions`: a link out of the project, a private path, a FIFO …).
fn warn_skipped_instructions(ctx: &Context) {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let private = crate::config::private::private_paths(&ctx.paths, home.as_deref());
    let max = crate::config::context::ContextConfig::from_config(&ctx.config).0;
    if let Some(found) =
        crate::agent::instructions::load(&ctx.paths.cwd, max.instructions_max(), &private)
    {
        for why in found.skipped {
            out::warning(format!("project instructions: {why}"));
        }
    }
}
