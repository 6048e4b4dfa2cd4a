//! Find in the open thread (issue 15 item 4; SPEC §13 lists the search bar among the
//! popups Esc closes): the query, every hit in the thread's cells, the current hit,
//! and scrolling it into view.
//!
//! Searching reads each cell's own text ([`Cell::search_text`]: a message's text, a
//! card's visible head), case-insensitively, and never wraps anything to a width, so a
//! keystroke costs one pass over the thread's text however long it is; only the cell
//! of the hit being shown is laid out to find the row to scroll to. New cells (a live
//! thread) are searched as they arrive: [`Find::refresh`] rescans from the first cell
//! that may have changed, not the whole thread.
//!
//! Matching is per character with simple lowercasing (`str::to_lowercase` of each
//! character), non-overlapping, left to right; an ASCII query takes a byte-wise fast
//! path with the same result. Typing on (a query that extends the last one) searches
//! only the cells that matched before.
//!
//! Owns: [`Find`], [`match_ranges`], [`reveal`]. Does not own: the keys (`app::components::find`),
//! drawing the bar and the highlights (`views::find`), the cells (`thread`).

use std::ops::Range;

use super::cells::Cell;
use super::layout::{self, LayoutCtx, Scroll};
use super::thread::Thread;
use crate::session::SessionId;
use crate::tui::theme::Theme;
use crate::tui::wrap::plain;

/// How many trailing cells are searched again when the thread grew (a streaming reply
/// becomes a message, a tool card gets its result: the last cells change in place).
const TAIL_RESCAN: usize = 8;

/// One occurrence of the query: the `nth` (from 0) in cell `cell`'s search text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub cell: usize,
    pub nth: usize,
}

/// The find bar's state: open while `Some` in the `App`.
#[derive(Debug, Clone, Default)]
pub struct Find {
    /// What is searched for (as typed; matched case-insensitively).
    pub query: String,
    /// The bar takes typed characters (after Ctrl+F); Enter leaves editing, and `n`/`N`
    /// then step through the hits.
    pub editing: bool,
    hits: Vec<Hit>,
    current: Option<usize>,
    /// `(session, cells searched, query searched)` of the last scan.
    scanned: (Option<SessionId>, usize, String),
}

impl Find {
    /// An empty bar, taking typed characters.
    pub fn open() -> Self {
        Self {
            editing: true,
            ..Self::default()
        }
    }

    /// Every hit, in thread order.
    pub fn hits(&self) -> &[Hit] {
        &self.hits
    }

    /// The hit shown now.
    pub fn current(&self) -> Option<Hit> {
        self.hits.get(self.current?).copied()
    }

    /// `"3 of 17"`, `"no matches"`, or empty for an empty query.
    pub fn label(&self) -> String {
        match (self.query.is_empty(), self.current, self.hits.len()) {
            (true, _, _) => String::new(),
            (false, _, 0) => "no matches".to_string(),
            (false, Some(i), n) => format!("{} of {n}", i + 1),
            (false, None, 1) => "1 match".to_string(),
            (false, None, n) => format!("{n} matches"),
        }
    }

    /// Searches `thread` for the query again from scratch (the query changed) and
    /// makes the first hit at or below the cell `from` current (else the last hit
    /// above it). Returns the new current hit.
    /// A query that extends the last one searched (typing on) only searches the cells
    /// that matched it.
    pub fn search(&mut self, thread: &Thread, theme: &Theme, from: usize) -> Option<Hit> {
        let (session, cells, last) = &self.scanned;
        let narrowing = !last.is_empty()
            && self.query.starts_with(last.as_str())
            && *session == thread.session_id
            && *cells == thread.cells.len();
        if narrowing {
            let mut candidates: Vec<usize> = self.hits.iter().map(|h| h.cell).collect();
            candidates.dedup();
            self.hits.clear();
            self.scanned.2 = self.query.clone();
            for i in candidates {
                let n = match_ranges(&thread.cells[i].search_text(theme), &self.query).len();
                self.hits.extend((0..n).map(|nth| Hit { cell: i, nth }));
            }
        } else {
            self.hits.clear();
            self.scan(thread, theme, 0);
        }
        self.current = self
            .hits
            .iter()
            .position(|h| h.cell >= from)
            .or_else(|| self.hits.len().checked_sub(1));
        self.current()
    }

