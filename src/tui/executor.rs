//! The TUI's side of the engine handle: submits the `App`'s engine commands through
//! the TUI's [`EngineClient`] (their replies, and every event, arrive in order on the
//! [`EngineStream`] made with it, which the run loop reads), and ends every turn when
//! the TUI quits (`Executor::shutdown` → `Engine::shutdown`).
//!
//! Owns: the TUI's connection. Does not own: executing commands, opening or following
//! sessions (`engine::handle`), reading the stream (`runloop`) or what the `App` makes
//! of it (`app`).

use std::time::Duration;

use futures::future::BoxFuture;

use super::app_event::EngineCommand;
use super::runloop::Executor;
use crate::engine::{Engine, EngineClient, EngineStream};

/// Submits the `App`'s commands to the engine through the TUI's client.
pub struct RuntimeExecutor {
    client: EngineClient,
}

impl RuntimeExecutor {
    /// The TUI's connection to `engine`: the executor and the stream its commands'
    /// replies and every event arrive on (subscribed to the bus now).
    pub fn connect(engine: &Engine) -> (Self, EngineStream) {
        let (client, stream) = engine.connect();
        (Self { client }, stream)
    }
}

/// How long quitting waits for cancelled turns to save what they streamed
/// (`Engine::shutdown`); below the signal handler's grace (`tui::SHUTDOWN_GRACE`).
pub const QUIT_GRACE: Duration = Duration::from_secs(2);

impl Executor for RuntimeExecutor {
    fn submit(&self, command: EngineCommand) {
        let id = self.client.submit(command);
        tracing::trace!(command = id.0, "submitted");
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.client.engine().shutdown(QUIT_GRACE).await;
        })
    }
}
