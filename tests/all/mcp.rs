//! MCP servers against real rmcp servers: the stdio test server
//! (`examples/mcp_test_server.rs`) and an in-process streamable-HTTP server, through
//! `tool::mcp::McpHub` — tools with arguments, a tool error, media placeholders, a slow
//! call a cancel stops (the server is told), a crash restarted by the next call, a
//! missing command and a silent server reported by name while the rest still work,
//! `${VAR}` headers, and one process per server however many sessions mount it.

use crate::support::mcp as mcp_support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arbor::config::mcp::{McpOrigin, McpServer, parse_servers};
use arbor::tool::mcp::{McpHub, ServerState};
use arbor::tool::{Tool, ToolContext, ToolOutput};
use mcp_support::{HttpMcpServer, mcp_test_server};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn servers(value: Value) -> Vec<McpServer> {
    let (servers, problems) = parse_servers(&value, &McpOrigin::Config);
    assert!(problems.is_empty(), "{problems:?}");
    servers
}

fn calc(dir: &Path) -> Value {
    json!({"command": mcp_test_server(), "env": {"MCP_TEST_DIR": dir}})
}

fn hub() -> McpHub {
    McpHub::new(Arc::new(|var: &str| match var {
        "TEST_MCP_TOKEN" => Some("tok-7f3a9c1e5b".to_string()),
        _ => None,
    }))
}

fn ctx(dir: &Path, cancel: CancellationToken) -> ToolContext {
    ToolContext {
        session_id: "s".into(),
        parent_id: None,
        depth: 0,
        tool_call_id: "c".into(),
        working_dir: dir.to_path_buf(),
        cancel,
        sub_session_id: None,
        session_dir: None,
        task: None,
        network_once: false,
    }
}

fn tool(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.spec().name == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} among {:?}", names(tools)))
}

fn names(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    tools.iter().map(|t| t.spec().name).collect()
}

async fn call(tools: &[Arc<dyn Tool>], name: &str, input: Value, dir: &Path) -> ToolOutput {
    tool(tools, name)
        .call(input, ctx(dir, CancellationToken::new()))
        .await
}

/// Waits (bounded) until `path` exists: the server writes it when something happened.
async fn wait_for(path: &Path) {
    for _ in 0..200 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never appeared", path.display());
}

#[tokio::test]
async fn stdio_tools_results_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub();
    let mounted = hub.mount(&servers(json!({"calc": calc(dir.path())}))).await;
    assert!(mounted.failures.is_empty(), "{:?}", mounted.failures);
    let tools = mounted.tools;
    let mut listed = names(&tools);
    listed.sort();
    assert_eq!(
        listed,
        [
            "mcp__calc__add",
            "mcp__calc__big",
            "mcp__calc__connect",
            "mcp__calc__crash",
            "mcp__calc__env",
            "mcp__calc__fail",
            "mcp__calc__picture",
            "mcp__calc__read",
            "mcp__calc__slow",
            "mcp__calc__write"
        ]
    );
    let add = tool(&tools, "mcp__calc__add").spec();
    assert_eq!(add.input_schema["type"], "object");
    assert!(add.input_schema["properties"]["a"].is_object(), "{add:?}");
    assert!(add.description.contains("Adds two integers"), "{add:?}");
    assert_eq!(tool(&tools, "mcp__calc__add").module(), "tool-mcp");

    let sum = call(
        &tools,
        "mcp__calc__add",
        json!({"a": 2, "b": 3}),
        dir.path(),
    )
    .await;
    assert_eq!(sum, ToolOutput::ok("5"));
    let failed = call(
        &tools,
        "mcp__calc__fail",
        json!({"message": "no such table"}),
        dir.path(),
    )
    .await;
    assert!(failed.is_error);
    assert_eq!(failed.content, "no such table");
    let bad_args = call(&tools, "mcp__calc__add", json!({"a": "x"}), dir.path()).await;
    assert!(bad_args.is_error, "{bad_args:?}");
    let picture = call(&tools, "mcp__calc__picture", json!({}), dir.path()).await;
    // A real PNG: an image for the model (shown as 📎 image, never its base64).
    assert!(
        arbor::session::image::has_images(&picture.content),
        "{}",
        picture.content
    );
    assert_eq!(
        arbor::session::image::shown(&picture.content),
        "📎 image (image/png, 1 KB)"
    );
    assert!(matches!(
        hub.servers()[0].state(),
        ServerState::Running { ref tools } if tools.len() == 10
    ));
    hub.shutdown().await;
    assert_eq!(hub.servers()[0].state(), ServerState::NotStarted);
}

#[tokio::test]
async fn a_cancel_stops_a_slow_call_and_tells_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub();
    let mounted = hub.mount(&servers(json!({"calc": calc(dir.path())}))).await;
    let slow = tool(&mounted.tools, "mcp__calc__slow");
    let cancel = CancellationToken::new();
    let call = tokio::spawn(slow.call(json!({"seconds": 600}), ctx(dir.path(), cancel.clone())));
    // The server runs the call: cancel it.
    wait_for(&dir.path().join("started-slow")).await;
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the cancel stops the call")
        .unwrap();
    assert!(out.is_error);
    assert!(out.content.starts_with("Cancelled"), "{}", out.content);
    wait_for(&dir.path().join("cancelled-slow")).await;
    // The server still answers.
    let sum = self::call(
        &mounted.tools,
        "mcp__calc__add",
        json!({"a": 1, "b": 1}),
        dir.path(),
    )
    .await;
    assert_eq!(sum.content, "2");
}

