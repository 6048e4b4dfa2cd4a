//! What `arbor run` / `session resume` print for each bus event, and what they remember
//! between events to print it.
//!
//! Owns: [`Printer`] — each event in the output format (`text`: the root session's
//! answer as it streams, each assistant message of the turn after a blank line, notes
//! on stderr; `jsonl`: every event as one line; `json`: nothing until the final
//! object); secrets scrubbed from all of it (every `jsonl` line passed through
//! `session::redact::scrub_secrets`, streamed pieces (`content_block:delta`) through a
//! `ScrubStream` per session and kind, so a key the model streams in two pieces is
//! replaced too, stderr notes through `out`, issue 22); and, in every format, a call
//! denied for want of `--yes` or by the approval policy named on stderr with what would
//! allow it (issue 23 item 9). Does not own: which events reach it, the final object or
//! the exit code (`run`), the denial itself (`engine::gate`).

use std::collections::HashMap;

use crate::cli::OutputFormat;
use crate::cli::out;
use crate::session::protocol::{
    ApprovalDeniedEvent, ContentBlockDeltaEvent, DecisionKind, DeltaKind, HookOutcome,
};
use crate::session::redact::{ScrubStream, scrub_secrets};
use crate::session::{EngineEvent, Event, Message, SessionStatus};
use crate::{out, outln};

/// Prints the events of one headless turn of `session_id` (and its sub-sessions, in
/// `jsonl`).
pub(super) struct Printer<'a> {
    format: OutputFormat,
    session_id: &'a str,
    /// Per (session, thinking?): the scrubber of its streamed pieces and its last
    /// delta event (the shape to print what the scrubber still holds in).
    streams: HashMap<(String, bool), (ScrubStream, Event)>,
    /// Where the `text` answer's messages begin and end.
    layout: TextLayout,
    /// `approval:required` summaries (`write notes.md`, the command), by call id.
    asked: HashMap<String, String>,
}

impl<'a> Printer<'a> {
    pub(super) fn new(format: OutputFormat, session_id: &'a str) -> Self {
        Self {
            format,
            session_id,
            streams: HashMap::new(),
            layout: TextLayout::default(),
            asked: HashMap::new(),
        }
    }

    /// Prints `event`. A streamed piece prints what is safe of it now (maybe nothing);
    /// any other event of a session first prints what its pieces still hold. Errors:
    /// stdout cannot be written.
    pub(super) fn event(&mut self, event: &Event) -> std::io::Result<()> {
        if let EngineEvent::ContentBlockDelta(piece) = &event.msg {
            let key = (
                event.session_id.to_string(),
                matches!(piece.kind, DeltaKind::Thinking),
            );
            let (stream, last) = self
                .streams
                .entry(key)
                .or_insert_with(|| (ScrubStream::default(), event.clone()));
            *last = event.clone();
            let ready = stream.push(&piece.delta);
            if ready.is_empty() {
                return Ok(());
            }
            return self.print(&with_delta(event, ready));
        }
        self.flush(Some(&event.session_id))?;
        self.print(event)
    }

    /// Prints what the streams of `session` (`None`: every session) still hold.
    pub(super) fn flush(&mut self, session: Option<&str>) -> std::io::Result<()> {
        let keys: Vec<(String, bool)> = self
            .streams
            .keys()
            .filter(|(id, _)| session.is_none_or(|s| s == id))
            .cloned()
            .collect();
        for key in keys {
            if let Some((mut stream, last)) = self.streams.remove(&key) {
                let rest = stream.finish();
                if !rest.is_empty() {
                    self.print(&with_delta(&last, rest))?;
                }
            }
        }
        Ok(())
    }

