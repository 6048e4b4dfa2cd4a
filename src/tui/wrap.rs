//! Wrapping styled lines to a width (word wrap, hard breaks for long words, hanging
//! indent for continuation rows) and truncating single rows with an ellipsis.
//!
//! Owns: display-width arithmetic. Text is measured per grapheme cluster
//! (unicode-segmentation, UAX #29 extended clusters) with ratatui's own
//! [`CellWidth`] — the measure its buffer uses when it draws a span — so a row laid
//! out here never overflows what ratatui puts on screen: `❤️` (U+2764 U+FE0F) is 2
//! columns, a ZWJ family `👨‍👩‍👧` 2, a skin-toned `👍🏽` 2, a CJK ideograph 2. Summing
//! per `char` (what this module did, and what textwrap 0.16's `display_width` does)
//! gives 1, 6 and 4 and lets such rows run past the pane's edge, where ratatui clips
//! the rest. A long word is broken between clusters, never inside one.
//!
//! Does not own: what the lines say (`markdown`, `state::cells`), or the caching of
//! wrapped rows per width (`state::cells`, `state::stream`).

use ratatui::buffer::CellWidth;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;

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

/// Columns one grapheme cluster takes on screen: ratatui's [`CellWidth`], and 0 for a
/// cluster holding a control character (ratatui skips those when drawing).
fn cluster_width(g: &str) -> usize {
    if g.contains(char::is_control) {
        0
    } else {
        usize::from(g.cell_width())
    }
}

/// Display width of `s` in terminal columns, as ratatui draws it (see the module docs).
pub fn width(s: &str) -> usize {
    s.graphemes(true).map(cluster_width).sum()
}

/// A run of grapheme clusters of one style that are all spaces or all not.
struct Token {
    text: String,
    style: Style,
    space: bool,
    width: usize,
}

/// Columns between tab stops: a tab is drawn as spaces up to the next multiple of 8
/// columns of its logical line, as a terminal does.
pub const TAB_STOP: usize = 8;

