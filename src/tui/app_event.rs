//! The TUI's message types: what flows into the `App` ([`AppEvent`]) and what input
//! widgets report ([`KeyOutcome`] carrying a [`UiAction`]). What the `App` asks the
//! engine to do is the protocol's [`EngineCommand`], re-exported here.
//!
//! Owns: these shapes only. Does not own: handling them (`app`), executing commands
//! (`executor`), or the protocol (`session::protocol`).

use crate::session::ids::SessionId;
use std::path::PathBuf;
use std::sync::Arc;

pub use super::action::{KeyOutcome, UiAction};
use crate::agent::Registry;
use crate::agent::reload::ReloadEvent;
use crate::engine::TurnOutcome;
use crate::engine::handle::undo::UndoDone;
pub use crate::session::EngineCommand;
use crate::session::{Event, LoadedSession, Metadata};
use crate::tool::filesystem::changes::SessionDiff;
use crate::tui::error::UiError;
use crate::tui::state::thread_earlier::EarlierCells;

/// Everything that can change UI state. The `App` is the only consumer; background
/// tasks (bus forwarding, command execution, the editor) produce these.
#[derive(Debug, Clone)]
pub enum AppEvent {
    /// A terminal input event (key, mouse, paste, resize, focus) from crossterm.
    Input(crossterm::event::Event),
    /// One event from the session event bus (any session of this process).
    Engine(Arc<Event>),
    /// The live agent registry changed (the watcher rebuilt it). The `App` diffs it
    /// against the previous one (added / changed / removed / now invalid) and shows a
    /// "reloaded" mark.
    RegistryReloaded(Arc<Registry>),
    /// A watcher event: bundle/config/theme changes (agent changes arrive as
    /// `RegistryReloaded`; `ReloadEvent::Agents` is ignored to avoid a double mark).
    Reload(ReloadEvent),
    /// Result of [`EngineCommand::ListMcpServers`]: each server's state and tools.
    McpServersListed(Vec<crate::tool::mcp::McpServerStatus>),
    /// Result of [`EngineCommand::ListSessions`]: stored session metadata, newest first,
    /// or the store error's text.
    SessionsListed(Result<Vec<Metadata>, UiError>),
    /// The metadata of the stored session the TUI follows (`engine::handle::follow`),
    /// read again because another process changed it (a turn started or ended there):
    /// the tree shows its status, times and usage. Never sent for a session live here.
    StoredSessionChanged(Box<Metadata>),
    /// Result of [`EngineCommand::LoadTranscript`] for `requested` (an id or prefix as
    /// sent): the loaded session (whose metadata holds the full id) or the error text.
    TranscriptLoaded {
        requested: String,
        result: Result<Box<LoadedSession>, UiError>,
    },
    /// Result of [`EngineCommand::LoadTranscript`] for a transcript long enough to be
    /// opened tail-first: the session with its newest messages only; the rest, up to
    /// byte `earlier` of the transcript (for a session live in this process: up to
    /// message `earlier` of the engine's transcript), follows as
    /// [`AppEvent::EarlierLoaded`].
    TranscriptTailLoaded {
        requested: String,
        session: Box<LoadedSession>,
        earlier: u64,
    },
    /// The earlier part (up to byte `end`) of `session_id`'s transcript, opened
    /// tail-first, as cells, or why it could not be read.
    EarlierLoaded {
        session_id: SessionId,
        end: u64,
        result: Result<Box<EarlierCells>, UiError>,
    },
    /// A [`EngineCommand::Submit`] without a session id created this root session; its
    /// turn is now running.
    SessionCreated { session_id: SessionId },
    /// A submitted turn ended (completed, failed or cancelled).
    TurnFinished(TurnOutcome),
    /// Result of [`EngineCommand::ResolveProviderLabel`]: `provider/model` of what a new
    /// root session uses, with a server-decided model resolved (`openai/qwen2.5-coder`),
    /// or the bare provider id when the server did not list one in time. Replaces a
    /// status-bar label that has no model yet; a label that names a model (configured,
    /// or learned from a `provider:response`) and the no-provider warning stay.
    ProviderLabelResolved { label: String },
    /// Result of [`EngineCommand::SetModel`]: `Ok(provider/model)`, what
    /// `session_id`'s next turns use (`None`: new root sessions), or why the choice
    /// cannot be used (a note; a turn running meanwhile is not affected). `warning`:
    /// the model is not among the ones its provider lists (switched anyway).
    ModelSwitched {
        session_id: Option<SessionId>,
        result: Result<String, UiError>,
        warning: Option<String>,
    },
    /// A command failed before or while running a turn (`EngineError` text, e.g. the
    /// no-provider message). `session_id` is the session it concerned, when known.
    CommandFailed {
        session_id: Option<SessionId>,
        message: String,
    },
    /// A [`EngineCommand::Steer`], [`EngineCommand::Queue`] or
    /// [`EngineCommand::Unqueue`] for `session_id` failed with `message`: the text it
    /// carried (none for an unqueue) was not sent and goes back to the composer.
    NotSent {
        session_id: SessionId,
        text: Option<String>,
        message: String,
    },
    /// `$EDITOR` returned for `path` (`Err` holds why it failed).
    EditorFinished {
        path: PathBuf,
        result: Result<(), UiError>,
    },
    /// Result of [`EngineCommand::LoadDiff`] for `session_id` with `subtree`: the
    /// session's diffs (itself first, then changed descendants) or the error text.
    DiffLoaded {
        session_id: SessionId,
        subtree: bool,
        result: Result<Vec<SessionDiff>, UiError>,
    },
    /// Result of [`EngineCommand::RenameSession`]: the title stored, or the error.
    SessionRenamed {
        session_id: SessionId,
        result: Result<String, UiError>,
    },
    /// Result of [`EngineCommand::MergeSession`], `DiscardSession`, `RewindSession` or
    /// `ForkSession` of `session_id`: what it did, or why it did nothing.
    Undone {
        session_id: SessionId,
        result: Result<UndoDone, UiError>,
    },
    /// Result of [`EngineCommand::ExportSession`]: the Markdown file written, or the
    /// error (nothing written).
    Exported {
        session_id: SessionId,
        result: Result<PathBuf, UiError>,
    },
    /// Result of [`EngineCommand::ListProjectFiles`]: the files under `root`,
    /// relative, sorted.
    ProjectFiles {
        root: PathBuf,
        files: Arc<Vec<String>>,
    },
    /// Answer to [`EngineCommand::Compact`] that went through: a note for the status
    /// bar (the compaction itself arrives as `context:compaction`); a failure comes
    /// as [`AppEvent::CommandFailed`].
    Compacted { note: String },
    /// Time passed: advance spinners, live elapsed times and expire notes.
    Tick,
    /// Quit now (a termination signal arrived).
    Shutdown,
}
