//! Chat cells: one visible unit of a thread (user message, assistant Markdown,
//! thinking, tool-call card, task card, error, provider failure, notice, the streaming
//! tail) and its
//! per-width cache of wrapped rows.
//!
//! Owns: how each cell kind looks as rows. Does not own: which cells a thread has
//! (`thread`), scrolling (`layout`), selection highlight (`views::chat`), the rows of
//! a provider failure (`error_card`) or of the streaming tail (`stream`), the row
//! type and the thinking summary they share (`rows`).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::error_card::ProviderFailure;
use super::rows::{LayoutStats, Row, first_line, thinking_rows};
use super::stream::StreamState;
use crate::session::SessionStatus;
use crate::session::ids::short_id;
use crate::session::message::{Text, ToolArgs};
use crate::tui::markdown;
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{RLine, truncate, wrap};

/// Lines of a tool's arguments or result shown when a card is expanded.
const EXPANDED_MAX_LINES: usize = 40;

/// Characters of a collapsed task card's instruction shown (its first line).
const TASK_LINE_CHARS: usize = 220;

/// Progress of one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// Requested by the model, not started.
    Pending,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl ToolStatus {
    fn glyph(self) -> &'static str {
        match self {
            ToolStatus::Pending => "…",
            ToolStatus::Running => "●",
            ToolStatus::Done => "✓",
            ToolStatus::Failed => "✗",
            ToolStatus::Cancelled => "⊘",
        }
    }

    fn label(self) -> &'static str {
        match self {
            ToolStatus::Pending => "pending",
            ToolStatus::Running => "running",
            ToolStatus::Done => "done",
            ToolStatus::Failed => "failed",
            ToolStatus::Cancelled => "cancelled",
        }
    }
}

/// A tool call's arguments, shared with the message (or event) that announced the
/// call: a card holds no copy of its own (a long transcript holds thousands of
/// cards; each kept its JSON text, ~90 B, before). No arguments is `null`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arguments(ToolArgs);

impl Arguments {
    /// The arguments `args`, shared.
    pub fn new(args: &ToolArgs) -> Self {
        Self(args.clone())
    }

    /// The arguments as a JSON value (`null` when there are none).
    pub fn value(&self) -> Value {
        Value::clone(&self.0)
    }

    /// The compact JSON text, keys in order (empty when there are none).
    pub fn json(&self) -> String {
        match &*self.0 {
            Value::Null => String::new(),
            v => v.to_string(),
        }
    }

    /// The shared arguments.
    pub fn args(&self) -> &ToolArgs {
        &self.0
    }
}

impl From<Value> for Arguments {
    fn from(value: Value) -> Self {
        Self(value.into())
    }
}

/// A tool-call card (any tool but `task`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCard {
    pub call_id: String,
    pub tool: String,
    pub arguments: Arguments,
    pub status: ToolStatus,
    /// The tool result (or error text): the tool message's own `Text` when it came
    /// from one (shared, not copied).
    pub result: Option<Text>,
}

/// A `task` card: a delegation to a sub-session.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskCard {
    pub call_id: String,
    /// The delegated agent (`arguments.agent`, or the result's `agent`).
    pub agent: String,
    pub instruction: String,
    /// The sub-session id, once known (`tool:pre`/`tool:post` `sub_session_id` or the
    /// result JSON's `session_id`).
    pub child: Option<String>,
    pub status: ToolStatus,
    /// The child's own session status, from the bus (live).
    pub child_status: Option<SessionStatus>,
    /// The result's `response` (the whole result, shared, when it is not the task
    /// tool's JSON).
    pub response: Option<Text>,
}

/// A `transfer_to_agent` hand-off: `from → to` (SPEC §11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    pub from: String,
    pub to: String,
}

/// A compaction of the session's context (`context:compaction`): its one-line note
/// and the summary, shown when the cell is expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionCard {
    /// `context compacted: 3900 → 1200 tokens (…)`.
    pub note: String,
    /// The summary that now stands in for the older messages (none: tool results
    /// were only stubbed).
    pub summary: Option<String>,
}

