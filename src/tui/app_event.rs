//! The TUI's message types: what flows into the `App` ([`AppEvent`]) and what input
//! widgets report ([`KeyOutcome`] carrying a [`UiAction`]). What the `App` asks the
//! engine to do is the protocol's [`EngineCommand`], re-exported here; what the engine
//! answers arrives whole, as [`AppEvent::Engine`] and [`AppEvent::Reply`] in the order
//! the TUI's engine stream gave them.
//!
//! Owns: these shapes only. Does not own: handling them (`app`), submitting commands
//! (`executor`), or the protocol (`session::protocol`, `engine::handle`).

use crate::session::ids::SessionId;
use std::path::PathBuf;
use std::sync::Arc;

pub use super::action::{KeyOutcome, UiAction};
use crate::agent::Registry;
use crate::agent::reload::ReloadEvent;
use crate::engine::EngineOutput;
pub use crate::engine::EngineReply;
pub use crate::session::EngineCommand;
use crate::session::Event;
use crate::tui::error::UiError;
use crate::tui::state::thread_earlier::{EarlierCells, EarlierLayout};

/// Everything that can change UI state. The `App` is the only consumer; the run loop
/// produces these from the terminal, the engine's stream, the registry, the watcher,
/// the TUI's own background work and signals.
#[derive(Debug)]
pub enum AppEvent {
    /// A terminal input event (key, mouse, paste, resize, focus) from crossterm.
    Input(crossterm::event::Event),
    /// One event some session of this process published (the engine stream's
    /// [`EngineOutput::Event`]).
    Engine(Arc<Event>),
    /// The engine's reply to one of the TUI's commands (the engine stream's
    /// [`EngineOutput::Reply`]), errors carried whole.
    Reply(EngineReply),
    /// The live agent registry changed (the watcher rebuilt it). The `App` diffs it
    /// against the previous one (added / changed / removed / now invalid) and shows a
    /// "reloaded" mark.
    RegistryReloaded(Arc<Registry>),
    /// A watcher event: bundle/config/theme changes (agent changes arrive as
    /// `RegistryReloaded`; `ReloadEvent::Agents` is ignored to avoid a double mark).
    Reload(ReloadEvent),
    /// The earlier part (up to `end`) of `session_id`'s transcript, opened tail-first
    /// ([`EngineReply::Earlier`]), laid out as cells off the UI thread (the App asked
    /// for it: [`App::take_layouts`](super::App::take_layouts)), or why it could not be
    /// read or laid out.
    EarlierLoaded {
        session_id: SessionId,
        end: u64,
        result: Result<Box<EarlierCells>, UiError>,
    },
    /// `$EDITOR` returned for `path` (`Err` holds why it failed).
    EditorFinished {
        path: PathBuf,
        result: Result<(), UiError>,
    },
    /// Time passed: advance spinners, live elapsed times and expire notes.
    Tick,
    /// Quit now (a termination signal arrived).
    Shutdown,
}

impl AppEvent {
    /// What the `App` takes from one item of the engine stream: an event or a reply;
    /// `None` for [`EngineOutput::Answered`] (the TUI waits for no command's end).
    pub fn from_engine(output: EngineOutput) -> Option<Self> {
        match output {
            EngineOutput::Event(event) => Some(Self::Engine(event)),
            EngineOutput::Reply { command: _, reply } => Some(Self::Reply(reply)),
            EngineOutput::Answered { command: _ } => None,
        }
    }

    /// [`AppEvent::EarlierLoaded`] with `layout`'s cells (blocking: the run loop runs
    /// it on a blocking thread).
    pub fn laid_out(layout: EarlierLayout) -> Self {
        let (session_id, end) = (layout.session_id.clone(), layout.end);
        Self::EarlierLoaded {
            session_id,
            end,
            result: layout.lay_out(),
        }
    }
}
