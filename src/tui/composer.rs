//! The composer: a multi-line input (ratatui-textarea) that reports a submit as a
//! [`KeyOutcome`].
//!
//! Editing keys are readline's where a shell user expects them (`Composer::readline`):
//! Ctrl+A/E/U/K/W, Ctrl+L clears, Ctrl+Z undoes, Ctrl+Y redoes.
//!
//! Owns: the text being written and its editing keys. Does not own: what a submit does
//! (`app`) or the keymap (submit/newline chords come from `keymap`).

use crossterm::event::KeyEvent;
use ratatui::style::Style;
use ratatui_textarea::TextArea;

use super::app_event::{KeyOutcome, UiAction};
use super::keymap::Action;

/// Rows the composer grows to before it scrolls.
pub const MAX_ROWS: u16 = 6;

/// The message being written.
#[derive(Debug, Clone)]
pub struct Composer {
    textarea: TextArea<'static>,
}

impl Default for Composer {
    fn default() -> Self {
        Self::new()
    }
}

impl Composer {
    /// An empty composer.
    pub fn new() -> Self {
        let mut textarea = TextArea::default();
        textarea.set_cursor_line_style(Style::default());
        Self { textarea }
    }

    /// Sets the placeholder and its style (shown while empty).
    pub fn set_placeholder(&mut self, text: &str, style: Style) {
        self.textarea.set_placeholder_text(text);
        self.textarea.set_placeholder_style(style);
    }

    /// Shows the cursor only when focused.
    pub fn set_focused(&mut self, focused: bool, text_style: Style) {
        self.textarea.set_style(text_style);
        let cursor = if focused {
            Style::default().add_modifier(ratatui::style::Modifier::REVERSED)
        } else {
            Style::default()
        };
        self.textarea.set_cursor_style(cursor);
    }

    /// Handles a key already resolved against the keymap: `action` is the composer
    /// action it is bound to (`Submit`/`Newline`), if any. Submitting non-blank text
    /// emits [`UiAction::Submit`]; the text stays until [`Composer::clear`].
    pub fn handle_key(&mut self, key: KeyEvent, action: Option<Action>) -> KeyOutcome {
        match action {
            Some(Action::Submit) => {
                let text = self.text();
                if text.trim().is_empty() {
                    KeyOutcome::Consumed
                } else {
                    KeyOutcome::Emit(UiAction::Submit(text))
                }
            }
            Some(Action::Newline) => {
                self.textarea.insert_newline();
                KeyOutcome::Consumed
            }
            _ => {
                if self.readline(key) || self.textarea.input(key) {
                    KeyOutcome::Consumed
                } else {
                    KeyOutcome::Ignored
                }
            }
        }
    }

