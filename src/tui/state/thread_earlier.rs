//! A thread opened tail-first (SPEC §16): the newest messages are shown at once under
//! a "loading earlier messages…" line, and the earlier part of the transcript, turned
//! into cells off the UI thread ([`EarlierCells::build`]), is put in front of them
//! when it arrives.
//!
//! The result equals loading the whole transcript at once: load warnings come first
//! (numbered as a whole read numbers them), and a tool result shown on a card of its
//! own because its call was in the unloaded part moves onto its call's card.
//!
//! Owns: the loading line, building and merging the earlier cells. Does not own:
//! reading the transcript (`session::store::tail`) or turning messages into cells
//! (`transcript`).

use super::cells::{Cell, CellKind};
use super::layout::Scroll;
use super::thread::Thread;
use crate::engine::panics::{self, Panic};
use crate::engine::{EarlierMessages, EngineError};
use crate::session::store::EarlierRead;
use crate::session::{LoadedSession, Message, SessionId};
use crate::tui::error::UiError;

pub use super::thread::LOADING_EARLIER;

/// The earlier part of the open thread's transcript, as the engine replied it
/// (`EngineReply::Earlier`), waiting to be laid out off the UI thread: the `App`
/// hands it to the run loop (`App::take_layouts`), whose blocking task builds its
/// [`EarlierCells`] (`executor::spawn_layout`).
#[derive(Debug)]
pub struct EarlierLayout {
    /// The session whose thread asked for it.
    pub session_id: SessionId,
    /// Where the earlier part ends (see [`EarlierCells`]'s `end`).
    pub end: u64,
    /// Its messages and the transcript's load warnings.
    pub part: EarlierMessages,
    /// The session's stored compactions, placed among its messages.
    pub compactions: super::thread_compactions::StoredCompactions,
}

impl EarlierLayout {
    /// Its cells (blocking: run it on a blocking thread). The part's messages are
    /// dropped once laid out (a live session's next append would otherwise copy its
    /// message list); a panic is caught, logged and reported as the part's error.
    pub fn lay_out(self) -> Result<Box<EarlierCells>, UiError> {
        let (end, mut part, compactions) = (self.end, self.part, self.compactions);
        let cells: Result<_, Panic> = panics::catch_blocking(LAYOUT, move || {
            let warnings = std::mem::take(&mut part.warnings);
            let mut cells = EarlierCells::of(end, &[], warnings);
            cells.head.place_compactions(&compactions, None);
            for message in part.messages() {
                cells.head.push_message(message);
            }
            cells.head.cells.shrink_to_fit();
            Box::new(cells)
        });
        cells.map_err(|message| {
            UiError::from(EngineError::Panicked {
                what: LAYOUT.to_string(),
                message,
            })
        })
    }
}

/// What [`EarlierLayout::lay_out`] does, as a panic there is named.
const LAYOUT: &str = "laying out earlier messages";

/// The cells of a transcript's earlier part, built where it was read (a blocking
/// task), so the UI thread only splices them in.
#[derive(Debug, Clone)]
pub struct EarlierCells {
    /// Where the earlier part ends: its end offset in the file (see
    /// `session::store::EarlierPart::end`), or the message count of a live session's
    /// in-memory transcript.
    end: u64,
    /// The whole transcript's load warnings.
    warnings: Vec<String>,
    /// The earlier messages as a thread (its cells, card maps and active agent).
    head: Box<Thread>,
}

impl EarlierCells {
    /// Turns the earlier part read up to byte `end` into cells (see
    /// [`EarlierCells::of`]).
    pub fn build(end: u64, read: EarlierRead) -> Self {
        Self::of(end, &read.messages, read.warnings)
    }

    /// The cells of `messages`, the earlier part of a transcript ending at `end` (a
    /// byte offset of the file, or the message count of an in-memory transcript),
    /// with the whole transcript's load `warnings`. The cells share the messages'
    /// texts (see `transcript`), so the caller may keep the messages (to hand them to
    /// the engine) at the cost of their structure only. The cells are allocated
    /// once, about one per message (a tool result lands on its call's card), and
    /// trimmed to their number at the end.
    pub fn of(end: u64, messages: &[Message], warnings: Vec<String>) -> Self {
        let mut head = Box::<Thread>::default();
        head.cells.reserve_exact(messages.len());
        for message in messages {
            head.push_message(message);
        }
        head.cells.shrink_to_fit();
        Self {
            end,
            warnings,
            head,
        }
    }

