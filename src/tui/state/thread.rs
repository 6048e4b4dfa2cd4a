//! The open thread: one session's transcript as cells, live updates, selection and
//! scroll.
//!
//! Owns: the cell list, loading a transcript, the streaming cell and its interruption,
//! the maps from tool-call ids and sub-session ids to cards, selection and scrolling.
//! Messages become cells in `transcript`; bus events are applied in `thread_events`.
//!
//! A transcript read from disk can already hold messages whose `message:appended`
//! events are still queued (the read races the bus): the loaded transcript's last
//! messages stay "unconfirmed" until a live message matches them (skipped as a
//! duplicate) or a new one arrives.
//! Does not own: the session tree (`tree`) or drawing (`views::chat`).

use crate::session::ids::SessionId;
use std::collections::{HashMap, VecDeque};

use super::cells::{Cell, CellKind};
use super::layout::{self, LayoutCtx, Scroll};
use super::rows::LayoutStats;
use super::stream::StreamState;
use crate::session::message::ContentBlock;
use crate::session::{LoadedSession, Message, SessionStatus};
use crate::tui::action::UiAction;
use crate::tui::theme::Theme;

/// The line heading a thread whose earlier messages are still loading (opened
/// tail-first, see `thread_earlier`).
pub const LOADING_EARLIER: &str = "loading earlier messages…";

/// How many of the loaded transcript's last messages may still be announced live.
const UNCONFIRMED_WINDOW: usize = 16;

/// The thread shown in the chat pane.
#[derive(Debug, Clone, Default)]
pub struct Thread {
    /// The session; `None` for a new root session not created yet.
    pub session_id: Option<SessionId>,
    /// A new root thread opened by `/clear` (its `SessionStart` source is `clear`).
    pub cleared: bool,
    /// The cell saying a compaction's summary is being written, until it is done.
    pub compacting: Option<usize>,
    /// The compactions stored for the session being opened, with when each happened
    /// (placed by `thread_compactions`).
    pub stored_compactions: Vec<(jiff::Timestamp, super::cells::CompactionCard)>,
    /// Those still to be placed among the messages being pushed.
    pub(super) pending_compactions:
        std::collections::VecDeque<(jiff::Timestamp, super::cells::CompactionCard)>,
    /// The id or prefix being loaded (`loading` is true until the store answers).
    pub requested: Option<String>,
    /// Agent shown in the header (for a new root: the agent it will start with).
    pub agent: Option<String>,
    /// The agent of the session's `sub_agents` tree answering now (SPEC §11): the
    /// metadata's `active_agent` when loaded, then the author of each assistant
    /// message and the target of each hand-off. Shown in the header when it is not
    /// [`Thread::agent`].
    pub active_agent: Option<String>,
    pub loading: bool,
    /// A Submit for a new root was sent; waiting for `SessionCreated`.
    pub awaiting_root: bool,
    /// A Submit from this UI is running (until the turn ends).
    pub turn_in_flight: bool,
    pub cells: Vec<Cell>,
    /// Selected cell (chat focus).
    pub selected: Option<usize>,
    pub scroll: Scroll,
    /// Layout counters (tests/benchmarks).
    pub stats: LayoutStats,
    /// Visible rows `(cell, row)` from the last [`Thread::layout`].
    pub window: Vec<(usize, usize)>,
    pub(super) stream: Option<usize>,
    /// Cells converted from an interrupted stream, replaced when the message arrives.
    pub(super) provisional: Option<(usize, usize)>,
    pub(super) calls: HashMap<String, usize>,
    pub(super) children: HashMap<String, usize>,
    /// User message echoed locally, awaiting `message:appended`.
    pub(super) echo: Option<usize>,
    /// `message:appended` received while loading.
    pub(super) buffered: Vec<Message>,
    /// The loaded transcript's last messages whose `message:appended` may still come.
    pub(super) unconfirmed: VecDeque<Message>,
    /// Opened tail-first: where the earlier part of the transcript, still loading,
    /// ends (its byte offset in the file, or its message count when laid out from a
    /// live session's in-memory transcript; see `thread_earlier`).
    pub(super) earlier: Option<u64>,
    /// Leading notice cells (load warnings, then the loading line while `earlier`).
    pub(super) lead: usize,
    /// While `earlier`: the newest messages loaded first, and how many cells they
    /// made (after the `lead` cells). The earlier part is merged by replaying them
    /// after it, so a result whose call was not loaded lands on its card.
    pub(super) tail: Vec<Message>,
    pub(super) tail_cells: usize,
    size: (u16, usize),
}

