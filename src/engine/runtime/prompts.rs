//! Messages for a session's running turn: steer and queue into its inbox, take a
//! waiting one back ([`Runtime::steer`], [`Runtime::queue`], [`Runtime::unqueue`]).
//! A sub-session running on a worker (issue 27) gets its steers and queued messages
//! there, and their withdrawals (`engine::remote`); an idle one placed on a worker starts its turn there.
//! Does not own: the inbox itself (`live`, `inbox`) or the turn loop that drains it
//! (`turn`).

use std::sync::Arc;

use super::Runtime;
use crate::engine::outcome::{EngineError, TurnOutcome};
use crate::engine::panics;
use crate::engine::remote::{self, Forward};
use crate::engine::turn;
use crate::session::protocol::PromptMode;

impl Runtime {
    /// Steers `session_id` (root or sub-session; live, or resumed from disk): `text`
    /// goes into its inbox (`prompt:queued`, mode `steer`) and is appended verbatim as
    /// a user message before its running turn's next model call (`prompt:sent`), after
    /// pending tool results. When that turn ends before it (or no turn runs), the next
    /// turn starts at once with it. Returns `None` when a running turn took it, else
    /// the outcome of the turn(s) this call ran.
    ///
    /// Errors: as [`Runtime::run_turn`] before its turn; when no provider builds, the
    /// message is returned unsent (`prompt:unqueued`, `returned`).
    pub async fn steer(
        self: &Arc<Self>,
        session_id: &str,
        text: String,
    ) -> Result<Option<TurnOutcome>, EngineError> {
        self.offer(session_id, PromptMode::Steer, text, None).await
    }

    /// Queues `text` as a turn of its own of `session_id` (`prompt:queued`, mode
    /// `queue`), at `position` among the queued messages (0 = next; `None` = last):
    /// sent verbatim after the running turn — and the messages queued before it — end
    /// completed. A turn that ends cancelled or failed returns every waiting message
    /// unsent (`prompt:unqueued`, `returned`). When no turn runs it starts at once.
    /// Returns as [`Runtime::steer`]; errors as it.
    pub async fn queue(
        self: &Arc<Self>,
        session_id: &str,
        text: String,
        position: Option<usize>,
    ) -> Result<Option<TurnOutcome>, EngineError> {
        self.offer(session_id, PromptMode::Queue, text, position)
            .await
    }

    /// Takes the waiting message `id` (`prompt:queued` `id`) of `session_id` back
    /// unsent: publishes `prompt:unqueued` (`removed`) and returns its text. A session
    /// running on a worker (issue 27) gets it there (`Control::Unqueue`; its messages
    /// wait in the worker's inbox, under the ids the worker's `prompt:queued` events
    /// carried): the worker's `prompt:unqueued` comes back with its events, and the
    /// text returned here is empty.
    ///
    /// Errors: `NotWaiting` when the session is not live or the message no longer waits
    /// (already sent, removed or returned); for a remote session the worker decides.
    pub fn unqueue(&self, session_id: &str, id: u64) -> Result<String, EngineError> {
        if self.remote.forward(session_id, Forward::Unqueue(id)) {
            return Ok(String::new());
        }
        self.live(session_id)
            .and_then(|live| live.unqueue(id))
            .map(|pending| pending.text)
            .ok_or_else(|| EngineError::NotWaiting {
                session_id: session_id.to_string(),
                id,
            })
    }

    /// [`Runtime::steer`] / [`Runtime::queue`]: into the inbox, then a run of the inbox
    /// when no turn runs; a panic becomes `EngineError::Panicked`.
    async fn offer(
        self: &Arc<Self>,
        session_id: &str,
        mode: PromptMode,
        text: String,
        position: Option<usize>,
    ) -> Result<Option<TurnOutcome>, EngineError> {
        // A session running on a worker gets it there (its worker's engine publishes
        // `prompt:queued` / `prompt:sent`, which come back with its events).
        if self
            .remote
            .forward(session_id, forward_of(mode, text.clone()))
        {
            return Ok(None);
        }
        let what = format!("a {} to session '{session_id}'", mode.as_str());
        let work = async {
            let live = self.live_or_resume(session_id)?;
            // An idle sub-session placed on a worker starts its turn there with it.
            if let Some(placement) = remote::placement_for_person(&self.turn_env, &live) {
                let ran = remote::person_turn(
                    &self.turn_env,
                    &self.remote,
                    live,
                    remote::RunInput::Prompt(text.clone()),
                    placement,
                )
                .await;
                return match ran {
                    Ok(outcome) => Ok(Some(outcome)),
                    // Another offer started its run meanwhile: this one goes to it.
                    Err(EngineError::Busy { .. })
                        if self.remote.forward(session_id, forward_of(mode, text)) =>
                    {
                        Ok(None)
                    }
                    Err(e) => Err(e),
                };
            }
            if live.offer(mode, text, position) {
                return Ok(None);
            }
            turn::run_inbox(&self.turn_env, live).await
        };
        panics::catch(&what, work)
            .await
            .unwrap_or_else(|message| Err(EngineError::Panicked { what, message }))
    }
}

/// The control that carries an offer of `mode` to a session's worker.
fn forward_of(mode: PromptMode, text: String) -> Forward {
    match mode {
        PromptMode::Steer => Forward::Steer(text),
        PromptMode::Queue => Forward::Queue(text),
    }
}
