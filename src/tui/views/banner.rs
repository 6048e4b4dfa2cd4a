//! The warning banner shown above the chat when no provider is usable: the engine's
//! no-provider text (what it looked for and how to configure one), verbatim.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{RLine, wrap};

/// At most this many rows (borders included); the rest is cut with `…`. Room for the
/// no-provider banner with its suggested config at 40 columns.
pub const MAX_HEIGHT: u16 = 13;

/// The banner.
pub struct BannerView<'a> {
    pub text: &'a str,
    pub theme: &'a Theme,
}

impl BannerView<'_> {
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let style = self.theme.style(Slot::Base);
        self.text
            .lines()
            .flat_map(|l| {
                wrap(
                    &RLine::new(Span::styled(l.to_string(), style)),
                    width.max(1),
                )
            })
            .collect()
    }

    /// Rows the banner wants at `width` (borders included, capped at [`MAX_HEIGHT`]).
    pub fn height(&self, width: u16) -> u16 {
        let n = self.lines(width.saturating_sub(2)).len();
        u16::try_from(n + 2).unwrap_or(MAX_HEIGHT).min(MAX_HEIGHT)
    }
}

impl Widget for &BannerView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let warn = self.theme.style(Slot::Warning);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(warn)
            .title(Span::styled(" ⚠ No provider configured ", warn));
        let inner = block.inner(area);
        block.render(area, buf);
        let lines = self.lines(inner.width);
        let rows = usize::from(inner.height);
        for (y, line) in lines.iter().take(rows).enumerate() {
            let y16 = inner.y + u16::try_from(y).unwrap_or(0);
            if y + 1 == rows && lines.len() > rows {
                buf.set_string(inner.x, y16, "…", warn);
            } else {
                buf.set_line(inner.x, y16, line, inner.width);
            }
        }
    }
}
