//! Scrolling a thread's cells without laying out its whole history.
//!
//! The scroll position is an anchor, not a line count: either `Follow` (the newest row
//! at the bottom, auto-follow while streaming) or `Top { cell, row }` (that row of that
//! cell is the first visible one). Every operation walks cells outward from the anchor
//! and lays out (wraps) only the cells it touches, so the cost is proportional to the
//! viewport and the scroll distance, never to history length. New output appended
//! below does not move a `Top` anchor.
//!
//! Owns: the anchor and window arithmetic. Does not own: cell contents (`cells`).

use super::cells::Cell;
use super::rows::LayoutStats;
use crate::tui::theme::Theme;

/// Where the viewport is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scroll {
    /// Pinned to the newest row (auto-follow).
    #[default]
    Follow,
    /// Row `row` of cell `cell` is the first visible row.
    Top { cell: usize, row: usize },
}

/// What layout needs besides the cells.
pub struct LayoutCtx<'a> {
    pub width: u16,
    pub height: usize,
    pub theme: &'a Theme,
    pub stats: &'a mut LayoutStats,
}

impl LayoutCtx<'_> {
    fn height_of(&mut self, cells: &mut [Cell], i: usize) -> usize {
        match cells.get_mut(i) {
            Some(c) => {
                c.ensure_layout(self.width, self.theme, self.stats);
                c.height()
            }
            None => 0,
        }
    }
}

/// The visible rows, top to bottom, as `(cell index, row index)`. May switch `scroll`
/// to `Follow` when a `Top` anchor reaches the end of the thread.
pub fn window(
    cells: &mut [Cell],
    scroll: &mut Scroll,
    ctx: &mut LayoutCtx<'_>,
) -> Vec<(usize, usize)> {
    if ctx.height == 0 || cells.is_empty() {
        return Vec::new();
    }
    if let Scroll::Top { cell, row } = *scroll {
        let rows = forward(cells, cell, row, ctx);
        if rows.len() >= ctx.height {
            return rows;
        }
        *scroll = Scroll::Follow;
    }
    bottom(cells, ctx)
}

fn forward(
    cells: &mut [Cell],
    cell: usize,
    row: usize,
    ctx: &mut LayoutCtx<'_>,
) -> Vec<(usize, usize)> {
    let mut rows = Vec::with_capacity(ctx.height);
    let mut i = cell;
    let mut r = row;
    while i < cells.len() && rows.len() < ctx.height {
        let h = ctx.height_of(cells, i);
        while r < h && rows.len() < ctx.height {
            rows.push((i, r));
            r += 1;
        }
        i += 1;
        r = 0;
    }
    rows
}

fn bottom(cells: &mut [Cell], ctx: &mut LayoutCtx<'_>) -> Vec<(usize, usize)> {
    let mut rev = Vec::with_capacity(ctx.height);
    let mut i = cells.len();
    while i > 0 && rev.len() < ctx.height {
        i -= 1;
        let h = ctx.height_of(cells, i);
        let mut r = h;
        while r > 0 && rev.len() < ctx.height {
            r -= 1;
            rev.push((i, r));
        }
    }
    rev.reverse();
    rev
}

/// Scrolls by `delta` rows (negative: towards older messages).
pub fn scroll_by(cells: &mut [Cell], scroll: &mut Scroll, delta: isize, ctx: &mut LayoutCtx<'_>) {
    let Some(&(mut cell, mut row)) = window(cells, scroll, ctx).first() else {
        return;
    };
    if delta < 0 {
        for _ in 0..delta.unsigned_abs() {
            if row > 0 {
                row -= 1;
            } else if cell > 0 {
                cell -= 1;
                row = ctx.height_of(cells, cell).saturating_sub(1);
            } else {
                break;
            }
        }
    } else {
        if *scroll == Scroll::Follow {
            return;
        }
        for _ in 0..delta.unsigned_abs() {
            if row + 1 < ctx.height_of(cells, cell) {
                row += 1;
            } else if cell + 1 < cells.len() {
                cell += 1;
                row = 0;
            } else {
                break;
            }
        }
    }
    *scroll = Scroll::Top { cell, row };
    // Normalizes to Follow when the bottom is reached.
    window(cells, scroll, ctx);
}

/// Moves the anchor so that cell `idx` is fully visible (its top when it is taller
/// than the viewport).
pub fn ensure_visible(
    cells: &mut [Cell],
    scroll: &mut Scroll,
    idx: usize,
    ctx: &mut LayoutCtx<'_>,
) {
    if idx >= cells.len() {
        return;
    }
    let rows = window(cells, scroll, ctx);
    let (Some(first), Some(last)) = (rows.first().copied(), rows.last().copied()) else {
        return;
    };
    let h = ctx.height_of(cells, idx);
    let top_ok = (idx, 0) >= first;
    let bottom_ok = (idx, h.saturating_sub(1)) <= last;
    if top_ok && bottom_ok {
        return;
    }
    if !top_ok || h >= ctx.height {
        *scroll = Scroll::Top { cell: idx, row: 0 };
    } else {
        // Place the cell's last row at the bottom: walk up height-1 rows from it.
        let (mut cell, mut row) = (idx, h - 1);
        for _ in 1..ctx.height {
            if row > 0 {
                row -= 1;
            } else if cell > 0 {
                cell -= 1;
                row = ctx.height_of(cells, cell).saturating_sub(1);
            } else {
                break;
            }
        }
        *scroll = Scroll::Top { cell, row };
    }
    window(cells, scroll, ctx);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::state::cells::CellKind;

    fn cells(n: usize) -> Vec<Cell> {
        (0..n)
            .map(|i| Cell::new(CellKind::User(format!("message {i}").into())))
            .collect()
    }

    #[test]
    fn follow_shows_the_end_and_scrolling_back_reengages_it() {
        let theme = Theme::builtin_dark(true);
        let mut stats = LayoutStats::default();
        let mut c = cells(100);
        let mut scroll = Scroll::Follow;
        let mut ctx = LayoutCtx {
            width: 40,
            height: 5,
            theme: &theme,
            stats: &mut stats,
        };
        let w = window(&mut c, &mut scroll, &mut ctx);
        assert_eq!(w.last(), Some(&(99, 1)));
        assert_eq!(w.len(), 5);
        scroll_by(&mut c, &mut scroll, -4, &mut ctx);
        assert!(matches!(scroll, Scroll::Top { .. }));
        let top = window(&mut c, &mut scroll, &mut ctx)[0];
        assert_eq!(top, (95, 1));
        // Appending below does not move a Top anchor.
        c.push(Cell::new(CellKind::User("new".into())));
        assert_eq!(window(&mut c, &mut scroll, &mut ctx)[0], top);
        scroll_by(&mut c, &mut scroll, 100, &mut ctx);
        assert_eq!(scroll, Scroll::Follow);
        ensure_visible(&mut c, &mut scroll, 3, &mut ctx);
        assert_eq!(window(&mut c, &mut scroll, &mut ctx)[0], (3, 0));
        assert!(stats.cells_wrapped < 20, "{stats:?}");
    }
}
