//! The agent browser overlay: filterable list of agents (source, validity, reload
//! marks) and the selected agent's details (path, shadowed definitions, description,
//! model role, tools, its `sub_agents` tree, validation errors with `path:line:col`,
//! warnings).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use super::pane_block;
use crate::agent::reload::RegistryDiff;
use crate::agent::tree::outline_of_tree_with;
use crate::agent::{AgentDef, AgentSource, Registry};
use crate::tui::state::browser::{
    BrowserState, ReloadMark, diff_touches, model_role, reload_summary, tools,
};
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{RLine, truncate, wrap};

/// The agent browser.
pub struct BrowserView<'a> {
    pub registry: &'a Registry,
    pub state: &'a BrowserState,
    pub mark: Option<&'a ReloadMark>,
    pub theme: &'a Theme,
}

/// `env`, `user`, `project`, `bundle`.
pub fn source_name(source: AgentSource) -> &'static str {
    source.as_str()
}

impl BrowserView<'_> {
    fn list_line(&self, a: &AgentDef, diff: Option<&RegistryDiff>) -> Line<'static> {
        let name = match &a.namespace {
            Some(ns) => format!("{ns}:{}", a.name),
            None => a.name.clone(),
        };
        let mut spans = vec![Span::styled(name, self.theme.style(Slot::Base))];
        spans.push(Span::styled(
            format!(" [{}]", source_name(a.source)),
            self.theme.style(Slot::BrowserSource),
        ));
        if !a.shadows.is_empty() {
            spans.push(Span::styled(
                format!(" ⊃{}", a.shadows.len()),
                self.theme.style(Slot::TreeMeta),
            ));
        }
        if !a.is_valid() {
            spans.push(Span::styled(
                " ✗ invalid",
                self.theme.style(Slot::BrowserInvalid),
            ));
        }
        if diff.is_some_and(|d| diff_touches(d, &a.name)) {
            spans.push(Span::styled(" ↻", self.theme.style(Slot::ReloadMark)));
        }
        Line::from(spans)
    }

    fn details(&self, a: &AgentDef) -> Vec<RLine> {
        let label = self.theme.style(Slot::BrowserLabel);
        let base = self.theme.style(Slot::Base);
        let field = |k: &str, v: String| {
            RLine::indented(
                Line::from(vec![
                    Span::styled(format!("{k}: "), label),
                    Span::styled(v, base),
                ]),
                2,
            )
        };
        let mut out = vec![RLine::new(Span::styled(
            a.name.clone(),
            self.theme.style(Slot::Title),
        ))];
        out.push(field(
            "source",
            format!("{} · {}", source_name(a.source), a.display_path()),
        ));
        for s in &a.shadows {
            out.push(field(
                "shadows",
                format!("{} · {}", source_name(s.source), s.path),
            ));
        }
        if let Some(role) = model_role(a) {
            out.push(field("model role", role));
        }
        let tools = tools(a);
        if !tools.is_empty() {
            out.push(field("tools", tools.join(", ")));
        }
        if let Some(tree) = outline_of_tree_with(self.registry.agents(), &a.name) {
            out.push(RLine::new(Span::styled("agent tree:", label)));
            for l in tree {
                out.push(RLine::indented(Span::styled(format!("  {l}"), base), 2));
            }
        }
        if !a.description.trim().is_empty() {
            out.push(RLine::new(Span::styled("description:", label)));
            for l in a.description.trim().lines() {
                out.push(RLine::indented(Span::styled(format!("  {l}"), base), 2));
            }
        }
        let invalid = self.theme.style(Slot::BrowserInvalid);
        for e in &a.errors {
            out.push(RLine::indented(Span::styled(format!("✗ {e}"), invalid), 2));
        }
        let warn = self.theme.style(Slot::Warning);
        for w in &a.warnings {
            out.push(RLine::indented(Span::styled(format!("⚠ {w}"), warn), 2));
        }
        out
    }
}

