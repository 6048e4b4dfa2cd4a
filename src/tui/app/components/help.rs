//! The help overlay as a component: its scroll and page, its keys (`help.*`), the
//! wheel, and drawing the keymap's lines (`views::help`) in the middle of the screen.
//!
//! Owns: the scroll position. Does not own: the lines (`views::help`).

use ratatui::Frame;

use crate::tui::app::Focus;
use crate::tui::app::Overlay;
use crate::tui::app::component::{Component, Ctx, DrawCtx, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::keymap::{Action, Context};
use crate::tui::views::help::{HelpView, help_area};

/// The help overlay.
#[derive(Debug, Default)]
pub(crate) struct HelpOverlay {
    /// First row shown.
    scroll: u16,
    /// Rows shown at once in the last frame (a page).
    page: u16,
    /// The command files found when it opened (`agent::commands`), listed with their
    /// source.
    custom: Vec<crate::agent::commands::CustomCommand>,
}

impl HelpOverlay {
    /// Opens at the top.
    pub(super) fn open(_: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        let custom = crate::agent::commands::discover(&crate::paths::Paths::from_env());
        Some(Box::new(Self {
            scroll: 0,
            page: 1,
            custom,
        }))
    }
}

impl Component for HelpOverlay {
    fn layer(&self) -> Layer {
        Layer::Overlay
    }

    fn overlay(&self) -> Overlay {
        Overlay::Help
    }

    fn context(&self, _: Focus) -> Option<Context> {
        Some(Context::Help)
    }

    fn act(&mut self, action: Action, cx: &mut Ctx<'_>) {
        match action {
            Action::HelpUp => self.scroll = self.scroll.saturating_sub(1),
            Action::HelpDown => self.scroll = self.scroll.saturating_add(1),
            Action::HelpPageUp => self.scroll = self.scroll.saturating_sub(self.page),
            Action::HelpPageDown => self.scroll = self.scroll.saturating_add(self.page),
            Action::HelpTop => self.scroll = 0,
            Action::HelpBottom => self.scroll = u16::MAX,
            Action::HelpClose => cx.close(),
            _ => {}
        }
    }

    fn wheel_actions(&self) -> Option<(Action, Action)> {
        Some((Action::HelpUp, Action::HelpDown))
    }

    /// Scrolls within its lines; a page is its height.
    fn layout(&mut self, panes: &Panes, cx: &mut Ctx<'_>) {
        let help = ratatui::widgets::Block::bordered().inner(help_area(panes.main));
        let rows = HelpView {
            keymap: cx.keymap,
            theme: cx.theme,
            scroll: 0,
            custom: &self.custom,
        }
        .lines(help.width)
        .len();
        let max = rows.saturating_sub(usize::from(help.height));
        self.scroll = self.scroll.min(u16::try_from(max).unwrap_or(u16::MAX));
        self.page = help.height.saturating_sub(1).max(1);
    }

    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let view = HelpView {
            keymap: cx.keymap,
            theme: cx.theme,
            scroll: self.scroll,
            custom: &self.custom,
        };
        frame.render_widget(&view, help_area(panes.main));
    }
}
