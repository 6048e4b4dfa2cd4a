//! The `context:compaction` event as a compaction [`Record`], written when a session
//! compacts and read back when it is resumed (issue 26 item 3), so a resumed or
//! restarted session sends the same compacted view.
//!
//! Owns: turning a record and its numbers into the event, the event back into a
//! record, and finding a session's latest one in its `events.jsonl`. Does not own:
//! writing the file (`live` emits, `store` writes).

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::session::protocol::{ContextCompactionEvent, EngineEvent, Event};
use crate::session::store::EVENTS_FILE;

use super::view::Record;

/// The numbers of one compaction besides its record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// View tokens and messages before and after.
    pub before_tokens: u64,
    pub after_tokens: u64,
    pub before_messages: u64,
    pub after_messages: u64,
    /// Transcript messages newly summarised, tool results newly stubbed.
    pub removed: u64,
    pub truncated: u64,
    /// The limit and what the compaction aimed at.
    pub budget: u64,
    pub target: u64,
    /// `auto` or `manual`, and `/compact`'s focus.
    pub trigger: &'static str,
    pub focus: Option<String>,
    /// Tokens the summary calls used; milliseconds the compaction took.
    pub summary_tokens: u64,
    pub duration_ms: u64,
}

/// The event recording `record` with `stats`.
pub fn event(record: &Record, stats: Stats) -> ContextCompactionEvent {
    ContextCompactionEvent {
        before_tokens: stats.before_tokens,
        after_tokens: stats.after_tokens,
        before_messages: stats.before_messages,
        after_messages: stats.after_messages,
        messages_removed: stats.removed,
        messages_truncated: stats.truncated,
        strategy_level: if record.summary.is_some() && stats.removed > 0 {
            2
        } else {
            1
        },
        budget: stats.budget,
        target_tokens: stats.target,
        summary: record.summary.clone(),
        covers: record.covers as u64,
        stubbed_before: record.stubbed_before as u64,
        at_message: record.at_message as u64,
        trigger: stats.trigger.to_string(),
        focus: stats.focus,
        summary_tokens: stats.summary_tokens,
        duration_ms: stats.duration_ms,
    }
}

/// The record an event stores.
pub fn from_event(e: &ContextCompactionEvent) -> Record {
    let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    Record {
        summary: e.summary.clone(),
        covers: n(e.covers),
        stubbed_before: n(e.stubbed_before),
        at_message: n(e.at_message),
    }
}

/// The latest compaction recorded in session directory `dir`'s `events.jsonl`
/// (`None`: none, or no readable file). Lines that do not parse are skipped, as a
/// torn last line after a crash would be.
pub fn latest(dir: &Path) -> Option<Record> {
    let file = std::fs::File::open(dir.join(EVENTS_FILE)).ok()?;
    let mut found = None;
    for line in BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        // Cheap filter first: most lines are other events.
        if !line.contains("\"context:compaction\"") {
            continue;
        }
        if let Some(EngineEvent::ContextCompaction(e)) =
            Event::from_log_line(&line).ok().map(|l| l.msg)
        {
            found = Some(from_event(&e));
        }
    }
    found
}
