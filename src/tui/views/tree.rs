//! The session tree pane: one row per visible session with status glyph, title (else
//! agent), the files changed (`✎ 3 files`, distinct paths of the subtree), the words
//! `queued` / `paused` for those states, the spend against a budget (`15/10 tok`), the
//! running turn's elapsed time or else the session's age (`5m ago`, since created),
//! tokens and (where known) cost rolled up the subtree, then its own context use
//! (`ctx 3.2k/4.0k`); a narrow pane drops the context use, cost, tokens and time before
//! it cuts the label. A sub-session without a title shows its
//! task after its agent (`explorer · List the modules`). A collapsed node with running
//! sessions below shows its fold glyph in the running colour and `●N` (N running).
//! A session waiting for the person (an approval prompt, or status `waiting`) shows
//! `⚑` in the `tree.waiting` colour; a collapsed node with sessions below that need
//! the person (`SessionTree::needs_you`: approvals, paused, failed, interrupted) shows
//! `⚑N`.
//! A remote sub-session (issue 27) shows where it runs after its label: `@build-1`, or
//! the worker's id (`@w-1a2b3c4d`) when the worker runs on this machine; the footer
//! spells it out (`on build-1 (worker w-1a2b3c4d, pid 4242)`).
//! An unmerged worktree's mark (`⎇ arbor/1a2b3c4d unmerged`) ends the label and is
//! never cut: the task and label yield first, then it shortens to `⎇ unmerged`, `⎇`.
//! A root that names a parent it is not shown under (missing, itself, a cycle) carries
//! a note saying which. A footer names the selected session's model and how it was
//! routed.

use jiff::Timestamp;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::{WAITING_GLYPH, pane_block, spinner};
use crate::session::SessionStatus;
use crate::tui::clock::{format_cost, format_elapsed, format_tokens};
use crate::tui::state::tree::{Node, SessionTree, TreeRow, place_long};
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{truncate, width};

/// The tree pane.
pub struct TreeView<'a> {
    pub tree: &'a SessionTree,
    pub theme: &'a Theme,
    pub now: Timestamp,
    pub focused: bool,
    /// The session open in the chat pane (marked).
    pub open: Option<&'a str>,
}

/// Glyph and slot of a status (`running` animates).
pub fn status_glyph(status: SessionStatus, now: Timestamp) -> (&'static str, Slot) {
    match status {
        SessionStatus::Running => (spinner(now.as_millisecond()), Slot::TreeRunning),
        SessionStatus::Queued => ("◌", Slot::TreeIdle),
        SessionStatus::Waiting => (WAITING_GLYPH, Slot::TreeWaiting),
        SessionStatus::Paused => ("‖", Slot::Warning),
        SessionStatus::Completed => ("✓", Slot::TreeDone),
        SessionStatus::Failed => ("✗", Slot::TreeFailed),
        SessionStatus::Cancelled => ("⊘", Slot::TreeCancelled),
        SessionStatus::Interrupted => ("!", Slot::TreeFailed),
        SessionStatus::Idle => ("·", Slot::TreeIdle),
    }
}

/// The word a row spells out for a status its glyph alone does not make plain:
/// `queued` (waiting for a provider slot) and `paused` (stopped at its budget).
pub fn status_word(status: SessionStatus) -> Option<&'static str> {
    match status {
        SessionStatus::Queued => Some("queued"),
        SessionStatus::Paused => Some("paused"),
        _ => None,
    }
}

/// `✎ 1 file`, `✎ 3 files` (`✎3` when `compact`); empty for none.
pub fn files_label(files: usize, compact: bool) -> String {
    match (files, compact) {
        (0, _) => String::new(),
        (n, true) => format!("✎{n}"),
        (1, false) => "✎ 1 file".to_string(),
        (n, false) => format!("✎ {n} files"),
    }
}

/// Columns of a row's label kept before its stats (the rest of the label is cut).
const LABEL_ROOM: usize = 14;

/// How old a session is: `12s ago`, `5m ago`, `3h ago`, `2d ago`.
pub fn format_age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

