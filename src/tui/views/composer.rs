//! The composer pane: a bordered text area; the title says where a message goes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::pane_block;
use crate::tui::composer::Composer;
use crate::tui::theme::Theme;

/// The composer pane.
pub struct ComposerView<'a> {
    pub composer: &'a Composer,
    pub theme: &'a Theme,
    pub focused: bool,
    /// e.g. ` Message → new session (zen-architect) ` or ` Continue #a1b2c3d4 `.
    pub title: String,
}

impl Widget for &ComposerView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = pane_block(self.title.clone(), self.focused, self.theme);
        let inner = block.inner(area);
        block.render(area, buf);
        self.composer.widget().render(inner, buf);
    }
}
