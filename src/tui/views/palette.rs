//! The composer's popup: a bordered list drawn just above the composer (slash
//! commands, sessions to resume, `@` files, history search), the selected row
//! highlighted, each row `label  detail` cut to the width.
//!
//! Owns: how the popup looks and where it sits relative to the composer
//! ([`popup_area`]). Does not own: its rows or selection (`state::palette`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};
use unicode_width::UnicodeWidthStr;

use super::pane_block;
use crate::tui::state::palette::{MAX_VISIBLE, Popup, PopupKind};
use crate::tui::theme::{Slot, Theme};

/// The popup.
pub struct PaletteView<'a> {
    pub popup: &'a Popup,
    pub theme: &'a Theme,
}

/// Where the popup goes: above `composer`, as wide as it, as tall as its rows (at
/// most [`MAX_VISIBLE`], at least one for "no match") plus borders, never above
/// `top` (the first row it may cover).
pub fn popup_area(composer: Rect, top: u16, popup: &Popup) -> Rect {
    let rows = popup.items.len().clamp(1, MAX_VISIBLE);
    let want = u16::try_from(rows).unwrap_or(1) + 2;
    let room = composer.y.saturating_sub(top);
    let height = want.min(room);
    Rect::new(composer.x, composer.y - height, composer.width, height)
}

impl Widget for &PaletteView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.height < 3 {
            return;
        }
        Clear.render(area, buf);
        let p = self.popup;
        let title = match p.kind {
            PopupKind::History => format!(" {}: {}▏ ", p.kind.title(), p.query),
            kind => format!(" {} ", kind.title()),
        };
        let block = pane_block(title, true, self.theme);
        let inner = block.inner(area);
        block.render(area, buf);
        let rows = usize::from(inner.height);
        let width = usize::from(inner.width);
        if p.items.is_empty() {
            let line = Line::from(Span::styled("no match", self.theme.style(Slot::TreeMeta)));
            line.render(Rect::new(inner.x, inner.y, inner.width, 1), buf);
            return;
        }
        let label_col = p
            .items
            .iter()
            .map(|i| i.label.width())
            .max()
            .unwrap_or(0)
            .min(width / 2);
        let offset = p.offset(rows);
        for (row, (i, item)) in p
            .items
            .iter()
            .enumerate()
            .skip(offset)
            .take(rows)
            .enumerate()
        {
            let selected = i == p.selected;
            let (base, meta) = if selected {
                let s = self.theme.style(Slot::BrowserSelected);
                (s, s)
            } else {
                (
                    self.theme.style(Slot::Base),
                    self.theme.style(Slot::TreeMeta),
                )
            };
            let label = fit(&item.label, label_col.max(1));
            let pad = label_col.saturating_sub(label.width());
            let rest = width.saturating_sub(label_col + 2);
            let mut spans = vec![
                Span::styled(format!("{label}{}", " ".repeat(pad)), base),
                Span::styled("  ", base),
                Span::styled(fit(&first_line(&item.detail), rest), meta),
            ];
            let used: usize = spans.iter().map(|s| s.content.width()).sum();
            if selected && used < width {
                spans.push(Span::styled(" ".repeat(width - used), base));
            }
            let y = inner.y + u16::try_from(row).unwrap_or(0);
            Line::from(spans).render(Rect::new(inner.x, y, inner.width, 1), buf);
        }
    }
}

fn first_line(s: &str) -> String {
    let mut lines = s.lines();
    let first = lines.next().unwrap_or_default();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

/// `s` cut to `width` columns with a trailing `…` when cut.
fn fit(s: &str, width: usize) -> String {
    if s.width() <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_cuts_with_an_ellipsis() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(first_line("a\nb"), "a …");
    }
}
