//! The approval prompt (SPEC §12): the front prompt of the approval queue, drawn over
//! everything. It names the asking session (short id), its agent and the tool, then
//! shows the command (`$ …`) or the change as a coloured unified diff (`diff.added`,
//! `diff.removed`, `diff.hunk`), then the answer keys from the keymap — or the deny
//! reason being typed. The title counts the queue (`1 of 3`); a body taller than the
//! prompt scrolls, with its position on the bottom border.
//!
//! Commands and diffs are shown exactly: rows break at the width, not at spaces, so a
//! break never hides or invents a space; control characters show as their Unicode
//! pictures (`␛`) and bidirectional or invisible format characters as `⟨U+202E⟩`, so
//! nothing in a command can redraw or reorder what the person reads.
//!
//! Docked (`approval.thread`), the prompt is a strip below the panes: the head, the
//! first row of the command or change, and the answer keys.
//!
//! Owns: how the prompt looks and how tall it is. Does not own: the queue or its keys
//! (`state::approvals`), where it goes on screen (`app::draw`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Padding, Widget};
use unicode_width::UnicodeWidthChar;

use super::{WAITING_GLYPH, answer_keys};
use crate::session::ids::short_id;
use crate::tui::keymap::{Action, Keymap};
use crate::tui::state::approvals::{ApprovalQueue, PendingApproval};
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{RLine, truncate, wrap};

/// Widest the prompt gets (columns, borders included).
pub const MAX_WIDTH: u16 = 84;

/// Source lines of a command or diff laid out at most; the rest is counted.
pub const MAX_BODY_LINES: usize = 2_000;

/// The approval prompt.
pub struct ApprovalView<'a> {
    pub queue: &'a ApprovalQueue,
    pub keymap: &'a Keymap,
    pub theme: &'a Theme,
}

/// How the prompt fits a frame: its area and its body's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptLayout {
    /// Where the prompt goes (borders included).
    pub area: Rect,
    /// Body rows in all.
    pub body_rows: usize,
    /// Body rows shown at once.
    pub body_visible: usize,
}

