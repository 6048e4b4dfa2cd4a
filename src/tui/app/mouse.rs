//! The mouse (issue 15 item 4): the wheel scrolls the pane under the pointer — the
//! tree, the chat, the wall, or the overlay that is open — never the focused one
//! elsewhere; a left click in the tree focuses it and selects the session under the
//! pointer, in the chat or the composer focuses that pane. `global.mouse` (Alt+M) and
//! config `mouse: false` leave the mouse to the terminal, so its own text selection
//! works; the status bar then says `mouse off`.
//!
//! Owns: mouse events and the capture state. Does not own: the escape sequences
//! (`term_write`), restoring the terminal on exit or panic (`terminal::restore`
//! always disables capture).

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::{App, Focus, Overlay};
use crate::tui::keymap::Action;
use crate::tui::term_write::TerminalWrite;
use crate::tui::views::tree::TreeView;

/// Chat rows one wheel notch scrolls.
const WHEEL_ROWS: isize = 3;

impl App {
    pub(super) fn on_mouse(&mut self, m: MouseEvent) {
        let pos = Position::new(m.column, m.row);
        let inside = |r: Option<Rect>| r.is_some_and(|r| r.contains(pos));
        match m.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let up = m.kind == MouseEventKind::ScrollUp;
                // An overlay scrolls itself (beside a wide wall the panes still show
                // and scroll).
                if self.stack_wheel(up, pos) {
                    return;
                }
                if inside(self.areas.tree) {
                    self.tree.move_selection(if up { -1 } else { 1 });
                } else if inside(self.areas.chat)
                    && let Some(t) = &mut self.thread
                {
                    t.scroll_by(if up { -WHEEL_ROWS } else { WHEEL_ROWS }, &self.theme);
                }
            }
            MouseEventKind::Down(MouseButton::Left) if self.overlay() == Overlay::None => {
                if let Some(area) = self.areas.tree.filter(|a| a.contains(pos)) {
                    self.focus = Focus::Tree;
                    let view = TreeView {
                        tree: &self.tree,
                        theme: &self.theme,
                        now: self.clock.now(),
                        focused: true,
                        open: None,
                    };
                    if let Some(id) = view.session_at(area, pos.y) {
                        self.tree.selected = Some(id);
                    }
                } else if inside(self.areas.chat) {
                    self.focus = Focus::Chat;
                } else if inside(self.areas.composer) {
                    self.focus = Focus::Composer;
                }
            }
            _ => {}
        }
    }

    /// `global.mouse`: captures the mouse or leaves it to the terminal.
    pub(super) fn toggle_mouse(&mut self) {
        self.set_mouse_capture(!self.outbox.mouse_capture);
        let key = self.keymap.label(Action::Mouse);
        let text = if self.outbox.mouse_capture {
            format!("mouse on: the wheel scrolls the pane under it ({key} turns it off)")
        } else {
            format!("mouse off: the terminal selects text ({key} turns it back on)")
        };
        self.set_note(text, false);
    }

    /// Captures the mouse (`true`, as the terminal starts) or leaves it to the
    /// terminal (config `mouse: false`); the change is written before the next frame.
    pub fn set_mouse_capture(&mut self, on: bool) {
        if self.outbox.mouse_capture != on {
            self.outbox.mouse_capture = on;
            self.outbox
                .terminal_writes
                .push(TerminalWrite::MouseCapture(on));
            self.dirty = true;
        }
    }

    /// Whether arbor captures the mouse now.
    pub fn mouse_capture(&self) -> bool {
        self.outbox.mouse_capture
    }
}