/// What a cell shows. Every variant is at most a fat pointer wide (texts are shared
/// [`Text`]s, cards are boxed), so a `CellKind` is 24 bytes: a long transcript has
/// one per message. A text that came from a transcript message is that message's own
/// `Text` (a clone shares the allocation): the cells of a long session add no copy
/// of its texts.
#[derive(Debug, Clone, PartialEq)]
pub enum CellKind {
    User(Text),
    /// Markdown source.
    Assistant(Text),
    Thinking(Text),
    Tool(Box<ToolCard>),
    Task(Box<TaskCard>),
    Error(Text),
    /// A failed model call or a pending retry (`provider:error`), see `error_card`.
    Failure(Box<ProviderFailure>),
    Notice(Text),
    Handoff(Box<Handoff>),
    /// The context was compacted (issue 26); expand to read the summary.
    Compaction(Box<CompactionCard>),
    /// The assistant reply being streamed (committed lines + unfinished tail).
    Streaming(Box<StreamState>),
    /// The checklist a `todo` call set, one row per item (Claude Code's todo view).
    Checklist(Box<[crate::session::metadata::TodoItem]>),
}

/// Rows of a cell laid out to `width` columns.
#[derive(Debug, Clone, PartialEq)]
struct Laid {
    width: u16,
    rows: Vec<Line<'static>>,
}

/// One cell and its cached rows (40 bytes: a cell never laid out, most of a long
/// transcript, holds no rows).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub kind: CellKind,
    /// Cards and thinking: show the full content.
    pub expanded: bool,
    cache: Option<Box<Laid>>,
}

impl Cell {
    /// A collapsed cell with no cached layout.
    pub fn new(kind: CellKind) -> Self {
        Self {
            kind,
            expanded: false,
            cache: None,
        }
    }

    /// Drops cached rows (call after changing `kind` or `expanded`).
    pub fn invalidate(&mut self) {
        self.cache = None;
    }

    /// Whether Enter/space does something on this cell.
    pub fn is_interactive(&self) -> bool {
        matches!(
            self.kind,
            CellKind::Tool(_) | CellKind::Task(_) | CellKind::Thinking(_) | CellKind::Compaction(_)
        )
    }

    /// Computes rows for `width` unless cached. Streaming cells do their own
    /// incremental work.
    pub fn ensure_layout(&mut self, width: u16, theme: &Theme, stats: &mut LayoutStats) {
        if let CellKind::Streaming(s) = &mut self.kind {
            s.ensure_layout(width, theme, stats);
            return;
        }
        if matches!(&self.cache, Some(laid) if laid.width == width) {
            return;
        }
        let rows = self.build_rows(width, theme, stats);
        stats.cells_wrapped += 1;
        match &mut self.cache {
            Some(laid) => **laid = Laid { width, rows },
            None => self.cache = Some(Box::new(Laid { width, rows })),
        }
    }

    /// Rows of the last layout plus one blank separator row.
    pub fn height(&self) -> usize {
        let body = match &self.kind {
            CellKind::Streaming(s) => s.row_count(),
            _ => self.cache.as_ref().map(|laid| laid.rows.len()).unwrap_or(0),
        };
        body + 1
    }

    /// Row `i` of the last layout; `None` for the separator (and out of range).
    pub fn row(&self, i: usize) -> Option<&Line<'static>> {
        match &self.kind {
            CellKind::Streaming(s) => s.row(i),
            _ => self.cache.as_ref().and_then(|laid| laid.rows.get(i)),
        }
    }

    /// The text a find in the thread searches (`state::find`): a message's own text
    /// (the Markdown source for an assistant reply, what has streamed so far for the
    /// streaming tail), and for cards, thinking, failures and hand-offs the text of
    /// their rows as shown now (a collapsed card: its head line), unwrapped. Never
    /// lays anything out to a width, so searching costs no wrapping.
    pub fn search_text(&self, theme: &Theme) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        match &self.kind {
            CellKind::User(t) | CellKind::Assistant(t) | CellKind::Error(t) => Cow::Borrowed(t),
            CellKind::Notice(t) => Cow::Borrowed(t),
            CellKind::Streaming(s) => Cow::Owned(s.text()),
            _ => Cow::Owned(
                self.logical(theme)
                    .iter()
                    .map(|row| match row {
                        Row::Wrap(r) => crate::tui::wrap::plain(&r.line),
                        Row::Clip(l) => crate::tui::wrap::plain(l),
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        }
    }

    fn build_rows(&self, width: u16, theme: &Theme, stats: &mut LayoutStats) -> Vec<Line<'static>> {
        let mut rows = Vec::new();
        for row in self.logical(theme) {
            stats.lines_wrapped += 1;
            match row {
                Row::Wrap(r) => rows.extend(wrap(&r, width)),
                Row::Clip(l) => rows.push(truncate(&l, width)),
            }
        }
        rows
    }

    fn logical(&self, theme: &Theme) -> Vec<Row> {
        match &self.kind {
            CellKind::User(text) => prefixed_text("› ", text, theme.style(Slot::ChatUser)),
            CellKind::Assistant(src) => {
                markdown::render(src, theme.style(Slot::ChatAssistant), theme)
                    .into_iter()
                    .map(Row::Wrap)
                    .collect()
            }
            CellKind::Thinking(text) => thinking_rows(text, self.expanded, theme),
            CellKind::Tool(card) => tool_rows(card, self.expanded, theme),
            CellKind::Task(card) => task_rows(card, self.expanded, theme),
            CellKind::Error(msg) => prefixed_text("✗ ", msg, theme.style(Slot::ChatError)),
            CellKind::Failure(failure) => failure.rows(theme),
            CellKind::Notice(msg) => prefixed_text("⊘ ", msg, theme.style(Slot::ChatNotice)),
            CellKind::Handoff(h) => prefixed_text(
                "⇄ ",
                &format!("{} → {}", h.from, h.to),
                theme.style(Slot::ChatNotice),
            ),
            CellKind::Compaction(card) => compaction_rows(card, self.expanded, theme),
            CellKind::Streaming(_) => Vec::new(),
            CellKind::Checklist(items) => checklist_rows(items, theme),
        }
    }
}

