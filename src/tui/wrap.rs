//! Wrapping styled lines to a width (word wrap, hard breaks for long words, hanging
//! indent for continuation rows) and truncating single rows with an ellipsis.
//!
//! Owns: display-width arithmetic (unicode-width). Does not own: what the lines say
//! (`markdown`, `state::cells`).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// A logical line before wrapping: its spans, and how many columns continuation rows
/// are indented (a list item's text start, a quote bar's width).
#[derive(Debug, Clone, PartialEq)]
pub struct RLine {
    pub line: Line<'static>,
    pub indent: u16,
}

impl RLine {
    /// A logical line with no hanging indent.
    pub fn new(line: impl Into<Line<'static>>) -> Self {
        Self {
            line: line.into(),
            indent: 0,
        }
    }

    /// A logical line whose continuation rows are indented by `indent` columns.
    pub fn indented(line: impl Into<Line<'static>>, indent: u16) -> Self {
        Self {
            line: line.into(),
            indent,
        }
    }
}

/// Display width of `s` in terminal columns.
pub fn width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

struct Token {
    text: String,
    style: Style,
    space: bool,
}

fn tokens(line: &Line<'_>) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    for span in &line.spans {
        for c in span.content.chars() {
            let c = if c == '\t' { ' ' } else { c };
            let space = c == ' ';
            match out.last_mut() {
                Some(t) if t.space == space && t.style == span.style => t.text.push(c),
                _ => out.push(Token {
                    text: c.to_string(),
                    style: span.style,
                    space,
                }),
            }
        }
    }
    out
}

struct Rows {
    rows: Vec<Vec<Span<'static>>>,
    cur: Vec<Span<'static>>,
    cur_width: usize,
    /// Columns of the current row taken by the hanging indent (not content).
    indent_width: usize,
    indent: usize,
}

impl Rows {
    fn push(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        self.cur_width += width(text);
        match self.cur.last_mut() {
            Some(s) if s.style == style => s.content.to_mut().push_str(text),
            _ => self.cur.push(Span::styled(text.to_string(), style)),
        }
    }

    fn has_content(&self) -> bool {
        self.cur_width > self.indent_width
    }

    fn break_row(&mut self) {
        self.rows.push(std::mem::take(&mut self.cur));
        self.cur_width = 0;
        self.indent_width = 0;
        if self.indent > 0 {
            self.push(&" ".repeat(self.indent), Style::default());
            self.indent_width = self.indent;
        }
    }
}

/// Wraps `rline` to at most `width` columns (at least 1 row; an empty line gives one
/// empty row). Whitespace at a wrap point is dropped; words longer than a row are
/// broken by character.
pub fn wrap(rline: &RLine, width_cols: u16) -> Vec<Line<'static>> {
    let max = usize::from(width_cols.max(1));
    let indent = usize::from(rline.indent);
    let indent = if indent + 4 > max { 0 } else { indent };
    let mut rows = Rows {
        rows: Vec::new(),
        cur: Vec::new(),
        cur_width: 0,
        indent_width: 0,
        indent,
    };
    for token in tokens(&rline.line) {
        let w = width(&token.text);
        if token.space {
            if rows.cur_width + w <= max {
                rows.push(&token.text, token.style);
            } else if rows.has_content() {
                rows.break_row();
            }
            continue;
        }
        // Move to a fresh row only when the word fits there; longer words (paths,
        // URLs) fill the current row and break by character.
        if rows.cur_width + w > max && rows.has_content() && w + indent <= max {
            // Drop trailing spaces of the row we leave.
            if let Some(last) = rows.cur.last_mut() {
                let trimmed = last.content.trim_end().to_string();
                last.content = trimmed.into();
            }
            rows.break_row();
        }
        if rows.cur_width + w <= max {
            rows.push(&token.text, token.style);
            continue;
        }
        for c in token.text.chars() {
            let cw = c.width().unwrap_or(0);
            if rows.cur_width + cw > max && rows.cur_width > rows.indent_width {
                rows.break_row();
            }
            let mut buf = [0u8; 4];
            rows.push(c.encode_utf8(&mut buf), token.style);
        }
    }
    rows.rows.push(rows.cur);
    rows.rows
        .into_iter()
        .map(|spans| Line::from(spans).style(rline.line.style))
        .collect()
}

/// Cuts `line` to `width_cols` columns, ending with `…` when something was cut.
pub fn truncate(line: &Line<'_>, width_cols: u16) -> Line<'static> {
    let max = usize::from(width_cols);
    let total: usize = line.spans.iter().map(|s| width(&s.content)).sum();
    if total <= max {
        return Line::from(
            line.spans
                .iter()
                .map(|s| Span::styled(s.content.to_string(), s.style))
                .collect::<Vec<_>>(),
        )
        .style(line.style);
    }
    let budget = max.saturating_sub(1);
    let mut used = 0;
    let mut spans = Vec::new();
    let mut last_style = Style::default();
    'outer: for span in &line.spans {
        let mut text = String::new();
        for c in span.content.chars() {
            let cw = c.width().unwrap_or(0);
            if used + cw > budget {
                if !text.is_empty() {
                    spans.push(Span::styled(text, span.style));
                }
                last_style = span.style;
                break 'outer;
            }
            used += cw;
            text.push(c);
        }
        last_style = span.style;
        spans.push(Span::styled(text, span.style));
    }
    if max > 0 {
        spans.push(Span::styled("…", last_style));
    }
    Line::from(spans).style(line.style)
}

/// Plain text of a line (for tests and searching).
pub fn plain(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(plain).collect()
    }

    #[test]
    fn word_wraps_with_hanging_indent_and_breaks_long_words() {
        let r = RLine::indented(Line::from("• alpha beta gamma delta"), 2);
        assert_eq!(texts(&wrap(&r, 12)), ["• alpha beta", "  gamma", "  delta"]);
        let r = RLine::new(Line::from("abcdefghij"));
        assert_eq!(texts(&wrap(&r, 4)), ["abcd", "efgh", "ij"]);
        let r = RLine::new(Line::from("path: /a/very/long/path"));
        assert_eq!(texts(&wrap(&r, 12)), ["path: /a/ver", "y/long/path"]);
        assert_eq!(texts(&wrap(&RLine::new(Line::from("")), 10)), [""]);
        let r = RLine::new(Line::from("  indented code"));
        assert_eq!(texts(&wrap(&r, 40)), ["  indented code"]);
        // Wide characters count two columns.
        let r = RLine::new(Line::from("日本語テキスト"));
        assert_eq!(texts(&wrap(&r, 6)), ["日本語", "テキス", "ト"]);
    }

    #[test]
    fn truncates_with_ellipsis() {
        assert_eq!(plain(&truncate(&Line::from("hello world"), 8)), "hello w…");
        assert_eq!(plain(&truncate(&Line::from("short"), 8)), "short");
    }
}
