//! The runtime. CONTRACT STUB — the engine helper replaces the bodies; keep these
//! signatures (the TUI and CLI are written against them).

use std::sync::Arc;

use crate::agent::registry::RegistryHandle;
use crate::config::{ArborConfig, Bundle};
use crate::paths::Paths;
use crate::session::{EventBus, SessionStatus, SessionStore, StoreError};

/// Everything a runtime is built from.
pub struct RuntimeOptions {
    pub paths: Paths,
    pub config: ArborConfig,
    pub bundle: Bundle,
    /// The live registry (the watcher updates it).
    pub registry: RegistryHandle,
    /// Environment lookup for keys/base URLs (`OPENAI_API_KEY`, …); tests inject it.
    pub env: Arc<dyn Fn(&str) -> Option<String> + Send + Sync>,
    pub bus: EventBus,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub session_id: String,
    pub agent: String,
    pub status: SessionStatus,
    /// The final assistant text of the turn (partial text when failed/cancelled).
    pub response: String,
    pub turn_count: u32,
    /// The error text when `status` is `Failed`.
    pub error: Option<String>,
}

/// Engine failures that stop a command before a turn runs.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("unknown agent '{name}'. Available agents: {}", available.join(", "))]
    UnknownAgent { name: String, available: Vec<String> },
    #[error("agent '{name}' is invalid: {reason}")]
    InvalidAgent { name: String, reason: String },
    /// No usable provider; the message says what was looked for and how to configure one.
    #[error("{0}")]
    NoProvider(String),
    #[error("{0}")]
    Other(String),
}

/// Drives sessions. Shared as `Arc<Runtime>`.
pub struct Runtime {
    _private: (),
}

impl Runtime {
    pub fn new(options: RuntimeOptions) -> Arc<Self> {
        let _ = options;
        todo!("engine helper")
    }

    /// The event bus all sessions publish to.
    pub fn bus(&self) -> &EventBus {
        todo!("engine helper")
    }

    /// This project's session store.
    pub fn store(&self) -> &SessionStore {
        todo!("engine helper")
    }

    /// `provider/model` of what a new root session would use, or the NoProvider text.
    pub fn provider_label(&self) -> Result<String, EngineError> {
        todo!("engine helper")
    }

    /// Creates (and persists) a new root session with `agent` (the bundle's root agent
    /// when `None`). Runs nothing.
    pub fn create_root(&self, agent: Option<&str>) -> Result<String, EngineError> {
        let _ = agent;
        todo!("engine helper")
    }

    /// Runs one turn of `session_id` with `prompt`: a live session continues, a stored
    /// one (root or sub-session) is resumed from disk first. Returns when the turn ends;
    /// all progress is published on the bus meanwhile.
    pub async fn run_turn(
        self: &Arc<Self>,
        session_id: &str,
        prompt: String,
    ) -> Result<TurnOutcome, EngineError> {
        let _ = (session_id, prompt);
        todo!("engine helper")
    }

    /// Cancels the running turn of `session_id` and of all its descendants.
    pub fn cancel(&self, session_id: &str) {
        let _ = session_id;
        todo!("engine helper")
    }

    /// Whether `session_id` has a turn running now.
    pub fn is_running(&self, session_id: &str) -> bool {
        let _ = session_id;
        todo!("engine helper")
    }
}
