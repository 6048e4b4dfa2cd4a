//! [`Engine`]: the one handle every front end drives the engine through (STYLE.md
//! "One engine handle for every front end"; codex-rs's session handle: `Op`s in,
//! events out). The TUI, `arbor run`, every `arbor session` subcommand, `arbor agent`,
//! the ACP server and a worker's jobs send it [`EngineCommand`]s; each is answered
//! with typed [`EngineReply`]s on the [`Replies`] sink it came with, and every
//! session's progress is published as typed events on the bus ([`Engine::subscribe`]).
//! What a front end only reads it asks as an `EngineQuery` ([`Engine::ask`], `query`).
//! No front end but the TUI sees the [`Runtime`]: the others build their engine from
//! its options ([`Engine::headless`]).
//!
//! Owns: executing each command against the [`Runtime`] (one task per command, so a
//! slow one never holds up the next), opening a session tail-first with one parsed
//! copy of its transcript per process ([`Engine::open`], `open`), following the stored
//! session opened last for what another process appends (`follow`), the files it
//! writes or lists for a front end (`files`), merging, discarding, rewinding and
//! forking a session for every front end (`undo`), what a session changed (`diff`),
//! reading stored sessions for a front end (`sessions`), and that every command is
//! answered: a panic in a store call comes back as [`EngineError::Panicked`] (a panic
//! in a turn is already a failed turn or an error of `Runtime::run_turn`). A command's
//! sink is dropped once the command is answered in full (after the last turn of a
//! `ContinueInterrupted`; for `LoadTranscript`, when the next session is opened).
//!
//! Does not own: the runtime itself (sessions, turns, spawning), the store's reading,
//! or turning replies into a front end's own events (`tui::executor`, `cli::run`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use super::outcome::{EngineError, TurnOutcome};
use super::panics;
use super::runtime::{RootOptions, Runtime, RuntimeOptions};
use crate::session::ids::SessionId;
use crate::session::{EngineCommand, Event};

pub mod diff;
pub mod files;
pub mod follow;
pub mod open;
pub mod query;
pub mod reply;
pub mod sessions;
pub mod stream;
pub mod undo;

use follow::TranscriptFollow;
pub use query::{AgentPlan, QueryReply};
pub use reply::{EarlierMessages, EngineReply, Replies};
pub use stream::{CommandId, EngineClient, EngineOutput, EngineStream};

/// The engine as a front end sees it: commands in, typed replies and events out.
/// Cheap to clone (every clone drives the same runtime and follows one transcript).
#[derive(Clone)]
pub struct Engine {
    runtime: Arc<Runtime>,
    follow: Arc<TranscriptFollow>,
    /// Whether `SetModel` looks up (lists) whether the provider knows the model, for
    /// the reply's `warning`: a person reads it; a headless command prints none.
    warn_unlisted: bool,
}

/// Runs `work` (a store or runtime call, on a blocking thread); a panic in it becomes
/// [`EngineError::Panicked`] (`internal error: <what> panicked: …`, also logged), so
/// the front end always hears back.
pub(crate) fn guarded<T>(
    what: &str,
    work: impl FnOnce() -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    panics::catch_blocking(what, work).unwrap_or_else(|message| {
        Err(EngineError::Panicked {
            what: what.to_string(),
            message,
        })
    })
}

