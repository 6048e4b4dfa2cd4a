//! The MCP servers overlay as a component: asks the engine for the list when it
//! opens (and on `mcp.refresh`), keeps the answer (the engine's `McpServers` reply, handed over by the `App`),
//! scrolls and draws it (`views::mcp`).
//!
//! Owns: the servers as last listed and the scroll. Does not own: the servers
//! (`tool::mcp`, asked through `EngineCommand::ListMcpServers`).

use ratatui::Frame;

use crate::tool::mcp::McpServerStatus;
use crate::tui::app::component::{Component, Ctx, DrawCtx, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::app::{Focus, Overlay};
use crate::tui::app_event::EngineCommand;
use crate::tui::keymap::{Action, Context};
use crate::tui::views::centered;
use crate::tui::views::mcp::McpView;

/// The MCP servers overlay.
#[derive(Debug, Default)]
pub(crate) struct McpOverlay {
    servers: Vec<McpServerStatus>,
    /// First row shown.
    scroll: u16,
}

impl McpOverlay {
    /// Opens empty and asks for the list.
    pub(super) fn open(cx: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        cx.send(EngineCommand::ListMcpServers);
        Some(Box::new(Self::default()))
    }

    /// The servers as the engine listed them.
    pub(in crate::tui::app) fn listed(&mut self, servers: Vec<McpServerStatus>) {
        self.servers = servers;
    }
}

impl Component for McpOverlay {
    fn layer(&self) -> Layer {
        Layer::Overlay
    }

    fn overlay(&self) -> Overlay {
        Overlay::Mcp
    }

    fn context(&self, _: Focus) -> Option<Context> {
        Some(Context::Mcp)
    }

    fn act(&mut self, action: Action, cx: &mut Ctx<'_>) {
        match action {
            Action::McpRefresh => cx.send(EngineCommand::ListMcpServers),
            Action::McpUp => self.scroll = self.scroll.saturating_sub(1),
            Action::McpDown => self.scroll = self.scroll.saturating_add(1),
            Action::McpClose => cx.close(),
            _ => {}
        }
    }

    fn wheel_actions(&self) -> Option<(Action, Action)> {
        Some((Action::McpUp, Action::McpDown))
    }

    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let area = panes.main;
        let view = McpView {
            servers: &self.servers,
            theme: cx.theme,
            scroll: self.scroll,
        };
        frame.render_widget(&view, centered(area, 90, area.height.saturating_sub(2)));
    }
}