    /// The editing keys that differ from ratatui-textarea's own, as in a shell
    /// (readline): Ctrl+U deletes to the start of the line (the textarea's undo),
    /// Ctrl+A / Ctrl+E go to its start / end, Ctrl+L clears the composer (undoable),
    /// Ctrl+Z undoes, Ctrl+Y and Ctrl+Shift+Z redo (the textarea's Ctrl+Y pastes what
    /// was deleted). Ctrl+K, Ctrl+W, Alt+Backspace, Alt+B / Alt+F are the textarea's.
    /// Returns whether the key was one of these.
    fn readline(&mut self, key: KeyEvent) -> bool {
        use crossterm::event::{KeyCode, KeyModifiers};
        use ratatui_textarea::CursorMove;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if !ctrl || alt {
            return false;
        }
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Char('u') => {
                self.textarea.delete_line_by_head();
            }
            KeyCode::Char('a') => self.textarea.move_cursor(CursorMove::Head),
            KeyCode::Char('e') => self.textarea.move_cursor(CursorMove::End),
            KeyCode::Char('l') => {
                self.textarea.clear();
            }
            KeyCode::Char('z') if !shift => {
                self.textarea.undo();
            }
            KeyCode::Char('Z') | KeyCode::Char('z') | KeyCode::Char('y') => {
                self.textarea.redo();
            }
            _ => return false,
        }
        true
    }

    /// Inserts pasted text (newlines kept).
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.textarea.insert_str(text);
    }

    /// The whole text, lines joined with `\n`.
    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    /// Whether nothing is written.
    pub fn is_empty(&self) -> bool {
        self.textarea.lines().iter().all(|l| l.is_empty())
    }

    /// Clears the text (after a submit was accepted).
    pub fn clear(&mut self) {
        let mut fresh = TextArea::default();
        fresh.set_placeholder_text(self.textarea.placeholder_text().to_string());
        if let Some(s) = self.textarea.placeholder_style() {
            fresh.set_placeholder_style(s);
        }
        fresh.set_cursor_line_style(Style::default());
        fresh.set_style(self.textarea.style());
        fresh.set_cursor_style(self.textarea.cursor_style());
        self.textarea = fresh;
    }

    /// Replaces the text with `text`, the cursor at its end (a completed command, a
    /// recalled prompt).
    pub fn set_text(&mut self, text: &str) {
        self.clear();
        self.paste(text);
    }

    /// The text before the cursor (lines joined with `\n`).
    pub fn text_before_cursor(&self) -> String {
        let ratatui_textarea::DataCursor(row, col) = self.textarea.cursor();
        let lines = self.textarea.lines();
        let mut out = lines[..row.min(lines.len())].join("\n");
        if let Some(line) = lines.get(row) {
            if row > 0 {
                out.push('\n');
            }
            out.extend(line.chars().take(col));
        }
        out
    }

    /// Replaces the `chars` characters before the cursor with `text` (a completed
    /// `@path`).
    pub fn replace_before_cursor(&mut self, chars: usize, text: &str) {
        for _ in 0..chars {
            self.textarea.delete_char();
        }
        self.textarea.insert_str(text);
    }

    /// Rows of text to show (1..=[`MAX_ROWS`]).
    pub fn rows(&self) -> u16 {
        u16::try_from(self.textarea.lines().len())
            .unwrap_or(MAX_ROWS)
            .clamp(1, MAX_ROWS)
    }

    /// The text area widget (render `&composer.widget()`).
    pub fn widget(&self) -> &TextArea<'static> {
        &self.textarea
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};

    fn key(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    #[test]
    fn readline_keys_edit_as_in_a_shell_and_ctrl_z_undoes() {
        let mut c = Composer::new();
        c.paste("hello big world");
        c.handle_key(ctrl('w'), None);
        assert_eq!(c.text(), "hello big ");
        c.handle_key(ctrl('a'), None);
        c.handle_key(key('>'), None);
        assert_eq!(c.text(), ">hello big ");
        c.handle_key(ctrl('e'), None);
        c.handle_key(key('!'), None);
        assert_eq!(c.text(), ">hello big !");
        c.handle_key(ctrl('u'), None);
        assert_eq!(c.text(), "", "Ctrl+U deletes to the start of the line");
        c.handle_key(ctrl('z'), None);
        assert_eq!(c.text(), ">hello big !", "Ctrl+Z undoes");
        c.handle_key(ctrl('y'), None);
        assert_eq!(c.text(), "", "Ctrl+Y redoes");
        c.paste("one\ntwo");
        c.handle_key(ctrl('l'), None);
        assert!(c.is_empty(), "Ctrl+L clears");
        c.handle_key(ctrl('z'), None);
        assert_eq!(c.text(), "one\ntwo");
        c.handle_key(ctrl('a'), None);
        c.handle_key(ctrl('k'), None);
        assert_eq!(c.text(), "one\n");
    }

    #[test]
    fn types_newlines_pastes_and_submits() {
        let mut c = Composer::new();
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(
            c.handle_key(enter, Some(Action::Submit)),
            KeyOutcome::Consumed
        );
        c.handle_key(key('h'), None);
        c.handle_key(key('i'), None);
        c.handle_key(enter, Some(Action::Newline));
        c.paste("there\r\nyou");
        assert_eq!(c.text(), "hi\nthere\nyou");
        assert_eq!(c.rows(), 3);
        assert_eq!(
            c.handle_key(enter, Some(Action::Submit)),
            KeyOutcome::Emit(UiAction::Submit("hi\nthere\nyou".into()))
        );
        c.clear();
        assert!(c.is_empty());
    }
}
