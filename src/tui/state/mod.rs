//! UI state the `App` owns: the session tree, the open thread with its cells and
//! scroll anchor, streaming, and the agent browser.
//!
//! Owns: data and the operations on it. Does not own: input dispatch (`app`) or
//! drawing (`views`).

pub mod browser;
pub mod cells;
pub mod error_card;
pub mod inflight;
pub mod layout;
pub mod stream;
pub mod thread;
mod thread_events;
mod transcript;
pub mod tree;
