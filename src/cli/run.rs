//! `arbor run PROMPT` and the headless output shared with `arbor session resume`.
//!
//! Output formats (documented in the README):
//! - `text`: the answer's text streamed as it arrives; errors on stderr.
//! - `json`: one object `{status, response, session_id, agent, error?}`.
//! - `jsonl`: every bus event as one JSON object a line, then the same final object.
//!
//! `status` is `success` | `error` | `cancelled`; the exit code is 0 only on success.

use std::io::Write;
use std::sync::Arc;

use clap::Args;
use color_eyre::Result;
use serde_json::{Value, json};

use super::OutputFormat;
use super::context::{Context, ContextOptions};
use crate::engine::{EngineError, Runtime, TurnOutcome};
use crate::session::events::names;
use crate::session::{Event, SessionStatus};

/// `arbor run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The instruction for the agent.
    pub prompt: String,
    /// text (default), json or jsonl.
    #[arg(long, value_enum, default_value_t)]
    pub output_format: OutputFormat,
}

/// Creates a root session (with `--agent` if given), runs one turn, prints the result.
pub async fn run(args: RunArgs, agent: Option<String>, options: ContextOptions) -> Result<i32> {
    let ctx = Context::load(&options)?;
    let (runtime, _registry_tx) = ctx.runtime();
    let session_id = match runtime.create_root(agent.as_deref()) {
        Ok(id) => id,
        Err(e) => return Ok(report_error(args.output_format, None, agent.as_deref(), &e)),
    };
    drive_turn(&runtime, &session_id, args.prompt, args.output_format).await
}

/// Runs one turn of `session_id` (a new root or a resume), printing in `format`.
/// Ctrl+C cancels the turn (the session stays resumable).
pub async fn drive_turn(
    runtime: &Arc<Runtime>,
    session_id: &str,
    prompt: String,
    format: OutputFormat,
) -> Result<i32> {
    let mut events = runtime.bus().subscribe();
    let mut turn = {
        let runtime = runtime.clone();
        let id = session_id.to_string();
        tokio::spawn(async move { runtime.run_turn(&id, prompt).await })
    };
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut cancelled = false;
    let result = loop {
        tokio::select! {
            Some(event) = events.recv() => print_event(format, session_id, &event),
            _ = &mut ctrl_c, if !cancelled => {
                cancelled = true;
                runtime.cancel(session_id);
            }
            joined = &mut turn => {
                // Everything the turn published is already queued: print it all.
                while let Ok(event) = events.try_recv() {
                    print_event(format, session_id, &event);
                }
                break joined;
            }
        }
    };
    let result = match result {
        Ok(r) => r,
        Err(join) => Err(EngineError::Other(format!("the turn task failed: {join}"))),
    };
    Ok(match result {
        Ok(outcome) => report_outcome(format, &outcome),
        Err(e) => report_error(format, Some(session_id), None, &e),
    })
}

fn print_event(format: OutputFormat, session_id: &str, event: &Event) {
    let mut stdout = std::io::stdout();
    match format {
        OutputFormat::Jsonl => {
            if let Ok(line) = serde_json::to_string(event) {
                let _ = writeln!(stdout, "{line}");
            }
        }
        OutputFormat::Text => {
            let is_text = event.data.get("kind").and_then(Value::as_str) != Some("thinking");
            if event.event == names::CONTENT_BLOCK_DELTA
                && event.session_id == session_id
                && is_text
                && let Some(delta) = event.data.get("delta").and_then(Value::as_str)
            {
                let _ = write!(stdout, "{delta}");
                let _ = stdout.flush();
            }
        }
        OutputFormat::Json => {}
    }
}

/// The final object of `json`/`jsonl` output for a finished turn.
pub fn outcome_json(outcome: &TurnOutcome) -> Value {
    let status = match outcome.status {
        SessionStatus::Completed | SessionStatus::Idle => "success",
        SessionStatus::Cancelled => "cancelled",
        SessionStatus::Failed | SessionStatus::Running => "error",
    };
    let mut v = json!({
        "status": status,
        "response": outcome.response,
        "session_id": outcome.session_id,
        "agent": outcome.agent,
    });
    if let Some(err) = &outcome.error {
        v["error"] = json!(err);
    }
    v
}

fn report_outcome(format: OutputFormat, outcome: &TurnOutcome) -> i32 {
    let v = outcome_json(outcome);
    let success = v["status"] == "success";
    match format {
        OutputFormat::Text => {
            let mut stdout = std::io::stdout();
            let _ = writeln!(stdout);
            if let Some(err) = &outcome.error {
                eprintln!("arbor: {err}");
            } else if outcome.status == SessionStatus::Cancelled {
                eprintln!(
                    "arbor: cancelled (resume with: arbor session resume {} \"…\")",
                    outcome.session_id
                );
            }
        }
        OutputFormat::Json | OutputFormat::Jsonl => println!("{v}"),
    }
    if success { 0 } else { 1 }
}

fn report_error(
    format: OutputFormat,
    session_id: Option<&str>,
    agent: Option<&str>,
    error: &EngineError,
) -> i32 {
    match format {
        OutputFormat::Text => eprintln!("arbor: {error}"),
        OutputFormat::Json | OutputFormat::Jsonl => println!(
            "{}",
            json!({
                "status": "error",
                "response": "",
                "session_id": session_id,
                "agent": agent,
                "error": error.to_string(),
            })
        ),
    }
    1
}
