//! The MCP servers overlay (`global.mcp`, F6): each server of this process — where it
//! is configured, its command or URL, whether it runs, and its tools or why it is not
//! available. Pure: renders the list the engine last reported (`ListMcpServers`);
//! never an `env` or `headers` value (the engine's status carries none).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use super::{pane_block, scrolled_lines};
use crate::tool::mcp::{McpServerStatus, ServerState, tool_name};
use crate::tui::theme::{Slot, Theme};

/// The MCP servers overlay.
pub struct McpView<'a> {
    pub servers: &'a [McpServerStatus],
    pub theme: &'a Theme,
    /// First row shown.
    pub scroll: u16,
}

impl McpView<'_> {
    /// Every line: per server a heading (`● name  running  origin`), its command or
    /// URL, then its tools as the model sees them, or the failure.
    pub fn lines(&self) -> Vec<Line<'static>> {
        let label = self.theme.style(Slot::BrowserLabel);
        let meta = self.theme.style(Slot::TreeMeta);
        let text = self.theme.style(Slot::Base);
        let tool = self.theme.style(Slot::ChatTool);
        let mut out = Vec::new();
        if self.servers.is_empty() {
            out.push(Line::from(Span::styled(
                "No MCP servers. Add `mcp_servers:` to config.yaml, or a .mcp.json to a \
                 trusted project.",
                text,
            )));
            return out;
        }
        for (i, server) in self.servers.iter().enumerate() {
            if i > 0 {
                out.push(Line::default());
            }
            let (glyph, state, slot) = match &server.state {
                ServerState::Running { .. } => ("●", "running", Slot::TreeDone),
                ServerState::Failed { .. } => ("✗", "failed", Slot::TreeFailed),
                ServerState::NotStarted => ("○", "not started", Slot::TreeIdle),
            };
            out.push(Line::from(vec![
                Span::styled(format!("{glyph} "), self.theme.style(slot)),
                Span::styled(server.name.clone(), label),
                Span::styled(format!("  {state}"), self.theme.style(slot)),
                Span::styled(format!("  {}", server.origin), meta),
            ]));
            out.push(Line::from(Span::styled(
                format!("  {}", server.target),
                meta,
            )));
            match &server.state {
                ServerState::Running { tools } if tools.is_empty() => {
                    out.push(Line::from(Span::styled("  no tools", text)));
                }
                ServerState::Running { tools } => {
                    for t in tools {
                        out.push(Line::from(Span::styled(
                            format!("  {}", tool_name(&server.name, t)),
                            tool,
                        )));
                    }
                }
                ServerState::Failed { reason } => out.push(Line::from(Span::styled(
                    format!("  {reason}"),
                    self.theme.style(Slot::ChatError),
                ))),
                ServerState::NotStarted => out.push(Line::from(Span::styled(
                    "  starts with the first turn that mounts it",
                    text,
                ))),
            }
        }
        out
    }
}

impl Widget for &McpView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Clear.render(area, buf);
        let block = pane_block(" MCP servers ", true, self.theme);
        let inner = block.inner(area);
        block.render(area, buf);
        let lines = self.lines();
        scrolled_lines(&lines, self.scroll, inner, buf);
    }
}