impl ApprovalView<'_> {
    /// The prompt's place in `main` (centered, at most [`MAX_WIDTH`] wide, as tall as
    /// its content allows) and its body's size; `None` when no prompt waits.
    pub fn layout(&self, main: Rect) -> Option<PromptLayout> {
        let front = self.queue.front()?;
        let width = main.width.min(MAX_WIDTH);
        let inner_w = width.saturating_sub(4).max(1);
        let fixed = self.head(front, inner_w).len() + self.footer(front, inner_w).len() + 2;
        let body_rows = self.body(front, inner_w).len();
        let max_h = usize::from(main.height);
        let height = (fixed + body_rows + 2).min(max_h);
        let body_visible = height.saturating_sub(fixed + 2).max(1);
        let h = u16::try_from(height).unwrap_or(main.height);
        let area = Rect::new(
            main.x + (main.width - width) / 2,
            main.y + (main.height - h) / 2,
            width,
            h,
        );
        Some(PromptLayout {
            area,
            body_rows,
            body_visible,
        })
    }

    /// `explorer #0a1b2c3d wants to run bash`, then for `bash` whether it runs
    /// sandboxed (`sandboxed: writes ./, no network`).
    fn head(&self, front: &PendingApproval, width: u16) -> Vec<Line<'static>> {
        let r = &front.request;
        let verb = if r.command.is_some() {
            "wants to run"
        } else {
            "wants to use"
        };
        let line = Line::from(vec![
            Span::styled(
                format!("{WAITING_GLYPH} "),
                self.theme.style(Slot::TreeWaiting),
            ),
            Span::styled(r.agent.clone(), self.theme.style(Slot::Title)),
            Span::styled(
                format!(" #{} ", short_id(&front.session_id)),
                self.theme.style(Slot::TreeMeta),
            ),
            if front.is_merge() {
                Span::styled("finished with changes", self.theme.style(Slot::Base))
            } else {
                Span::styled(format!("{verb} "), self.theme.style(Slot::Base))
            },
            if front.is_merge() {
                Span::raw("")
            } else {
                Span::styled(r.tool_name.clone(), self.theme.style(Slot::ChatTool))
            },
        ]);
        let mut rows = wrap(&RLine::indented(line, 2), width);
        // Whether the command runs in the kernel sandbox (`bash` only).
        if let Some(note) = &r.sandbox {
            let slot = if note.starts_with("sandboxed") {
                Slot::TreeMeta
            } else {
                Slot::Warning
            };
            let line = Line::from(Span::styled(note.clone(), self.theme.style(slot)));
            rows.extend(wrap(&RLine::indented(line, 2), width));
        }
        rows
    }

    /// The command (`$ ` then the text, broken at the width) or the summary and the
    /// coloured diff, or the summary alone.
    fn body(&self, front: &PendingApproval, width: u16) -> Vec<Line<'static>> {
        let r = &front.request;
        let mut rows = Vec::new();
        if let Some(command) = &r.command {
            let style = self.theme.style(Slot::MdCode);
            for (i, line) in command.lines().take(MAX_BODY_LINES).enumerate() {
                let prefix = if i == 0 { "$ " } else { "  " };
                rows.extend(exact_rows(line, prefix, "  ", style, width));
            }
            more_lines(command.lines().count(), self.theme, &mut rows);
            return rows;
        }
        rows.extend(exact_rows(
            &r.summary,
            "",
            "  ",
            self.theme.style(Slot::Title),
            width,
        ));
        if r.diff.is_some() && self.queue.diff_folded() {
            let style = self.theme.style(Slot::ChatTool);
            for file in front.changed_files().iter().take(MAX_BODY_LINES) {
                rows.extend(exact_rows(file, "  ", "  ", style, width));
            }
        } else if let Some(diff) = &r.diff {
            for line in diff.lines().take(MAX_BODY_LINES) {
                rows.extend(exact_rows(line, "", "", self.diff_style(line), width));
            }
            more_lines(diff.lines().count(), self.theme, &mut rows);
        }
        rows
    }

    fn diff_style(&self, line: &str) -> Style {
        if line.starts_with("+++") || line.starts_with("---") {
            self.theme.style(Slot::Title)
        } else if line.starts_with('+') {
            self.theme.style(Slot::DiffAdded)
        } else if line.starts_with('-') {
            self.theme.style(Slot::DiffRemoved)
        } else if line.starts_with("@@") {
            self.theme.style(Slot::DiffHunk)
        } else {
            self.theme.style(Slot::Base)
        }
    }

    /// The answer keys (`y allow once · a always: bash(cargo test*) · A save it
    /// to config · n deny… · Esc deny`), or the deny reason being typed.
    fn footer(&self, front: &PendingApproval, width: u16) -> Vec<Line<'static>> {
        let text = self.theme.style(Slot::Base);
        if let Some(reason) = self.queue.reason() {
            let head = Line::from(Span::styled(
                "Deny. Reason for the model (optional; Enter sends, Esc goes back):",
                text,
            ));
            let mut rows = wrap(&RLine::new(head), width);
            rows.extend(exact_rows(
                &format!("{reason}▏"),
                "> ",
                "  ",
                self.theme.style(Slot::ChatUser),
                width,
            ));
            return rows;
        }
        if front.is_merge() {
            let diff = if self.queue.diff_folded() {
                " diff"
            } else {
                " files only"
            };
            let answers = [
                (Action::ApprovalAllow, " merge".to_string()),
                (Action::ApprovalDeny, " leave it on its branch…".to_string()),
                (Action::ApprovalDiff, diff.to_string()),
                (Action::ApprovalThread, " read its thread first".to_string()),
            ];
            let keys = answer_keys(self.keymap, self.theme, &answers);
            return wrap(&RLine::new(keys), width);
        }
        if let Some(why) = &front.request.escalation {
            let answers = [
                (
                    Action::ApprovalAllow,
                    " run it again with network, once".to_string(),
                ),
                (Action::ApprovalDenyNow, " no: keep the result".to_string()),
                (Action::ApprovalThread, " read its thread first".to_string()),
            ];
            let mut rows = wrap(
                &RLine::new(Line::from(Span::styled(format!("{why}."), text))),
                width,
            );
            rows.extend(wrap(
                &RLine::new(answer_keys(self.keymap, self.theme, &answers)),
                width,
            ));
            return rows;
        }
        let always = front.always();
        let mut answers = vec![(Action::ApprovalAllow, " allow once".to_string())];
        match &always {
            Some((_, rule)) => {
                answers.push((Action::ApprovalAlways, format!(" always: {rule}")));
                answers.push((Action::ApprovalAlwaysSave, " save it to config".into()));
            }
            None => answers.push((
                Action::ApprovalAlways,
                " always: not for this command (compound, expanding or a wrapper)".into(),
            )),
        }
        answers.push((Action::ApprovalDeny, " deny with a reason".to_string()));
        answers.push((Action::ApprovalDenyNow, " deny".to_string()));
        // A diff of several files can be folded to their names.
        if front.changed_files().len() > 1 {
            let diff = if self.queue.diff_folded() {
                " the diff"
            } else {
                " files only"
            };
            answers.push((Action::ApprovalDiff, diff.to_string()));
        }
        answers.push((Action::ApprovalThread, " read its thread first".to_string()));
        let keys = answer_keys(self.keymap, self.theme, &answers);
        wrap(&RLine::new(keys), width)
    }

    fn label(&self, action: Action, fallback: &str) -> String {
        let label = self.keymap.label(action);
        if label.is_empty() {
            fallback.to_string()
        } else {
            label
        }
    }
}

