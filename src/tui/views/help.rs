//! The help overlay, generated from the keymap table (so overrides show) and the
//! slash-command table: a section for every keymap context ([`Context::ALL`]), each
//! binding's description wrapped under its keys, and a few notes the table cannot
//! say (what Enter and Tab do while a turn runs, the composer's editing keys).
//!
//! Owns: the overlay's lines and drawing them scrolled. Does not own: the scroll
//! position or its keys (`app`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use super::{pane_block, scrolled_lines};
use crate::tui::keymap::{Action, Context, Keymap, TABLE};
use crate::tui::state::palette_commands::{SLASH_COMMANDS, usage};
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{RLine, wrap};

/// The help overlay.
pub struct HelpView<'a> {
    pub keymap: &'a Keymap,
    pub theme: &'a Theme,
    /// First row shown.
    pub scroll: u16,
    /// The command files found when the overlay opened (`agent::commands`).
    pub custom: &'a [crate::agent::commands::CustomCommand],
}

/// Keys and notes of a context that are not keymap actions: `(keys, description)`;
/// `{submit}` / `{queue}` stand for the keys of `composer.submit` / `global.focus_next`.
fn notes(ctx: Context) -> &'static [(&'static str, &'static str)] {
    match ctx {
        Context::Composer => &[
            (
                "{submit}",
                "While the thread's turn runs: steer (the model reads it before its next call)",
            ),
            (
                "{queue}",
                "While the turn runs, with text: queue it as a turn of its own after this one",
            ),
            ("Ctrl+A / Ctrl+E", "Start / end of the line"),
            ("Ctrl+U / Ctrl+K", "Delete to the start / end of the line"),
            ("Ctrl+W, Alt+Backspace", "Delete the word before the cursor"),
            ("Ctrl+L", "Clear the composer (Ctrl+Z brings it back)"),
            ("Ctrl+Z / Ctrl+Y", "Undo / redo"),
            ("Alt+B / Alt+F", "Word left / right"),
        ],
        _ => &[],
    }
}

impl HelpView<'_> {
    /// Every help line at `width`: a heading per context, then `keys  description`
    /// rows, descriptions wrapped under themselves.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let col: usize = if width < 60 { 12 } else { 22 };
        let heading = self.theme.style(Slot::BrowserLabel);
        let key = self.theme.style(Slot::MdCode);
        let text = self.theme.style(Slot::Base);
        // One column of margin on the left (`scrolled_lines`) and one on the right.
        let room = width.saturating_sub(2);
        let row = |keys: String, desc: &str, out: &mut Vec<Line<'static>>| {
            let line = Line::from(vec![
                Span::styled(format!("  {keys:<col$}"), key),
                Span::styled(format!(" {desc}"), text),
            ]);
            let indent = u16::try_from(col + 3).unwrap_or(0);
            out.extend(wrap(&RLine::indented(line, indent), room));
        };
        let mut out = Vec::new();
        for ctx in Context::ALL {
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
                row(keys, spec.description, &mut out);
            }
            for (keys, desc) in notes(ctx) {
                let keys = keys
                    .replace("{submit}", &self.keymap.label(Action::Submit))
                    .replace("{queue}", &self.keymap.label(Action::FocusNext));
                row(keys, desc, &mut out);
            }
        }
        out.push(Line::default());
        out.push(Line::from(Span::styled(
            "Slash commands (type / in the composer)".to_string(),
            heading,
        )));
        for spec in SLASH_COMMANDS {
            row(usage(spec), spec.help, &mut out);
        }
        for command in self.custom {
            let usage = match &command.argument_hint {
                Some(hint) => format!("/{} {hint}", command.name),
                None => format!("/{}", command.name),
            };
            let desc = format!("{} ({})", command.description, command.source());
            row(usage, &desc, &mut out);
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

/// The help overlay's area in `main` (the frame above the status bar).
pub fn help_area(main: Rect) -> Rect {
    super::centered(main, 72, main.height.saturating_sub(2))
}