impl Thread {
    /// An empty thread for a new root session (created on the first submit).
    pub fn new_root(agent: Option<String>) -> Self {
        Self {
            agent,
            ..Self::default()
        }
    }

    /// A thread whose transcript is being loaded.
    pub fn loading(id: &str, agent: Option<String>) -> Self {
        Self {
            session_id: Some(id.into()),
            requested: Some(id.to_string()),
            agent,
            loading: true,
            ..Self::default()
        }
    }

    /// Replaces the cells with the loaded transcript plus the messages that arrived
    /// while loading and are not in it, keeping a live stream at the end (unless an
    /// assistant message arrived while loading: the stream then mixes two replies and
    /// is dropped; the `App` re-seeds it with [`Thread::seed_stream`]).
    pub fn load(&mut self, loaded: LoadedSession) {
        self.load_with(loaded, None);
    }

    /// [`Thread::load`], with `earlier` the end offset of the part of the transcript
    /// still loading when the session was opened tail-first (a loading line then
    /// heads the thread until [`Thread::earlier_loaded`]).
    pub(super) fn load_with(&mut self, loaded: LoadedSession, earlier: Option<u64>) {
        self.earlier = earlier;
        let stream = self
            .stream
            .and_then(|i| (i < self.cells.len()).then(|| self.cells.swap_remove(i)));
        self.session_id = Some(loaded.metadata.session_id.clone());
        if loaded.metadata.agent_name.is_some() {
            self.agent = loaded.metadata.agent_name.clone();
        }
        self.active_agent = None;
        self.loading = false;
        self.cells.clear();
        self.calls.clear();
        self.children.clear();
        self.stream = None;
        self.provisional = None;
        self.selected = None;
        self.scroll = Scroll::Follow;
        for warning in &loaded.warnings {
            self.push(CellKind::Notice(warning.as_str().into()));
        }
        if self.earlier.is_some() {
            self.push(CellKind::Notice(LOADING_EARLIER.into()));
        }
        self.lead = self.cells.len();
        let from = self
            .earlier
            .and(loaded.transcript.first())
            .and_then(|m| m.timestamp())
            .and_then(|t| t.parse().ok());
        let stored = std::mem::take(&mut self.stored_compactions);
        self.place_compactions(&stored, from);
        for m in &loaded.transcript {
            self.push_message(m);
        }
        self.flush_compactions();
        self.stored_compactions = stored;
        self.tail_cells = self.cells.len() - self.lead;
        // Who answers the next message (selection), over who answered last.
        if let Some(active) = &loaded.metadata.arbor.active_agent {
            self.active_agent = Some(active.clone());
        }
        let buffered = std::mem::take(&mut self.buffered);
        let window = UNCONFIRMED_WINDOW.max(buffered.len());
        let start = loaded.transcript.len().saturating_sub(window);
        self.unconfirmed = loaded.transcript[start..].iter().cloned().collect();
        self.tail = match self.earlier {
            Some(_) => loaded.transcript,
            None => Vec::new(),
        };
        let mixed = buffered.iter().any(|m| matches!(m, Message::Assistant(_)));
        for m in &buffered {
            self.append_live(m);
        }
        if let Some(s) = stream.filter(|_| !mixed) {
            self.stream = Some(self.cells.len());
            self.cells.push(s);
        }
        // A thread opened before (a longer one) leaves its capacity behind.
        self.cells.shrink_to_fit();
    }

