//! Executing an [`EngineCommand`] ([`Engine::execute`]): one small function per
//! command, each in a task of its own (a blocking thread for store work), so a slow
//! one never holds up the next and every one is answered on its [`Replies`].
//!
//! Owns: which runtime call or store step answers which command, and the replies it
//! sends (see [`EngineReply`]). Does not own: the runtime's work (`runtime`, `turn`,
//! `spawn`), the undo steps (`undo`), what a session changed (`diff`).

use std::sync::Arc;

use super::super::outcome::{EngineError, TurnOutcome};
use super::super::panics;
use super::super::runtime::{RootOptions, Runtime};
use super::{Engine, EngineReply, Replies, diff, files, guarded, undo};
use crate::session::EngineCommand;
use crate::session::ids::SessionId;

impl Engine {
    /// Runs `command`, answering on `replies` (see [`EngineReply`] for which replies
    /// each command gets). Returns at once: the work runs in a task of the current
    /// tokio runtime (a blocking thread for store work). Call it inside one.
    pub fn execute(&self, command: EngineCommand, replies: Replies) {
        let rt = self.runtime.clone();
        match command {
            EngineCommand::Submit {
                session_id,
                agent,
                prompt,
                cleared,
            } => submit(rt, session_id, (agent, cleared), prompt, replies),
            EngineCommand::CreateSession { agent } => create_session(rt, agent, replies),
            EngineCommand::Continue { session_id } => continue_turn(rt, session_id, replies),
            EngineCommand::ContinueInterrupted { session_id } => {
                continue_interrupted(rt, session_id, replies);
            }
            EngineCommand::Steer { session_id, text } => steer(rt, session_id, text, replies),
            EngineCommand::Queue {
                session_id,
                text,
                position,
            } => queue(rt, session_id, (text, position), replies),
            EngineCommand::Unqueue { session_id, id } => unqueue(&rt, session_id, id, &replies),
            EngineCommand::Cancel { session_id } => rt.cancel(&session_id),
            EngineCommand::LoadTranscript { session_id } => {
                self.open(String::from(session_id), replies);
            }
            EngineCommand::LoadDiff {
                session_id,
                subtree,
            } => load_diff(rt, session_id, subtree, replies),
            EngineCommand::ResolveProviderLabel => resolve_provider_label(rt, replies),
            EngineCommand::ResolveApproval {
                session_id,
                tool_call_id,
                decision,
            } => {
                if let Err(error) = rt.resolve_approval(&session_id, &tool_call_id, decision) {
                    let session_id = Some(session_id);
                    replies.send(EngineReply::Failed { session_id, error });
                }
            }
            EngineCommand::SetModel { session_id, model } => {
                set_model(rt, (session_id, model), self.warn_unlisted, replies);
            }
            EngineCommand::Compact { session_id, focus } => compact(rt, session_id, focus, replies),
            EngineCommand::ListHooks => {
                replies.send(EngineReply::Hooks(rt.hooks_listing()));
            }
            EngineCommand::ListMcpServers => {
                replies.send(EngineReply::McpServers(rt.mcp_status()));
            }
            EngineCommand::RenameSession { session_id, title } => {
                rename(rt, session_id, title, replies);
            }
            EngineCommand::ExportSession { session_id } => export(rt, session_id, replies),
            EngineCommand::ListProjectFiles { root } => list_project_files(root, replies),
            EngineCommand::MergeSession {
                session_id,
                markers,
            } => merge(rt, session_id, markers, replies),
            EngineCommand::DiscardSession { session_id } => discard(rt, session_id, replies),
            EngineCommand::RewindSession {
                session_id,
                to_turn,
                force,
            } => rewind(rt, session_id, (to_turn, force), replies),
            EngineCommand::ForkSession {
                session_id,
                at_turn,
                rewind,
            } => fork(rt, session_id, (at_turn, None), rewind, replies),
            EngineCommand::ForkSessionAs {
                session_id,
                at_turn,
                title,
            } => fork(rt, session_id, (at_turn, Some(title)), false, replies),
            EngineCommand::ListSessions => list_sessions(rt, replies),
        }
    }
}

