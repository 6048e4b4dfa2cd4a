//! Every integration test, as one crate (one build of `support`, one link, one test
//! binary: `cargo test --test all`). Each module is what used to be its own crate
//! `tests/<name>.rs`; its tests are named `<name>::…` (`cargo test --test all
//! engine_steer::`). Tests run in parallel threads of one process, so none may change
//! process-wide state (environment variables, the current directory): the real binary
//! gets its environment through `Command::env` (see `support::TestEnv`), in-process
//! runtimes get an `Env` map (see `support::fixture`).

// Test helpers (not only `#[test]` fns) may panic: a failed setup step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agent_reload;
mod agents;
mod approvals;
mod approvals_cli;
mod approvals_evasions;
mod cli;
mod cli_budgets;
mod cli_errors;
mod conformance;
mod crash_loop;
mod delegation;
mod diff_cli;
mod doctor;
mod engine;
mod engine_approvals;
mod engine_budgets;
mod engine_delegation;
mod engine_handoff;
mod engine_panics;
mod engine_recover;
mod engine_steer;
mod engine_tools;
mod http_pool;
mod inner_layers;
mod interop;
mod key_endpoint;
mod limits;
mod mcp;
mod mcp_cli;
mod models_cli;
mod provider_errors;
mod provider_label;
mod provider_replay;
mod recover;
mod response_limits;
mod resume_endpoint;
mod retry;
mod routing;
mod sandbox;
mod store;
#[cfg(unix)]
mod terminal;
mod tools_cli;
mod transfer;
mod tui;
mod tui_handoff;
mod tui_mentions;
mod usage;