/// A checklist: a head line `☰ todo 1/3`, then each item on its own row — `☐` to do,
/// `◐` in progress (its present-continuous form, bold), `☑` done (crossed out).
fn checklist_rows(items: &[crate::session::metadata::TodoItem], theme: &Theme) -> Vec<Row> {
    use crate::session::metadata::TodoStatus;
    use ratatui::style::Modifier;
    let base = theme.style(Slot::ChatNotice);
    let (done, total) = crate::tool::todo::progress(items);
    let mut rows = prefixed_text("☰ ", &format!("todo {done}/{total}"), base);
    for item in items {
        let (mark, text, style) = match item.status {
            TodoStatus::Pending => ("☐ ", item.content.as_str(), base),
            TodoStatus::InProgress => (
                "◐ ",
                item.active_form.as_str(),
                theme
                    .style(Slot::ChatAssistant)
                    .add_modifier(Modifier::BOLD),
            ),
            TodoStatus::Completed => (
                "☑ ",
                item.content.as_str(),
                base.add_modifier(Modifier::CROSSED_OUT | Modifier::DIM),
            ),
        };
        rows.push(Row::Wrap(RLine::indented(
            Line::from(vec![
                Span::styled(format!("  {mark}"), base),
                Span::styled(text.to_string(), style),
            ]),
            4,
        )));
    }
    rows
}

/// A compaction cell: its note (with a hint when there is a summary to read), and
/// when expanded the summary below it.
fn compaction_rows(card: &CompactionCard, expanded: bool, theme: &Theme) -> Vec<Row> {
    let style = theme.style(Slot::ChatNotice);
    let text = match (&card.summary, expanded) {
        (Some(summary), true) => format!("{}\nsummary:\n{summary}", card.note),
        (Some(_), false) => format!("{} · Enter: read the summary", card.note),
        (None, _) => card.note.clone(),
    };
    prefixed_text("⇣ ", &text, style)
}

fn prefixed_text(prefix: &str, text: &str, style: Style) -> Vec<Row> {
    let pad = " ".repeat(prefix.chars().count());
    text.trim_end()
        .split('\n')
        .enumerate()
        .map(|(i, l)| {
            let p = if i == 0 { prefix } else { pad.as_str() };
            Row::Wrap(RLine::indented(
                Line::from(vec![
                    Span::styled(p.to_string(), style),
                    Span::styled(l.to_string(), style),
                ]),
                2,
            ))
        })
        .collect()
}

