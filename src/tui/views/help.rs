//! The help overlay, generated from the keymap table (so overrides show) and the
//! slash-command table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use super::{pane_block, scrolled_lines};
use crate::tui::keymap::{Context, Keymap, TABLE};
use crate::tui::state::palette_commands::{SLASH_COMMANDS, usage};
use crate::tui::theme::{Slot, Theme};

/// The help overlay.
pub struct HelpView<'a> {
    pub keymap: &'a Keymap,
    pub theme: &'a Theme,
    /// First row shown.
    pub scroll: u16,
}

impl HelpView<'_> {
    /// Every help line at `width`: a heading per context, then `keys  description`
    /// rows.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let col = if width < 60 { 12 } else { 22 };
        let heading = self.theme.style(Slot::BrowserLabel);
        let key = self.theme.style(Slot::MdCode);
        let text = self.theme.style(Slot::Base);
        let mut out = Vec::new();
        for ctx in [
            Context::Global,
            Context::Tree,
            Context::Chat,
            Context::Composer,
            Context::Palette,
            Context::Browser,
            Context::Help,
            Context::Mcp,
            Context::Approval,
            Context::Trust,
            Context::Diff,
        ] {
            if !out.is_empty() {
                out.push(Line::default());
            }
            out.push(Line::from(Span::styled(ctx.title().to_string(), heading)));
            for spec in TABLE.iter().filter(|s| s.context == ctx) {
                let keys = self.keymap.label(spec.action);
                let keys = if keys.is_empty() {
                    "(unbound)".to_string()
                } else {
                    keys
                };
                out.push(Line::from(vec![
                    Span::styled(format!("  {keys:<col$}"), key),
                    Span::styled(format!(" {}", spec.description), text),
                ]));
            }
        }
        out.push(Line::default());
        out.push(Line::from(Span::styled(
            "Slash commands (type / in the composer)".to_string(),
            heading,
        )));
        for spec in SLASH_COMMANDS {
            out.push(Line::from(vec![
                Span::styled(format!("  {:<col$}", usage(spec)), key),
                Span::styled(format!(" {}", spec.help), text),
            ]));
        }
        out
    }
}

impl Widget for &HelpView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Clear.render(area, buf);
        let block = pane_block(" Help — keys (config keymap: overrides) ", true, self.theme);
        let inner = block.inner(area);
        block.render(area, buf);
        let lines = self.lines(inner.width);
        scrolled_lines(&lines, self.scroll, inner, buf);
    }
}
