//! What every cell kind lays out with: logical rows, the thinking summary and the
//! layout work counters.
//!
//! Owns: [`Row`] (wrapped to the width, or clipped to one row), [`thinking_rows`]
//! (shared by finished thinking cells and the streaming cell's summary),
//! [`first_line`] and [`LayoutStats`]. A leaf: `cells`, `stream` and `error_card` build
//! on it and it uses none of them. Does not own: any cell kind's look (`cells`,
//! `stream`, `error_card`) or wrapping itself (`tui::wrap`).

use ratatui::text::{Line, Span};

use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::RLine;

/// Layout work counters, for tests and benchmarks: they must not grow with history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LayoutStats {
    /// Cells whose rows were (re)computed.
    pub cells_wrapped: u64,
    /// Logical lines wrapped (streaming: committed lines plus tail re-wraps).
    pub lines_wrapped: u64,
}

/// A logical row: wrapped to the width, or clipped to one row.
pub(crate) enum Row {
    Wrap(RLine),
    Clip(Line<'static>),
}

/// The first line of `s`, trimmed (`""` when blank).
pub(crate) fn first_line(s: &str) -> &str {
    s.trim().lines().next().unwrap_or("")
}

/// The rows of a thinking block: collapsed, `▸ thinking · <first line>`; expanded, a
/// `▾ thinking` heading and every line indented.
pub(crate) fn thinking_rows(text: &str, expanded: bool, theme: &Theme) -> Vec<Row> {
    let style = theme.style(Slot::ChatThinking);
    if !expanded {
        return vec![Row::Clip(Line::from(Span::styled(
            format!("▸ thinking · {}", first_line(text)),
            style,
        )))];
    }
    let mut rows = vec![Row::Clip(Line::from(Span::styled("▾ thinking", style)))];
    rows.extend(text.trim().split('\n').map(|l| {
        Row::Wrap(RLine::indented(
            Line::from(Span::styled(format!("  {l}"), style)),
            2,
        ))
    }));
    rows
}
