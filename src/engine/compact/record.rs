//! The `context:compaction` event as a compaction [`Record`], written when a session
//! compacts and read back when it is resumed (issue 26 item 3), so a resumed or
//! restarted session sends the same compacted view.
//!
//! Owns: turning a record and its numbers into the event, the event back into a
//! record, and finding a session's latest one (or all of them, for a reopened
//! thread) in its `events.jsonl`. Does not own:
//! writing the file (`live` emits, `store` writes).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::session::protocol::{ContextCompactionEvent, EngineEvent, Event};
use crate::session::store::EVENTS_FILE;

use super::view::Record;

/// The numbers of one compaction besides its record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Estimated tokens of the view before.
    pub before_tokens: u64,
    /// Estimated tokens of the view after.
    pub after_tokens: u64,
    /// Messages in the view before.
    pub before_messages: u64,
    /// Messages in the view after.
    pub after_messages: u64,
    /// Transcript messages newly summarised.
    pub removed: u64,
    /// Tool results newly stubbed.
    pub truncated: u64,
    /// The context limit.
    pub budget: u64,
    /// What the compaction aimed at.
    pub target: u64,
    /// `auto`, `manual` (`/compact`) or `overflow` (the provider refused a request).
    pub trigger: &'static str,
    /// `/compact`'s focus.
    pub focus: Option<String>,
    /// Tokens the summary calls used (input + output).
    pub summary_tokens: u64,
    /// Milliseconds the compaction took.
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
/// (`None`: none, or no readable file). The file is read backwards in blocks until a
/// `context:compaction` line turns up, so resuming a long session costs the tail
/// after its last compaction, not the whole log. Lines that do not parse are
/// skipped, as a torn last line after a crash would be.
pub fn latest(dir: &Path) -> Option<Record> {
    let mut file = std::fs::File::open(dir.join(EVENTS_FILE)).ok()?;
    let mut end = file.metadata().ok()?.len();
    // Bytes before `end` not yet split into lines (a line cut by a block boundary).
    let mut carry: Vec<u8> = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let mut block = vec![0u8; usize::try_from(end - start).ok()?];
        file.seek(SeekFrom::Start(start)).ok()?;
        file.read_exact(&mut block).ok()?;
        block.extend_from_slice(&carry);
        // The first piece may continue in the block before: keep it for the next round.
        let first_newline = if start == 0 {
            0
        } else {
            block
                .iter()
                .position(|b| *b == b'\n')
                .map_or(block.len(), |i| i + 1)
        };
        for line in block[first_newline..].rsplit(|b| *b == b'\n') {
            if let Some(record) = parse(line) {
                return Some(record);
            }
        }
        carry = block[..first_newline].to_vec();
        end = start;
    }
    None
}

/// Every compaction recorded in session directory `dir`'s `events.jsonl`, oldest
/// first, each with its event's timestamp (RFC 3339) — what a reopened thread shows
/// as its compaction cells. Empty when there are none or the file cannot be read;
/// lines that do not parse are skipped. Reads the whole log (a cheap substring test
/// per line before any JSON is parsed).
pub fn all(dir: &Path) -> Vec<(String, ContextCompactionEvent)> {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open(dir.join(EVENTS_FILE)) else {
        return Vec::new();
    };
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, file);
    let mut line = Vec::new();
    let mut found = Vec::new();
    // One buffer for every line: most lines are other events, skipped unparsed.
    while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
        if let Ok(text) = std::str::from_utf8(&line)
            && text.contains("\"context:compaction\"")
            && let Ok(event) = Event::from_log_line(text)
            && let EngineEvent::ContextCompaction(e) = event.msg
        {
            found.push((event.timestamp, e));
        }
        line.clear();
    }
    found
}

/// Bytes read per step of [`latest`].
const BLOCK: u64 = 256 * 1024;

/// The record of one `events.jsonl` line, when it is a `context:compaction`.
fn parse(line: &[u8]) -> Option<Record> {
    let line = std::str::from_utf8(line).ok()?;
    // Cheap filter first: most lines are other events.
    if !line.contains("\"context:compaction\"") {
        return None;
    }
    match Event::from_log_line(line).ok()?.msg {
        EngineEvent::ContextCompaction(e) => Some(from_event(&e)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session compacted before issue 34 (when the view sent the summary as a user
    /// message) stored exactly this line; resumed now, its view carries the summary
    /// as an assistant message after arbor's note.
    #[test]
    fn a_compaction_stored_before_issue_34_resumes_in_the_new_form() {
        use crate::session::message::Message;
        let dir = tempfile::tempdir().unwrap();
        let line = r#"{"ts":"2026-01-01T00:00:00Z","lvl":"INFO","schema":{"name":"amplifier.log","ver":"1.0.0"},"event":"context:compaction","session_id":"s1","data":{"before_tokens":3900,"after_tokens":1200,"before_messages":14,"after_messages":5,"messages_removed":10,"messages_truncated":0,"strategy_level":2,"budget":4000,"target_tokens":2000,"summary":"OLD SUMMARY","covers":10,"stubbed_before":0,"at_message":14,"trigger":"auto","summary_tokens":80,"duration_ms":3,"parent_id":null,"timestamp":"2026-01-01T00:00:00Z"}}"#;
        std::fs::write(dir.path().join(EVENTS_FILE), format!("{line}\n")).unwrap();
        let record = latest(dir.path()).unwrap();
        assert_eq!(
            (record.covers, record.summary.as_deref()),
            (10, Some("OLD SUMMARY"))
        );
        let transcript: Vec<Message> = (0..12).map(|i| Message::user(format!("m{i}"))).collect();
        let view = super::super::view::build(&transcript, &record);
        assert!(
            matches!(&view[0], Message::User(u) if u.content == super::super::view::SUMMARY_NOTE)
        );
        assert!(matches!(&view[1], Message::Assistant(a) if a.text() == "OLD SUMMARY"));
        assert_eq!(view[2].text(), "m10");
        assert_eq!(view.len(), 4);
    }

    #[test]
    fn latest_finds_the_newest_compaction_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let line = |covers: u64| {
            let e = ContextCompactionEvent {
                covers,
                summary: Some(format!("s{covers}")),
                ..Default::default()
            };
            let event = Event::new("s", None, EngineEvent::ContextCompaction(e));
            serde_json::to_string(&event.to_log_line()).unwrap()
        };
        let filler = format!(
            "{{\"event\":\"tool:post\",\"pad\":\"{}\"}}",
            "x".repeat(1000)
        );
        let mut text = String::new();
        text.push_str(&line(2));
        text.push('\n');
        for _ in 0..600 {
            text.push_str(&filler);
            text.push('\n');
        }
        text.push_str(&line(7));
        text.push('\n');
        for _ in 0..600 {
            text.push_str(&filler);
            text.push('\n');
        }
        text.push_str("{\"torn");
        std::fs::write(dir.path().join(EVENTS_FILE), &text).unwrap();
        let record = latest(dir.path()).unwrap();
        assert_eq!((record.covers, record.summary.as_deref()), (7, Some("s7")));
        // Only the first, at the very start of the file.
        let first_only = format!("{}\n{}", line(2), filler);
        std::fs::write(dir.path().join(EVENTS_FILE), first_only).unwrap();
        assert_eq!(latest(dir.path()).unwrap().covers, 2);
        std::fs::write(dir.path().join(EVENTS_FILE), "").unwrap();
        assert!(latest(dir.path()).is_none());
    }
}
