//! The hooks overlay (`/hooks`, F7; issue 39): every hook of this process — the
//! user's `config.yaml` ones and the project's settings files' — grouped by event,
//! each with its matcher, command and source, active or skipped with why (the
//! project is not trusted, or changed since). Pure: renders the list the engine last
//! reported (`ListHooks`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use super::{pane_block, scrolled_lines};
use crate::hooks::ListedHook;
use crate::tui::theme::{Slot, Theme};

/// The hooks overlay.
pub struct HooksView<'a> {
    pub hooks: &'a [ListedHook],
    pub theme: &'a Theme,
    /// First row shown.
    pub scroll: u16,
}

impl HooksView<'_> {
    /// Every line: per hook a heading (`● PreToolUse [Bash]  active  source`), its
    /// command, and for a skipped one why.
    pub fn lines(&self) -> Vec<Line<'static>> {
        let label = self.theme.style(Slot::BrowserLabel);
        let meta = self.theme.style(Slot::TreeMeta);
        let text = self.theme.style(Slot::Base);
        let mut out = Vec::new();
        if self.hooks.is_empty() {
            out.push(Line::from(Span::styled(
                "No hooks. Add `hooks:` to config.yaml, or a project's .claude/settings.json \
                 (runs once the project is trusted).",
                text,
            )));
            return out;
        }
        for (i, hook) in self.hooks.iter().enumerate() {
            if i > 0 {
                out.push(Line::default());
            }
            let (glyph, state, slot) = match &hook.skipped {
                None => ("●", "active", Slot::TreeDone),
                Some(_) => ("○", "skipped", Slot::TreeIdle),
            };
            out.push(Line::from(vec![
                Span::styled(format!("{glyph} "), self.theme.style(slot)),
                Span::styled(format!("{} [{}]", hook.event, hook.matcher), label),
                Span::styled(format!("  {state}"), self.theme.style(slot)),
                Span::styled(format!("  {}", hook.source), meta),
            ]));
            out.push(Line::from(Span::styled(
                format!("  {}", hook.command),
                text,
            )));
            if let Some(why) = &hook.skipped {
                out.push(Line::from(Span::styled(
                    format!("  {why}"),
                    self.theme.style(Slot::Warning),
                )));
            }
        }
        out
    }
}

impl Widget for &HooksView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Clear.render(area, buf);
        let block = pane_block(" Hooks ", true, self.theme);
        let inner = block.inner(area);
        block.render(area, buf);
        let lines = self.lines();
        scrolled_lines(&lines, self.scroll, inner, buf);
    }
}
