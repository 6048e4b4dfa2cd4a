//! Prompt history keys (issue 15 item 3): Up/Down in an empty composer walk earlier
//! prompts of this project (Up again goes further back while the recalled text is
//! unchanged, Down past the newest empties the composer); Ctrl+R opens the popup as a
//! reverse search (type to filter, Enter/Tab puts the prompt in the composer, Esc
//! closes; each row shows when it was last sent, as `/resume` rows do). Alt+↑ (edit a waiting message) is its own binding and is unaffected.
//!
//! Owns: the walk position and the search popup's query editing. Does not own: the
//! stored prompts (`state::history`) or the popup's other keys (`app::palette`).

use crossterm::event::{KeyCode, KeyEvent};

use super::App;
use crate::tui::keymap::{Action, Context, KeyBinding};
use crate::tui::state::history::History;
use crate::tui::state::palette::{Popup, PopupItem, PopupKind};

impl App {
    /// Uses `history` (loaded by `tui::run` from `Paths::history_file`) from now on.
    pub fn set_history(&mut self, history: History) {
        self.prompt.history = history;
        self.prompt.history_pos = None;
    }

    /// Records a prompt about to be sent (a failure to keep it is a note).
    pub(super) fn remember(&mut self, text: &str) {
        self.prompt.history_pos = None;
        if let Err(e) = self.prompt.history.push_at(text, self.clock.now()) {
            self.set_note(e.to_string(), true);
        }
    }

    /// The history keys in the composer; returns whether the key was used. Up/Down
    /// that do not walk (a composer with text of its own) move the cursor as usual.
    pub(super) fn history_key(
        &mut self,
        context: Context,
        key: KeyEvent,
        action: Option<Action>,
    ) -> bool {
        if context != Context::Composer {
            return false;
        }
        match action {
            Some(Action::HistorySearch) => {
                self.open_history_search(String::new());
                true
            }
            Some(Action::HistoryPrev | Action::HistoryNext) => {
                if !self.history_step(action == Some(Action::HistoryPrev)) {
                    self.prompt.composer.handle_key(key, None);
                }
                true
            }
            _ => false,
        }
    }

    /// One step of the walk; false when the composer holds text of its own.
    fn history_step(&mut self, up: bool) -> bool {
        let text = self.prompt.composer.text();
        let entries = self.prompt.history.entries();
        let walking = self
            .prompt
            .history_pos
            .filter(|i| entries.get(*i).is_some_and(|e| *e == text));
        if walking.is_none() && !text.is_empty() {
            return false;
        }
        let next = match (walking, up) {
            (None, true) => entries.len().checked_sub(1),
            (None, false) => return false,
            (Some(i), true) => Some(i.saturating_sub(1)),
            (Some(i), false) => (i + 1 < entries.len()).then_some(i + 1),
        };
        match next.and_then(|i| entries.get(i).cloned()) {
            Some(prompt) => self.prompt.composer.set_text(&prompt),
            None => self.prompt.composer.clear(),
        }
        self.prompt.history_pos = next;
        true
    }

    fn open_history_search(&mut self, query: String) {
        let now = self.clock.now();
        let items = self
            .prompt
            .history
            .search_dated(&query)
            .into_iter()
            .map(|(p, at)| {
                let lines = match p.lines().count() {
                    0 | 1 => None,
                    n => Some(format!("({n} lines)")),
                };
                let when = at.map(|at| super::palette::when_created(at, now));
                PopupItem {
                    label: p.lines().next().unwrap_or_default().to_string(),
                    detail: [lines, when]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(" · "),
                    value: p.to_string(),
                }
            })
            .collect();
        let mut popup = Popup::new(PopupKind::History, query, items);
        if let Some(old) = &self.prompt.popup {
            popup.keep_selection_from(old);
        }
        self.prompt.popup = Some(popup);
    }

    /// A key for the search popup that is not one of its bindings: typing edits the
    /// query (Backspace deletes).
    pub(super) fn history_search_key(&mut self, key: KeyEvent) {
        let Some(mut query) = self.prompt.popup.as_ref().map(|p| p.query.clone()) else {
            return;
        };
        match key.code {
            KeyCode::Char(c) if KeyBinding::from_event(&key).is_some_and(|b| b.is_text()) => {
                query.push(c)
            }
            KeyCode::Backspace => {
                query.pop();
            }
            _ => return,
        }
        self.open_history_search(query);
    }

    /// Enter on a search row: the prompt goes into the composer to edit or send.
    pub(super) fn accept_history(&mut self, prompt: &str) {
        self.prompt.composer.set_text(prompt);
        self.prompt.history_pos = None;
    }
}
