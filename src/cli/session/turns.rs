//! `arbor session resume ID INSTRUCTION` and `arbor session continue ID [--tree]`: a
//! turn of a stored session run headless through the engine handle (`SetModel` for
//! `--model`, then `Submit`, `Continue` or `ContinueInterrupted`; `cli::run` prints
//! the events and the outcome).
//!
//! Owns: which sessions may continue (a stopped one; with `--tree`, a tree with an
//! interrupted session) and the outcome of a tree's turns ([`continue_tree`]). Does
//! not own: running turns (`engine`), printing them (`cli::run`).

use color_eyre::Result;

use super::tree::{find, sessions};
use super::{fail, offer_cleanup, resolve};
use crate::cli::OutputFormat;
use crate::cli::call::unexpected;
use crate::cli::context::Context;
use crate::cli::out::{self, plural};
use crate::cli::run::{TurnResult, drive_command, first_turn, set_model};
use crate::engine::{Engine, EngineError, QueryReply, TurnOutcome};
use crate::session::tree::{build_tree, children_first_waves};
use crate::session::{EngineCommand, EngineQuery, SessionId, SessionStatus, StoreError};

/// What `session resume` sends and how it prints.
pub struct Resume {
    pub instruction: String,
    /// `resume --model`, else `arbor --model`.
    pub model: Option<String>,
    pub format: OutputFormat,
}

/// Runs `session resume ID INSTRUCTION`: the session's model switched first when
/// asked, then one turn. Exit 0 only when the turn succeeded.
pub async fn resume(engine: &Engine, ctx: &Context, id: &str, resume: Resume) -> Result<i32> {
    let id = match resolve(engine, id).await {
        Ok(id) => id,
        Err(e) => return fail(&e),
    };
    offer_cleanup(ctx);
    if let Some(model) = resume.model
        && let Err(e) = set_model(engine, Some(id.clone()), model).await
    {
        return fail(&e);
    }
    let submit = EngineCommand::Submit {
        session_id: Some(id.clone()),
        agent: None,
        prompt: resume.instruction,
        cleared: false,
    };
    drive_command(engine, &id, submit, resume.format, first_turn).await
}

/// Runs `session continue ID [--tree]` (`tree`, and `model` switched first when
/// given): a stopped session's turn again, or with `--tree` every interrupted
/// session of the tree, children first. Exit 0 when every continued session
/// completed (or, with `--tree`, there was nothing to continue).
pub async fn continue_(
    engine: &Engine,
    ctx: &Context,
    id: &str,
    (tree, model): (bool, Option<String>),
    format: OutputFormat,
) -> Result<i32> {
    let id = match resolve(engine, id).await {
        Ok(id) => id,
        // `continue` says a miss in the store's own sentence.
        Err(EngineError::SessionNotFound { id, .. }) => {
            return fail(&StoreError::NotFound(id));
        }
        Err(e) => return fail(&e),
    };
    offer_cleanup(ctx);
    if let Some(model) = model
        && let Err(e) = set_model(engine, Some(id.clone()), model).await
    {
        return fail(&e);
    }
    if tree {
        return continue_interrupted(engine, &id, format).await;
    }
    // As `r`: only a stopped session continues.
    let metadata = match engine
        .ask(EngineQuery::LoadMetadata {
            session_id: id.clone(),
        })
        .await
    {
        QueryReply::LoadMetadata(result) => result,
        other => Err(unexpected(other)),
    };
    let status = match metadata {
        Ok(metadata) => metadata.status,
        Err(e) => return fail(&e),
    };
    if !matches!(
        status,
        SessionStatus::Interrupted
            | SessionStatus::Failed
            | SessionStatus::Cancelled
            | SessionStatus::Paused
    ) {
        return fail(&format!(
            "session {id} is {}: continue resumes a stopped session (interrupted, failed, cancelled, paused); send it a message with: arbor session resume {id} \"…\"",
            status.as_str()
        ));
    }
    let command = EngineCommand::Continue {
        session_id: id.clone(),
    };
    drive_command(engine, &id, command, format, first_turn).await
}

/// `session continue ID --tree`: `ContinueInterrupted` when the tree under `id` has
/// an interrupted session; says so (exit 0) when it has none.
async fn continue_interrupted(
    engine: &Engine,
    id: &SessionId,
    format: OutputFormat,
) -> Result<i32> {
    let roots = build_tree(sessions(engine).await?);
    let waiting = roots.iter().find_map(|r| find(r, id)).map_or(0, |node| {
        children_first_waves(node, |m| m.status == SessionStatus::Interrupted)
            .concat()
            .len()
    });
    if waiting == 0 {
        out::error(format!(
            "nothing to continue: no session of the tree under {id} is interrupted"
        ));
        return Ok(0);
    }
    let command = EngineCommand::ContinueInterrupted {
        session_id: id.clone(),
    };
    drive_command(engine, id, command, format, continue_tree).await
}

/// `session continue --tree`: the outcome of `ContinueInterrupted` of `id`'s tree
/// (every interrupted session continued, children first), from the `turns` it
/// answered: `Ok` with `id`'s outcome (else
/// the last one) when every continued session completed; otherwise `Err` naming each
/// one that did not (its id, agent, status and error), one a line.
fn continue_tree(
    id: &str,
    turns: Vec<TurnResult>,
) -> std::result::Result<TurnOutcome, EngineError> {
    let total = turns.len();
    let mut top = None;
    let mut problems = Vec::new();
    for turn in turns {
        match turn {
            Ok(outcome) => {
                if outcome.status != SessionStatus::Completed {
                    let error = outcome
                        .error
                        .as_ref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default();
                    problems.push(format!(
                        "{} ({}) ended {}{error}",
                        outcome.session_id,
                        outcome.agent,
                        outcome.status.as_str()
                    ));
                }
                if top.is_none() || outcome.session_id == id {
                    top = Some(outcome);
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    if !problems.is_empty() {
        return Err(EngineError::Other(format!(
            "{} of {} did not complete:\n  {}",
            problems.len(),
            plural(total, "continued session"),
            problems.join("\n  ")
        )));
    }
    top.ok_or_else(|| {
        EngineError::Other(format!(
            "nothing to continue: no session of the tree under {id} is interrupted"
        ))
    })
}
