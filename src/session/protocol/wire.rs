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

use crate::session::ids::SessionId;
use serde::{Deserialize, Serialize};

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
