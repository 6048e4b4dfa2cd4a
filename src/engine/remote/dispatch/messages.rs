//! What an admitted worker message does to the run at the root: each part of a
//! [`WorkerMsg::Many`] in order, under one metadata hold (one write for the whole
//! message), handed to the [`Applier`]; `Done`/`Failed` of this run become its
//! outcome, a writing run's patch applied in the child's worktree first (saved as
//! `remote-run-<n>.patch` in the session's directory when it does not apply).
//!
//! Owns: `Link::apply` and the patch step. Does not own: whether a message is
//! admitted (`dispatch`: the binding, the fence), what each event does to the
//! session (`apply`), the git steps (`changes`).

use super::super::changes;
use super::{Applier, Link};
use crate::engine::isolate;
use crate::engine::outcome::TurnOutcome;
use crate::engine::remote::apply::Finished;
use crate::remote::Payload;
use crate::remote::wire::{Changes, WorkerMsg};
use crate::session::{Metadata, SessionStatus};

impl Link {
    /// Applies `message`, admitted (each of a [`WorkerMsg::Many`] in order); the
    /// outcome when it ends the run.
    pub(super) async fn apply(
        &self,
        applier: &mut Applier<'_>,
        message: WorkerMsg,
    ) -> Option<TurnOutcome> {
        // One metadata write for the whole message (a pack's status changes).
        let child = applier.child().clone();
        let _hold = child.hold_metadata();
        let msgs = match message {
            WorkerMsg::Many { msgs } => msgs,
            one => vec![one],
        };
        for msg in msgs {
            if let Some(outcome) = self.apply_one(applier, msg).await {
                return Some(outcome);
            }
        }
        None
    }

    /// Applies one message of the run (see [`Self::apply`]).
    async fn apply_one(
        &self,
        applier: &mut Applier<'_>,
        message: WorkerMsg,
    ) -> Option<TurnOutcome> {
        match message {
            WorkerMsg::Started {
                ran_on, attempt, ..
            } => {
                applier.started(ran_on, attempt);
                None
            }
            WorkerMsg::Event { event } => {
                applier.event(*event);
                None
            }
            WorkerMsg::Events { events } => {
                for event in events {
                    applier.event(event);
                }
                None
            }
            WorkerMsg::Many { .. } => {
                tracing::warn!(session = %self.session, "a pack inside a pack: ignored");
                None
            }
            WorkerMsg::Reserve {
                parent,
                child,
                agent,
            } => {
                applier.reserve(&parent, &child, &agent);
                None
            }
            WorkerMsg::SubSession { metadata } => {
                applier.sub_session(*metadata);
                None
            }
            WorkerMsg::Done { run, .. } | WorkerMsg::Failed { run, .. } if run != self.run => {
                tracing::warn!(session = %self.session, run, "an answer of another run ignored");
                None
            }
            WorkerMsg::Failed { error, .. } => Some(applier.ended_without_answer(
                SessionStatus::Failed,
                Some(format!(
                    "remote sub-session: the worker could not run it: {error}"
                )),
            )),
            WorkerMsg::Done {
                status,
                response,
                error,
                metadata,
                changes,
                ..
            } => {
                let mut finished = Finished {
                    status,
                    response,
                    error,
                };
                if let Some(changes) = changes {
                    self.apply_changes(applier, changes, &mut finished).await;
                }
                Some(applier.done(finished, &metadata))
            }
        }
    }

    /// Applies the worker's patch where the child works; a patch that cannot be
    /// fetched or applied fails the run (the patch is saved in the session's
    /// directory, `remote-run-<n>.patch`, and the error names it).
    async fn apply_changes(
        &self,
        applier: &Applier<'_>,
        changes: Payload<Changes>,
        finished: &mut Finished,
    ) {
        let child = applier.child();
        let fail = |finished: &mut Finished, error: String| {
            tracing::warn!(session = %self.session, "{error}");
            finished.status = SessionStatus::Failed;
            finished.error = Some(match finished.error.take() {
                Some(before) => format!("{before}; {error}"),
                None => error,
            });
        };
        let changes = match self.hub.payloads().await {
            Ok(store) => changes.unpack(&store).await,
            Err(e) => Err(e),
        };
        let changes = match changes {
            Ok(changes) => changes,
            Err(e) => return fail(finished, format!("the worker's changes are lost: {e}")),
        };
        let metadata: Metadata = child.metadata();
        let run = self.run;
        let patch = changes.patch.clone();
        let applied = isolate::blocking(move || changes::apply(&metadata, &patch, run)).await;
        match applied {
            Ok(applied) => {
                tracing::info!(session = %self.session, ?applied, "worker's changes applied")
            }
            Err(e) => {
                let saved = child.dir().join(format!("remote-run-{run}.patch"));
                let kept = match std::fs::write(&saved, &changes.patch) {
                    Ok(()) => format!("; the patch is saved at {}", saved.display()),
                    Err(_) => String::new(),
                };
                fail(
                    finished,
                    format!("the worker's changes do not apply: {e}{kept}"),
                );
            }
        }
    }
}
