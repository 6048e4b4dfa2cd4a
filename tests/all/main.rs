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

mod acp;
mod acp_containment;
mod acp_sessions;
mod agent_reload;
mod agents;
mod approvals;
mod approvals_cli;
mod approvals_evasions;
mod cli;
mod cli_budgets;
mod cli_errors;
mod commands;
mod conformance;
mod context_window;
mod crash_loop;
mod delegation;
mod diff_cli;
mod doctor;
mod doctor_nats;
mod engine;
mod engine_approvals;
mod engine_budgets;
mod engine_context;
mod engine_delegation;
mod engine_handle;
mod engine_handoff;
mod engine_hosted;
mod engine_panics;
mod engine_queries;
mod engine_recover;
mod engine_steer;
mod engine_tools;
mod engine_undo;
mod escalation;
mod front_ends;
mod git_containment;
mod homecoming;
mod hooks;
mod hooks_events;
mod hooks_output;
mod hosted;
mod hosted_codex;
mod http_pool;
mod images;
mod inner_layers;
mod interop;
mod isolation;
mod key_endpoint;
mod limits;
mod locks;
mod mcp;
mod mcp_cli;
mod models_cli;
mod nats_cluster;
mod no_terminal;
mod plan_roundtrip;
mod project_files;
mod project_instructions;
mod provider_errors;
mod provider_label;
mod provider_replay;
mod reach;
mod recover;
mod remote;
mod remote_auth;
mod remote_faults;
mod remote_root;
mod remote_transport;
mod remote_tree;
mod response_limits;
mod resume_endpoint;
mod retry;
mod routing;
mod run_containment;
mod sandbox;
mod store;
#[cfg(unix)]
mod terminal;
mod todo;
mod tools_cli;
mod transfer;
mod trust_live;
mod tui;
mod tui_handoff;
mod tui_mentions;
mod tui_stream;
mod usage;
mod web;
mod web_hostile;
mod worker;

/// The modules share one process, so a test that changed process-wide state would
/// break others at random. `std::env::set_var` is `unsafe` (edition 2024) and unsafe
/// code is forbidden; this catches the safe ones: the current directory and the panic
/// hook. Give the binary its own `Command::current_dir`/`env`, a runtime its `Env`.
#[test]
fn no_test_changes_process_wide_state() {
    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all");
    let mut files = Vec::new();
    rust_files(&here, &mut files);
    assert!(
        files.len() > 47,
        "{} files under {}",
        files.len(),
        here.display()
    );
    // Spelled in pieces so this file does not match itself.
    let calls = [
        "set_current_dir",
        "set_hook",
        "take_hook",
        "set_var",
        "remove_var",
    ]
    .map(|name| format!("{name}("));
    let found: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            calls
                .iter()
                .filter(|call| text.contains(call.as_str()))
                .map(|call| format!("{}: {call}", file.display()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(found.is_empty(), "process-wide state changed in {found:?}");
}
