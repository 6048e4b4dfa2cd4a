//! The composer pane: a bordered text area (one column of padding inside each
//! border); the title says where a message goes.

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
        // One column of padding inside each border.
        let text = Rect::new(
            inner.x.saturating_add(1),
            inner.y,
            inner.width.saturating_sub(2),
            inner.height,
        );
        self.composer.widget().render(text, buf);
    }
}