fn put_lines(lines: &[Line<'_>], area: Rect, buf: &mut Buffer) {
    for (y, line) in lines.iter().take(usize::from(area.height)).enumerate() {
        buf.set_line(
            area.x,
            area.y + u16::try_from(y).unwrap_or(0),
            line,
            area.width,
        );
    }
}

impl BrowserView<'_> {
    /// The row above the list: the filter while one is typed or set, else the last
    /// reload's summary, else the keys.
    fn top_line(&self) -> Line<'static> {
        let filtered = self.state.filtering || !self.state.filter.is_empty();
        match (self.mark, filtered) {
            (Some(m), false) => Line::from(Span::styled(
                reload_summary(&m.diff),
                self.theme.style(Slot::ReloadMark),
            )),
            (_, true) => Line::from(vec![
                Span::styled("filter: ", self.theme.style(Slot::BrowserLabel)),
                Span::styled(self.state.filter.clone(), self.theme.style(Slot::Base)),
                Span::styled(
                    if self.state.filtering { "▍" } else { "" },
                    self.theme.style(Slot::BrowserLabel),
                ),
            ]),
            (None, false) => Line::from(Span::styled(
                "/ filter · Enter new session · e edit · Esc close",
                self.theme.style(Slot::TreeMeta),
            )),
        }
    }

    /// The `visible` agents in `area`, scrolled so the `selected` one shows,
    /// highlighted; a note when none matches.
    fn render_list(&self, visible: &[&AgentDef], selected: usize, area: Rect, buf: &mut Buffer) {
        let diff = self.mark.map(|m| &m.diff);
        let h = usize::from(area.height);
        let offset = selected.saturating_sub(h.saturating_sub(1));
        let sel_style = self.theme.style(Slot::BrowserSelected);
        for (row, (i, a)) in visible.iter().enumerate().skip(offset).take(h).enumerate() {
            let y = area.y + u16::try_from(row).unwrap_or(0);
            let line = truncate(&self.list_line(a, diff), area.width);
            buf.set_line(area.x, y, &line, area.width);
            if i == selected {
                buf.set_style(Rect::new(area.x, y, area.width, 1), sel_style);
            }
        }
        if visible.is_empty() {
            let l = Line::from(Span::styled(
                "no agent matches",
                self.theme.style(Slot::TreeMeta),
            ));
            buf.set_line(area.x, area.y, &l, area.width);
        }
    }

    /// Agent `a`'s details in `area`, wrapped; under a rule when the details sit below
    /// the list (not `wide`).
    fn render_details(&self, a: &AgentDef, wide: bool, area: Rect, buf: &mut Buffer) {
        let mut rows = Vec::new();
        if !wide {
            rows.push(Line::from(Span::styled(
                "─".repeat(usize::from(area.width)),
                self.theme.style(Slot::BorderUnfocused),
            )));
        }
        for l in self.details(a) {
            rows.extend(wrap(&l, area.width));
        }
        put_lines(&rows, area, buf);
    }
}

impl Widget for &BrowserView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Clear.render(area, buf);
        let visible = self.state.visible(self.registry);
        let title = format!(
            " Agents ({}/{}) ",
            visible.len(),
            self.registry.agents().len()
        );
        let block = pane_block(title, true, self.theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height < 3 || inner.width < 10 {
            return;
        }
        let [top, body] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(inner);
        buf.set_line(
            top.x,
            top.y,
            &truncate(&self.top_line(), top.width),
            top.width,
        );
        let wide = body.width >= 70;
        let [list_area, detail_area] = if wide {
            Layout::horizontal([Constraint::Length(34), Constraint::Min(10)])
                .spacing(1)
                .areas(body)
        } else {
            let list_h = (body.height / 2).max(1);
            Layout::vertical([Constraint::Length(list_h), Constraint::Min(0)]).areas(body)
        };
        let selected = self.state.selected_index(&visible);
        self.render_list(&visible, selected, list_area, buf);
        if detail_area.height == 0 {
            return;
        }
        if let Some(a) = visible.get(selected) {
            self.render_details(a, wide, detail_area, buf);
        }
    }
}
