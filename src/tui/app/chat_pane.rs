//! The chat pane's own actions on the open thread: paging, stepping from cell to cell,
//! activating or toggling the selected cell, jumping to the top or the bottom.
//!
//! Owns: what each of those keys does to the thread's scroll and selection. Does not
//! own: which key is which action (`keymap`, `input`), or laying the thread out
//! (`state::thread`).

use super::App;
use crate::tui::state::layout::Scroll;

impl App {
    /// Scrolls the open thread a page (its height less a row) up or down.
    pub(super) fn page(&mut self, up: bool) {
        let sign = if up { -1 } else { 1 };
        if let Some(t) = &mut self.thread {
            let page = isize::try_from(t.viewport_height().saturating_sub(1).max(1)).unwrap_or(1);
            t.scroll_by(sign * page, &self.theme);
        }
    }

    /// Selects the cell above or below; scrolls a row when there is none to select.
    pub(super) fn step_cell(&mut self, up: bool) {
        if let Some(t) = &mut self.thread
            && !t.select_step(up, &self.theme)
        {
            t.scroll_by(if up { -1 } else { 1 }, &self.theme);
        }
    }

    /// Activates the selected cell (or only toggles it open or closed, with
    /// `toggle_only`), applying what it asks for.
    pub(super) fn activate_cell(&mut self, toggle_only: bool) {
        if let Some(a) = self.thread.as_mut().and_then(|t| t.activate(toggle_only)) {
            self.apply(a);
        }
    }

    /// Scrolls to the thread's first cell.
    pub(super) fn scroll_to_top(&mut self) {
        if let Some(t) = &mut self.thread {
            t.scroll = Scroll::Top { cell: 0, row: 0 };
        }
    }

    /// Follows the thread's end again, with no cell selected.
    pub(super) fn scroll_to_bottom(&mut self) {
        if let Some(t) = &mut self.thread {
            t.scroll = Scroll::Follow;
            t.selected = None;
        }
    }
}
