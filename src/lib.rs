//! arbor: a terminal workbench for trees of AI-agent sessions.
//!
//! The engine (`agent`, `config`, `session`, `engine`, `provider`, `tool`) never imports
//! `tui` or `cli`; those two are consumers of the engine's commands and of the session
//! event bus (`session::events::EventBus`).

pub mod agent;
pub mod cli;
pub mod config;
pub mod engine;
pub mod paths;
pub mod provider;
pub mod routing;
pub mod session;
pub mod tool;
pub mod tui;
