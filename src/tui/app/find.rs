//! Find in the open thread from the keyboard (issue 15 item 4): `global.find`
//! (Ctrl+F, in the chat, the tree and the composer) opens the bar under the chat and
//! takes typed characters; every keystroke searches again and shows the first match
//! at or below the one shown before (at first: the top of the view). `find.next` (Enter, `n`) and `find.prev`
//! (Shift+Enter, `N`) step through the matches, scrolling each into view, and leave
//! typing (Ctrl+F types again); `find.close` (Esc) closes the bar first of all that Esc
//! does (SPEC §13). Other keys work as in the pane under the bar.
//!
//! Owns: those keys and keeping the hits current for a live thread. Does not own:
//! the search (`state::find`) or drawing (`views::find`).

use crossterm::event::{KeyCode, KeyEvent};

use super::{App, Focus};
use crate::tui::keymap::{Action, Context, KeyBinding};
use crate::tui::state::find::{self, Find};
use crate::tui::views::chat;

impl App {
    /// `global.find`: opens the bar (or types into it again) over the open thread; the
    /// chat takes the keys the bar does not use.
    pub(super) fn open_find(&mut self) {
        if self.thread.is_none() {
            self.set_note("nothing to find in: open a thread first", true);
            return;
        }
        match &mut self.find {
            Some(f) => f.editing = true,
            None => self.find = Some(Find::open()),
        }
        if self.focus == Focus::Composer {
            self.focus = Focus::Chat;
        }
    }

    /// A key while the bar is open over the chat or the tree; returns whether the bar
    /// used it (else the pane gets it).
    pub(super) fn find_key(&mut self, key: &KeyEvent, binding: &KeyBinding) -> bool {
        let Some(f) = &mut self.find else {
            return false;
        };
        if f.editing {
            match key.code {
                KeyCode::Char(c) if binding.is_text() => {
                    f.query.push(c);
                    self.find_search();
                    return true;
                }
                KeyCode::Backspace => {
                    f.query.pop();
                    self.find_search();
                    return true;
                }
                _ => {}
            }
        }
        match self.keymap.resolve(Context::Find, binding) {
            Some(Action::FindNext) => self.find_step(true),
            Some(Action::FindPrev) => self.find_step(false),
            Some(Action::FindClose) => self.find = None,
            _ => return false,
        }
        true
    }

    /// Searches the open thread for the bar's query and shows the first match at or
    /// below the match shown until now (else the top of the view).
    fn find_search(&mut self) {
        let size = self.chat_size();
        let (Some(f), Some(t)) = (&mut self.find, &mut self.thread) else {
            return;
        };
        // Incremental: a longer query keeps to the match shown (when it still
        // matches), else starts at the first message whose top is on screen.
        let top = t
            .window
            .iter()
            .find(|&&(_, row)| row == 0)
            .or(t.window.first());
        let from = f
            .current()
            .map(|hit| hit.cell)
            .or(top.map(|&(cell, _)| cell))
            .unwrap_or(0);
        if let Some(hit) = f.search(t, &self.theme, from) {
            find::reveal(t, hit, &f.query, size, &self.theme);
        }
    }

    /// `find.next` / `find.prev`: the next or previous match, scrolled into view.
    fn find_step(&mut self, forward: bool) {
        let size = self.chat_size();
        let (Some(f), Some(t)) = (&mut self.find, &mut self.thread) else {
            return;
        };
        f.editing = false;
        if let Some(hit) = f.step(forward) {
            find::reveal(t, hit, &f.query, size, &self.theme);
        }
    }

    /// Keeps the bar's hits current with a thread that changed (called before each
    /// frame's layout); a thread switched under the bar is searched afresh.
    pub(super) fn refresh_find(&mut self) {
        let (Some(f), Some(t)) = (&mut self.find, &self.thread) else {
            return;
        };
        f.refresh(t, &self.theme);
    }

    /// The chat's wrap width and visible rows as last laid out.
    fn chat_size(&self) -> (u16, usize) {
        self.areas.chat.map_or((1, 0), |area| {
            (
                chat::wrap_width(area),
                usize::from(chat::body_area(area).height),
            )
        })
    }
}

impl App {
    /// The find bar's state, while it is open.
    pub fn find(&self) -> Option<&Find> {
        self.find.as_ref()
    }
}