    /// A `message:appended` of this session: buffered while loading, skipped when it
    /// confirms a message of the loaded transcript (an assistant message still ends
    /// the stream), else shown.
    pub fn append_live(&mut self, message: &Message) {
        if self.loading {
            self.buffered.push(message.clone());
            return;
        }
        match self.unconfirmed.iter().position(|m| m == message) {
            Some(pos) => {
                self.unconfirmed.drain(..=pos);
                if matches!(message, Message::Assistant(_)) {
                    let after = self.take_stream_range();
                    self.cells.extend(after);
                    self.reindex();
                }
            }
            None => {
                self.unconfirmed.clear();
                self.push_message(message);
            }
        }
    }

    /// Shows what the session streamed before this thread was opened: replaces the
    /// streaming cell (or creates one) with `text` and `thinking`, the whole in-flight
    /// reply. Nothing happens when both are blank, or when the loaded transcript
    /// already holds that reply (its `message:appended` is still queued).
    pub fn seed_stream(&mut self, text: &str, thinking: &str, theme: &Theme) {
        if text.trim().is_empty() && thinking.trim().is_empty() {
            return;
        }
        let saved = self.unconfirmed.iter().rev().find_map(|m| match m {
            Message::Assistant(a) => Some(
                a.content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<String>(),
            ),
            _ => None,
        });
        if !text.trim().is_empty() && saved.is_some_and(|s| s.trim() == text.trim()) {
            return;
        }
        if let Some(s) = self.stream_mut() {
            let mut fresh = StreamState::default();
            fresh.push_thinking(thinking);
            fresh.push_text(text, theme);
            *s = fresh;
        }
        if let Some(cell) = self.stream.and_then(|i| self.cells.get_mut(i)) {
            cell.invalidate();
        }
    }

    pub(super) fn push(&mut self, kind: CellKind) -> usize {
        self.cells.push(Cell::new(kind));
        self.cells.len() - 1
    }

    /// Adds an error cell, unless one of the last cells already shows `message` (as
    /// text or as a provider failure card).
    pub fn push_error(&mut self, message: &str) {
        let recent = self.cells.iter().rev().take(3);
        if recent.into_iter().any(|c| match &c.kind {
            CellKind::Error(m) => &**m == message,
            CellKind::Failure(f) => !f.is_retry() && f.error == message,
            _ => false,
        }) {
            return;
        }
        self.finalize_stream();
        self.push(CellKind::Error(message.into()));
    }

    /// Adds a notice (cancellation, load warnings) unless it repeats the last cell.
    pub fn push_notice(&mut self, text: &str) {
        if matches!(self.cells.last().map(|c| &c.kind), Some(CellKind::Notice(m)) if &**m == text) {
            return;
        }
        self.finalize_stream();
        self.push(CellKind::Notice(text.into()));
    }

    /// Adds a compaction cell (`context:compaction`): its note, the summary on expand.
    /// It takes the place of the "compacting…" note of [`Self::push_compacting`].
    pub fn push_compaction(&mut self, event: &crate::session::protocol::ContextCompactionEvent) {
        self.finalize_stream();
        let card = CellKind::Compaction(Box::new(super::cells::CompactionCard {
            note: event.note(),
            summary: event.summary.clone(),
        }));
        match self.compacting.take().filter(|&i| {
            matches!(
                self.cells.get(i).map(|c| &c.kind),
                Some(CellKind::Notice(_))
            )
        }) {
            Some(i) => {
                self.cells[i].kind = card;
                self.cells[i].invalidate();
            }
            None => {
                self.push(card);
            }
        }
    }

    /// `context:compacting`: a note that the summary is being written (a model call
    /// that can take long), replaced by the compaction cell when it is done.
    pub fn push_compacting(&mut self, event: &crate::session::protocol::ContextCompactingEvent) {
        self.finalize_stream();
        let i = self.push(CellKind::Notice(event.note().into()));
        self.compacting = Some(i);
    }

