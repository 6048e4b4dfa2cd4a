//! The engine: sessions running turns, delegation, cancellation (SPEC §8–9).
//!
//! Owns: the `Runtime` every consumer (TUI, `arbor run`, the task tool) drives — session
//! creation, fork/spawn of sub-sessions, resume from disk, the turn loop with concurrent
//! tool calls, cancellation that cascades to children, transcript repair. Does not own:
//! rendering (`tui`), argument parsing (`cli`), wire protocols (`provider`).

pub mod repair;
pub mod runtime;
pub mod turn;

pub use runtime::{EngineError, Runtime, RuntimeOptions, TurnOutcome};