impl Engine {
    /// The handle over `runtime` for an interactive front end, following no
    /// transcript yet: the TUI (`tui::run` still takes the runtime it is built over)
    /// and the tests that build a runtime with injected providers. Every other front
    /// end gets its engine from [`Engine::headless`] and never sees the runtime.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Self {
            runtime,
            follow: Arc::default(),
            warn_unlisted: true,
        }
    }

    /// The handle over a new runtime built from `options`, for a front end with no
    /// person watching a status bar (`arbor run`, `arbor session …`, `arbor agent`,
    /// the ACP server, a worker's job): as [`Engine::new`], except that `SetModel`'s
    /// reply has no `warning` (nobody reads it; looking it up would list the
    /// provider's models, up to 5 s, before the turn starts).
    pub fn headless(options: RuntimeOptions) -> Self {
        Self {
            warn_unlisted: false,
            ..Self::new(Runtime::new(options))
        }
    }

    /// This handle, with `model` (`--model`: `MODEL`, `PROVIDER/MODEL` or a glob) the
    /// model of every new root session that brings none (`None`: the agent's
    /// routing). Checked when a root is created: a bad choice fails its `Submit`,
    /// naming the choice.
    pub fn with_root_model(self, model: Option<String>) -> Self {
        self.runtime.set_root_model(model);
        self
    }

    /// Every event every session of this process publishes from now on, in order
    /// (`session::protocol`'s typed [`Event`]s; subscribe before sending a command to
    /// see all of its events).
    pub fn subscribe(&self) -> UnboundedReceiver<Arc<Event>> {
        self.runtime.bus().subscribe()
    }

    /// Opens `requested` (a session id or unambiguous prefix) tail-first on a blocking
    /// thread and follows it when it is stored (see `open::open`): what
    /// `EngineCommand::LoadTranscript` does. Replies `Opened` then maybe `Earlier`,
    /// or `OpenFailed`; later `Followed` / `StoredSessionChanged` / `SessionsListed`
    /// for what another process writes, until another session is opened.
    pub fn open(&self, requested: impl Into<String>, replies: Replies) {
        let runtime = self.runtime.clone();
        let follow = self.follow.clone();
        let requested = requested.into();
        tokio::task::spawn_blocking(move || open::open(&runtime, &follow, requested, &replies));
    }

    /// Ends this process's work before it exits: cancels every running turn and
    /// waits at most `grace` for them to save what they streamed, then stops the MCP
    /// servers (`Runtime::shutdown`). Returns how many turns were still running.
    pub async fn shutdown(&self, grace: Duration) -> usize {
        self.follow.stop();
        self.runtime.shutdown(grace).await
    }

    /// Stops following the stored session opened last (its `LoadTranscript` is then
    /// answered in full): for a front end that opened it only to read it once.
    pub fn stop_following(&self) {
        self.follow.stop();
    }

    /// Ends what outlives the commands of a headless front end once they are all
    /// answered: stops following and stops the MCP servers the turns started. Running
    /// turns are left alone (see [`Engine::shutdown`] to end them).
    pub async fn close(&self) {
        self.follow.stop();
        self.runtime.mcp().shutdown().await;
    }

    /// Runs `command`, answering on `replies` (see [`EngineReply`] for which replies
    /// each command gets). Returns at once: the work runs in a task of the current
    /// tokio runtime (a blocking thread for store work). Call it inside one.
    pub fn execute(&self, command: EngineCommand, replies: Replies) {
        let runtime = self.runtime.clone();
        match command {
            EngineCommand::Submit {
                session_id,
                agent,
                prompt,
            } => submit(runtime, session_id, agent, prompt, replies),
            EngineCommand::Continue { session_id } => {
                tokio::spawn(async move {
                    let result = runtime.continue_turn(&session_id).await;
                    replies.send(turn_reply(session_id, result));
                });
            }
            EngineCommand::ContinueInterrupted { session_id } => {
                continue_interrupted(runtime, session_id, replies);
            }
            EngineCommand::Steer { session_id, text } => {
                tokio::spawn(async move {
                    let result = runtime.steer(&session_id, text.clone()).await;
                    offered(&replies, session_id, text, result);
                });
            }
            EngineCommand::Queue {
                session_id,
                text,
                position,
            } => {
                tokio::spawn(async move {
                    let result = runtime.queue(&session_id, text.clone(), position).await;
                    offered(&replies, session_id, text, result);
                });
            }
            EngineCommand::Unqueue { session_id, id } => {
                if let Err(error) = runtime.unqueue(&session_id, id) {
                    replies.send(EngineReply::NotSent {
                        session_id,
                        text: None,
                        error,
                    });
                }
            }
            EngineCommand::Cancel { session_id } => runtime.cancel(&session_id),
            EngineCommand::LoadTranscript { session_id } => {
                self.open(String::from(session_id), replies);
            }
            EngineCommand::LoadDiff {
                session_id,
                subtree,
            } => load_diff(runtime, session_id, subtree, replies),
            EngineCommand::ResolveProviderLabel => resolve_provider_label(runtime, replies),
            EngineCommand::ResolveApproval {
                session_id,
                tool_call_id,
                decision,
            } => {
                if let Err(error) = runtime.resolve_approval(&session_id, &tool_call_id, decision) {
                    replies.send(EngineReply::Failed {
                        session_id: Some(session_id),
                        error,
                    });
                }
            }
            EngineCommand::SetModel { session_id, model } => {
                set_model(runtime, session_id, model, self.warn_unlisted, replies);
            }
            EngineCommand::Compact { session_id, focus } => {
                tokio::spawn(async move {
                    let result = runtime.compact(&session_id, &focus).await;
                    replies.send(EngineReply::Compacted { session_id, result });
                });
            }
            EngineCommand::ListMcpServers => {
                replies.send(EngineReply::McpServers(runtime.mcp_status()));
            }
            EngineCommand::RenameSession { session_id, title } => {
                tokio::task::spawn_blocking(move || {
                    let result =
                        guarded("renaming a session", || runtime.rename(&session_id, &title));
                    replies.send(EngineReply::SessionRenamed { session_id, result });
                });
            }
            EngineCommand::ExportSession { session_id } => export(runtime, session_id, replies),
            EngineCommand::ListProjectFiles { root } => list_project_files(root, replies),
            EngineCommand::MergeSession {
                session_id,
                markers,
            } => merge(runtime, session_id, markers, replies),
            EngineCommand::DiscardSession { session_id } => {
                undo_task(
                    runtime,
                    replies,
                    session_id,
                    "discarding a session",
                    |rt, id| {
                        undo::discard_in(rt.store(), id, rt.live(id).as_deref())
                            .map(undo::UndoDone::Discarded)
                    },
                );
            }
            EngineCommand::RewindSession {
                session_id,
                to_turn,
                force,
            } => {
                let work = move |rt: &Runtime, id: &str| {
                    undo::rewind_in(rt.store(), id, to_turn, force, rt.live(id).as_deref())
                        .map(undo::UndoDone::Rewound)
                };
                undo_task(runtime, replies, session_id, "rewinding a session", work);
            }
            EngineCommand::ForkSession {
                session_id,
                at_turn,
                rewind,
            } => fork(runtime, session_id, (at_turn, None), rewind, replies),
            EngineCommand::ForkSessionAs {
                session_id,
                at_turn,
                name,
            } => fork(runtime, session_id, (at_turn, Some(name)), false, replies),
            EngineCommand::ListSessions => {
                tokio::task::spawn_blocking(move || {
                    let result = guarded("listing sessions", || Ok(runtime.store().list()?));
                    replies.send(EngineReply::SessionsListed(result));
                });
            }
        }
    }
}