    /// Prints one (already scrubbed, for a piece) event as the format wants it: its
    /// `jsonl` line, then what the event itself says — the one `match` over
    /// [`EngineEvent`] of `arbor run`'s output (a new event is named here by the
    /// compiler). Notes go to stderr outside `jsonl` (where the event's line says
    /// it); the `text` answer is the session's own streamed text.
    ///
    /// Errors: stdout cannot be written.
    fn print(&mut self, event: &Event) -> std::io::Result<()> {
        if self.format == OutputFormat::Jsonl
            && let Ok(line) = serde_json::to_string(event)
        {
            outln!("{}", scrub_secrets(&line))?;
        }
        let own = event.session_id == self.session_id;
        // Notes on stderr, for the session's own events or any session's.
        let notes = self.format != OutputFormat::Jsonl;
        let own_notes = notes && own;
        // The answer on stdout.
        let answer = self.format == OutputFormat::Text && own;
        match &event.msg {
            EngineEvent::ApprovalRequired(required) => {
                self.asked
                    .insert(required.tool_call_id.to_string(), required.summary.clone());
            }
            EngineEvent::ApprovalGranted(granted) => {
                self.asked.remove(granted.tool_call_id.as_str());
            }
            // In every format: what was denied, who asked, and what would allow it.
            EngineEvent::ApprovalDenied(denied) => {
                let summary = self.asked.remove(denied.tool_call_id.as_str());
                if let Some(note) = denial_note(denied, summary.as_deref()) {
                    out::error(note);
                }
            }
            EngineEvent::ProviderEndpointChanged(changed) if own_notes => {
                out::error(changed.note());
            }
            EngineEvent::SessionRebuilt(rebuilt) if own_notes => out::error(rebuilt.note()),
            EngineEvent::ContextCompaction(compaction) if own_notes => {
                out::error(compaction.note());
            }
            EngineEvent::ContextCompacting(compacting) if own_notes => {
                out::error(compacting.note());
            }
            EngineEvent::McpServerFailed(failed) if notes => out::warning(failed.note()),
            EngineEvent::SessionNotice(notice) if notes => {
                out::warning(format!("#{}: {}", event.session_id.short(), notice.message));
            }
            // A sub-session that failed says why (its parent hears it as its result).
            EngineEvent::OrchestratorComplete(done)
                if notes && !own && done.status == SessionStatus::Failed =>
            {
                let why = done.error.as_deref().unwrap_or("no reason given");
                out::warning(format!("#{}: failed: {why}", event.session_id.short()));
            }
            EngineEvent::HookRan(ran) if notes && ran.outcome != HookOutcome::Passed => {
                out::warning(ran.note());
            }
            EngineEvent::ContentBlockDelta(ContentBlockDeltaEvent {
                delta,
                kind: DeltaKind::Text,
            }) if answer => self.layout.text(delta)?,
            EngineEvent::MessageAppended(appended) if answer => {
                self.layout.appended(&appended.message);
            }
            EngineEvent::ProviderWarning(warning) if answer => {
                out::warning(format!("{} ({})", warning.message, warning.provider));
            }
            // A hand-off between agents of the session's tree (SPEC §11), on stderr so
            // stdout stays the answer.
            EngineEvent::AgentTransfer(transfer) if answer => {
                out::plain_error(format!("[{} → {}]", transfer.from, transfer.to));
            }
            // A sub-session's note, a note in jsonl, thinking, and the events whose
            // jsonl line is all there is to print (tool calls, lifecycle).
            EngineEvent::ProviderEndpointChanged(_)
            | EngineEvent::SessionRebuilt(_)
            | EngineEvent::ContextCompaction(_)
            | EngineEvent::ContextCompacting(_)
            | EngineEvent::McpServerFailed(_)
            | EngineEvent::SessionNotice(_)
            | EngineEvent::HookRan(_)
            | EngineEvent::ContentBlockDelta(_)
            | EngineEvent::MessageAppended(_)
            | EngineEvent::ProviderWarning(_)
            | EngineEvent::AgentTransfer(_)
            | EngineEvent::ContextUsage(_)
            | EngineEvent::SessionStart(_)
            | EngineEvent::SessionFork(_)
            | EngineEvent::SessionResume(_)
            | EngineEvent::SessionEnd(_)
            | EngineEvent::PromptSubmit(_)
            | EngineEvent::ProviderRequest(_)
            | EngineEvent::ProviderResponse(_)
            | EngineEvent::ProviderError(_)
            | EngineEvent::ToolPre(_)
            | EngineEvent::ToolPost(_)
            | EngineEvent::ToolError(_)
            | EngineEvent::TaskAgentSpawned(_)
            | EngineEvent::TaskAgentResumed(_)
            | EngineEvent::TaskAgentCompleted(_)
            | EngineEvent::CancelRequested(_)
            | EngineEvent::CancelCompleted(_)
            | EngineEvent::OrchestratorComplete(_)
            | EngineEvent::SessionStatus(_)
            | EngineEvent::SessionRenamed(_)
            | EngineEvent::PromptQueued(_)
            | EngineEvent::PromptSent(_)
            | EngineEvent::PromptUnqueued(_)
            | EngineEvent::SessionBudget(_) => {}
        }
        Ok(())
    }
}