#[tokio::test]
async fn a_crashed_server_restarts_on_the_next_call_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub();
    let mounted = hub.mount(&servers(json!({"calc": calc(dir.path())}))).await;
    let crashed = call(&mounted.tools, "mcp__calc__crash", json!({}), dir.path()).await;
    assert!(crashed.is_error, "{crashed:?}");
    assert!(
        crashed.content.contains("MCP server 'calc'"),
        "{}",
        crashed.content
    );
    let sum = call(
        &mounted.tools,
        "mcp__calc__add",
        json!({"a": 4, "b": 5}),
        dir.path(),
    )
    .await;
    assert!(!sum.is_error, "{sum:?}");
    assert_eq!(
        sum.content,
        "(MCP server 'calc' had exited and was restarted for this call.)\n9"
    );
    let again = call(
        &mounted.tools,
        "mcp__calc__add",
        json!({"a": 1, "b": 2}),
        dir.path(),
    )
    .await;
    assert_eq!(again.content, "3");
    let starts = std::fs::read_to_string(dir.path().join("starts")).unwrap();
    assert_eq!(starts.lines().count(), 2, "{starts}");
}

#[tokio::test]
async fn one_process_per_server_however_many_mounts() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub();
    let specs = servers(json!({"calc": calc(dir.path())}));
    let (a, b) = tokio::join!(hub.mount(&specs), hub.mount(&specs));
    let c = hub.mount(&specs).await;
    for m in [&a, &b, &c] {
        assert_eq!(m.tools.len(), 10);
    }
    call(
        &a.tools,
        "mcp__calc__add",
        json!({"a": 1, "b": 1}),
        dir.path(),
    )
    .await;
    call(
        &c.tools,
        "mcp__calc__add",
        json!({"a": 1, "b": 1}),
        dir.path(),
    )
    .await;
    let starts = std::fs::read_to_string(dir.path().join("starts")).unwrap();
    assert_eq!(starts.lines().count(), 1, "{starts}");
    // A different server under a taken name is refused, by name.
    let other = servers(json!({"calc": {"command": "other-calc"}}));
    let refused = hub.mount(&other).await;
    assert!(refused.tools.is_empty());
    assert_eq!(refused.failures[0].0, "calc");
    assert!(
        refused.failures[0].1.to_string().contains("already used"),
        "{:?}",
        refused.failures
    );
}

#[tokio::test]
async fn a_missing_command_is_named_and_the_rest_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub();
    let mounted = hub
        .mount(&servers(json!({
            "ghost": {"command": "/nonexistent/mcp-ghost"},
            "needs": {"command": "x", "env": {"K": "${UNSET_MCP_VAR}"}},
            "calc": calc(dir.path()),
        })))
        .await;
    let mut failed: Vec<&str> = mounted.failures.iter().map(|(n, _)| n.as_str()).collect();
    failed.sort();
    assert_eq!(failed, ["ghost", "needs"]);
    let reason = |n: &str| {
        mounted
            .failures
            .iter()
            .find(|f| f.0 == n)
            .unwrap()
            .1
            .to_string()
    };
    assert!(
        reason("ghost").contains("cannot start '/nonexistent/mcp-ghost'"),
        "{}",
        reason("ghost")
    );
    assert_eq!(
        reason("needs"),
        "${UNSET_MCP_VAR} is not set in the environment"
    );
    assert_eq!(mounted.tools.len(), 10);
    // A call to a server that failed says why, and does not retry the start.
    let ghost = hub
        .servers()
        .into_iter()
        .find(|s| s.spec.name == "ghost")
        .unwrap();
    assert!(matches!(ghost.state(), ServerState::Failed { .. }));
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_initialize_times_out_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub();
    let mounted = hub
        .mount(&servers(json!({
            "mute": {"command": mcp_test_server(), "args": ["--hang"], "timeout": 3,
                     "env": {"MCP_TEST_DIR": dir.path()}},
        })))
        .await;
    assert!(mounted.tools.is_empty());
    let failures: Vec<(String, String)> = mounted
        .failures
        .iter()
        .map(|(name, e)| (name.clone(), e.to_string()))
        .collect();
    assert_eq!(
        failures,
        [(
            "mute".to_string(),
            "no answer to initialize within 3s".to_string()
        )]
    );
}

#[tokio::test]
async fn streamable_http_server_with_expanded_headers() {
    let server = HttpMcpServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let hub = hub();
    let mounted = hub
        .mount(&servers(json!({
            "remote": {"url": server.url, "headers": {"Authorization": "Bearer ${TEST_MCP_TOKEN}"}},
        })))
        .await;
    assert!(mounted.failures.is_empty(), "{:?}", mounted.failures);
    let sum = call(
        &mounted.tools,
        "mcp__remote__add",
        json!({"a": 20, "b": 22}),
        dir.path(),
    )
    .await;
    assert_eq!(sum, ToolOutput::ok("42"));
    let failed = call(
        &mounted.tools,
        "mcp__remote__fail",
        json!({"message": "nope"}),
        dir.path(),
    )
    .await;
    assert!(failed.is_error);
    let seen = server.authorizations.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|h| h == "Bearer tok-7f3a9c1e5b"),
        "{seen:?}"
    );
    // The expanded token is a registered secret: scrubbed from any text.
    assert_eq!(
        arbor::session::redact::scrub("token tok-7f3a9c1e5b").as_ref(),
        "token [REDACTED]"
    );
    hub.shutdown().await;
}