    /// The sub-sessions of the thread's `task` cards, in the thread's order.
    pub fn task_children(&self) -> Vec<String> {
        self.cells
            .iter()
            .filter_map(|c| match &c.kind {
                CellKind::Task(card) => card.child.clone(),
                _ => None,
            })
            .collect()
    }

    /// Shows the user's message at once; the matching `message:appended` confirms it.
    pub fn push_user_echo(&mut self, text: &str) {
        let shown = super::mentions::collapse_attachments(text);
        let i = self.push(CellKind::User(shown.as_deref().unwrap_or(text).into()));
        self.echo = Some(i);
        self.scroll = Scroll::Follow;
    }

    /// Updates the live child status shown on the task card of sub-session `child`.
    pub fn set_child_status(&mut self, child: &str, status: SessionStatus) -> bool {
        let Some(&i) = self.children.get(child) else {
            return false;
        };
        if let Some(cell) = self.cells.get_mut(i)
            && let CellKind::Task(card) = &mut cell.kind
        {
            card.child_status = Some(status);
            cell.invalidate();
        }
        true
    }

    /// The task card for sub-session `child`, if this thread has one.
    pub fn has_child(&self, child: &str) -> bool {
        self.children.contains_key(child)
    }

    /// The streaming state, if a reply is streaming.
    pub fn streaming(&self) -> Option<&StreamState> {
        match self.cells.get(self.stream?).map(|c| &c.kind) {
            Some(CellKind::Streaming(s)) => Some(s),
            _ => None,
        }
    }

    /// The streaming state, created (as the last cell) when no reply is streaming.
    pub(super) fn stream_mut(&mut self) -> Option<&mut StreamState> {
        let idx = match self.stream {
            Some(i)
                if matches!(
                    self.cells.get(i).map(|c| &c.kind),
                    Some(CellKind::Streaming(_))
                ) =>
            {
                i
            }
            _ => {
                let i = self.push(CellKind::Streaming(Box::default()));
                self.stream = Some(i);
                i
            }
        };
        match &mut self.cells.get_mut(idx)?.kind {
            CellKind::Streaming(s) => Some(s),
            _ => None,
        }
    }

    /// Removes the streaming cell and any provisional cells (the final message
    /// replaces them) and returns the cells that followed them, so the caller can put
    /// the final message where the stream was.
    pub(super) fn take_stream_range(&mut self) -> Vec<Cell> {
        let mut removed: Vec<usize> = Vec::new();
        if let Some(i) = self.stream.take() {
            removed.push(i);
        }
        if let Some((a, b)) = self.provisional.take() {
            removed.extend(a..b);
        }
        let Some(&start) = removed.iter().min() else {
            return Vec::new();
        };
        if start >= self.cells.len() {
            return Vec::new();
        }
        let rest = self.cells.split_off(start);
        rest.into_iter()
            .enumerate()
            .filter(|(k, _)| !removed.contains(&(start + k)))
            .map(|(_, c)| c)
            .collect()
    }

    /// Turns an interrupted stream into provisional assistant/thinking cells.
    pub fn finalize_stream(&mut self) {
        let Some(i) = self.stream.take() else {
            return;
        };
        let Some(cell) = self.cells.get(i) else {
            return;
        };
        let CellKind::Streaming(s) = &cell.kind else {
            return;
        };
        let mut kinds = Vec::new();
        if !s.thinking().trim().is_empty() {
            kinds.push(CellKind::Thinking(s.thinking().into()));
        }
        if !s.text().trim().is_empty() {
            kinds.push(CellKind::Assistant(s.text().into()));
        }
        let n = kinds.len();
        self.cells.splice(i..=i, kinds.into_iter().map(Cell::new));
        if n != 1 {
            self.reindex();
        }
        self.provisional = (n > 0).then_some((i, i + n));
    }

