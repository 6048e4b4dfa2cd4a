//! Copying from the chat with OSC 52 (issue 15 item 4): `chat.prev_message` /
//! `chat.next_message` (`[` / `]`) move the chat's cursor over every message;
//! `chat.copy` (`y`) copies the message under the cursor (the newest one without a
//! cursor), `chat.copy_code` (`Y`) the code block nearest it. The text goes to the
//! terminal as a [`TerminalWrite::Clipboard`] (the run loop writes it between frames)
//! and the status bar says `copied N lines`.
//!
//! Owns: those keys and the queue of terminal writes. Does not own: what a cell's text
//! is (`state::copy`), the escape sequence (`term_write`).

use super::App;
use crate::tui::state::copy::{code_block_near, copy_text, step_message};
use crate::tui::term_write::{MAX_COPY_BYTES, TerminalWrite};
use crate::tui::views::chat;

impl App {
    /// `[` / `]`: the chat's cursor to the previous or next message.
    pub(super) fn step_message(&mut self, up: bool) {
        let size = self.areas.chat.map_or((1, 0), |area| {
            (
                chat::wrap_width(area),
                usize::from(chat::body_area(area).height),
            )
        });
        if let Some(t) = &mut self.thread {
            step_message(t, up, size, &self.theme);
        }
    }

    /// `y` (`code` false) or `Y` (`code` true): copies the message under the chat's
    /// cursor, or the code block nearest it, to the clipboard.
    pub(super) fn copy(&mut self, code: bool) {
        let Some(t) = &self.thread else {
            return;
        };
        let Some(at) = t.selected.or_else(|| t.cells.len().checked_sub(1)) else {
            self.set_note("nothing to copy: the thread is empty", true);
            return;
        };
        let text = if code {
            code_block_near(&t.cells, at)
        } else {
            t.cells.get(at).and_then(copy_text)
        };
        let Some(text) = text.filter(|s| !s.is_empty()) else {
            let what = if code { "no code block" } else { "no text" };
            self.set_note(format!("nothing copied: {what} here"), true);
            return;
        };
        if text.len() > MAX_COPY_BYTES {
            self.set_note(
                format!(
                    "not copied: {} kB is more than terminals take through OSC 52 ({} kB)",
                    text.len() / 1000,
                    MAX_COPY_BYTES / 1000
                ),
                true,
            );
            return;
        }
        let lines = text.trim_end_matches('\n').lines().count().max(1);
        let plural = if lines == 1 { "" } else { "s" };
        let what = if code { "code block" } else { "message" };
        self.outbox
            .terminal_writes
            .push(TerminalWrite::Clipboard(text));
        self.set_note(
            format!("copied {lines} line{plural} ({what}) to the clipboard"),
            false,
        );
    }

    /// What to write to the terminal before the next frame (clipboard, mouse capture),
    /// oldest first; the run loop hands each to its `Host`.
    pub fn take_terminal_writes(&mut self) -> Vec<TerminalWrite> {
        std::mem::take(&mut self.outbox.terminal_writes)
    }
}