    /// How many cells the earlier part makes.
    pub fn len(&self) -> usize {
        self.head.cells.len()
    }

    /// Whether the earlier part makes no cells.
    pub fn is_empty(&self) -> bool {
        self.head.cells.is_empty()
    }
}

impl Thread {
    /// Shows the newest messages of a session opened tail-first; `earlier` is the end
    /// offset of the part still loading (the token [`Thread::earlier_loaded`] checks).
    pub fn load_tail(&mut self, loaded: LoadedSession, earlier: u64) {
        self.load_with(loaded, Some(earlier));
    }

    /// Whether the thread waits for the earlier part of its transcript.
    pub fn earlier_pending(&self) -> bool {
        self.earlier.is_some()
    }

    /// Puts the earlier cells in front of the thread's. Returns false (and changes
    /// nothing) when the thread does not wait for that part (it was reopened or
    /// switched meanwhile). Selection, scroll position and the streaming cell keep
    /// pointing at the same cells; scrolled to the loading line, the view shows the
    /// first of the newest messages.
    pub fn earlier_loaded(&mut self, part: EarlierCells) -> bool {
        if self.earlier != Some(part.end) {
            return false;
        }
        self.earlier = None;
        let EarlierCells { warnings, head, .. } = part;
        let mut head = *head;
        // Replaying the newest messages after the earlier ones gives the cells a load
        // at once gives (a result whose call is in the earlier part lands on its card).
        for m in std::mem::take(&mut self.tail) {
            head.push_message(&m);
        }
        head.flush_compactions();
        let lead = self.lead;
        let kept = lead.saturating_sub(1);
        let tail_end = (lead + self.tail_cells).min(self.cells.len());
        let first_tail = kept + warnings.len();
        let new_tail = head.cells.len();
        let after = first_tail + new_tail;
        let map = |i: usize| -> usize {
            if i < kept {
                i
            } else if i < tail_end {
                // The newest messages were the last `tail_cells` of the replay.
                let from_end = tail_end - i;
                (after.saturating_sub(from_end)).max(first_tail)
            } else {
                after + (i - tail_end)
            }
        };
        let old = std::mem::take(&mut self.cells);
        let mut cells = Vec::with_capacity(after + old.len() - tail_end);
        let mut old = old.into_iter();
        cells.extend(old.by_ref().take(kept));
        cells.extend(
            warnings
                .into_iter()
                .map(|w| Cell::new(CellKind::Notice(w.into()))),
        );
        cells.append(&mut head.cells);
        cells.extend(old.skip(tail_end - kept));
        let loading_line_on_top =
            matches!(self.scroll, Scroll::Top { cell, .. } if (kept..lead).contains(&cell));
        self.cells = cells;
        self.lead = 0;
        self.tail_cells = 0;
        self.selected = self.selected.map(map);
        self.echo = self.echo.map(map);
        self.compacting = self.compacting.map(map);
        self.provisional = self.provisional.map(|(a, b)| (map(a), map(a) + (b - a)));
        if let Scroll::Top { cell, row } = self.scroll {
            self.scroll = if loading_line_on_top {
                // Scrolled to the loading line: show the first of the newest messages.
                Scroll::Top {
                    cell: map(lead),
                    row: 0,
                }
            } else {
                Scroll::Top {
                    cell: map(cell),
                    row,
                }
            };
        }
        if self.active_agent.is_none() {
            self.active_agent = head.active_agent;
        }
        self.reindex();
        true
    }

    /// The earlier part could not be read: the loading line becomes an error naming
    /// why (the newest messages stay). False when the thread does not wait for it.
    pub fn earlier_failed(&mut self, end: u64, message: &str) -> bool {
        if self.earlier != Some(end) {
            return false;
        }
        self.earlier = None;
        self.tail.clear();
        if let Some(cell) = self.lead.checked_sub(1).and_then(|i| self.cells.get_mut(i)) {
            *cell = Cell::new(CellKind::Error(
                format!("cannot load earlier messages: {message}").into(),
            ));
        }
        true
    }
}

#[cfg(test)]
#[path = "thread_earlier_tests.rs"]
mod tests;