/// `Continue`: the stopped session's turn again (`TurnFinished`, or `Failed`).
fn continue_turn(runtime: Arc<Runtime>, session_id: SessionId, replies: Replies) {
    tokio::spawn(async move {
        let result = runtime.continue_turn(&session_id).await;
        replies.send(turn_reply(session_id, result));
    });
}

/// `Steer`: see [`offered`].
fn steer(runtime: Arc<Runtime>, session_id: SessionId, text: String, replies: Replies) {
    tokio::spawn(async move {
        let result = runtime.steer(&session_id, text.clone()).await;
        offered(&replies, session_id, text, result);
    });
}

/// `Queue` of `text` at `position`: see [`offered`].
fn queue(
    runtime: Arc<Runtime>,
    session_id: SessionId,
    (text, position): (String, Option<usize>),
    replies: Replies,
) {
    tokio::spawn(async move {
        let result = runtime.queue(&session_id, text.clone(), position).await;
        offered(&replies, session_id, text, result);
    });
}

/// `Unqueue`: nothing, or `NotSent` when the message no longer waits.
fn unqueue(runtime: &Runtime, session_id: SessionId, id: u64, replies: &Replies) {
    if let Err(error) = runtime.unqueue(&session_id, id) {
        replies.send(EngineReply::NotSent {
            session_id,
            text: None,
            error,
        });
    }
}

/// `Compact` with `focus`: `Compacted`.
fn compact(runtime: Arc<Runtime>, session_id: SessionId, focus: String, replies: Replies) {
    tokio::spawn(async move {
        let result = runtime.compact(&session_id, &focus).await;
        replies.send(EngineReply::Compacted { session_id, result });
    });
}

/// `RenameSession` to `title`: `SessionRenamed`.
fn rename(runtime: Arc<Runtime>, session_id: SessionId, title: String, replies: Replies) {
    tokio::task::spawn_blocking(move || {
        let result = guarded("renaming a session", || runtime.rename(&session_id, &title));
        replies.send(EngineReply::SessionRenamed { session_id, result });
    });
}

/// `ListSessions`: `SessionsListed` (this project's, newest first).
fn list_sessions(runtime: Arc<Runtime>, replies: Replies) {
    tokio::task::spawn_blocking(move || {
        let result = guarded("listing sessions", || Ok(runtime.store().list()?));
        replies.send(EngineReply::SessionsListed(result));
    });
}

/// `DiscardSession`: `Undone`.
fn discard(runtime: Arc<Runtime>, session_id: SessionId, replies: Replies) {
    let work = |rt: &Runtime, id: &str| {
        undo::discard(rt.store(), id, rt.live(id).as_deref()).map(undo::UndoDone::Discarded)
    };
    undo_task(runtime, replies, session_id, "discarding a session", work);
}

/// `RewindSession` to `to_turn` (with `force`, files changed since too): `Undone`.
fn rewind(
    runtime: Arc<Runtime>,
    session_id: SessionId,
    (to_turn, force): (u64, bool),
    replies: Replies,
) {
    let work = move |rt: &Runtime, id: &str| {
        undo::rewind(rt.store(), id, to_turn, force, rt.live(id).as_deref())
            .map(undo::UndoDone::Rewound)
    };
    undo_task(runtime, replies, session_id, "rewinding a session", work);
}

/// `Submit`: creates a root first when `session_id` is `None` (`SessionCreated`), then
/// runs the turn (`TurnFinished`, or `Failed`).
fn submit(
    runtime: Arc<Runtime>,
    session_id: Option<SessionId>,
    (agent, cleared): (Option<String>, bool),
    prompt: String,
    replies: Replies,
) {
    tokio::spawn(async move {
        let id = match session_id {
            Some(id) => id,
            None => match create_root(&runtime, agent).await {
                Ok(id) => {
                    if let Some(live) = runtime.live(&id) {
                        live.cleared
                            .store(cleared, std::sync::atomic::Ordering::SeqCst);
                    }
                    replies.send(EngineReply::SessionCreated {
                        session_id: id.clone(),
                    });
                    id
                }
                Err(error) => {
                    replies.send(EngineReply::Failed {
                        session_id: None,
                        error,
                    });
                    return;
                }
            },
        };
        let result = runtime.run_turn(&id, prompt).await;
        replies.send(turn_reply(id, result));
    });
}