impl TreeView<'_> {
    /// The row's label as drawn: the title, else the agent and its task.
    fn label_text(&self, node: &Node) -> String {
        match (&node.title, &node.task) {
            (None, Some(task)) => format!("{} · {task}", node.agent),
            _ => node.label().to_string(),
        }
    }

    /// `row` drawn at width `w`: its prefix and label on the left (with the worktree
    /// or fork mark when it fits), its files and stats on the right.
    fn row_line(&self, row: &TreeRow<'_>, w: u16) -> Line<'static> {
        let node = row.node;
        let meta = self.theme.style(Slot::TreeMeta);
        let place = node.place(self.tree.local_host());
        let hidden = (row.hidden_running > 0).then(|| format!("●{}", row.hidden_running));
        let mut left = self.row_prefix(row, hidden.is_some());
        let prefix_w: usize = left.spans.iter().map(|s| width(&s.content)).sum();
        let label_w = width(node.label());
        // A sub-session told by its task: when the row is cut, its agent's name
        // shortens first so siblings of one agent stay apart (`impl… · Add the
        // parser`, not `implementer ·…` twice).
        let compact = (node.title.is_none() && node.task.is_some()).then(|| {
            let mut compact = left.clone();
            compact.spans.push(Span::styled(
                short_name(&node.agent),
                self.theme.style(Slot::Base),
            ));
            compact.spans.extend(after_label(node, place.clone(), meta));
            let task_w = node.task.as_deref().map_or(0, |t| width(t) + 3);
            (compact, task_w)
        });
        left.spans.push(Span::styled(
            node.label().to_string(),
            self.theme.style(Slot::Base),
        ));
        left.spans.extend(after_label(node, place.clone(), meta));
        let (full_mark, short_mark) = marks(node).unzip();
        let marked = Marked {
            full: full_mark,
            short: short_mark.unwrap_or_default(),
            keep_full: prefix_w + label_w.min(LABEL_ROOM),
            keep_short: prefix_w + label_w.min(MARK_LABEL_ROOM),
            style: meta,
        };
        let left_w: usize = left.spans.iter().map(|s| width(&s.content)).sum::<usize>()
            + marked.full().map_or(0, |m| width(&m));
        let right = self.right_text(row, w, place.as_deref(), left_w, hidden.as_deref());
        self.fit_row((left, compact), &marked, right, hidden, w)
    }

    /// The left of `row`'s line before its label: the open marker, the indent, the
    /// fold glyph (coloured for what hides below: a session waiting for the person,
    /// else a running one when `hidden_running`), the status glyph, and the count of
    /// sessions waiting below (before the label: it must not be cut).
    fn row_prefix(&self, row: &TreeRow<'_>, hidden_running: bool) -> Line<'static> {
        let node = row.node;
        let (glyph, slot) = if self.tree.is_waiting(&node.id) {
            status_glyph(SessionStatus::Waiting, self.now)
        } else {
            status_glyph(node.status, self.now)
        };
        let fold = match (node.children.is_empty(), node.collapsed) {
            (true, _) => "  ",
            (false, true) => "▸ ",
            (false, false) => "▾ ",
        };
        let open = if self.open == Some(node.id.as_str()) {
            "›"
        } else {
            " "
        };
        let meta = self.theme.style(Slot::TreeMeta);
        let waiting = self.theme.style(Slot::TreeWaiting);
        let hidden_waiting = (row.hidden_needs_you > 0)
            .then(|| Span::styled(format!("{WAITING_GLYPH}{} ", row.hidden_needs_you), waiting));
        let fold_style = match (&hidden_waiting, hidden_running) {
            (Some(_), _) => waiting,
            (None, true) => self.theme.style(Slot::TreeRunning),
            (None, false) => meta,
        };
        let mut left = Line::from(vec![
            Span::styled(format!("{open}{}", "  ".repeat(row.depth)), meta),
            Span::styled(fold, fold_style),
            Span::styled(format!("{glyph} "), self.theme.style(slot)),
        ]);
        left.spans.extend(hidden_waiting);
        left
    }

    /// The text on the right of `row`'s line at width `w`: files changed lead
    /// (spelled out when they fit beside the left's `left_w` columns and the
    /// `hidden` running count, else as `✎3`), then the stats.
    fn right_text(
        &self,
        row: &TreeRow<'_>,
        w: u16,
        place: Option<&str>,
        left_w: usize,
        hidden: Option<&str>,
    ) -> String {
        let right = self.stats(row, w, place);
        let others_w = width(right.trim_start()) + hidden.map_or(0, |h| width(h) + 1);
        let full = files_label(row.files, false);
        let files = if left_w + 1 + width(&full) + 1 + others_w <= usize::from(w) {
            full
        } else {
            files_label(row.files, true)
        };
        match (files.is_empty(), right.trim().is_empty()) {
            (true, _) => right,
            (false, true) => files,
            (false, false) => format!("{files} {}", right.trim_start()),
        }
    }

    /// `left` and `right` (after the `hidden` running count) in width `w`, the right
    /// flush with the edge; when the right does not fit, the left alone (the count
    /// moved in front of the glyph).
    fn fit_row(
        &self,
        (mut left, compact): (Line<'static>, Option<(Line<'static>, usize)>),
        marked: &Marked,
        right: String,
        hidden: Option<String>,
        w: u16,
    ) -> Line<'static> {
        let running = self.theme.style(Slot::TreeRunning);
        let mut right_spans = Vec::new();
        if let Some(h) = &hidden {
            let sep = if right.is_empty() { "" } else { " " };
            right_spans.push(Span::styled(format!("{h}{sep}"), running));
        }
        if !right.is_empty() {
            right_spans.push(Span::styled(right, self.theme.style(Slot::TreeMeta)));
        }
        let right_w: usize = right_spans.iter().map(|s| width(&s.content)).sum();
        let avail = usize::from(w);
        let left_w: usize = left.spans.iter().map(|s| width(&s.content)).sum();
        let room = if right_spans.is_empty() || avail < right_w + 8 {
            avail
        } else {
            avail - right_w - 1
        };
        // Only when the cut would leave fewer than 8 columns of the task.
        if let Some((compact, task_w)) = compact
            && left_w.saturating_sub(room) + 8 > task_w
            && left_w > room
        {
            left = compact;
        }
        if right_spans.is_empty() || avail < right_w + 8 {
            if let Some(h) = hidden {
                left.spans.insert(2, Span::styled(format!("{h} "), running));
            }
            return marked.fit(&left, w);
        }
        let left_max = u16::try_from(avail - right_w - 1).unwrap_or(0);
        let mut line = marked.fit(&left, left_max);
        let used: usize = line.spans.iter().map(|s| width(&s.content)).sum();
        line.spans
            .push(Span::raw(" ".repeat(avail - used - right_w)));
        line.spans.extend(right_spans);
        line
    }

    /// The stats on the right of `row`'s line at width `w`: its state word, budget,
    /// checklist, time, tokens, cost and context use, the last ones dropped (context,
    /// cost, tokens, time) when the pane is too narrow for them beside some of the
    /// label and its marks; a spelled-out state or budget stays (a budget in its
    /// short form). `place`: where a remote sub-session runs.
    fn stats(&self, row: &TreeRow<'_>, w: u16, place: Option<&str>) -> String {
        let node = row.node;
        let mut parts: Vec<String> = Vec::new();
        let word = status_word(node.status);
        let budget = node.budget_label(false);
        let (flagged, budget_shown) = (word.is_some(), budget.is_some());
        parts.extend(word.map(str::to_string));
        parts.extend(budget);
        parts.extend(node.todo.map(|(done, total)| format!("☑ {done}/{total}")));
        // A running turn shows how long it runs; a stopped session how old it is.
        let time = match node.age_ms(self.now) {
            Some(age) if !node.status.turn_in_progress() => Some(format_age(age)),
            _ => node.elapsed_ms(self.now).map(format_elapsed),
        };
        parts.extend(time);
        if row.tokens > 0 {
            parts.push(format_tokens(row.tokens));
        }
        if let Some(cost) = row.cost {
            parts.push(format_cost(cost));
        }
        // The session's own context use (not rolled up: each session has its own); the
        // first to go when the pane is narrow.
        if let Some(context) = &node.context {
            parts.push(format!("ctx {}", super::context::used_of_limit(context)));
        }
        // The title goes first: the cost, tokens and time are dropped (in that order)
        // when the pane is too narrow for them beside some of the label; a row that
        // spells out its state or budget keeps those.
        let keep = usize::from(flagged) + usize::from(budget_shown);
        // Room for the indent, fold, glyph and some of the label.
        // An unmerged worktree's mark must stay visible: the stats yield to its short
        // form (`⎇ unmerged`) too.
        // Where a remote sub-session runs must stay visible too: the stats yield to it.
        let left = 6
            + 2 * row.depth
            + width(&self.label_text(node)).min(LABEL_ROOM)
            + place.map_or(0, |p| 1 + width(p))
            + marks(node).map_or(0, |(_, short)| width(&short));
        let fits = |parts: &[String]| {
            parts.is_empty() || width(&parts.join(" ")) + 1 + left <= usize::from(w)
        };
        while parts.len() > keep && !fits(&parts) {
            parts.pop();
        }
        if budget_shown && !fits(&parts) {
            parts[keep - 1] = node.budget_label(true).unwrap_or_default();
        }
        parts.join(" ")
    }
}