    /// Keeps the hits up to date with a thread that grew since the last scan, or
    /// whose reply is streaming: rescans its last cells (see [`TAIL_RESCAN`]) and keeps
    /// the current hit. Returns whether anything was rescanned.
    pub fn refresh(&mut self, thread: &Thread, theme: &Theme) -> bool {
        let (session, cells, query) = &self.scanned;
        let streaming = thread.streaming().is_some();
        if *session == thread.session_id
            && *cells == thread.cells.len()
            && *query == self.query
            && !streaming
        {
            return false;
        }
        if *session != thread.session_id {
            self.hits.clear();
            self.current = None;
            self.scan(thread, theme, 0);
            return true;
        }
        if *query != self.query || thread.cells.len() < *cells {
            let keep = self.current();
            self.hits.clear();
            self.scan(thread, theme, 0);
            self.current = keep.and_then(|k| self.hits.iter().position(|h| *h == k));
            return true;
        }
        let from = self.scanned.1.saturating_sub(TAIL_RESCAN);
        let keep = self.current();
        self.hits.retain(|h| h.cell < from);
        self.scan(thread, theme, from);
        self.current = keep
            .and_then(|k| self.hits.iter().position(|h| *h == k))
            .or_else(|| keep.and(self.hits.len().checked_sub(1)));
        true
    }

    fn scan(&mut self, thread: &Thread, theme: &Theme, from: usize) {
        self.scanned = (
            thread.session_id.clone(),
            thread.cells.len(),
            self.query.clone(),
        );
        if self.query.is_empty() {
            return;
        }
        for (i, cell) in thread.cells.iter().enumerate().skip(from) {
            let n = match_ranges(&cell.search_text(theme), &self.query).len();
            self.hits.extend((0..n).map(|nth| Hit { cell: i, nth }));
        }
    }

    /// Moves to the next (`forward`) or previous hit, wrapping around. Returns it.
    pub fn step(&mut self, forward: bool) -> Option<Hit> {
        let n = self.hits.len();
        if n == 0 {
            return None;
        }
        self.current = Some(match self.current {
            None if forward => 0,
            None => n - 1,
            Some(i) if forward => (i + 1) % n,
            Some(i) => (i + n - 1) % n,
        });
        self.current()
    }
}

/// Byte ranges of the non-overlapping, case-insensitive occurrences of `needle` in
/// `haystack`, left to right (none for an empty needle).
pub fn match_ranges(haystack: &str, needle: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    if needle.is_empty() {
        return out;
    }
    if needle.is_ascii() {
        let (h, n) = (haystack.as_bytes(), needle.as_bytes());
        let mut i = 0;
        while i + n.len() <= h.len() {
            if h[i..i + n.len()].eq_ignore_ascii_case(n) {
                out.push(i..i + n.len());
                i += n.len();
            } else {
                i += 1;
            }
        }
        return out;
    }
    let lower = |c: char| c.to_lowercase().next().unwrap_or(c);
    let needle: Vec<char> = needle.chars().map(lower).collect();
    let chars: Vec<(usize, char)> = haystack.char_indices().collect();
    let mut i = 0;
    while i + needle.len() <= chars.len() {
        let hit = needle
            .iter()
            .zip(&chars[i..])
            .all(|(n, (_, c))| lower(*c) == *n);
        if hit {
            let end = chars
                .get(i + needle.len())
                .map_or(haystack.len(), |(b, _)| *b);
            out.push(chars[i].0..end);
            i += needle.len();
        } else {
            i += 1;
        }
    }
    out
}

/// The row of `cell` (as laid out now) holding its `nth` occurrence of `query`,
/// counting occurrences row by row; the last row with one when the rows show fewer
/// (a Markdown source has characters its rows do not show), else row 0.
pub fn row_of(cell: &Cell, nth: usize, query: &str) -> usize {
    let (mut seen, mut last) = (0, None);
    let mut row = 0;
    while let Some(line) = cell.row(row) {
        let n = match_ranges(&plain(line), query).len();
        if n > 0 {
            if nth < seen + n {
                return row;
            }
            last = Some(row);
        }
        seen += n;
        row += 1;
    }
    last.unwrap_or(0)
}

