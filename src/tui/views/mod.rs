//! Pure views: each borrows state and renders (`impl Widget for &XView<'_>`); none
//! mutates state or builds raw colours (styles come from theme slots).
//!
//! Owns: how panes, overlays and bars look. Does not own: layout of the window
//! (`app::draw`), state (`state`), or the chat's visible-window computation
//! (`state::layout`, run by the app before drawing).

pub mod approval;
pub mod banner;
pub mod browser;
pub mod chat;
pub mod composer;
pub mod context;
pub mod diff;
pub mod find;
pub mod help;
pub mod hooks;
pub mod mcp;
pub mod palette;
pub mod pending;
pub mod status;
pub mod tree;
pub mod trust;
pub mod wall;

#[cfg(test)]
mod detached_tests;
#[cfg(test)]
mod files_tests;
#[cfg(test)]
mod isolation_tests;
#[cfg(test)]
mod mcp_tests;
#[cfg(test)]
mod ran_on_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod transfer_tests;
#[cfg(test)]
mod wide_text_tests;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders};

use super::keymap::{Action, Keymap};
use super::theme::{Slot, Theme};

/// A bordered pane with `title`, highlighted when focused.
pub fn pane_block<'a>(title: impl Into<Line<'a>>, focused: bool, theme: &Theme) -> Block<'a> {
    let border = if focused {
        Slot::BorderFocused
    } else {
        Slot::BorderUnfocused
    };
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Rounded
        })
        .border_style(theme.style(border))
        .title(title.into().style(theme.style(Slot::Title)))
        .style(theme.style(Slot::Base))
}

/// Draws `lines` into `inner` (one column of margin, each line cut at the width) from
/// row `scroll`, kept so the last page stays full: the scrolling body of an overlay.
pub fn scrolled_lines(lines: &[Line<'_>], scroll: u16, inner: Rect, buf: &mut Buffer) {
    let max_scroll = lines.len().saturating_sub(usize::from(inner.height));
    let start = usize::from(scroll).min(max_scroll);
    let width = inner.width.saturating_sub(1);
    for (y, line) in lines
        .iter()
        .skip(start)
        .take(usize::from(inner.height))
        .enumerate()
    {
        let y = inner.y + u16::try_from(y).unwrap_or(0);
        buf.set_line(inner.x + 1, y, &super::wrap::truncate(line, width), width);
    }
}

/// `area` shrunk to a centered rectangle of at most `width` × `height`.
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// A modal prompt's answer keys from the keymap: `y allow once · n deny`, each action's
/// keys (in `status.key`) then what it does; unbound actions are left out.
pub fn answer_keys(keymap: &Keymap, theme: &Theme, answers: &[(Action, String)]) -> Line<'static> {
    let mut spans = Vec::new();
    for (action, what) in answers {
        let keys = keymap.label(*action);
        if keys.is_empty() {
            continue;
        }
        if !spans.is_empty() {
            spans.push(Span::styled(" · ", theme.style(Slot::TreeMeta)));
        }
        spans.push(Span::styled(keys, theme.style(Slot::StatusKey)));
        spans.push(Span::styled(what.clone(), theme.style(Slot::Base)));
    }
    Line::from(spans)
}

/// The "waiting for you" glyph: tree rows, the status bar's count, the approval prompt.
pub const WAITING_GLYPH: &str = "⚑";

/// Spinner frame for `now_ms` (10 frames per second).
pub fn spinner(now_ms: i64) -> &'static str {
    const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
    FRAMES[usize::try_from((now_ms / 100).rem_euclid(10)).unwrap_or(0)]
}
