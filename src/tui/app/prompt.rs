//! The composer pane's state in the `App`: the composer, its popup, the prompt
//! history's walk, the project's files for `@` and the waiting message being edited.
//!
//! Owns: the shape only. Does not own: what the keys do with it (`palette`, `history`,
//! `mentions`, `steer`, `input`) or drawing (`draw`, `views::composer`).

use super::mentions::ProjectFiles;
use super::steer::{EditRequest, Editing};
use crate::tui::composer::Composer;
use crate::tui::state::history::History;
use crate::tui::state::palette::Popup;

/// The composer pane: its text and what completes or recalls it.
#[derive(Default)]
pub(super) struct Prompt {
    pub composer: Composer,
    /// The composer's popup (slash commands, sessions to resume, `@` files, history
    /// search), while open.
    pub popup: Option<Popup>,
    /// The composer text the popup was closed for with Esc (stays closed until the
    /// text changes).
    pub popup_dismissed: Option<String>,
    /// The project's sent prompts (Up/Down, Ctrl+R).
    pub history: History,
    /// The prompt the Up/Down walk shows (index into the history).
    pub history_pos: Option<usize>,
    /// The project's files for `@` completion.
    pub files: ProjectFiles,
    /// A waiting message asked back for editing, until the engine gives it up.
    pub edit_request: Option<EditRequest>,
    /// The waiting message being edited in the composer.
    pub editing: Option<Editing>,
}
