//! Sessions: ids, the on-disk store, transcript messages, and the typed protocol —
//! events, commands and the bus (SPEC §7).
//!
//! Owns: session ids and their validation (`ids`), `metadata.json` (`metadata`), the
//! store directory with `transcript.jsonl`, `events.jsonl`, the lock and torn-line
//! recovery (`store`), forking at a turn (`fork`), secret redaction (`redact`), titles (`title`), message shapes (`message`), token
//! counts (`usage`) and the engine ↔ front-end protocol with the event bus
//! (`protocol`). The bottom layer above `paths`: it imports no other arbor module. Does
//! not own: running turns (`engine`) or encoding messages for an API (`provider`).

pub mod budget;
pub mod export;
pub mod fork;
pub mod ids;
pub mod image;
pub mod message;
pub mod metadata;
pub mod protocol;
pub mod redact;
pub mod store;
pub mod title;
pub mod tree;
pub mod usage;

pub use ids::{SessionId, ToolCallId};
pub use message::Message;
pub use metadata::{Metadata, SessionStatus};
pub use protocol::{EngineCommand, EngineEvent, EngineQuery, Event, EventBus};
pub use store::{LoadedSession, SessionStore, SessionWriter, StoreError};
pub use usage::Usage;