/// `CreateSession`: the new root (`SessionCreated`), or why none (`Failed`).
fn create_session(runtime: Arc<Runtime>, agent: Option<String>, replies: Replies) {
    tokio::spawn(async move {
        match create_root(&runtime, agent).await {
            Ok(session_id) => replies.send(EngineReply::SessionCreated { session_id }),
            Err(error) => replies.send(EngineReply::Failed {
                session_id: None,
                error,
            }),
        }
    });
}

/// `ContinueInterrupted`: one reply per continued turn, or `Failed` when the tree
/// cannot be read.
fn continue_interrupted(runtime: Arc<Runtime>, session_id: SessionId, replies: Replies) {
    tokio::spawn(async move {
        match runtime.continue_interrupted(&session_id).await {
            Ok(turns) => {
                for result in turns {
                    let id = match &result {
                        Ok(outcome) => outcome.session_id.clone(),
                        Err(_) => session_id.clone(),
                    };
                    replies.send(turn_reply(id, result));
                }
            }
            Err(error) => {
                replies.send(EngineReply::Failed {
                    session_id: Some(session_id),
                    error,
                });
            }
        }
    });
}

/// `LoadDiff`: `DiffLoaded` (`diff::session_changes`), read on a blocking thread.
fn load_diff(runtime: Arc<Runtime>, session_id: SessionId, subtree: bool, replies: Replies) {
    tokio::task::spawn_blocking(move || {
        let result = guarded("reading a session's changes", || {
            diff::session_changes(runtime.store(), &session_id, subtree)
        });
        replies.send(EngineReply::DiffLoaded {
            session_id,
            subtree,
            result,
        });
    });
}

/// `ResolveProviderLabel`: `ProviderLabel`, or nothing (logged) when none resolves.
fn resolve_provider_label(runtime: Arc<Runtime>, replies: Replies) {
    tokio::spawn(async move {
        match runtime.resolve_provider_label().await {
            Ok(label) => {
                replies.send(EngineReply::ProviderLabel(label));
            }
            Err(e) => tracing::debug!("no provider label: {e}"),
        }
    });
}

/// `SetModel`: `ModelSwitched`, with the provider's word on an unlisted model when
/// `warn_unlisted`.
fn set_model(
    runtime: Arc<Runtime>,
    (session_id, model): (Option<SessionId>, String),
    warn_unlisted: bool,
    replies: Replies,
) {
    tokio::spawn(async move {
        let result = match &session_id {
            Some(id) => runtime.set_model(id, &model).await,
            None => {
                runtime.set_root_model(Some(model));
                runtime.provider_label()
            }
        };
        let warning = match &result {
            Ok(label) if warn_unlisted => runtime.unlisted_model(label).await,
            Ok(_) | Err(_) => None,
        };
        replies.send(EngineReply::ModelSwitched {
            session_id,
            result,
            warning,
        });
    });
}

/// `ExportSession`: the Markdown export written to a new file in the working
/// directory (`Exported`).
fn export(runtime: Arc<Runtime>, session_id: SessionId, replies: Replies) {
    tokio::task::spawn_blocking(move || {
        let result = guarded("exporting a session", || {
            let text = crate::session::export::export_markdown(runtime.store(), &session_id)?;
            Ok(files::write_export(
                &runtime.paths().cwd,
                &session_id,
                &text,
            )?)
        });
        replies.send(EngineReply::Exported { session_id, result });
    });
}

/// `ListProjectFiles`: `ProjectFiles` (empty when listing panicked).
fn list_project_files(root: std::path::PathBuf, replies: Replies) {
    tokio::task::spawn_blocking(move || {
        let files = panics::catch_blocking("listing project files", || files::project_files(&root))
            .unwrap_or_default();
        replies.send(EngineReply::ProjectFiles {
            root,
            files: Arc::new(files),
        });
    });
}