/// `key=value, key=value` of a JSON object (strings unquoted, values cut at 40 chars).
pub fn args_summary(args: &Value) -> String {
    match args {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => first_line(s).to_string(),
                    other => other.to_string(),
                };
                let v: String = if v.chars().count() > 40 {
                    v.chars().take(39).chain(['…']).collect()
                } else {
                    v
                };
                format!("{k}={v}")
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn block_rows(label: &str, text: &str, style: Style, rows: &mut Vec<Row>) {
    rows.push(Row::Clip(Line::from(Span::styled(
        format!("  {label}"),
        style,
    ))));
    let lines: Vec<&str> = text.trim_end().split('\n').collect();
    for l in lines.iter().take(EXPANDED_MAX_LINES) {
        rows.push(Row::Wrap(RLine::indented(
            Line::from(Span::styled(format!("    {l}"), style)),
            4,
        )));
    }
    if lines.len() > EXPANDED_MAX_LINES {
        rows.push(Row::Clip(Line::from(Span::styled(
            format!("    … {} more lines", lines.len() - EXPANDED_MAX_LINES),
            style,
        ))));
    }
}

fn tool_rows(card: &ToolCard, expanded: bool, theme: &Theme) -> Vec<Row> {
    let tool = theme.style(Slot::ChatTool);
    let result = theme.style(Slot::ChatToolResult);
    let status = status_style(card.status, theme);
    let arrow = if expanded { "▾" } else { "▸" };
    // An MCP tool names its server: `⚙ add · MCP calc`.
    let name = match crate::tool::mcp::server_of(&card.tool) {
        Some((server, mcp_tool)) => format!("{mcp_tool} · MCP {server}"),
        None => card.tool.clone(),
    };
    let head = Line::from(vec![
        Span::styled(format!("{arrow} ⚙ {name}"), tool),
        Span::styled(format!(" {} ", card.status.glyph()), status),
        Span::styled(args_summary(&card.arguments.value()), result),
    ]);
    let mut rows = vec![Row::Clip(head)];
    if expanded {
        let args = serde_json::to_string_pretty(&card.arguments.value()).unwrap_or_default();
        block_rows("arguments:", &args, result, &mut rows);
        if let Some(r) = &card.result {
            block_rows(
                &format!("result ({}):", card.status.label()),
                &shown_result(r),
                result,
                &mut rows,
            );
        }
    } else if let Some(r) = &card.result {
        rows.push(Row::Clip(Line::from(Span::styled(
            format!("  └ {}", first_line(&shown_result(r))),
            result,
        ))));
    }
    rows
}

/// A tool result as shown: an image it holds (an MCP tool's) as `📎 image (image/png,
/// 12 KB)`, never its base64.
fn shown_result(text: &str) -> std::borrow::Cow<'_, str> {
    if crate::session::image::has_images(text) {
        std::borrow::Cow::Owned(crate::session::image::shown(text))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

fn task_rows(card: &TaskCard, expanded: bool, theme: &Theme) -> Vec<Row> {
    let task = theme.style(Slot::ChatTask);
    let meta = theme.style(Slot::ChatToolResult);
    let status = match card.child_status {
        Some(s) if s.turn_in_progress() => ToolStatus::Running,
        Some(SessionStatus::Failed) if card.status != ToolStatus::Done => ToolStatus::Failed,
        Some(SessionStatus::Cancelled) if card.status != ToolStatus::Done => ToolStatus::Cancelled,
        _ => card.status,
    };
    let arrow = if expanded { "▾" } else { "▸" };
    let mut head = vec![
        Span::styled(format!("{arrow} ⇢ task → {}", card.agent), task),
        Span::styled(
            format!("  {} {}", status.glyph(), status.label()),
            status_style(status, theme),
        ),
    ];
    if let Some(child) = &card.child {
        head.push(Span::styled(format!("  #{}", short_id(child)), meta));
        head.push(Span::styled("  ⏎ open", theme.style(Slot::MdLink)));
    }
    let mut rows = vec![Row::Clip(Line::from(head))];
    if expanded {
        block_rows("instruction:", &card.instruction, meta, &mut rows);
        if let Some(r) = &card.response {
            block_rows("response:", r, meta, &mut rows);
        }
    } else {
        // The instruction's first line uses the width: wrapped, up to about three
        // rows at 80 columns.
        let first = first_line(&card.instruction);
        let shown: String = first.chars().take(TASK_LINE_CHARS).collect();
        let cut = if shown.len() < first.len() { "…" } else { "" };
        rows.push(Row::Wrap(RLine::indented(
            Line::from(Span::styled(format!("  “{shown}{cut}”"), meta)),
            3,
        )));
        // Why it failed stays visible collapsed: a refused spawn says which limit held.
        if status == ToolStatus::Failed
            && let Some(r) = card.response.as_deref().filter(|r| !r.trim().is_empty())
        {
            rows.push(Row::Clip(Line::from(Span::styled(
                format!("  └ {}", first_line(r)),
                theme.style(Slot::ChatError),
            ))));
        }
    }
    rows
}

fn status_style(status: ToolStatus, theme: &Theme) -> Style {
    theme.style(match status {
        ToolStatus::Pending | ToolStatus::Running => Slot::TreeRunning,
        ToolStatus::Done => Slot::TreeDone,
        ToolStatus::Failed => Slot::TreeFailed,
        ToolStatus::Cancelled => Slot::TreeCancelled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::wrap::plain;
    use serde_json::json;

    #[test]
    fn cells_are_small() {
        // A long transcript holds one cell per message: the common kinds stay a fat
        // pointer wide and a cell never laid out holds no rows (was 192 bytes).
        assert_eq!(std::mem::size_of::<CellKind>(), 24);
        assert_eq!(std::mem::size_of::<Cell>(), 40);
    }

    #[test]
    fn arguments_keep_their_json_and_key_order() {
        let value = json!({"path": "a.rs", "limit": 3, "all": [1.5, null, {"z": 1, "a": 2}]});
        let args = Arguments::from(value.clone());
        assert_eq!(
            args.json(),
            r#"{"path":"a.rs","limit":3,"all":[1.5,null,{"z":1,"a":2}]}"#
        );
        assert_eq!(args.value(), value);
        assert_eq!(Arguments::from(Value::Null).value(), Value::Null);
        assert_eq!(Arguments::from(Value::Null).json(), "");
    }

    #[test]
    fn args_summaries() {
        assert_eq!(
            args_summary(&json!({"path": "a.rs", "limit": 3})),
            "path=a.rs, limit=3"
        );
    }

    #[test]
    fn a_failed_task_card_shows_why_when_collapsed() {
        let theme = Theme::builtin_dark(true);
        let mut stats = LayoutStats::default();
        let card = |status, response: &str| {
            Cell::new(CellKind::Task(Box::new(TaskCard {
                call_id: "c1".into(),
                agent: "x".into(),
                instruction: "part 7".into(),
                child: Some("r-1_x".into()),
                status,
                child_status: None,
                response: Some(response.into()),
            })))
        };
        let refusal = "Session limit reached: this session tree already holds 100 sessions and \
                       max_sessions_per_tree is 100 (arbor config `limits:`), so no sub-session was started.";
        let mut failed = card(ToolStatus::Failed, refusal);
        failed.ensure_layout(200, &theme, &mut stats);
        let rows: Vec<String> = (0..failed.height())
            .filter_map(|i| failed.row(i).map(plain))
            .collect();
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert!(rows[2].starts_with("  └ Session limit reached"), "{rows:?}");
        assert!(rows[2].contains("max_sessions_per_tree"), "{rows:?}");
        let mut done = card(ToolStatus::Done, "All parts done.");
        done.ensure_layout(200, &theme, &mut stats);
        assert_eq!(
            done.height(),
            3,
            "a finished card stays two rows and a separator"
        );
    }

    #[test]
    fn an_mcp_tool_card_names_its_server() {
        let theme = Theme::builtin_dark(true);
        let card = |tool: &str| {
            let mut stats = LayoutStats::default();
            let mut c = Cell::new(CellKind::Tool(Box::new(ToolCard {
                call_id: "c1".into(),
                tool: tool.into(),
                arguments: json!({"a": 2}).into(),
                status: ToolStatus::Done,
                result: Some("5".into()),
            })));
            c.ensure_layout(80, &theme, &mut stats);
            plain(c.row(0).unwrap())
        };
        let mcp = card("mcp__calc__add");
        assert!(mcp.starts_with("▸ ⚙ add · MCP calc "), "{mcp}");
        assert!(mcp.ends_with("a=2"), "{mcp}");
        let plain_tool = card("grep");
        assert!(plain_tool.starts_with("▸ ⚙ grep "), "{plain_tool}");
    }

    #[test]
    fn layout_is_cached_per_width() {
        let theme = Theme::builtin_dark(true);
        let mut stats = LayoutStats::default();
        let mut c = Cell::new(CellKind::User("hello there world".into()));
        c.ensure_layout(40, &theme, &mut stats);
        c.ensure_layout(40, &theme, &mut stats);
        assert_eq!(stats.cells_wrapped, 1);
        assert_eq!(c.height(), 2);
        c.ensure_layout(10, &theme, &mut stats);
        assert_eq!(stats.cells_wrapped, 2);
        assert_eq!(plain(c.row(0).unwrap()), "› hello");
        assert!(c.row(c.height() - 1).is_none());
    }
}
