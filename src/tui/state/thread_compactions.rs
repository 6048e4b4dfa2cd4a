//! A reopened thread's compaction cells (issue 39 item 6): the compactions its
//! `events.jsonl` records (`EngineReply::Compactions`, before the transcript) are
//! placed by time — each before the first message stored after it, the rest at the
//! end — both in the newest messages shown first and in the earlier part laid out
//! later (which replays the newest messages, so each lands once).
//!
//! Owns: keeping the stored compactions and placing them while messages are pushed.
//! Does not own: reading them (`engine::compact::record::all`), the cell itself
//! (`cells::CompactionCard`), or live compactions (`thread_events`).

use std::collections::VecDeque;

use jiff::Timestamp;

use super::cells::{CellKind, CompactionCard};
use super::thread::Thread;
use crate::session::Message;
use crate::session::protocol::ContextCompactionEvent;

/// Stored compactions with the time each happened, oldest first.
pub type StoredCompactions = Vec<(Timestamp, CompactionCard)>;

/// `compactions` as the engine replied them (RFC 3339 time, event), as cards; one
/// whose time does not parse is left out.
pub fn stored(compactions: &[(String, ContextCompactionEvent)]) -> StoredCompactions {
    compactions
        .iter()
        .filter_map(|(ts, e)| {
            let at = ts.parse::<Timestamp>().ok()?;
            Some((
                at,
                CompactionCard {
                    note: e.note(),
                    summary: e.summary.clone(),
                },
            ))
        })
        .collect()
}

impl Thread {
    /// Places `compactions` among the messages pushed from now on; with `from`, only
    /// those at or after it (the earlier ones belong to a part still loading).
    pub(super) fn place_compactions(
        &mut self,
        compactions: &StoredCompactions,
        from: Option<Timestamp>,
    ) {
        self.pending_compactions = compactions
            .iter()
            .filter(|(at, _)| from.is_none_or(|f| *at >= f))
            .cloned()
            .collect::<VecDeque<_>>();
    }

    /// Before `message` is pushed: the compactions that happened before it.
    pub(super) fn compactions_before(&mut self, message: &Message) {
        if self.pending_compactions.is_empty() {
            return;
        }
        let Some(at) = message
            .timestamp()
            .and_then(|t| t.parse::<Timestamp>().ok())
        else {
            return;
        };
        while self
            .pending_compactions
            .front()
            .is_some_and(|(c, _)| *c < at)
        {
            if let Some((_, card)) = self.pending_compactions.pop_front() {
                self.push(CellKind::Compaction(Box::new(card)));
            }
        }
    }

    /// After the last message: the compactions left (they came after it).
    pub(super) fn flush_compactions(&mut self) {
        while let Some((_, card)) = self.pending_compactions.pop_front() {
            self.push(CellKind::Compaction(Box::new(card)));
        }
    }
}
