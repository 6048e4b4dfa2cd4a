//! The find bar (one row under the chat pane) and the highlights of the query's
//! matches in the chat pane's visible rows (issue 15 item 4).
//!
//! Highlights are drawn over the chat pane after `ChatView`: each visible row's text
//! is searched as shown (a match inside a wrapped line is highlighted in the row that
//! shows it; one split across two rows by the wrap is not), every match in the
//! `find.match` slot and the current one in `find.current`.
//!
//! Owns: how the bar and the highlights look. Does not own: the search (`state::find`)
//! or the chat's rows (`views::chat`, `state::thread`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::chat::body_area;
use crate::tui::keymap::{Action, Keymap};
use crate::tui::state::find::{Find, Hit, match_ranges};
use crate::tui::state::thread::Thread;
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{plain, truncate, width};

/// The find bar: ` Find query▏  3 of 17  Enter next · Shift+Enter prev · Esc close`
/// while typing, `n next · N prev · Esc close` once Enter left the query.
pub struct FindBarView<'a> {
    pub find: &'a Find,
    pub keymap: &'a Keymap,
    pub theme: &'a Theme,
}

impl Widget for &FindBarView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let bar = self.theme.style(Slot::StatusBar);
        buf.set_style(Rect::new(area.x, area.y, area.width, 1), bar);
        // While typing, a text chord (`n`) types into the query: the keys shown are
        // the others (`Enter`, `Shift+Enter`); after Enter, the last chord of each
        // (`n`, `N`) — what works then.
        let editing = self.find.editing;
        let key = |a: Action| {
            let keys = self.keymap.keys_for(a);
            let shown = if editing {
                keys.iter().find(|k| !k.is_text())
            } else {
                keys.last()
            };
            shown.map_or_else(String::new, ToString::to_string)
        };
        let cursor = if self.find.editing { "▏" } else { "" };
        let label = self.find.label();
        let label_style = if label == "no matches" {
            self.theme.style(Slot::StatusNote)
        } else {
            bar
        };
        let mut spans = vec![
            Span::styled(" Find ", self.theme.style(Slot::StatusKey)),
            Span::styled(format!("{}{cursor}", self.find.query), bar),
        ];
        if !label.is_empty() {
            spans.push(Span::styled(format!("  {label}"), label_style));
        }
        spans.push(Span::styled(
            format!(
                "  {} next · {} prev · {} close",
                key(Action::FindNext),
                key(Action::FindPrev),
                key(Action::FindClose)
            ),
            self.theme.style(Slot::StatusHint),
        ));
        let line = truncate(&Line::from(spans), area.width);
        buf.set_line(area.x, area.y, &line, area.width);
    }
}

/// The query's matches in the chat pane drawn at `area` (the same area `ChatView`
/// was rendered to), from the thread's visible window.
pub struct FindMarks<'a> {
    pub thread: &'a Thread,
    pub find: &'a Find,
    pub theme: &'a Theme,
}

impl Widget for &FindMarks<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let query = &self.find.query;
        let body = body_area(area);
        if query.is_empty() || body.width < 2 {
            return;
        }
        let (left, right) = (body.x + 1, body.x + body.width);
        let current = self.find.current();
        let rows = self.thread.window.iter().take(usize::from(body.height));
        for (y, &(cell_index, row)) in rows.enumerate() {
            let Some(cell) = self.thread.cells.get(cell_index) else {
                continue;
            };
            let Some(line) = cell.row(row) else {
                continue;
            };
            let text = plain(line);
            let ranges = match_ranges(&text, query);
            if ranges.is_empty() {
                continue;
            }
            // Occurrences in the cell's rows above this one: which hit each one is.
            let before: usize = (0..row)
                .filter_map(|r| cell.row(r))
                .map(|l| match_ranges(&plain(l), query).len())
                .sum();
            let y = body.y + u16::try_from(y).unwrap_or(0);
            for (k, range) in ranges.into_iter().enumerate() {
                let col = u16::try_from(width(&text[..range.start])).unwrap_or(u16::MAX);
                let w = u16::try_from(width(&text[range])).unwrap_or(u16::MAX);
                let x = left.saturating_add(col);
                if x >= right {
                    break;
                }
                let w = w.min(right - x);
                let hit = Hit {
                    cell: cell_index,
                    nth: before + k,
                };
                let slot = if current == Some(hit) {
                    Slot::FindCurrent
                } else {
                    Slot::FindMatch
                };
                buf.set_style(Rect::new(x, y, w, 1), self.theme.style(slot));
            }
        }
    }
}
