//! The streaming assistant reply: deltas accumulate into an unfinished tail line;
//! each completed line is committed once (rendered as Markdown together with the
//! committed source, new lines appended, wrapped once per width). Per delta only the
//! tail is re-wrapped.
//!
//! Owns: commit-whole-lines streaming. Does not own: the final rendering of the
//! finished message (`cells`, when `message:appended` replaces this cell), the row
//! type and thinking summary (`rows`).

use ratatui::text::{Line, Span};

use super::rows::{LayoutStats, Row, thinking_rows};
use crate::tui::markdown;
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{RLine, truncate, wrap};

/// A reply being streamed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamState {
    /// Committed source: whole lines, each ending with `\n`.
    source: String,
    /// The unfinished last line.
    tail: String,
    /// Committed logical lines (never re-rendered once committed).
    committed: Vec<RLine>,
    /// Streamed thinking text.
    thinking: String,
    /// Layout for `width`: rows of `committed[..wrapped_upto]`.
    width: u16,
    committed_rows: Vec<Line<'static>>,
    wrapped_upto: usize,
    /// Rows of the thinking summary and of the tail (recomputed when dirty).
    head_rows: Vec<Line<'static>>,
    tail_rows: Vec<Line<'static>>,
    dirty: bool,
}

impl StreamState {
    /// Appends a text delta; completed lines are committed. Returns how many logical
    /// lines were committed.
    pub fn push_text(&mut self, delta: &str, theme: &Theme) -> usize {
        self.tail.push_str(delta);
        self.dirty = true;
        let Some(pos) = self.tail.rfind('\n') else {
            return 0;
        };
        let rest = self.tail.split_off(pos + 1);
        let done = std::mem::replace(&mut self.tail, rest);
        self.source.push_str(&done);
        let rendered = markdown::render(&self.source, theme.style(Slot::ChatAssistant), theme);
        let before = self.committed.len();
        if rendered.len() > before {
            self.committed.extend(rendered.into_iter().skip(before));
        }
        self.committed.len() - before
    }

    /// Appends a thinking delta.
    pub fn push_thinking(&mut self, delta: &str) {
        self.thinking.push_str(delta);
        self.dirty = true;
    }

    /// Everything streamed so far as text (committed source + tail).
    pub fn text(&self) -> String {
        format!("{}{}", self.source, self.tail)
    }

    /// The streamed thinking text.
    pub fn thinking(&self) -> &str {
        &self.thinking
    }

    /// The unfinished tail line.
    pub fn tail(&self) -> &str {
        &self.tail
    }

    /// Number of committed logical lines.
    pub fn committed_len(&self) -> usize {
        self.committed.len()
    }

    /// Wraps what changed: new committed lines and the tail (only when dirty). A width
    /// change re-wraps the committed lines once.
    pub fn ensure_layout(&mut self, width: u16, theme: &Theme, stats: &mut LayoutStats) {
        if width != self.width {
            self.width = width;
            self.committed_rows.clear();
            self.wrapped_upto = 0;
            self.dirty = true;
        }
        for line in &self.committed[self.wrapped_upto..] {
            self.committed_rows.extend(wrap(line, width));
            stats.lines_wrapped += 1;
        }
        self.wrapped_upto = self.committed.len();
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.head_rows.clear();
        if !self.thinking.is_empty() {
            for row in thinking_rows(&self.thinking, false, theme) {
                if let Row::Clip(l) = row {
                    self.head_rows.push(truncate(&l, width));
                }
            }
        }
        self.tail_rows.clear();
        let style = theme.style(Slot::ChatAssistant);
        let cursor = theme.style(Slot::TreeRunning);
        let tail = RLine::new(Line::from(vec![
            Span::styled(self.tail.clone(), style),
            Span::styled("▍", cursor),
        ]));
        self.tail_rows = wrap(&tail, width);
        stats.lines_wrapped += 1;
        stats.cells_wrapped += 1;
    }

    /// Rows of the last layout (excluding the separator).
    pub fn row_count(&self) -> usize {
        self.head_rows.len() + self.committed_rows.len() + self.tail_rows.len()
    }

    /// Row `i` of the last layout.
    pub fn row(&self, i: usize) -> Option<&Line<'static>> {
        let h = self.head_rows.len();
        let c = self.committed_rows.len();
        if i < h {
            self.head_rows.get(i)
        } else if i < h + c {
            self.committed_rows.get(i - h)
        } else {
            self.tail_rows.get(i - h - c)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::wrap::plain;

    #[test]
    fn commits_whole_lines_and_rewraps_only_the_tail() {
        let theme = Theme::builtin_dark(true);
        let mut s = StreamState::default();
        let mut stats = LayoutStats::default();
        assert_eq!(s.push_text("Hello wor", &theme), 0);
        s.ensure_layout(40, &theme, &mut stats);
        assert_eq!(stats.lines_wrapped, 1);
        assert_eq!(plain(s.row(0).unwrap()), "Hello wor▍");
        assert_eq!(s.push_text("ld\nSecond", &theme), 1);
        assert_eq!(s.tail(), "Second");
        s.ensure_layout(40, &theme, &mut stats);
        assert_eq!(stats.lines_wrapped, 3, "one committed line + the tail");
        for _ in 0..10 {
            s.push_text(" more", &theme);
            s.ensure_layout(40, &theme, &mut stats);
        }
        assert_eq!(stats.lines_wrapped, 13, "each delta re-wraps only the tail");
        assert_eq!(plain(s.row(0).unwrap()), "Hello world");
        assert_eq!(
            s.text(),
            "Hello world\nSecond more more more more more more more more more more"
        );
    }
}
