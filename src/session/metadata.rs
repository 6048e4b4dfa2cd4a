//! `metadata.json`: one session's identity, status, usage and merged config.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Usage;

/// A session's lifecycle state, as `metadata.json` and `session:status` write it
/// (SPEC §7: `running|queued|waiting|paused|idle|completed|failed|cancelled`, plus the
/// derived `interrupted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// A turn is in progress.
    Running,
    /// A turn is accepted but waits to start (a concurrency limit, a queued message).
    Queued,
    /// A turn is in progress and a tool call waits for a person's approval (SPEC §12:
    /// "needs you").
    Waiting,
    /// A turn is held (a budget reached) until the person continues it.
    Paused,
    /// Created or between turns.
    #[default]
    Idle,
    /// The last turn finished normally.
    Completed,
    /// The last turn ended with an error.
    Failed,
    /// The last turn was cancelled.
    Cancelled,
    /// Derived by readers (SPEC §7), never written by arbor: the session's metadata
    /// was lost to a kill and rebuilt from its transcript and events.
    Interrupted,
}

impl SessionStatus {
    /// The status as written to `metadata.json` (`running`, `waiting`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Queued => "queued",
            SessionStatus::Waiting => "waiting",
            SessionStatus::Paused => "paused",
            SessionStatus::Idle => "idle",
            SessionStatus::Completed => "completed",
            SessionStatus::Failed => "failed",
            SessionStatus::Cancelled => "cancelled",
            SessionStatus::Interrupted => "interrupted",
        }
    }
}

/// Usage rolled into metadata: tokens summed over every turn, cost when a price is known.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_creation_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl SessionUsage {
    pub fn add(&mut self, u: &Usage) {
        self.input_tokens += u.input_tokens;
        self.output_tokens += u.output_tokens;
        self.cache_read_tokens += u.cache_read_tokens;
        self.cache_creation_tokens += u.cache_creation_tokens;
    }
}

/// `metadata.json` (SPEC §7). Unknown keys written by other tools are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Metadata {
    pub session_id: String,
    #[serde(default)]
    pub parent_id: Option<String>,
    #[serde(default)]
    pub agent_name: Option<String>,
    /// RFC 3339.
    #[serde(default)]
    pub created: String,
    /// RFC 3339.
    #[serde(default)]
    pub last_updated: String,
    #[serde(default)]
    pub turn_count: u32,
    #[serde(default)]
    pub working_dir: Option<String>,
    #[serde(default)]
    pub bundle: Option<String>,
    /// `provider/model` or the model id.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub status: SessionStatus,
    #[serde(default)]
    pub depth: u32,
    /// The full merged mount plan, secrets replaced by `[REDACTED]`. `None` when the
    /// file lacks it (such a session cannot be resumed: "Corrupted session metadata").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    #[serde(default)]
    pub agent_overlay: Value,
    #[serde(default)]
    pub usage: SessionUsage,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_status_parses_and_writes_back() {
        for name in [
            "running",
            "queued",
            "waiting",
            "paused",
            "idle",
            "completed",
            "failed",
            "cancelled",
            "interrupted",
        ] {
            let status: SessionStatus = serde_json::from_value(Value::from(name)).unwrap();
            assert_eq!(status.as_str(), name);
            assert_eq!(serde_json::to_value(status).unwrap(), Value::from(name));
        }
        let meta: Metadata =
            serde_json::from_str(r#"{"session_id": "s1", "status": "waiting"}"#).unwrap();
        assert_eq!(meta.status, SessionStatus::Waiting);
    }
}
