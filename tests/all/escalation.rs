//! Codex's escalation (issue 39 item 3) through the real TUI and the real kernel
//! sandbox: a `bash` command the sandbox cut off from the network asks the person,
//! with a prompt of its own (yes once or no), whether to run it once more with
//! network; yes runs it again with network and the model reads that second result, no
//! keeps the first (with the sandbox's note). Headless (`--yes`), nobody is asked.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// A loopback listener (accepting in the background) and a command that connects to
/// it and prints `connected`.
fn listener_and_command() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\""
    );
    (listener, command)
}

/// A project whose model runs `command` with `bash`, then answers `done`.
fn project(command: &str) -> (TestEnv, ScriptedServer) {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": command}),
        )])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test");
    (env, server)
}

/// What the model read as call `b1`'s result.
fn result_b1(server: &ScriptedServer) -> String {
    server.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "b1")
        .map(content_text)
        .unwrap_or_default()
}

/// Runs the turn in the TUI, allows the call (`y`), then answers the escalation
/// prompt with `key`; returns what the model read.
#[cfg(unix)]
fn through_the_tui(key: &[u8]) -> String {
    let (_listener, command) = listener_and_command();
    let (env, server) = project(&command);
    let tui = env.tui();
    let wait = |text: &str| {
        assert!(
            tui.wait_text(text, Duration::from_secs(30)).is_some(),
            "{text}: {}",
            tui.screen()
        );
    };
    tui.send(b"connect\r");
    wait("allow once");
    // Answer keys are ignored for 400 ms after a prompt comes up (a typing guard).
    std::thread::sleep(Duration::from_millis(700));
    tui.send(b"y");
    wait("run it again with network, once");
    let screen = tui.screen();
    assert!(screen.contains("blocked the network"), "{screen}");
    assert!(!screen.contains("always:"), "yes or no only: {screen}");
    std::thread::sleep(Duration::from_millis(700));
    tui.send(key);
    wait("done");
    drop(tui);
    result_b1(&server)
}

#[cfg(unix)]
#[test]
fn yes_runs_the_command_once_more_with_network() {
    let result = through_the_tui(b"y");
    assert!(result.contains("allowed it to run once more"), "{result}");
    assert!(result.contains("connected"), "{result}");
}

#[cfg(unix)]
#[test]
fn no_keeps_the_sandboxed_result_and_its_note() {
    let result = through_the_tui(b"\x1b");
    assert!(!result.contains("allowed it to run once more"), "{result}");
    assert!(
        result.contains("arbor's sandbox blocked the network"),
        "{result}"
    );
    let body: Value = serde_json::from_str(&result).unwrap();
    assert_eq!(body["network_blocked"], true, "{result}");
}

#[test]
fn headless_never_asks_to_escalate() {
    let (_listener, command) = listener_and_command();
    let (env, server) = project(&command);
    let out = env
        .cmd()
        .args(["run", "--yes", "--output-format", "json", "connect"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = result_b1(&server);
    assert!(
        result.contains("arbor's sandbox blocked the network"),
        "{result}"
    );
    assert!(!result.contains("allowed it to run once more"), "{result}");
}
