//! The TUI's error for a failure a lower layer reported: what the `App` shows in a
//! note or the thread.
//!
//! Owns: [`UiError`]. Does not own: the failures themselves (the engine's typed
//! [`EngineError`], the editor's I/O error) — they are carried whole, shared behind an
//! `Arc` so the state keeping one (a diff overlay's failed load) stays cloneable.

use std::sync::Arc;

use crate::engine::EngineError;

/// A failure reported to the TUI by the layers below; its text is the failure's own.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UiError {
    /// An engine command (list, load, rename, export, switch the model, rebuild a
    /// diff, lay out earlier messages) failed.
    #[error(transparent)]
    Engine(Arc<EngineError>),
    /// `$EDITOR` could not be run (or the terminal could not be handed to it).
    #[error("{0}")]
    Editor(Arc<std::io::Error>),
    /// A merge, discard, rewind or fork refused or failed (`engine::handle::undo`;
    /// `UndoError::files` names the files a refusal is about).
    #[error(transparent)]
    Undo(Arc<crate::engine::handle::undo::UndoError>),
    /// `/compact` could not compact the session.
    #[error(transparent)]
    Compact(Arc<crate::engine::compact::CompactError>),
}

impl From<crate::engine::compact::CompactError> for UiError {
    fn from(error: crate::engine::compact::CompactError) -> Self {
        Self::Compact(Arc::new(error))
    }
}

impl From<crate::engine::handle::undo::UndoError> for UiError {
    fn from(error: crate::engine::handle::undo::UndoError) -> Self {
        Self::Undo(Arc::new(error))
    }
}

impl From<EngineError> for UiError {
    fn from(error: EngineError) -> Self {
        Self::Engine(Arc::new(error))
    }
}

impl From<std::io::Error> for UiError {
    fn from(error: std::io::Error) -> Self {
        Self::Editor(Arc::new(error))
    }
}

/// Why the status bar has no model provider to name: the text shown in its place (a
/// short banner with a config to paste when nothing is configured, else the engine's
/// reason). The status bar's label is `Result<String, NoProvider>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoProvider(pub String);

impl From<&str> for NoProvider {
    fn from(text: &str) -> Self {
        Self(text.to_string())
    }
}