impl ApprovalView<'_> {
    /// Rows the docked prompt takes at `width` (borders included; 0 when no prompt
    /// waits): the head, the first row of the command or change, the answer keys.
    pub fn docked_height(&self, width: u16) -> u16 {
        let Some(front) = self.queue.front() else {
            return 0;
        };
        let inner = width.saturating_sub(4).max(1);
        let rows = 1 + 1 + self.docked_footer(front, inner).len() + 2;
        u16::try_from(rows).unwrap_or(u16::MAX)
    }

    /// The docked prompt's keys: the answers, then the key back to the full prompt.
    fn docked_footer(&self, front: &PendingApproval, width: u16) -> Vec<Line<'static>> {
        if self.queue.reason().is_some() {
            return self.footer(front, width);
        }
        let answers = if front.is_merge() {
            vec![
                (Action::ApprovalAllow, " merge".to_string()),
                (Action::ApprovalDeny, " leave it…".to_string()),
                (Action::ApprovalDiff, " diff".to_string()),
                (Action::ApprovalThread, " back to the prompt".to_string()),
            ]
        } else {
            vec![
                (Action::ApprovalAllow, " allow once".to_string()),
                (Action::ApprovalAlways, " always".to_string()),
                (Action::ApprovalDeny, " deny…".to_string()),
                (Action::ApprovalThread, " back to the prompt".to_string()),
            ]
        };
        let keys = answer_keys(self.keymap, self.theme, &answers);
        wrap(&RLine::new(keys), width)
    }

    /// The docked prompt in `area` (the strip `app::draw` keeps below the panes).
    fn render_docked(&self, front: &PendingApproval, area: Rect, buf: &mut Buffer) {
        Clear.render(area, buf);
        let mut title = format!(" {WAITING_GLYPH} Approval needed · docked ");
        if self.queue.len() > 1 {
            title = format!(
                " {WAITING_GLYPH} Approval needed · docked · 1 of {} ",
                self.queue.len()
            );
        }
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Thick)
            .border_style(self.theme.style(Slot::TreeWaiting))
            .title(Line::from(title).style(self.theme.style(Slot::Title)))
            .padding(Padding::horizontal(1))
            .style(self.theme.style(Slot::Base));
        let inner = block.inner(area);
        block.render(area, buf);
        let w = inner.width;
        let mut rows: Vec<Line<'static>> = self.head(front, w).into_iter().take(1).collect();
        rows.extend(self.body(front, w).into_iter().take(1));
        rows.extend(self.docked_footer(front, w));
        for (y, row) in rows.iter().take(usize::from(inner.height)).enumerate() {
            let y = inner.y + u16::try_from(y).unwrap_or(0);
            buf.set_line(inner.x, y, &truncate(row, w), w);
        }
    }
}

