//! The engine: sessions running turns, delegation, cancellation (SPEC §8–9).
//!
//! Owns: the `Runtime` every consumer (TUI, `arbor run`, the task tool) drives — session
//! creation, fork/spawn of sub-sessions, resume from disk, the turn loop with concurrent
//! tool calls, cancellation that cascades to children, transcript repair. Does not own:
//! rendering (`tui`), argument parsing (`cli`), wire protocols (`provider`).

mod calls;
pub mod context;
mod live;
pub mod providers;
pub mod repair;
mod root_plan;
pub mod runtime;
mod spawn;
mod stream;
#[doc(hidden)]
pub mod testing;
pub mod turn;

pub use providers::ProviderFactory;
pub use runtime::{EngineError, Runtime, RuntimeHooks, RuntimeOptions, TurnOutcome};