/// Scrolls `thread` (a viewport of `width` × `height`) so that `hit`'s row is visible:
/// nothing moves when it already is; otherwise the row lands a third of the way down.
/// Lays out only the cells the scroll touches.
pub fn reveal(thread: &mut Thread, hit: Hit, query: &str, size: (u16, usize), theme: &Theme) {
    let (width, height) = size;
    if hit.cell >= thread.cells.len() || height == 0 {
        return;
    }
    let mut ctx = LayoutCtx {
        width,
        height,
        theme,
        stats: &mut thread.stats,
    };
    let cells = &mut thread.cells;
    cells[hit.cell].ensure_layout(width, theme, ctx.stats);
    let row = row_of(&cells[hit.cell], hit.nth, query);
    let window = layout::window(cells, &mut thread.scroll, &mut ctx);
    if window.contains(&(hit.cell, row)) {
        return;
    }
    thread.scroll = Scroll::Top {
        cell: hit.cell,
        row,
    };
    let up = isize::try_from(height / 3).unwrap_or(0);
    layout::scroll_by(cells, &mut thread.scroll, -up, &mut ctx);
    thread.window = layout::window(cells, &mut thread.scroll, &mut ctx);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::state::cells::CellKind;

    #[test]
    fn matching_is_case_insensitive_non_overlapping_and_unicode_aware() {
        assert_eq!(match_ranges("Foo foo FOO", "foo"), vec![0..3, 4..7, 8..11]);
        assert_eq!(match_ranges("aaaa", "aa"), vec![0..2, 2..4]);
        assert_eq!(match_ranges("abc", ""), Vec::<Range<usize>>::new());
        // A non-ASCII query; ranges are byte ranges on char boundaries.
        assert_eq!(match_ranges("Ünïcode ünÏ", "ÜNÏ"), vec![0..5, 10..15]);
        // An ASCII query inside non-ASCII text.
        assert_eq!(match_ranges("日本 Rust 日本", "rust"), vec![7..11]);
    }

    fn thread(texts: &[&str]) -> Thread {
        let mut t = Thread::new_root(None);
        t.cells = texts
            .iter()
            .map(|s| Cell::new(CellKind::User((*s).into())))
            .collect();
        t
    }

    #[test]
    fn search_counts_every_hit_steps_around_and_follows_a_growing_thread() {
        let theme = Theme::builtin_dark(true);
        let mut t = thread(&["alpha beta", "gamma", "Beta BETA", "delta"]);
        let mut f = Find::open();
        f.query = "beta".into();
        assert_eq!(f.search(&t, &theme, 1), Some(Hit { cell: 2, nth: 0 }));
        assert_eq!(f.label(), "2 of 3");
        assert_eq!(f.step(true), Some(Hit { cell: 2, nth: 1 }));
        assert_eq!(f.step(true), Some(Hit { cell: 0, nth: 0 }));
        assert_eq!(f.step(false), Some(Hit { cell: 2, nth: 1 }));
        t.cells.push(Cell::new(CellKind::User("beta again".into())));
        assert!(f.refresh(&t, &theme));
        assert!(!f.refresh(&t, &theme));
        assert_eq!(f.label(), "3 of 4");
        // Typing on narrows the last hits; erasing searches everything again.
        f.query = "beta a".into();
        assert_eq!(f.search(&t, &theme, 0), Some(Hit { cell: 4, nth: 0 }));
        assert_eq!(f.hits().len(), 1);
        f.query = "a".into();
        f.search(&t, &theme, 0);
        assert_eq!(f.hits().len(), 11);
        f.query = "nothing".into();
        assert_eq!(f.search(&t, &theme, 0), None);
        assert_eq!(f.label(), "no matches");
    }

    #[test]
    fn reveal_scrolls_the_hit_into_view_laying_out_only_what_it_touches() {
        let theme = Theme::builtin_dark(true);
        let texts: Vec<String> = (0..10_000).map(|i| format!("message {i}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut t = thread(&refs);
        t.layout(40, 10, &theme);
        let mut f = Find::open();
        f.query = "message 42".into();
        let hit = f.search(&t, &theme, 0).unwrap();
        assert_eq!(hit.cell, 42);
        let before = t.stats.cells_wrapped;
        reveal(&mut t, hit, &f.query, (40, 10), &theme);
        t.layout(40, 10, &theme);
        assert!(t.window.iter().any(|&(c, _)| c == 42), "{:?}", t.window);
        assert!(t.stats.cells_wrapped - before < 40, "{:?}", t.stats);
    }
}