/// Where one assistant message's text ends in the `text` answer, so the next one's
/// starts after a blank line instead of glued to it (issue 23 item 9).
#[derive(Debug, Default)]
struct TextLayout {
    /// The current assistant message has printed text.
    text_in_message: bool,
    /// A finished message printed text: the next text starts after a blank line.
    separate: bool,
    /// The last text printed ended a line.
    at_line_start: bool,
}

impl TextLayout {
    /// Prints a (scrubbed) text delta of the session's answer on stdout, a blank line
    /// first when an earlier assistant message of the turn printed text.
    ///
    /// Errors: stdout cannot be written.
    fn text(&mut self, delta: &str) -> std::io::Result<()> {
        if delta.is_empty() {
            return Ok(());
        }
        if self.separate {
            out!("{}", if self.at_line_start { "\n" } else { "\n\n" })?;
            self.separate = false;
        }
        out!("{delta}")?;
        self.text_in_message = true;
        self.at_line_start = delta.ends_with('\n');
        Ok(())
    }

    /// Notes a message appended to the session: an assistant message ends its text.
    fn appended(&mut self, message: &Message) {
        if matches!(message, Message::Assistant(_)) && self.text_in_message {
            self.text_in_message = false;
            self.separate = true;
        }
    }
}

/// `event` (a `content_block:delta`) carrying `delta` instead of its own piece.
fn with_delta(event: &Event, delta: String) -> Event {
    let mut event = event.clone();
    if let EngineEvent::ContentBlockDelta(piece) = &mut event.msg {
        piece.delta = delta;
    }
    event
}

/// The stderr line for a denied call, or `None` for denials a person made or a
/// cancellation (nothing to allow).
fn denial_note(denied: &ApprovalDeniedEvent, summary: Option<&str>) -> Option<String> {
    let tool = &denied.tool_name;
    let what = match summary.filter(|s| !s.is_empty() && *s != tool) {
        Some(summary) => format!("{tool} `{summary}`"),
        None => tool.clone(),
    };
    let agent = &denied.agent;
    match denied.decision {
        DecisionKind::Headless => Some(format!(
            "denied {what} (asked by {agent}): it needs approval and a headless run cannot \
             ask; --yes allows it, or an approvals rule in the config \
             (approvals: {{{tool}: allow}})"
        )),
        DecisionKind::Policy => Some(format!(
            "denied {what} (asked by {agent}) by the approval policy{}; --yes does not \
             change that, an approvals rule in the config does",
            denied
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied(decision: DecisionKind) -> ApprovalDeniedEvent {
        ApprovalDeniedEvent {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            agent: "coder".into(),
            decision,
            reason: Some("deny: bash".into()),
        }
    }

    #[test]
    fn denials_say_what_and_how_to_allow_it() {
        let note = denial_note(&denied(DecisionKind::Headless), Some("rm -rf x")).unwrap();
        assert!(
            note.starts_with("denied bash `rm -rf x` (asked by coder)"),
            "{note}"
        );
        assert!(note.contains("--yes allows it"), "{note}");
        assert!(note.contains("approvals: {bash: allow}"), "{note}");
        let note = denial_note(&denied(DecisionKind::Policy), None).unwrap();
        assert!(
            note.contains("by the approval policy (deny: bash)"),
            "{note}"
        );
        assert_eq!(denial_note(&denied(DecisionKind::Once), None), None);
        assert_eq!(denial_note(&denied(DecisionKind::Cancelled), None), None);
    }
}
