//! The TUI's error for a failure a lower layer reported: what the `App` shows in a
//! note or the thread.
//!
//! Owns: [`UiError`]. Does not own: the failures themselves (the engine's commands;
//! `AppEvent`'s results still carry them as text until the engine's typed errors land,
//! issue 24 item 3 — the `App` wraps them here at once, so only this type changes
//! then).

/// A failure reported to the TUI by the layers below.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UiError {
    /// An engine command (list, load, rename, export, switch the model, run the
    /// editor, rebuild a diff) failed; its message as reported.
    #[error("{0}")]
    Engine(String),
    /// A merge, discard, rewind or fork refused or failed (`engine::handle::undo`):
    /// its message, and the files a refusal names (a merge's conflicting files, a
    /// rewind's files changed since; empty otherwise).
    #[error("{message}")]
    Undo {
        /// The error's text.
        message: String,
        /// The files it is about.
        files: Vec<String>,
    },
}

impl From<crate::engine::handle::undo::UndoError> for UiError {
    fn from(e: crate::engine::handle::undo::UndoError) -> Self {
        Self::Undo {
            files: e.files().to_vec(),
            message: e.to_string(),
        }
    }
}

impl From<String> for UiError {
    fn from(message: String) -> Self {
        Self::Engine(message)
    }
}

impl From<&str> for UiError {
    fn from(message: &str) -> Self {
        Self::Engine(message.to_string())
    }
}
