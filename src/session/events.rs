//! Session events and the one in-process event bus (SPEC §7 "Events").
//!
//! Owns: the event value every session publishes, the Amplifier event names, the
//! `events.jsonl` line shape, and the bus that fans events out to every subscriber (TUI,
//! headless output, store writers). Does not own: writing `events.jsonl` (`store`).
//!
//! The bus is unbounded per subscriber on purpose: a subscriber that falls behind must
//! never lose a `content_block:delta` (the TUI would show a gap), and every producer is
//! bounded by the turn loop anyway.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Event names, exactly as Amplifier writes them.
pub mod names {
    pub const SESSION_START: &str = "session:start";
    pub const SESSION_FORK: &str = "session:fork";
    pub const SESSION_RESUME: &str = "session:resume";
    pub const SESSION_END: &str = "session:end";
    pub const PROMPT_SUBMIT: &str = "prompt:submit";
    pub const PROVIDER_REQUEST: &str = "provider:request";
    pub const PROVIDER_RESPONSE: &str = "provider:response";
    pub const PROVIDER_ERROR: &str = "provider:error";
    /// Live only: never written to `events.jsonl`.
    pub const CONTENT_BLOCK_DELTA: &str = "content_block:delta";
    pub const TOOL_PRE: &str = "tool:pre";
    pub const TOOL_POST: &str = "tool:post";
    pub const TOOL_ERROR: &str = "tool:error";
    pub const TASK_AGENT_SPAWNED: &str = "task:agent_spawned";
    pub const TASK_AGENT_RESUMED: &str = "task:agent_resumed";
    pub const TASK_AGENT_COMPLETED: &str = "task:agent_completed";
    pub const CANCEL_REQUESTED: &str = "cancel:requested";
    pub const CANCEL_COMPLETED: &str = "cancel:completed";
    pub const ORCHESTRATOR_COMPLETE: &str = "orchestrator:complete";
    /// arbor extension: a session's status changed (`data.status`).
    pub const SESSION_STATUS: &str = "session:status";
    /// arbor extension: a whole message was appended to the transcript (`data.message`).
    pub const MESSAGE_APPENDED: &str = "message:appended";
}

/// One event from one session. `data` holds the event-specific fields.
///
/// On the bus and in `arbor run --output-format jsonl` it serializes as
/// `{"event","session_id","parent_id","timestamp","data"}`; in `events.jsonl` it is
/// wrapped by [`Event::to_log_line`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub event: String,
    pub session_id: String,
    pub parent_id: Option<String>,
    /// RFC 3339, UTC.
    pub timestamp: String,
    #[serde(default)]
    pub data: Value,
}

impl Event {
    /// A new event stamped with the current time.
    pub fn new(event: &str, session_id: &str, parent_id: Option<&str>, data: Value) -> Self {
        Self {
            event: event.to_string(),
            session_id: session_id.to_string(),
            parent_id: parent_id.map(str::to_string),
            timestamp: super::message::now_rfc3339(),
            data,
        }
    }

    /// Whether this event goes to `events.jsonl` (everything but live deltas).
    pub fn is_logged(&self) -> bool {
        self.event != names::CONTENT_BLOCK_DELTA && self.event != names::MESSAGE_APPENDED
    }

    /// The `events.jsonl` line (Amplifier's log schema):
    /// `{"ts","lvl","schema":{"name":"amplifier.log","ver":"1.0.0"},"event","session_id","data":{…}}`.
    /// `parent_id` and `timestamp` are kept inside `data` so every line carries them.
    pub fn to_log_line(&self) -> Value {
        let mut data = match &self.data {
            Value::Object(map) => map.clone(),
            Value::Null => Default::default(),
            other => {
                let mut m = serde_json::Map::new();
                m.insert("value".into(), other.clone());
                m
            }
        };
        data.insert("parent_id".into(), json!(self.parent_id));
        data.insert("timestamp".into(), json!(self.timestamp));
        let lvl = if self.event.ends_with(":error") {
            "ERROR"
        } else {
            "INFO"
        };
        json!({
            "ts": self.timestamp,
            "lvl": lvl,
            "schema": {"name": "amplifier.log", "ver": "1.0.0"},
            "event": self.event,
            "session_id": self.session_id,
            "data": Value::Object(data),
        })
    }
}

/// The process-wide event bus: every session publishes here; the TUI, headless output
/// and the store writers subscribe. Cheap to clone (an `Arc` inside).
#[derive(Clone, Default)]
pub struct EventBus {
    subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<Arc<Event>>>>>,
}

impl EventBus {
    pub fn new() -> Self {
        Self::default()
    }

    /// Delivers `event` to every live subscriber; closed subscribers are dropped.
    pub fn publish(&self, event: Event) {
        let event = Arc::new(event);
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.retain(|tx| tx.send(event.clone()).is_ok());
        }
    }

    /// A new subscription receiving every event published from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<Event>> {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.push(tx);
        }
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_subscriber_gets_every_event() {
        let bus = EventBus::new();
        let mut a = bus.subscribe();
        let mut b = bus.subscribe();
        bus.publish(Event::new(names::SESSION_START, "s1", None, json!({})));
        assert_eq!(a.recv().await.unwrap().session_id, "s1");
        assert_eq!(b.recv().await.unwrap().event, "session:start");
        drop(a);
        bus.publish(Event::new(names::SESSION_END, "s1", None, json!({})));
        assert_eq!(b.recv().await.unwrap().event, "session:end");
    }

    #[test]
    fn log_line_has_amplifier_schema_and_parent() {
        let e = Event::new(names::SESSION_FORK, "c", Some("p"), json!({"parent": "p"}));
        let line = e.to_log_line();
        assert_eq!(line["schema"]["name"], "amplifier.log");
        assert_eq!(line["data"]["parent_id"], "p");
        assert!(!Event::new(names::CONTENT_BLOCK_DELTA, "c", None, json!({})).is_logged());
    }
}
