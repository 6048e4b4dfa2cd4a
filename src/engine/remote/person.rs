//! Turns a person starts in a remote sub-session (issue 27): a `Submit` to it, `arbor
//! session continue`, a steer or queued message while it is idle, continuing it after
//! an interruption. Like a task call's run, such a turn goes to a worker of its pool
//! through [`super::run`] — never a local run — and its answer and events land in the
//! root's store the same way.
//!
//! Owns: which sessions a person's turn sends to a worker ([`placement_for_person`]:
//! sub-sessions only, by `config::remote::placement`, and the sessions a remote
//! sub-session's job created, by `config::remote::placement_in_remote_tree`), the
//! instruction of such a turn
//! ([`instruction_of`]) and running it without a calling turn ([`person_turn`]).
//! Does not own: the runtime's turn entries that call it (`runtime`, `runtime::prompts`),
//! the dispatch itself (`dispatch`).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{RemoteRuns, placement_of};
use crate::config::remote::RemotePlacement;
use crate::engine::env::TurnEnv;
use crate::engine::live::LiveSession;
use crate::engine::outcome::{EngineError, TurnOutcome};
use crate::engine::turn::{self, CONTINUE_PROMPT};
use crate::session::SessionStore;

/// Where a person's turn of `live` runs: `Some` for a sub-session (it has a parent)
/// that the config's `remote:` section and its agent's frontmatter put on a worker,
/// or that ran inside a remote sub-session's job (a grandchild continued by `session
/// continue --tree` runs on a worker, where it ran, not here); `None` for a root
/// session (it always runs here) and for a local sub-session.
pub(crate) fn placement_for_person(env: &TurnEnv, live: &LiveSession) -> Option<RemotePlacement> {
    let parent = live.parent_id.as_ref()?;
    placement_of(env, live).or_else(|| {
        ran_in_a_remote_job(env, live, parent)
            .then(|| {
                crate::config::remote::placement_in_remote_tree(&env.config, &live.agent_overlay)
            })
            .flatten()
    })
}

/// Whether `live` ran inside a remote session's job (issue 38 item 7): it ran on a
/// worker, and so did its parent `parent` (the remote sub-session whose worker's
/// engine created it, or another session of that job). A remote sub-session itself
/// has a parent that ran here, so its own agent's placement decides.
fn ran_in_a_remote_job(env: &TurnEnv, live: &LiveSession, parent: &str) -> bool {
    if live.metadata().arbor.ran_on.is_none() {
        return false;
    }
    SessionStore::new(env.paths.sessions_dir())
        .load_metadata(parent)
        .is_ok_and(|(metadata, _)| metadata.arbor.ran_on.is_some())
}

/// What the job that runs `input` on a worker starts from: a prompt verbatim;
/// messages taken from the inbox joined by a blank line; a continue as
/// [`RunInput::Continue`] (the worker continues the session as a local continue does:
/// orphaned tool calls repaired, the unanswered model call run again, `Continue.` sent
/// only when the model had answered the last message).
pub(crate) fn instruction_of(input: turn::Input) -> RunInput {
    match input {
        turn::Input::Prompt(prompt) => RunInput::Prompt(prompt),
        turn::Input::Continue => RunInput::Continue,
        turn::Input::Inbox(waiting) => RunInput::Prompt(
            waiting
                .into_iter()
                .map(|p| p.text)
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
    }
}

/// What a remote run starts from: a user message, or a continue of the session as it
/// stands (the worker runs `EngineCommand::Continue`; the job's `continues`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunInput {
    /// This text, sent as the run's user message.
    Prompt(String),
    /// Continue: re-run the unanswered model call, or send [`CONTINUE_PROMPT`] when
    /// the model had answered the last message.
    Continue,
}

impl RunInput {
    /// The job's `instruction`: the prompt, or [`CONTINUE_PROMPT`] for a continue.
    pub(crate) fn instruction(&self) -> String {
        match self {
            RunInput::Prompt(text) => text.clone(),
            RunInput::Continue => CONTINUE_PROMPT.to_string(),
        }
    }
}

/// Runs `live`'s next turn on a worker of `placement`'s pool with `instruction`, as
/// a top-level turn (its own token: cancelling the session cancels it).
///
/// Returns the run's outcome (a `failed` one naming the URL when NATS cannot be
/// reached). Errors: the session already runs a turn (`Busy`).
pub(crate) async fn person_turn(
    env: &TurnEnv,
    runs: &RemoteRuns,
    live: Arc<LiveSession>,
    input: RunInput,
    placement: RemotePlacement,
) -> Result<TurnOutcome, EngineError> {
    let top = CancellationToken::new();
    super::run(env, runs, live, input, &top, placement).await
}