/// What follows a row's label: where a remote sub-session runs (`place`, issue 27;
/// before its task, so the task yields first), the task of a sub-session without a
/// title, where a fork was cut, and why a root that names a parent it is not shown
/// under is detached.
fn after_label(node: &Node, place: Option<String>, meta: Style) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    if let Some(place) = place {
        spans.push(Span::styled(format!(" {place}"), meta));
    }
    if let (None, Some(task)) = (&node.title, &node.task) {
        spans.push(Span::styled(format!(" · {task}"), meta));
    }
    if let Some(turn) = node.fork {
        spans.push(Span::styled(format!(" (fork @{turn})"), meta));
    }
    if let Some(d) = node.detached {
        spans.push(Span::styled(format!(" ({})", d.note()), meta));
    }
    spans
}

/// An agent's name in a cut row: its first four characters and `…` when longer
/// than five.
fn short_name(agent: &str) -> String {
    if agent.chars().count() <= 5 {
        agent.to_string()
    } else {
        format!("{}…", agent.chars().take(4).collect::<String>())
    }
}

/// The short form of an unmerged worktree's mark, when the branch does not fit.
const SHORT_MARK: &str = " ⎇ unmerged";

/// A node's worktree mark, in full and short (issue 35): ` ⎇ arbor/1a2b3c4d unmerged
/// ✎3` / ` ⎇ unmerged`, ` ⎇ arbor/1a2b3c4d conflict` / ` ⎇ conflict`, ` ✓ merged`,
/// ` ✗ discarded`; `None` without a worktree that changed something.
fn marks(node: &Node) -> Option<(String, String)> {
    use crate::isolation::Standing;
    match (&node.standing, &node.branch) {
        (Some(Standing::Merged), _) => Some((" ✓ merged".into(), " ✓ merged".into())),
        (Some(Standing::Discarded), _) => Some((" ✗ discarded".into(), " ✗ discarded".into())),
        (Some(Standing::Conflict(_)), Some(b)) => {
            Some((format!(" ⎇ {b} conflict"), " ⎇ conflict".into()))
        }
        (Some(standing @ Standing::Unmerged(_)), Some(b)) => {
            Some((format!(" ⎇ {b} {standing}"), SHORT_MARK.into()))
        }
        (_, Some(b)) => Some((format!(" ⎇ {b} unmerged"), SHORT_MARK.into())),
        _ => None,
    }
}

