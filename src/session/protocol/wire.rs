//! The JSON forms of an [`Event`] where it leaves the process. Nothing inside the
//! process reads or writes these.
//!
//! - `arbor run --output-format jsonl` (and the README's "as on the event bus"): one
//!   object a line, `{"event","session_id","parent_id","timestamp","data":{…}}` —
//!   `Event`'s `Serialize`/`Deserialize`.
//! - `events.jsonl`: Amplifier's `hooks-logging` line,
//!   `{"ts","lvl","schema":{"name":"amplifier.log","ver":"1.0.0"},"event","session_id","data":{…}}`,
//!   with `parent_id` and `timestamp` added at the end of `data` so every line carries
//!   them ([`Event::to_log_line`], read back by [`Event::from_log_line`]).
//!
//! `data` is the payload struct's fields in declaration order. Readers accept lines
//! written by older arbor (extra keys are ignored; `tool:pre` `arguments` is read as
//! `tool_input`).
//!
//! A line copied rather than read — by a fork, whatever tool wrote it and whichever
//! event it names — is a [`StoredEvent`]: its envelope read, the rest kept as written.

use crate::session::ids::SessionId;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Event;
use super::event::{Data, EngineEvent};

/// The `schema` of every `events.jsonl` line.
const LOG_SCHEMA: Schema = Schema {
    name: "amplifier.log",
    ver: "1.0.0",
};

#[derive(Serialize)]
struct Schema {
    name: &'static str,
    ver: &'static str,
}

/// The jsonl output object, borrowed from an [`Event`].
#[derive(Serialize)]
struct JsonlOut<'a> {
    event: &'static str,
    session_id: &'a str,
    parent_id: &'a Option<SessionId>,
    timestamp: &'a str,
    data: Data<'a>,
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        JsonlOut {
            event: self.msg.name(),
            session_id: &self.session_id,
            parent_id: &self.parent_id,
            timestamp: &self.timestamp,
            data: Data(&self.msg),
        }
        .serialize(s)
    }
}

/// The jsonl output object read back: `event` and `data` go to the [`EngineEvent`].
#[derive(Deserialize)]
struct JsonlIn {
    session_id: SessionId,
    #[serde(default)]
    parent_id: Option<SessionId>,
    timestamp: String,
    #[serde(flatten)]
    msg: EngineEvent,
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let JsonlIn {
            session_id,
            parent_id,
            timestamp,
            msg,
        } = JsonlIn::deserialize(d)?;
        Ok(Event {
            session_id,
            parent_id,
            timestamp,
            msg,
        })
    }
}

/// One `events.jsonl` line, borrowed from an [`Event`] ([`Event::to_log_line`]).
#[derive(Serialize)]
pub struct LogLine<'a> {
    ts: &'a str,
    lvl: &'static str,
    schema: Schema,
    event: &'static str,
    session_id: &'a str,
    data: LogData<'a>,
}

#[derive(Serialize)]
struct LogData<'a> {
    #[serde(flatten)]
    payload: Data<'a>,
    parent_id: &'a Option<SessionId>,
    timestamp: &'a str,
}

/// The envelope of a stored line: the parts of [`Event`] that are not the payload.
#[derive(Deserialize)]
struct LogEnvelopeIn {
    ts: String,
    session_id: SessionId,
    #[serde(default)]
    data: LogDataIn,
}

#[derive(Deserialize, Default)]
struct LogDataIn {
    #[serde(default)]
    parent_id: Option<SessionId>,
    #[serde(default)]
    timestamp: Option<String>,
}

impl Event {
    /// The `events.jsonl` line of this event (serialize it; see the module docs for the
    /// shape). `lvl` is `ERROR` for `tool:error` and `provider:error`, else `INFO`.
    pub fn to_log_line(&self) -> LogLine<'_> {
        let event = self.msg.name();
        LogLine {
            ts: &self.timestamp,
            lvl: if event.ends_with(":error") {
                "ERROR"
            } else {
                "INFO"
            },
            schema: LOG_SCHEMA,
            event,
            session_id: &self.session_id,
            data: LogData {
                payload: Data(&self.msg),
                parent_id: &self.parent_id,
                timestamp: &self.timestamp,
            },
        }
    }

    /// Reads one `events.jsonl` line back. `timestamp` is `data.timestamp`, else `ts`.
    ///
    /// Errors: not JSON, an unknown event name, or a payload missing a required key.
    pub fn from_log_line(line: &str) -> Result<Event, serde_json::Error> {
        let value: serde_json::Value = serde_json::from_str(line)?;
        let envelope = LogEnvelopeIn::deserialize(&value)?;
        let msg = EngineEvent::deserialize(&value)?;
        Ok(Event {
            session_id: envelope.session_id,
            parent_id: envelope.data.parent_id,
            timestamp: envelope.data.timestamp.unwrap_or(envelope.ts),
            msg,
        })
    }
}

/// One `events.jsonl` line as a fork copies it (foundation's `slice_events_for_fork`):
/// any event of any writer, arbor's or another tool's (whose event names arbor may not
/// know), kept as written but for its address ([`StoredEvent::readdress`]).
#[derive(Debug, Clone)]
pub struct StoredEvent {
    /// The line's keys, in the order written.
    keys: Map<String, Value>,
    /// What a fork reads of them.
    envelope: StoredEnvelope,
}

/// The envelope keys a fork reads: `ts` (arbor's and Amplifier's log line) or
/// `timestamp`, and whether the line names a session.
#[derive(Debug, Clone, Default, Deserialize)]
struct StoredEnvelope {
    #[serde(default, deserialize_with = "text")]
    ts: Option<String>,
    #[serde(default, deserialize_with = "text")]
    timestamp: Option<String>,
    #[serde(default)]
    session_id: Option<IgnoredAny>,
}

/// A string, `None` for anything else.
fn text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

impl StoredEvent {
    /// Reads a line: `None` unless it is a JSON object (a torn or foreign line is
    /// skipped, as foundation's reader does).
    pub fn parse(line: &str) -> Option<Self> {
        let keys: Map<String, Value> = serde_json::from_str(line).ok()?;
        let envelope = serde_json::from_str(line).unwrap_or_default();
        Some(Self { keys, envelope })
    }

    /// When it happened as written: `ts`, else `timestamp` (foundation's order).
    pub fn time(&self) -> Option<&str> {
        self.envelope
            .ts
            .as_deref()
            .or(self.envelope.timestamp.as_deref())
    }

    /// Addresses the line to session `session`, forked from `parent`: `session_id`
    /// becomes `session`, and a line that named a session gets `parent_session_id`.
    pub fn readdress(&mut self, session: &str, parent: &str) {
        if self.envelope.session_id.is_some() {
            self.keys
                .insert("parent_session_id".into(), Value::from(parent));
        }
        self.keys.insert("session_id".into(), Value::from(session));
        self.envelope.session_id = Some(IgnoredAny);
    }

    /// The line to write (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(&self.keys).unwrap_or_default()
    }
}