/// `MergeSession` (with `markers`, conflicts written as markers): `Undone`.
fn merge(runtime: Arc<Runtime>, session_id: SessionId, markers: bool, replies: Replies) {
    let work = move |rt: &Runtime, id: &str| {
        let live = rt.live(id);
        if markers {
            undo::merge_with_markers(rt.store(), id, live.as_deref())
        } else {
            undo::merge(rt.store(), id, live.as_deref())
        }
        .map(undo::UndoDone::Merged)
    };
    undo_task(runtime, replies, session_id, "merging a session", work);
}

/// `ForkSession` / `ForkSessionAs`: the fork at `at_turn` titled `title` (`None`:
/// the original's title marked as a fork), after rewinding the original's files when `rewind`; `Undone`.
fn fork(
    runtime: Arc<Runtime>,
    session_id: SessionId,
    (at_turn, title): (Option<u64>, Option<String>),
    rewind: bool,
    replies: Replies,
) {
    let work = move |rt: &Runtime, id: &str| {
        let live = rt.live(id);
        undo::fork(
            rt.store(),
            id,
            at_turn,
            title.as_deref(),
            rewind,
            live.as_deref(),
        )
        .map(|(forked, rewound)| undo::UndoDone::Forked { forked, rewound })
    };
    undo_task(runtime, replies, session_id, "forking a session", work);
}

/// Runs `work` (a merge, discard, rewind or fork of `session_id`) on a blocking
/// thread and answers `Undone`: refused (`Running`) while the session runs a turn
/// here; a panic in it is answered as
/// [`undo::UndoError::Panicked`] (and logged), so the front end always hears back.
fn undo_task(
    runtime: Arc<Runtime>,
    replies: Replies,
    session_id: SessionId,
    what: &'static str,
    work: impl FnOnce(&Runtime, &str) -> Result<undo::UndoDone, undo::UndoError> + Send + 'static,
) {
    tokio::task::spawn_blocking(move || {
        let running = runtime.live(&session_id).is_some_and(|l| l.is_running());
        let result = if running {
            Err(undo::UndoError::Running(session_id.to_string()))
        } else {
            panics::catch_blocking(what, || work(&runtime, &session_id))
                .unwrap_or_else(|message| Err(undo::UndoError::Panicked { what, message }))
        };
        replies.send(EngineReply::Undone { session_id, result });
    });
}

/// Creates a root session with `agent` (the bundle's root agent when `None`) and the
/// runtime's model choice for new roots. Creating may block (store writes, a loopback
/// probe) and may await routing: a blocking thread drives it.
async fn create_root(
    runtime: &Arc<Runtime>,
    agent: Option<String>,
) -> Result<SessionId, EngineError> {
    let rt = runtime.clone();
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        guarded("creating a session", || {
            let options = RootOptions { agent, model: None };
            handle.block_on(rt.create_root_with(options))
        })
    })
    .await
    .unwrap_or_else(|e| {
        Err(EngineError::TaskFailed {
            what: "session creation",
            message: e.to_string(),
        })
    })
}

/// The reply to a turn of `session_id`: its outcome, or the error that kept it from
/// running.
fn turn_reply(session_id: SessionId, result: Result<TurnOutcome, EngineError>) -> EngineReply {
    match result {
        Ok(outcome) => EngineReply::TurnFinished(outcome),
        Err(error) => EngineReply::Failed {
            session_id: Some(session_id),
            error,
        },
    }
}

/// Replies to a steer or queue: the turn it started (`TurnFinished`), nothing when the
/// running turn took it, or `NotSent` with `text` so the person gets it back.
fn offered(
    replies: &Replies,
    session_id: SessionId,
    text: String,
    result: Result<Option<TurnOutcome>, EngineError>,
) {
    match result {
        Ok(Some(outcome)) => {
            replies.send(EngineReply::TurnFinished(outcome));
        }
        Ok(None) => {}
        Err(error) => {
            replies.send(EngineReply::NotSent {
                session_id,
                text: Some(text),
                error,
            });
        }
    }
}
