//! The diff overlay: a session's file changes as a coloured unified diff (added,
//! removed and hunk lines in the theme's `diff.*` slots), scrolled, with the session
//! and totals in the title and the overlay's keys in the bottom border.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Widget};

use super::{answer_keys, pane_block};
use crate::session::ids::short_id;
use crate::tui::keymap::{Action, Keymap};
use crate::tui::state::diff::{DiffLineKind, DiffState};
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::truncate;

/// The diff overlay.
pub struct DiffView<'a> {
    pub state: &'a DiffState,
    pub keymap: &'a Keymap,
    pub theme: &'a Theme,
}

impl DiffView<'_> {
    fn block(&self) -> Block<'static> {
        let s = self.state;
        let (files, added, removed) = s.totals();
        let scope = if s.subtree { " + sub-sessions" } else { "" };
        let plural = if files == 1 { "" } else { "s" };
        let title = format!(
            " Diff · {} #{}{scope} · {files} file{plural} +{added} -{removed} ",
            s.label,
            short_id(&s.session_id)
        );
        let subtree = if s.subtree {
            " this session only"
        } else {
            " with sub-sessions"
        };
        let keys = answer_keys(
            self.keymap,
            self.theme,
            &[
                (Action::DiffSubtree, subtree.to_string()),
                (Action::DiffClose, " close".to_string()),
            ],
        );
        pane_block(title, true, self.theme).title_bottom(keys)
    }

    /// The number of diff lines that fit in `area` (the layout step records it).
    pub fn page(area: Rect) -> usize {
        usize::from(area.height.saturating_sub(2))
    }
}

impl Widget for &DiffView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Clear.render(area, buf);
        let block = self.block();
        let inner = block.inner(area);
        block.render(area, buf);
        let style = |kind: DiffLineKind| {
            self.theme.style(match kind {
                DiffLineKind::Session | DiffLineKind::File => Slot::Title,
                DiffLineKind::Hunk => Slot::DiffHunk,
                DiffLineKind::Added => Slot::DiffAdded,
                DiffLineKind::Removed => Slot::DiffRemoved,
                DiffLineKind::Context => Slot::Base,
                DiffLineKind::Note => Slot::TreeMeta,
            })
        };
        let rows = self
            .state
            .lines
            .iter()
            .skip(self.state.scroll)
            .take(usize::from(inner.height));
        for (y, line) in (inner.y..).zip(rows) {
            let text = Line::from(Span::styled(
                line.text.replace('\t', "    "),
                style(line.kind),
            ));
            buf.set_line(inner.x, y, &truncate(&text, inner.width), inner.width);
        }
    }
}
