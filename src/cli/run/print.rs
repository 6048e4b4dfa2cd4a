//! What `arbor run` prints for each bus event, with secrets scrubbed.
//!
//! Owns: [`Printer`] — each event in the output format (`text`: the root session's
//! answer as it streams, notes on stderr; `jsonl`: every event as one line; `json`:
//! nothing until the final object), every line passed through
//! `session::redact::scrub_secrets`, and streamed pieces (`content_block:delta`)
//! passed through a `ScrubStream` per session and kind, so a key the model streams in
//! two pieces is replaced too. Does not own: the final object or the exit code (`run`).

use std::collections::HashMap;

use crate::cli::OutputFormat;
use crate::cli::out;
use crate::session::protocol::{ContentBlockDeltaEvent, DeltaKind};
use crate::session::redact::{ScrubStream, scrub_secrets};
use crate::session::{EngineEvent, Event};
use crate::{out, outln};

/// Prints the events of one turn of `session_id` (and its sub-sessions, in `jsonl`).
pub(super) struct Printer<'a> {
    format: OutputFormat,
    session_id: &'a str,
    /// Per (session, thinking?): the scrubber of its streamed pieces and its last
    /// delta event (the shape to print what the scrubber still holds in).
    streams: HashMap<(String, bool), (ScrubStream, Event)>,
}

impl<'a> Printer<'a> {
    pub(super) fn new(format: OutputFormat, session_id: &'a str) -> Self {
        Self {
            format,
            session_id,
            streams: HashMap::new(),
        }
    }

    /// Prints `event`. A streamed piece prints what is safe of it now (maybe nothing);
    /// any other event of a session first prints what its pieces still hold. Errors:
    /// stdout cannot be written.
    pub(super) fn event(&mut self, event: &Event) -> std::io::Result<()> {
        if let EngineEvent::ContentBlockDelta(piece) = &event.msg {
            let key = (
                event.session_id.clone(),
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

    fn print(&self, event: &Event) -> std::io::Result<()> {
        print_event(self.format, self.session_id, event)
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

/// Prints one bus event as `format` wants it. Errors: stdout cannot be written.
fn print_event(format: OutputFormat, session_id: &str, event: &Event) -> std::io::Result<()> {
    let note = match &event.msg {
        EngineEvent::ProviderEndpointChanged(changed) => Some(changed.note()),
        EngineEvent::SessionRebuilt(rebuilt) => Some(rebuilt.note()),
        _ => None,
    };
    if let Some(note) = note
        && event.session_id == session_id
        && format != OutputFormat::Jsonl
    {
        out::error(note);
    }
    if let EngineEvent::McpServerFailed(failed) = &event.msg
        && format != OutputFormat::Jsonl
    {
        out::warning(failed.note());
    }
    match format {
        OutputFormat::Jsonl => {
            if let Ok(line) = serde_json::to_string(event) {
                outln!("{}", scrub_secrets(&line))?;
            }
        }
        OutputFormat::Text if event.session_id == session_id => match &event.msg {
            EngineEvent::ContentBlockDelta(ContentBlockDeltaEvent {
                delta,
                kind: DeltaKind::Text,
            }) => out!("{delta}")?,
            EngineEvent::ProviderWarning(warning) => {
                out::warning(format!("{} ({})", warning.message, warning.provider));
            }
            // A hand-off between agents of the session's tree (SPEC §11), on stderr
            // so stdout stays the answer.
            EngineEvent::AgentTransfer(transfer) => {
                out::plain_error(format!("[{} → {}]", transfer.from, transfer.to));
            }
            _ => {}
        },
        OutputFormat::Text => {}
        OutputFormat::Json => {}
    }
    Ok(())
}