impl Widget for &ApprovalView<'_> {
    /// The modal prompt centered in `area`, or — docked — the prompt filling `area`.
    fn render(self, area: Rect, buf: &mut Buffer) {
        if let Some(front) = self.queue.front()
            && self.queue.docked()
        {
            self.render_docked(front, area, buf);
            return;
        }
        let (Some(front), Some(layout)) = (self.queue.front(), self.layout(area)) else {
            return;
        };
        let area = layout.area;
        Clear.render(area, buf);
        let mut title = format!(" {WAITING_GLYPH} Approval needed ");
        if self.queue.len() > 1 {
            title = format!(
                " {WAITING_GLYPH} Approval needed · 1 of {} ",
                self.queue.len()
            );
        }
        let mut block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Thick)
            .border_style(self.theme.style(Slot::TreeWaiting))
            .title(Line::from(title).style(self.theme.style(Slot::Title)))
            .padding(Padding::horizontal(1))
            .style(self.theme.style(Slot::Base));
        let scroll = usize::from(self.queue.scroll())
            .min(layout.body_rows.saturating_sub(layout.body_visible));
        if layout.body_rows > layout.body_visible {
            let last = (scroll + layout.body_visible).min(layout.body_rows);
            let position = format!(
                " {}–{} of {} rows · {}/{} scroll ",
                scroll + 1,
                last,
                layout.body_rows,
                self.label(Action::ApprovalUp, "up"),
                self.label(Action::ApprovalDown, "down"),
            );
            block = block.title_bottom(
                Line::from(position)
                    .style(self.theme.style(Slot::TreeMeta))
                    .right_aligned(),
            );
        }
        let inner = block.inner(area);
        block.render(area, buf);
        let w = inner.width;
        let body: Vec<Line<'static>> = self
            .body(front, w)
            .into_iter()
            .skip(scroll)
            .take(layout.body_visible)
            .collect();
        let mut rows = self.head(front, w);
        rows.push(Line::default());
        rows.extend(body);
        rows.push(Line::default());
        rows.extend(self.footer(front, w));
        for (y, row) in rows.iter().take(usize::from(inner.height)).enumerate() {
            let y = inner.y + u16::try_from(y).unwrap_or(0);
            buf.set_line(inner.x, y, &truncate(row, w), w);
        }
    }
}

/// `text` as rows of at most `width` columns, broken between characters (never at
/// or around spaces), the first row after `first`, the others after `rest`, every
/// character visible (see the module docs).
fn exact_rows(text: &str, first: &str, rest: &str, style: Style, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width).max(1);
    let mut rows = Vec::new();
    let mut row = first.to_string();
    let mut used = crate::tui::wrap::width(first);
    let mut fresh = true;
    for c in visible(text).chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width && !fresh {
            rows.push(Line::from(Span::styled(std::mem::take(&mut row), style)));
            row = rest.to_string();
            used = crate::tui::wrap::width(rest);
        }
        row.push(c);
        used += w;
        fresh = false;
    }
    rows.push(Line::from(Span::styled(row, style)));
    rows
}

/// `text` with control characters as their Unicode pictures (`␛`, `␉`) and
/// bidirectional / invisible format characters as `⟨U+XXXX⟩`.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{0}'..='\u{1f}' => {
                out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('?'));
            }
            '\u{7f}' => out.push('␡'),
            '\u{80}'..='\u{9f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}' => out.push_str(&format!("⟨U+{:04X}⟩", u32::from(c))),
            _ => out.push(c),
        }
    }
    out
}

fn more_lines(total: usize, theme: &Theme, rows: &mut Vec<Line<'static>>) {
    if total > MAX_BODY_LINES {
        rows.push(Line::from(Span::styled(
            format!(
                "… {} more lines not shown (the whole text is in the session's events.jsonl)",
                total - MAX_BODY_LINES
            ),
            theme.style(Slot::TreeMeta),
        )));
    }
}

#[cfg(test)]
mod tests;
