//! The hooks overlay (`/hooks`, F7; issue 39) as a component: asks the engine for the
//! list when it opens (and on `hooks.refresh`), keeps the answer (the engine's `Hooks`
//! reply, handed over by the `App`), scrolls and draws it (`views::hooks`).
//!
//! Owns: the hooks as last listed and the scroll. Does not own: the hooks (`hooks`,
//! asked through `EngineCommand::ListHooks`).

use ratatui::Frame;

use crate::hooks::ListedHook;
use crate::tui::app::component::{Component, Ctx, DrawCtx, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::app::{Focus, Overlay};
use crate::tui::app_event::EngineCommand;
use crate::tui::keymap::{Action, Context};
use crate::tui::views::centered;
use crate::tui::views::hooks::HooksView;

/// The hooks overlay.
#[derive(Debug, Default)]
pub(crate) struct HooksOverlay {
    hooks: Vec<ListedHook>,
    /// First row shown.
    scroll: u16,
}

impl HooksOverlay {
    /// Opens empty and asks for the list.
    pub(super) fn open(cx: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        cx.send(EngineCommand::ListHooks);
        Some(Box::new(Self::default()))
    }

    /// The hooks as the engine listed them.
    pub(in crate::tui::app) fn listed(&mut self, hooks: Vec<ListedHook>) {
        self.hooks = hooks;
    }
}

impl Component for HooksOverlay {
    fn layer(&self) -> Layer {
        Layer::Overlay
    }

    fn overlay(&self) -> Overlay {
        Overlay::Hooks
    }

    fn context(&self, _: Focus) -> Option<Context> {
        Some(Context::Hooks)
    }

    fn act(&mut self, action: Action, cx: &mut Ctx<'_>) {
        match action {
            Action::HooksRefresh => cx.send(EngineCommand::ListHooks),
            Action::HooksUp => self.scroll = self.scroll.saturating_sub(1),
            Action::HooksDown => self.scroll = self.scroll.saturating_add(1),
            Action::HooksClose => cx.close(),
            _ => {}
        }
    }

    fn wheel_actions(&self) -> Option<(Action, Action)> {
        Some((Action::HooksUp, Action::HooksDown))
    }

    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let area = panes.main;
        let view = HooksView {
            hooks: &self.hooks,
            theme: cx.theme,
            scroll: self.scroll,
        };
        frame.render_widget(&view, centered(area, 90, area.height.saturating_sub(2)));
    }
}
