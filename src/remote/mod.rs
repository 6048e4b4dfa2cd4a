//! The transport of remote sub-sessions (issue 27): NATS JetStream between a root
//! arbor and `arbor worker` processes on other machines.
//!
//! Owns: credentials and keeping them out of every text (`auth`), what crosses the wire (`wire`: names, jobs, worker messages, control
//! messages), connecting and creating the streams, consumer and buckets arbor needs
//! with its own settings (`nats`), the compare-and-set session lease and its epoch
//! fence (`lease`), bodies too large for one message (`payload`), and binding a
//! worker's messages to the lease holder: its per-run key and signatures (`seal`) and
//! the root's pinning of that key (`pin`; issue 34 item 7). Does not own:
//! deciding which sub-sessions run remotely (`config::remote`), dispatching them and
//! writing what comes back into the store (`engine::remote`), running jobs
//! (`worker`).
//!
//! Layer: below `engine`; uses `session` and `config` only.

pub mod auth;
pub mod lease;
pub mod nats;
pub mod payload;
pub mod pin;
pub mod seal;
pub mod wire;

pub use auth::{RemoteAuth, Scrub, redact_url};
pub use nats::{Remote, StreamState};
pub use payload::Payload;
pub use wire::{Control, Job, JobFiles, Lease, RanOn, WorkerInfo, WorkerMsg};

/// A failure talking to NATS or reading what came over it. Every text names what was
/// being done (and the server URL where it is about the connection).
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The server at `url` could not be reached or refused the connection.
    #[error("cannot reach NATS at {url}: {reason}")]
    Connect { url: String, reason: String },
    /// A server operation failed (`what` says which: "cannot create stream ARBOR_JOBS").
    #[error("{what}: {reason}")]
    Nats { what: String, reason: String },
    /// A message body is not the JSON arbor writes.
    #[error("malformed message: {0}")]
    Json(#[from] serde_json::Error),
    /// A session id or pool cannot name a subject.
    #[error(transparent)]
    Token(#[from] wire::BadToken),
    /// A payload object arbor refuses to read: larger than its declared size, or a
    /// declared size over `payload::OBJECT_MAX` (`problem` says which).
    #[error("payload {name} {problem}")]
    Payload { name: String, problem: String },
    /// Another worker took the session's lease (this holder's epoch is stale).
    #[error("lease of session {session} lost: epoch {held} is no longer current")]
    LeaseLost { session: String, held: u64 },
}

impl RemoteError {
    /// The same error again, for a second caller of one shared attempt: a
    /// `Connect` or `Nats` error as it is, any other as a `Nats` error with its text.
    pub fn again(&self) -> Self {
        match self {
            RemoteError::Connect { url, reason } => RemoteError::Connect {
                url: url.clone(),
                reason: reason.clone(),
            },
            RemoteError::Nats { what, reason } => RemoteError::Nats {
                what: what.clone(),
                reason: reason.clone(),
            },
            other => RemoteError::Nats {
                what: "cannot connect".into(),
                reason: other.to_string(),
            },
        }
    }

    /// A [`RemoteError::Nats`] for a failed `what`, with the client's error text (said
    /// once: async-nats writes some of its errors as `X: X`).
    pub fn nats(what: impl Into<String>, e: impl std::fmt::Display) -> Self {
        RemoteError::Nats {
            what: what.into(),
            reason: said_once(e.to_string()),
        }
    }
}

/// `text` with a repeat of itself after `": "` dropped (`"a (b): a (b)"` → `"a (b)"`).
fn said_once(text: String) -> String {
    let half = text.len().saturating_sub(2) / 2;
    let repeated = text.len() == 2 * half + 2
        && text.is_char_boundary(half)
        && text.is_char_boundary(half + 2)
        && &text[half..half + 2] == ": "
        && text[..half] == text[half + 2..];
    if repeated {
        text[..half].to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::said_once;

    #[test]
    fn an_error_text_said_twice_is_said_once() {
        let twice = "jetstream error: insufficient storage (code 500): jetstream error: insufficient storage (code 500)";
        assert_eq!(
            said_once(twice.into()),
            "jetstream error: insufficient storage (code 500)"
        );
        for kept in ["a: b", "timed out", "", "x: x: y", "é: é!"] {
            assert_eq!(said_once(kept.into()), kept);
        }
        assert_eq!(said_once("é: é".into()), "é");
    }
}