/// `Submit`: creates a root first when `session_id` is `None` (`SessionCreated`), then
/// runs the turn (`TurnFinished`, or `Failed`).
fn submit(
    runtime: Arc<Runtime>,
    session_id: Option<SessionId>,
    agent: Option<String>,
    prompt: String,
    replies: Replies,
) {
    tokio::spawn(async move {
        let id = match session_id {
            Some(id) => id,
            None => match create_root(&runtime, agent).await {
                Ok(id) => {
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
    session_id: Option<SessionId>,
    model: String,
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
            undo::merge_markers_in(rt.store(), id, live.as_deref())
        } else {
            undo::merge_in(rt.store(), id, live.as_deref())
        }
        .map(undo::UndoDone::Merged)
    };
    undo_task(runtime, replies, session_id, "merging a session", work);
}

/// `ForkSession` / `ForkSessionAs`: the fork at `at_turn` named `name` (`None`: a new
/// UUID), after rewinding the original's files when `rewind`; `Undone`.
fn fork(
    runtime: Arc<Runtime>,
    session_id: SessionId,
    (at_turn, name): (Option<u64>, Option<String>),
    rewind: bool,
    replies: Replies,
) {
    let work = move |rt: &Runtime, id: &str| {
        let live = rt.live(id);
        undo::fork_in(
            rt.store(),
            id,
            at_turn,
            name.as_deref(),
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
