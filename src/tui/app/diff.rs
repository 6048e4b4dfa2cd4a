//! The diff overlay in the `App`: opening it for a session (the tree's selection or
//! the open thread), its keys, and reloading it with or without sub-sessions.
//!
//! Owns: those transitions. Does not own: the overlay's lines (`state::diff`), the
//! replay (`tool::filesystem::changes`, run by the executor) or drawing.

use super::{App, Overlay};
use crate::tui::app_event::EngineCommand;
use crate::tui::keymap::Action;
use crate::tui::state::diff::DiffState;

impl App {
    /// Opens the diff overlay on session `id` (its own changes, or with `subtree` its
    /// descendants' too) and asks the executor to rebuild it.
    pub(super) fn open_diff(&mut self, id: &str, subtree: bool) {
        let label = self
            .tree
            .get(id)
            .map_or_else(|| "session".to_string(), |n| n.label().to_string());
        self.diff = Some(DiffState::loading(id, &label, subtree));
        self.overlay = Overlay::Diff;
        self.send(EngineCommand::LoadDiff {
            session_id: id.into(),
            subtree,
        });
    }

    /// A key of the diff overlay.
    pub(super) fn diff_key(&mut self, action: Action) {
        let Some(d) = &mut self.diff else {
            self.overlay = Overlay::None;
            return;
        };
        let page = isize::try_from(d.page.saturating_sub(1).max(1)).unwrap_or(1);
        match action {
            Action::DiffUp => d.scroll_by(-1),
            Action::DiffDown => d.scroll_by(1),
            Action::DiffPageUp => d.scroll_by(-page),
            Action::DiffPageDown => d.scroll_by(page),
            Action::DiffTop => d.scroll_to(false),
            Action::DiffBottom => d.scroll_to(true),
            Action::DiffSubtree => {
                let (id, subtree) = (d.session_id.clone(), !d.subtree);
                self.open_diff(&id, subtree);
            }
            _ => {
                self.overlay = Overlay::None;
                self.diff = None;
            }
        }
    }
}