    /// Rebuilds index maps after cells moved.
    pub(super) fn reindex(&mut self) {
        self.calls.clear();
        self.children.clear();
        self.stream = None;
        for (i, c) in self.cells.iter().enumerate() {
            match &c.kind {
                CellKind::Tool(t) => {
                    self.calls.insert(t.call_id.clone(), i);
                }
                CellKind::Task(t) => {
                    self.calls.insert(t.call_id.clone(), i);
                    if let Some(ch) = &t.child {
                        self.children.insert(ch.clone(), i);
                    }
                }
                CellKind::Streaming(_) => self.stream = Some(i),
                _ => {}
            }
        }
        self.selected = self.selected.filter(|s| *s < self.cells.len());
        self.echo = self.echo.filter(|s| *s < self.cells.len());
    }

    /// Lays out the visible window for a viewport of `width` × `height` rows.
    pub fn layout(&mut self, width: u16, height: usize, theme: &Theme) {
        self.size = (width, height);
        let mut ctx = LayoutCtx {
            width,
            height,
            theme,
            stats: &mut self.stats,
        };
        self.window = layout::window(&mut self.cells, &mut self.scroll, &mut ctx);
    }

    /// Scrolls by `delta` rows using the last viewport size.
    pub fn scroll_by(&mut self, delta: isize, theme: &Theme) {
        let (width, height) = self.size;
        let mut ctx = LayoutCtx {
            width,
            height,
            theme,
            stats: &mut self.stats,
        };
        layout::scroll_by(&mut self.cells, &mut self.scroll, delta, &mut ctx);
    }

    /// Last viewport height in rows.
    pub fn viewport_height(&self) -> usize {
        self.size.1
    }

    /// Selects the previous (`up`) or next interactive cell and scrolls it into view.
    /// A selection out of view (the person scrolled away) or none starts from the
    /// view: `up` takes the last interactive cell at or above its bottom, `down` the
    /// first at or below its top (nothing selected while following the end: `down`
    /// scrolls). Returns false when there is none in that direction.
    pub fn select_step(&mut self, up: bool, theme: &Theme) -> bool {
        let n = self.cells.len();
        let view = {
            let (width, height) = self.size;
            let mut ctx = LayoutCtx {
                width,
                height,
                theme,
                stats: &mut self.stats,
            };
            let rows = layout::window(&mut self.cells, &mut self.scroll, &mut ctx);
            rows.first().zip(rows.last()).map(|(a, b)| (a.0, b.0))
        };
        let interactive = |i: &usize| self.cells[*i].is_interactive();
        let scrolled = matches!(self.scroll, Scroll::Top { .. });
        let found = match (self.selected, view) {
            (Some(s), Some((top, bottom))) if (top..=bottom).contains(&s) => {
                if up {
                    (0..s.min(n)).rev().find(interactive)
                } else {
                    (s + 1..n).find(interactive)
                }
            }
            (Some(s), None) if up => (0..s.min(n)).rev().find(interactive),
            (Some(s), None) => (s + 1..n).find(interactive),
            (_, Some((_, bottom))) if up => (0..=bottom.min(n - 1)).rev().find(interactive),
            (None, None) if up => (0..n).rev().find(interactive),
            (Some(_), Some((top, _))) => (top..n).find(interactive),
            (None, Some((top, _))) if scrolled => (top..n).find(interactive),
            (None, _) => return false,
        };
        let Some(i) = found else {
            return false;
        };
        self.selected = Some(i);
        let (width, height) = self.size;
        let mut ctx = LayoutCtx {
            width,
            height,
            theme,
            stats: &mut self.stats,
        };
        layout::ensure_visible(&mut self.cells, &mut self.scroll, i, &mut ctx);
        true
    }

    /// Enter on the selected cell: a task card with a known sub-session opens it;
    /// other cards toggle. `toggle_only` (space) never opens.
    pub fn activate(&mut self, toggle_only: bool) -> Option<UiAction> {
        let cell = self.cells.get_mut(self.selected?)?;
        if !toggle_only
            && let CellKind::Task(card) = &cell.kind
            && let Some(child) = &card.child
        {
            return Some(UiAction::OpenThread(child.clone()));
        }
        if cell.is_interactive() {
            cell.expanded = !cell.expanded;
            cell.invalidate();
        }
        None
    }
}