/// Columns of the label kept before a shortened unmerged mark.
const MARK_LABEL_ROOM: usize = 6;

/// A row's left side and the unmerged-worktree mark that must stay visible at its end
/// (issue 25: the person must see that a node has unmerged work).
struct Marked {
    /// The mark in full (` ⎇ arbor/1a2b3c4d unmerged ✎3`, ` ✓ merged`, …), `None`
    /// without one ([`marks`]).
    full: Option<String>,
    /// The mark when the full one does not fit (` ⎇ unmerged`).
    short: String,
    /// Columns of the left side (indent, glyph, label up to [`LABEL_ROOM`]) the full
    /// mark keeps in front of it; the task text yields to it, the label does not.
    keep_full: usize,
    /// Columns (label up to [`MARK_LABEL_ROOM`]) the short mark keeps in front of it.
    keep_short: usize,
    style: Style,
}

impl Marked {
    /// The mark in full: ` ⎇ arbor/1a2b3c4d unmerged ✎3`.
    fn full(&self) -> Option<String> {
        self.full.clone()
    }

    /// `left` cut to `budget` columns with the mark kept whole at its end: the full
    /// mark when everything fits or only the task text has to be cut for it; else the
    /// mark shortens to ` ⎇ unmerged` (the task and label cut down to
    /// [`MARK_LABEL_ROOM`]), then to ` ⎇`.
    fn fit(&self, left: &Line<'static>, budget: u16) -> Line<'static> {
        let Some(full) = self.full() else {
            return truncate(left, budget);
        };
        let avail = usize::from(budget);
        let left_w: usize = left.spans.iter().map(|s| width(&s.content)).sum();
        let mark = if left_w + width(&full) <= avail {
            full
        } else {
            [
                (full, self.keep_full),
                (self.short.clone(), self.keep_short),
            ]
            .into_iter()
            .find(|(m, keep)| keep + width(m) <= avail)
            .map(|(m, _)| m)
            .unwrap_or_else(|| self.short.chars().take(2).collect())
        };
        let room = u16::try_from(avail.saturating_sub(width(&mark))).unwrap_or(0);
        let mut line = truncate(left, room);
        line.spans.push(Span::styled(mark, self.style));
        line
    }
}

impl TreeView<'_> {
    /// The selected session's model and routing, when known, and where a remote
    /// sub-session runs (`  on build-1 (worker w-1a2b3c4d, pid 4242)`), when there is
    /// room (the pane keeps at least six rows for sessions).
    fn footer(&self, node: Option<&Node>, inner: Rect) -> Vec<Line<'static>> {
        let Some(node) = node else { return Vec::new() };
        let meta = self.theme.style(Slot::TreeMeta);
        let w = inner.width.saturating_sub(1);
        let line = |text: String| truncate(&Line::from(Span::styled(text, meta)), w);
        let mut lines = Vec::new();
        if let Some(model) = &node.model {
            lines.push(line(format!("⚙ {model}")));
            if let Some(via) = &node.model_via {
                lines.push(line(format!("  via {via}")));
            }
        }
        if let Some(r) = &node.ran_on {
            // Under the model's line, indented as `via`.
            let indent = if lines.is_empty() { "" } else { "  " };
            lines.push(line(format!("{indent}{}", place_long(r))));
        }
        if usize::from(inner.height) < lines.len() + 6 {
            return Vec::new();
        }
        lines
    }
}

