//! The open thread's waiting messages, listed between its messages and the composer
//! (SPEC §13 "Steer and queue"): one row each, in sending order — `steer` rows (they
//! reach the running turn's next model call) then `queued` rows (each a turn of its
//! own) — and the keys that edit or remove them.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use unicode_width::UnicodeWidthStr;

use crate::session::protocol::PromptMode;
use crate::tui::keymap::{Action, Keymap};
use crate::tui::state::pending::PendingPrompt;
use crate::tui::theme::{Slot, Theme};

/// At most this many rows; past it the last row says how many more wait.
pub const MAX_ROWS: usize = 4;

/// Rows the list takes for `count` waiting messages (0 when none).
pub fn height(count: usize) -> u16 {
    u16::try_from(count.min(MAX_ROWS)).unwrap_or(0)
}

/// The list.
pub struct PendingView<'a> {
    /// The open thread's waiting messages, in sending order.
    pub items: &'a [&'a PendingPrompt],
    pub keymap: &'a Keymap,
    pub theme: &'a Theme,
}

impl PendingView<'_> {
    /// `Alt+Up edit · Alt+x remove` (unbound actions left out).
    fn hint(&self) -> String {
        [
            (Action::EditQueued, "edit"),
            (Action::RemoveQueued, "remove"),
        ]
        .iter()
        .filter_map(|(action, what)| {
            let key = self.keymap.keys_for(*action).first()?;
            Some(format!("{key} {what}"))
        })
        .collect::<Vec<_>>()
        .join(" · ")
    }

    fn row(&self, item: &PendingPrompt) -> Line<'static> {
        let (glyph, label) = match item.mode {
            PromptMode::Steer => ("↳", "steer "),
            PromptMode::Queue => ("⏵", "queued"),
        };
        let mut lines = item.text.lines().filter(|l| !l.trim().is_empty());
        let first = lines.next().unwrap_or_default().to_string();
        let more = if lines.next().is_some() { " …" } else { "" };
        let mut spans = vec![
            Span::styled(
                format!(" {glyph} {label} "),
                self.theme.style(Slot::ChatNotice),
            ),
            Span::styled(first, self.theme.style(Slot::ChatUser)),
            Span::styled(more, self.theme.style(Slot::TreeMeta)),
        ];
        if item.mode == PromptMode::Steer {
            spans.push(Span::styled(
                "  (next model call)",
                self.theme.style(Slot::TreeMeta),
            ));
        }
        Line::from(spans)
    }
}

impl Widget for &PendingView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let rows = usize::from(area.height).min(self.items.len());
        if rows == 0 || area.width == 0 {
            return;
        }
        buf.set_style(area, self.theme.style(Slot::Base));
        let hint = self.hint();
        let hint_w = hint.width() + 2;
        let mut hinted = hint.is_empty();
        for y in 0..rows {
            let y16 = area.y + u16::try_from(y).unwrap_or(0);
            let line = if y + 1 == rows && self.items.len() > rows {
                Line::from(Span::styled(
                    format!(" … {} more waiting", self.items.len() - y),
                    self.theme.style(Slot::TreeMeta),
                ))
            } else {
                self.row(self.items[y])
            };
            buf.set_line(area.x, y16, &line, area.width);
            // The hint goes right of the first row that leaves it room.
            if !hinted && line.width() + hint_w <= usize::from(area.width) {
                hinted = true;
                let x = area.x + area.width - u16::try_from(hint_w - 1).unwrap_or(0);
                buf.set_string(x, y16, &hint, self.theme.style(Slot::StatusHint));
            }
        }
    }
}