/// `line` with each tab replaced by spaces up to the next [`TAB_STOP`] (columns
/// counted from the line's start); the line itself when it has no tab.
pub fn expand_tabs(line: &Line<'_>) -> Line<'static> {
    let mut col = 0;
    let spans = line
        .spans
        .iter()
        .map(|span| {
            let mut text = String::with_capacity(span.content.len());
            for g in span.content.graphemes(true) {
                if g == "\t" {
                    let n = TAB_STOP - col % TAB_STOP;
                    text.extend(std::iter::repeat_n(' ', n));
                    col += n;
                } else {
                    text.push_str(g);
                    col += cluster_width(g);
                }
            }
            Span::styled(text, span.style)
        })
        .collect::<Vec<_>>();
    let mut out = Line::from(spans).style(line.style);
    out.alignment = line.alignment;
    out
}

fn tokens(line: &Line<'_>) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    let expanded;
    let line = if line.spans.iter().any(|s| s.content.contains('\t')) {
        expanded = expand_tabs(line);
        &expanded
    } else {
        line
    };
    for span in &line.spans {
        for g in span.content.graphemes(true) {
            let space = g == " ";
            let w = cluster_width(g);
            match out.last_mut() {
                Some(t) if t.space == space && t.style == span.style => {
                    t.text.push_str(g);
                    t.width += w;
                }
                _ => out.push(Token {
                    text: g.to_string(),
                    style: span.style,
                    space,
                    width: w,
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
    fn push(&mut self, text: &str, text_width: usize, style: Style) {
        if text.is_empty() {
            return;
        }
        self.cur_width += text_width;
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
            self.push(&" ".repeat(self.indent), self.indent, Style::default());
            self.indent_width = self.indent;
        }
    }
}

/// Wraps `rline` to at most `width_cols` columns (at least 1 row; an empty line gives
/// one empty row). Whitespace at a wrap point is dropped; a word longer than a row
/// fills the current row and is broken between grapheme clusters. A tab goes to the
/// next tab stop ([`TAB_STOP`]). Only a single cluster wider than the whole row (a 2-column emoji at width 1)
/// can exceed it.
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
        let w = token.width;
        if token.space {
            if rows.cur_width + w <= max {
                rows.push(&token.text, w, token.style);
            } else if rows.has_content() {
                rows.break_row();
            }
            continue;
        }
        // Move to a fresh row only when the word fits there; longer words (paths,
        // URLs) fill the current row and break between clusters.
        if rows.cur_width + w > max && rows.has_content() && w + indent <= max {
            // Drop trailing spaces of the row we leave.
            if let Some(last) = rows.cur.last_mut() {
                let trimmed = last.content.trim_end().to_string();
                last.content = trimmed.into();
            }
            rows.break_row();
        }
        if rows.cur_width + w <= max {
            rows.push(&token.text, w, token.style);
            continue;
        }
        for g in token.text.graphemes(true) {
            let gw = cluster_width(g);
            // A cluster wider than a whole row (a wide base with spacing marks, e.g.
            // "⺀ꦺ" is 3 columns) can go nowhere: it is drawn as one replacement mark.
            let (g, gw) = if gw > 1 && gw > max.saturating_sub(rows.indent_width) {
                ("\u{FFFD}", 1)
            } else {
                (g, gw)
            };
            if rows.cur_width + gw > max && rows.cur_width > rows.indent_width {
                rows.break_row();
            }
            rows.push(g, gw, token.style);
        }
    }
    rows.rows.push(rows.cur);
    rows.rows
        .into_iter()
        .map(|spans| Line::from(spans).style(rline.line.style))
        .collect()
}

/// Cuts `line` to `width_cols` columns, ending with `…` when something was cut; cuts
/// fall between grapheme clusters.
pub fn truncate(line: &Line<'_>, width_cols: u16) -> Line<'static> {
    let expanded;
    let line = if line.spans.iter().any(|s| s.content.contains('\t')) {
        expanded = expand_tabs(line);
        &expanded
    } else {
        line
    };
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
        for g in span.content.graphemes(true) {
            let gw = cluster_width(g);
            if used + gw > budget {
                if !text.is_empty() {
                    spans.push(Span::styled(text, span.style));
                }
                last_style = span.style;
                break 'outer;
            }
            used += gw;
            text.push_str(g);
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
    fn a_cluster_wider_than_the_row_becomes_a_replacement_mark() {
        // "⺀" (2 columns) with a spacing mark (1 column) is one 3-column cluster.
        let line = RLine::new(Line::from("a⺀ꦺb"));
        let rows = wrap(&line, 2);
        assert!(
            rows.iter()
                .all(|r| r.spans.iter().map(|s| width(&s.content)).sum::<usize>() <= 2)
        );
        assert_eq!(texts(&rows).concat(), "a\u{FFFD}b");
        // Where the row is wide enough, the cluster is kept whole.
        assert_eq!(texts(&wrap(&line, 10)), vec!["a⺀ꦺb"]);
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

    #[test]
    fn measures_grapheme_clusters_as_ratatui_draws_them() {
        // VS16 emoji, ZWJ family, skin tone, flag, keycap: two columns each.
        for g in [
            "❤\u{fe0f}",
            "👨\u{200d}👩\u{200d}👧",
            "👍🏽",
            "🇫🇷",
            "1\u{fe0f}\u{20e3}",
        ] {
            assert_eq!(width(g), 2, "{g:?}");
        }
        assert_eq!(width("❤"), 1);
        assert_eq!(width("e\u{301}"), 1);
        assert_eq!(width("日本"), 4);
        assert_eq!(width("a\tb"), 2);
    }

    #[test]
    fn every_row_fits_and_no_cluster_is_split() {
        let heart = "❤\u{fe0f}";
        let family = "👨\u{200d}👩\u{200d}👧";
        let text = format!(
            "{} tail {family}{family}{family} 👍🏽👍🏿 日本語のテキスト end",
            heart.repeat(12)
        );
        for cols in [5u16, 7, 10, 13, 20, 80] {
            let rows = wrap(&RLine::indented(Line::from(text.clone()), 2), cols);
            for row in &rows {
                let w: usize = row.spans.iter().map(|s| width(&s.content)).sum();
                assert!(
                    w <= usize::from(cols),
                    "{cols}: {:?} is {w} wide",
                    plain(row)
                );
            }
            let joined: String = texts(&rows).concat();
            let clusters = |s: &str| -> Vec<String> {
                s.graphemes(true)
                    .filter(|g| *g != " ")
                    .map(str::to_string)
                    .collect()
            };
            assert_eq!(clusters(&joined), clusters(&text), "at {cols}");
        }
        let rows = wrap(&RLine::new(Line::from(heart.repeat(12))), 10);
        assert_eq!(
            texts(&rows),
            [heart.repeat(5), heart.repeat(5), heart.repeat(2)]
        );
    }

    #[test]
    fn truncates_between_clusters() {
        let family = "👨\u{200d}👩\u{200d}👧";
        let line = Line::from(format!("ab{family}{family}"));
        assert_eq!(plain(&truncate(&line, 5)), format!("ab{family}…"));
        assert_eq!(plain(&truncate(&line, 4)), "ab…");
    }
}
