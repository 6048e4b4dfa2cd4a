//! The wall (issue 14): a grid of tiles, one per session running under the open
//! thread, each with its agent, short id, status, elapsed time, tokens and cost
//! (rolled up its subtree), its spend against a budget, and the last lines of its
//! stream wrapped to the tile. Finished tiles are dimmed; the selected tile has the
//! focused border. With more tiles than fit ([`grid`]), the wall pages: the page
//! holding the selected tile is shown and the title says which.
//!
//! Does not own: which tiles exist or their tails (`state::wall`), tree data
//! (`state::tree`).

use jiff::Timestamp;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Widget};

use super::pane_block;
use super::tree::status_glyph;
use crate::session::ids::short_id;
use crate::tui::clock::{format_cost, format_elapsed, format_tokens};
use crate::tui::state::tree::{Node, SessionTree};
use crate::tui::state::wall::Wall;
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{RLine, truncate, wrap};

/// Narrowest tile (columns, borders included).
pub const TILE_MIN_WIDTH: u16 = 36;
/// Lowest tile (rows, borders included): the header and four lines of tail.
pub const TILE_MIN_HEIGHT: u16 = 7;

/// The wall.
pub struct WallView<'a> {
    pub wall: &'a Wall,
    pub tree: &'a SessionTree,
    pub theme: &'a Theme,
    pub now: Timestamp,
}

/// Columns and rows of tiles a wall whose inner area is `inner` shows at most.
pub fn grid(inner: Rect) -> (u16, u16) {
    (
        (inner.width / TILE_MIN_WIDTH).max(1),
        (inner.height / TILE_MIN_HEIGHT).max(1),
    )
}

/// Tiles per page in a wall drawn in `area` (its border included).
pub fn per_page(area: Rect) -> usize {
    let (cols, rows) = grid(Block::default().borders(Borders::ALL).inner(area));
    usize::from(cols) * usize::from(rows)
}

impl WallView<'_> {
    fn header(&self, node: &Node) -> Line<'static> {
        let (glyph, slot) = status_glyph(node.status, self.now);
        let mut parts = vec![node.status.as_str().to_string()];
        if let Some(budget) = node.budget_label(false) {
            parts.push(format!("budget {budget}"));
        }
        if let Some(ms) = node.elapsed_ms(self.now) {
            parts.push(format_elapsed(ms));
        }
        let spend = self.tree.subtree_spend(&node.id);
        if spend.tokens > 0 {
            parts.push(format!("{} tok", format_tokens(spend.tokens)));
        }
        if let Some(cost) = spend.cost {
            parts.push(format_cost(cost));
        }
        Line::from(vec![
            Span::styled(format!("{glyph} "), self.theme.style(slot)),
            Span::styled(parts.join(" · "), self.theme.style(Slot::TreeMeta)),
        ])
    }

    /// The last `rows` rows of `tail` wrapped to `width`.
    fn tail_rows(tail: &str, width: u16, rows: usize) -> Vec<Line<'static>> {
        let mut out: Vec<Line<'static>> = Vec::new();
        let text = tail.strip_suffix('\n').unwrap_or(tail);
        for line in text.rsplit('\n') {
            if out.len() >= rows {
                break;
            }
            let wrapped = wrap(&RLine::new(Line::raw(line.to_string())), width);
            for row in wrapped.into_iter().rev() {
                if out.len() >= rows {
                    break;
                }
                out.push(row);
            }
        }
        out.reverse();
        out
    }

    fn tile(&self, id: &str, selected: bool, area: Rect, buf: &mut Buffer) {
        let Some(node) = self.tree.get(id) else {
            return;
        };
        let live = node.status.turn_in_progress();
        let title = format!(" {} #{} ", node.agent, short_id(id));
        let border = match (selected, live) {
            (true, _) => Slot::BorderFocused,
            (false, true) => Slot::BorderUnfocused,
            (false, false) => Slot::TreeMeta,
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(if selected {
                BorderType::Thick
            } else {
                BorderType::Rounded
            })
            .border_style(self.theme.style(border))
            .title(Span::styled(title, self.theme.style(Slot::ChatHeader)));
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width == 0 {
            return;
        }
        buf.set_line(
            inner.x,
            inner.y,
            &truncate(&self.header(node), inner.width),
            inner.width,
        );
        let rows = usize::from(inner.height.saturating_sub(1));
        let text_style = if live {
            self.theme.style(Slot::ChatAssistant)
        } else {
            self.theme.style(Slot::TreeMeta).add_modifier(Modifier::DIM)
        };
        for (k, line) in Self::tail_rows(self.wall.tail(id), inner.width, rows)
            .iter()
            .enumerate()
        {
            let y = inner.y + 1 + u16::try_from(k).unwrap_or(0);
            buf.set_line(inner.x, y, line, inner.width);
            buf.set_style(Rect::new(inner.x, y, inner.width, 1), text_style);
        }
    }
}

impl Widget for &WallView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let wall = self.wall;
        let per_page = per_page(area);
        let pages = wall.tiles.len().div_ceil(per_page).max(1);
        let page = (wall.selected / per_page).min(pages - 1);
        let running = wall
            .tiles
            .iter()
            .filter(|id| {
                self.tree
                    .get(id)
                    .is_some_and(|n| n.status.turn_in_progress())
            })
            .count();
        let under = self
            .tree
            .get(&wall.root)
            .map_or("this thread", |n| n.label());
        let mut title = format!(
            " Wall · {under} · {running} running of {} ",
            wall.tiles.len()
        );
        if pages > 1 {
            title.push_str(&format!("· page {}/{pages} ", page + 1));
        }
        let block = pane_block(title, true, self.theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width == 0 {
            return;
        }
        if wall.tiles.is_empty() {
            let hint = Line::from(Span::styled(
                "no sessions running under this thread yet: tiles appear as sub-sessions start",
                self.theme.style(Slot::TreeMeta),
            ));
            buf.set_line(
                inner.x + 1,
                inner.y,
                &truncate(&hint, inner.width.saturating_sub(1)),
                inner.width,
            );
            return;
        }
        let shown: Vec<&String> = wall
            .tiles
            .iter()
            .skip(page * per_page)
            .take(per_page)
            .collect();
        let (max_cols, _) = grid(inner);
        let cols = usize::from(max_cols).min(shown.len()).max(1);
        let rows = shown.len().div_ceil(cols);
        let col_w = usize::from(inner.width) / cols;
        let row_h = usize::from(inner.height) / rows;
        for (k, id) in shown.iter().enumerate() {
            let (c, r) = (k % cols, k / cols);
            // The last column and row take the remainder.
            let w = if c + 1 == cols {
                usize::from(inner.width) - c * col_w
            } else {
                col_w
            };
            let h = if r + 1 == rows {
                usize::from(inner.height) - r * row_h
            } else {
                row_h
            };
            let to16 = |v: usize| u16::try_from(v).unwrap_or(u16::MAX);
            let tile = Rect::new(
                inner.x + to16(c * col_w),
                inner.y + to16(r * row_h),
                to16(w),
                to16(h),
            );
            self.tile(id, page * per_page + k == wall.selected, tile, buf);
        }
    }
}