impl TreeView<'_> {
    /// The session whose row is drawn at screen row `y` when the pane is drawn at
    /// `area` (mouse clicks): the same rows, footer and scroll offset as `render`.
    /// `None` on the border, the footer or below the last row.
    pub fn session_at(&self, area: Rect, y: u16) -> Option<String> {
        let inner = ratatui::widgets::Block::bordered().inner(area);
        let rows = self.tree.rows();
        let selected = self
            .tree
            .selected
            .as_deref()
            .and_then(|s| rows.iter().position(|r| r.node.id == s));
        let footer = self.footer(selected.map(|i| rows[i].node), inner).len();
        let height = inner
            .height
            .saturating_sub(u16::try_from(footer).unwrap_or(u16::MAX));
        if y < inner.y || y >= inner.y + height {
            return None;
        }
        let offset = selected.map_or(0, |s| s.saturating_sub(usize::from(height).max(1) - 1));
        let row = rows.get(offset + usize::from(y - inner.y))?;
        Some(row.node.id.clone())
    }
}

impl Widget for &TreeView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let title = format!(" Sessions ({}) ", self.tree.len());
        let block = pane_block(title, self.focused, self.theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width == 0 {
            return;
        }
        let rows = self.tree.rows();
        if rows.is_empty() {
            let hint = Line::from(Span::styled(
                "no sessions yet",
                self.theme.style(Slot::TreeMeta),
            ));
            buf.set_line(inner.x + 1, inner.y, &hint, inner.width.saturating_sub(1));
            return;
        }
        let selected = self
            .tree
            .selected
            .as_deref()
            .and_then(|s| rows.iter().position(|r| r.node.id == s));
        let footer = self.footer(selected.map(|i| rows[i].node), inner);
        let rows_area = Rect::new(
            inner.x,
            inner.y,
            inner.width,
            inner.height - u16::try_from(footer.len()).unwrap_or(0),
        );
        for (k, line) in footer.iter().enumerate() {
            let y = rows_area.bottom() + u16::try_from(k).unwrap_or(0);
            buf.set_line(inner.x + 1, y, line, inner.width.saturating_sub(1));
        }
        let inner = rows_area;
        let height = usize::from(inner.height).max(1);
        let offset = selected.map_or(0, |s| s.saturating_sub(height - 1));
        for (y, (i, row)) in rows
            .iter()
            .enumerate()
            .skip(offset)
            .take(height)
            .enumerate()
        {
            let line = self.row_line(row, inner.width);
            let y = inner.y + u16::try_from(y).unwrap_or(0);
            buf.set_line(inner.x, y, &line, inner.width);
            if Some(i) == selected {
                let style = if self.focused {
                    self.theme.style(Slot::TreeSelected)
                } else {
                    Style::default().add_modifier(ratatui::style::Modifier::BOLD)
                };
                buf.set_style(Rect::new(inner.x, y, inner.width, 1), style);
            }
        }
    }
}
