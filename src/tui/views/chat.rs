//! The chat pane: the open thread's visible window (computed beforehand by
//! `Thread::layout`), a header with session id, agent (`helpdesk › billing` when a
//! transfer handed the session to another agent of its tree) and status, a selection
//! gutter. A sub-session's header says `sub-session #…`; a fork's reads like a root's
//! with `fork of #<short parent> @<turn>` (a fork is a root for depth and limits). A
//! remote sub-session's header ends with where it runs: `on build-1 (worker
//! w-1a2b3c4d, pid 4242)` (issue 27).

use jiff::Timestamp;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::pane_block;
use super::tree::status_glyph;
use crate::session::SessionStatus;
use crate::session::ids::short_id;
use crate::tui::state::thread::Thread;
use crate::tui::state::tree::{SessionTree, place_long};
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{RLine, wrap};

/// The chat pane.
pub struct ChatView<'a> {
    pub thread: Option<&'a Thread>,
    pub tree: &'a SessionTree,
    pub theme: &'a Theme,
    pub now: Timestamp,
    pub focused: bool,
}

/// The rows area inside the pane's border (the first column is the selection gutter).
pub fn body_area(area: Rect) -> Rect {
    Rect::new(
        area.x.saturating_add(1),
        area.y.saturating_add(1),
        area.width.saturating_sub(2),
        area.height.saturating_sub(2),
    )
}

/// Width cells are wrapped to inside `area`: the body minus the gutter and one
/// column of margin before the right border.
pub fn wrap_width(area: Rect) -> u16 {
    body_area(area).width.saturating_sub(2).max(1)
}

impl ChatView<'_> {
    fn header(&self) -> Line<'static> {
        let head = self.theme.style(Slot::ChatHeader);
        let Some(t) = self.thread else {
            return Line::from(Span::styled(" Chat ", head));
        };
        let mut agent = t.agent.clone().unwrap_or_else(|| "default agent".into());
        if let Some(active) = t.active_agent.as_ref().filter(|a| **a != agent) {
            agent = format!("{agent} › {active}");
        }
        let Some(id) = &t.session_id else {
            return Line::from(Span::styled(format!(" new session · {agent} "), head));
        };
        if t.loading {
            return Line::from(Span::styled(format!(" loading {}… ", short_id(id)), head));
        }
        let node = self.tree.get(id);
        let mut status = node.map(|n| n.status).unwrap_or_default();
        if t.turn_in_flight && !status.turn_in_progress() {
            status = SessionStatus::Running;
        }
        let (glyph, slot) = status_glyph(status, self.now);
        let glyph = if status == SessionStatus::Idle {
            ""
        } else {
            glyph
        };
        // A fork is a root for depth and limits (issue 25): its header reads like a
        // root's and names where it was cut; any other session with a parent is a
        // sub-session.
        let parent = node.and_then(|n| n.parent.as_deref());
        let (kind, fork) = match (parent, node.and_then(|n| n.fork)) {
            (Some(p), Some(turn)) => ("", format!(" · fork of #{} @{turn}", short_id(p))),
            (Some(_), None) => ("sub-session ", String::new()),
            (None, _) => ("", String::new()),
        };
        let mut line = Line::from(vec![
            Span::styled(format!(" {kind}#{}{fork} · {agent} · ", short_id(id)), head),
            Span::styled(
                format!(
                    "{glyph}{}{} ",
                    if glyph.is_empty() { "" } else { " " },
                    status.as_str()
                ),
                self.theme.style(slot),
            ),
        ]);
        if let Some(r) = node.and_then(|n| n.ran_on.as_ref()) {
            line.spans
                .push(Span::styled(format!("· {} ", place_long(r)), head));
        }
        line
    }

    fn empty_hint(&self, thread: Option<&Thread>) -> &'static str {
        match thread {
            Some(t) if t.loading => "loading transcript…",
            Some(t) if t.session_id.is_some() => {
                "no messages yet — type below to continue this session"
            }
            _ => "type a message below and press Enter to start a new session",
        }
    }
}

impl Widget for &ChatView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = pane_block(self.header(), self.focused, self.theme);
        block.render(area, buf);
        let body = body_area(area);
        if body.width < 2 || body.height == 0 {
            return;
        }
        let thread = self.thread;
        let window = thread.map(|t| t.window.as_slice()).unwrap_or(&[]);
        if thread.is_none_or(|t| t.cells.is_empty()) {
            let hint = RLine::new(Span::styled(
                self.empty_hint(thread),
                self.theme.style(Slot::ChatNotice),
            ));
            for (y, line) in wrap(&hint, body.width - 1)
                .iter()
                .take(usize::from(body.height))
                .enumerate()
            {
                let y = body.y + u16::try_from(y).unwrap_or(0);
                buf.set_line(body.x + 1, y, line, body.width - 1);
            }
            return;
        }
        let Some(t) = thread else {
            return;
        };
        let selected_style = self.theme.style(Slot::ChatSelected);
        for (y, &(cell, row)) in window.iter().enumerate().take(usize::from(body.height)) {
            let y = body.y + u16::try_from(y).unwrap_or(0);
            let selected = t.selected == Some(cell);
            if let Some(line) = t.cells.get(cell).and_then(|c| c.row(row)) {
                buf.set_line(body.x + 1, y, line, body.width - 1);
            }
            if selected && t.cells.get(cell).is_some_and(|c| c.row(row).is_some()) {
                buf.set_string(body.x, y, "▌", selected_style);
                buf.set_style(Rect::new(body.x + 1, y, body.width - 1, 1), selected_style);
            }
        }
    }
}
