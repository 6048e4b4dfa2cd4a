//! The TUI's side of the engine handle: hands each of the `App`'s engine commands to
//! [`Engine`] and turns every typed [`EngineReply`] into the [`AppEvent`] the `App`
//! handles.
//!
//! Owns: that conversion (errors rendered as their text, the earlier part of a
//! session opened tail-first laid out as cells — on the engine's blocking thread, a
//! panic there reported as the part's error), and ending every turn when the TUI
//! quits (`Executor::shutdown` → `Engine::shutdown`). Does not own: executing
//! commands, opening or following sessions (`engine::handle`), or the cells
//! (`state::thread_earlier`).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::mpsc::UnboundedSender;

use super::app_event::{AppEvent, EngineCommand};
use super::runloop::Executor;
use crate::engine::panics::{self, Panic};
use crate::engine::{EarlierMessages, Engine, EngineError, EngineReply, Replies, Runtime};
use crate::tui::error::UiError;
use crate::tui::state::thread_earlier::EarlierCells;

/// Runs the `App`'s commands on the engine handle over a runtime.
pub struct RuntimeExecutor {
    engine: Engine,
}

impl RuntimeExecutor {
    /// An executor driving `runtime` through an [`Engine`] handle of its own.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Self::with_engine(Engine::new(runtime))
    }

    /// An executor driving `engine` (the handle whose events the run loop shows).
    pub fn with_engine(engine: Engine) -> Self {
        Self { engine }
    }
}

/// How long quitting waits for cancelled turns to save what they streamed
/// (`Engine::shutdown`); below the signal handler's grace (`tui::SHUTDOWN_GRACE`).
pub const QUIT_GRACE: Duration = Duration::from_secs(2);

impl Executor for RuntimeExecutor {
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.engine.shutdown(QUIT_GRACE).await;
        })
    }

    fn execute(&self, command: EngineCommand, results: UnboundedSender<AppEvent>) {
        let replies = Replies::new(move |reply| results.send(app_event(reply)).is_ok());
        self.engine.execute(command, replies);
    }
}

/// The `App`'s event for `reply`.
fn app_event(reply: EngineReply) -> AppEvent {
    let text = UiError::from;
    match reply {
        EngineReply::SessionCreated { session_id } => AppEvent::SessionCreated { session_id },
        EngineReply::TurnFinished(outcome) => AppEvent::TurnFinished(outcome),
        EngineReply::Failed { session_id, error } => AppEvent::CommandFailed {
            session_id,
            message: error.to_string(),
        },
        EngineReply::NotSent {
            session_id,
            text,
            error,
        } => AppEvent::NotSent {
            session_id,
            text,
            message: error.to_string(),
        },
        EngineReply::Opened {
            requested,
            session,
            earlier: None,
        } => AppEvent::TranscriptLoaded {
            requested,
            result: Ok(session),
        },
        EngineReply::Opened {
            requested,
            session,
            earlier: Some(earlier),
        } => AppEvent::TranscriptTailLoaded {
            requested,
            session,
            earlier,
        },
        EngineReply::OpenFailed { requested, error } => AppEvent::TranscriptLoaded {
            requested,
            result: Err(UiError::from(error)),
        },
        EngineReply::Earlier {
            session_id,
            end,
            result,
        } => AppEvent::EarlierLoaded {
            session_id,
            end,
            result: result
                .and_then(|part| {
                    cells(end, part).map_err(|message| EngineError::Panicked {
                        what: LAYOUT.to_string(),
                        message,
                    })
                })
                .map_err(text),
        },
        EngineReply::Followed(event) => AppEvent::Engine(event),
        EngineReply::StoredSessionChanged(metadata) => AppEvent::StoredSessionChanged(metadata),
        EngineReply::SessionsListed(result) => AppEvent::SessionsListed(result.map_err(text)),
        EngineReply::ProviderLabel(label) => AppEvent::ProviderLabelResolved { label },
        EngineReply::ModelSwitched {
            session_id,
            result,
            warning,
        } => AppEvent::ModelSwitched {
            session_id,
            result: result.map_err(text),
            warning,
        },
        EngineReply::DiffLoaded {
            session_id,
            subtree,
            result,
        } => AppEvent::DiffLoaded {
            session_id,
            subtree,
            result: result.map_err(text),
        },
        EngineReply::SessionRenamed { session_id, result } => AppEvent::SessionRenamed {
            session_id,
            result: result.map_err(text),
        },
        EngineReply::Exported { session_id, result } => AppEvent::Exported {
            session_id,
            result: result.map_err(text),
        },
        EngineReply::ProjectFiles { root, files } => AppEvent::ProjectFiles { root, files },
        EngineReply::McpServers(servers) => AppEvent::McpServersListed(servers),
        EngineReply::Compacted { session_id, result } => match result {
            Ok(done) => AppEvent::Compacted {
                note: crate::tui::state::context::compacted_note(&done),
            },
            Err(e) => AppEvent::CommandFailed {
                session_id: Some(session_id),
                message: e.to_string(),
            },
        },
        EngineReply::Undone { session_id, result } => AppEvent::Undone {
            session_id,
            result: result.map_err(UiError::from),
        },
    }
}

/// The earlier part of a session as cells (laid out here, on the engine's blocking
/// thread; a panic is caught and logged). The part's messages are dropped once laid
/// out (a live session's next append would otherwise copy its message list).
fn cells(end: u64, mut part: EarlierMessages) -> Result<Box<EarlierCells>, Panic> {
    panics::catch_blocking(LAYOUT, move || {
        let warnings = std::mem::take(&mut part.warnings);
        Box::new(EarlierCells::of(end, part.messages(), warnings))
    })
}

/// What [`cells`] does, as a panic there is named.
const LAYOUT: &str = "laying out earlier messages";
