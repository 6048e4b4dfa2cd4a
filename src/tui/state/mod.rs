//! UI state the `App` owns: the session tree, the open thread with its cells and
//! scroll anchor, streaming, the agent browser, the status-bar note, the approval
//! prompts, the trust prompt, the messages waiting for running turns (`pending`) and
//! the composer's popup (`palette`, with the slash-command table in `palette_commands`) the prompt
//! history (`history`) and `@file` mentions (`mentions`).
//!
//! Owns: data and the operations on it, and the one dispatcher that hands each engine
//! event to the states that care (`dispatch`). Does not own: input dispatch (`app`)
//! or drawing (`views`).
//!
//! The thread's files form layers, each using only those below it
//! (`tests/all/inner_layers.rs` fails on a cycle): `thread_earlier` (opening tail-first),
//! `thread_events` and `transcript` (more `Thread` methods) on top; `thread`; `layout`; `cells`; `stream` and `error_card`
//! (the streaming and provider-failure cell kinds); `rows` (the row type, thinking
//! summary and layout counters every kind shares) at the bottom.

pub mod approvals;
pub mod browser;
pub mod cells;
pub mod context;
pub mod copy;
pub mod diff;
pub mod dispatch;
pub mod error_card;
pub mod find;
pub mod history;
pub mod inflight;
pub mod layout;
pub mod mentions;
pub mod note;
pub mod palette;
pub mod palette_commands;
pub mod pending;
pub mod rows;
pub mod seen;
pub mod stream;
pub mod thread;
pub mod thread_compactions;
pub mod thread_earlier;
mod thread_events;
mod transcript;
pub mod tree;
pub mod trust;
pub mod wall;
