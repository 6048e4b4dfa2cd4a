//! Markdown → styled logical lines (pulldown-cmark): paragraphs, headings, emphasis,
//! inline code, fenced/indented code blocks, ordered/bullet/task lists with nesting,
//! block quotes, simple tables, rules.
//!
//! Owns: the Markdown look. Does not own: wrapping to a width (`wrap`) or streaming
//! (`state::stream` calls [`render`] on the committed source).

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme::{Slot, Theme};
use super::wrap::{RLine, width};

/// Renders `source` to logical lines with `base` as the text style.
pub fn render(source: &str, base: Style, theme: &Theme) -> Vec<RLine> {
    let mut r = Renderer {
        theme,
        base,
        out: Vec::new(),
        cur: Vec::new(),
        styles: vec![base],
        lists: Vec::new(),
        marker: None,
        quote: 0,
        code: None,
        table: None,
        need_gap: false,
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(source, options) {
        r.event(event);
    }
    r.flush();
    r.out
}

struct Table {
    rows: Vec<Vec<String>>,
    head_rows: usize,
    cell: String,
}

struct Renderer<'t> {
    theme: &'t Theme,
    base: Style,
    out: Vec<RLine>,
    cur: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// One entry per open list: `Some(next number)` for ordered lists.
    lists: Vec<Option<u64>>,
    /// The marker of an item whose first line is not written yet.
    marker: Option<String>,
    quote: usize,
    code: Option<String>,
    table: Option<Table>,
    need_gap: bool,
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or(self.base)
    }

    fn push_style(&mut self, patch: Style) {
        let s = self.style().patch(patch);
        self.styles.push(s);
    }

    /// The prefix for the next line and the hanging indent it implies.
    fn prefix(&mut self) -> (Vec<Span<'static>>, u16) {
        let mut spans = Vec::new();
        let quote_style = self.theme.style(Slot::MdQuote);
        for _ in 0..self.quote {
            spans.push(Span::styled("│ ", quote_style));
        }
        let depth = self.lists.len();
        if depth > 0 {
            spans.push(Span::raw("  ".repeat(depth - 1)));
            match self.marker.take() {
                Some(m) => spans.push(Span::styled(m, self.theme.style(Slot::MdBullet))),
                None => spans.push(Span::raw(" ".repeat(self.item_width()))),
            }
        }
        let indent: usize = spans.iter().map(|s| width(&s.content)).sum();
        (spans, u16::try_from(indent).unwrap_or(0))
    }

    fn item_width(&self) -> usize {
        match self.lists.last() {
            Some(Some(n)) => format!("{}. ", n.saturating_sub(1)).len(),
            _ => 2,
        }
    }

    fn emit(&mut self, content: Vec<Span<'static>>) {
        let (mut spans, indent) = self.prefix();
        spans.extend(content);
        self.out.push(RLine::indented(Line::from(spans), indent));
    }

    fn flush(&mut self) {
        if !self.cur.is_empty() || self.marker.is_some() {
            let content = std::mem::take(&mut self.cur);
            self.emit(content);
        }
    }

    fn gap(&mut self) {
        self.flush();
        if self.need_gap && !self.out.is_empty() {
            let (mut spans, indent) = self.prefix_without_marker();
            // A blank line keeps the quote bars but not list indentation.
            spans.truncate(self.quote);
            self.out.push(RLine::indented(Line::from(spans), indent));
        }
        self.need_gap = false;
    }

    fn prefix_without_marker(&mut self) -> (Vec<Span<'static>>, u16) {
        let marker = self.marker.take();
        let p = self.prefix();
        self.marker = marker;
        p
    }

    fn text(&mut self, text: &str) {
        if let Some(code) = &mut self.code {
            code.push_str(text);
        } else if let Some(t) = &mut self.table {
            t.cell.push_str(text);
        } else {
            let style = self.style();
            self.cur.push(Span::styled(text.to_string(), style));
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            Event::InlineMath(t) | Event::DisplayMath(t) => self.text(&t),
            Event::Code(t) => {
                if let Some(table) = &mut self.table {
                    table.cell.push_str(&t);
                } else {
                    let style = self.style().patch(self.theme.style(Slot::MdCode));
                    self.cur.push(Span::styled(t.to_string(), style));
                }
            }
            Event::FootnoteReference(t) => self.text(&format!("[{t}]")),
            // Chat models mean a single newline as a line break.
            Event::SoftBreak | Event::HardBreak => self.flush(),
            Event::Rule => {
                self.gap();
                let style = self.theme.style(Slot::MdQuote);
                self.emit(vec![Span::styled("─".repeat(24), style)]);
                self.need_gap = true;
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::FootnoteDefinition(_) => self.gap(),
            Tag::Heading { level, .. } => {
                self.gap();
                let style = self.theme.style(Slot::MdHeading);
                self.push_style(style);
                let hashes = "#".repeat(level as usize);
                self.text(&format!("{hashes} "));
            }
            Tag::BlockQuote(_) => {
                self.gap();
                self.quote += 1;
            }
            Tag::CodeBlock(_) => {
                self.gap();
                self.code = Some(String::new());
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.gap();
                } else {
                    self.flush();
                    self.need_gap = false;
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                self.need_gap = false;
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                self.marker = Some(marker);
            }
            Tag::Table(_) => {
                self.gap();
                self.table = Some(Table {
                    rows: Vec::new(),
                    head_rows: 0,
                    cell: String::new(),
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(t) = &mut self.table {
                    t.cell.clear();
                }
            }
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } | Tag::Image { .. } => {
                let style = self.theme.style(Slot::MdLink);
                self.push_style(style);
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::FootnoteDefinition => {
                self.flush();
                self.need_gap = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.need_gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.need_gap = true;
            }
            TagEnd::CodeBlock => self.end_code(),
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.need_gap = self.lists.is_empty();
            }
            TagEnd::Item => self.flush(),
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.head_rows = t.rows.len();
                }
            }
            TagEnd::TableCell => {
                if let Some(t) = &mut self.table {
                    let cell = std::mem::take(&mut t.cell);
                    if let Some(row) = t.rows.last_mut() {
                        row.push(cell.trim().to_string());
                    }
                }
            }
            TagEnd::Table => self.end_table(),
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image => {
                self.styles.pop();
            }
            _ => {}
        }
    }

    fn end_code(&mut self) {
        let code = self.code.take().unwrap_or_default();
        let style = self.theme.style(Slot::MdCodeBlock);
        let body = code.strip_suffix('\n').unwrap_or(&code);
        for line in body.split('\n') {
            self.emit(vec![Span::styled(format!("  {line}"), style)]);
        }
        self.need_gap = true;
    }

    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let cols = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                table
                    .rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| width(s))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let sep_style = self.theme.style(Slot::MdQuote);
        for (i, row) in table.rows.iter().enumerate() {
            let head = i < table.head_rows;
            let style = if head {
                self.base.add_modifier(Modifier::BOLD)
            } else {
                self.base
            };
            let mut spans = Vec::new();
            for (c, w) in widths.iter().enumerate() {
                if c > 0 {
                    spans.push(Span::styled(" │ ", sep_style));
                }
                let cell = row.get(c).map(String::as_str).unwrap_or("");
                let pad = w.saturating_sub(width(cell));
                spans.push(Span::styled(format!("{cell}{}", " ".repeat(pad)), style));
            }
            self.emit(spans);
            if head && i + 1 == table.head_rows {
                let rule = widths
                    .iter()
                    .map(|w| "─".repeat(*w))
                    .collect::<Vec<_>>()
                    .join("─┼─");
                self.emit(vec![Span::styled(rule, sep_style)]);
            }
        }
        self.need_gap = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::wrap::plain;

    fn lines(src: &str) -> Vec<String> {
        let theme = Theme::builtin_dark(true);
        render(src, Style::default(), &theme)
            .iter()
            .map(|l| plain(&l.line))
            .collect()
    }

    #[test]
    fn renders_blocks() {
        let out = lines(
            "# Title\n\nSome *em* and `code`.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n```rust\nfn main() {}\n```\n\n> quoted\n",
        );
        assert_eq!(
            out,
            [
                "# Title",
                "",
                "Some em and code.",
                "",
                "• one",
                "• two",
                "  • nested",
                "",
                "1. first",
                "2. second",
                "",
                "  fn main() {}",
                "",
                "│ quoted",
            ]
        );
    }

    #[test]
    fn renders_tables_and_hanging_indent() {
        let out = lines("| a | bb |\n|---|---|\n| 1 | 2 |\n");
        assert_eq!(out, ["a │ bb", "──┼───", "1 │ 2 "]);
        let theme = Theme::builtin_dark(true);
        let r = render("- item text", Style::default(), &theme);
        assert_eq!(r[0].indent, 2);
    }

    proptest::proptest! {
        #[test]
        fn any_input_renders_and_wraps_within_the_width(src in "([-*#`|> \n\ta-z0-9_\\[\\]()!.日é]|(?s).){0,300}", w in 2u16..60) {
            let theme = Theme::builtin_dark(true);
            for l in render(&src, Style::default(), &theme) {
                for row in crate::tui::wrap::wrap(&l, w) {
                    let cols: usize = row.spans.iter().map(|s| width(&s.content)).sum();
                    proptest::prop_assert!(cols <= usize::from(w), "{cols} > {w}: {row:?}");
                }
            }
        }
    }
}
