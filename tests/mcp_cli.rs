//! MCP servers through the real binary and a scripted loopback model (issue 13's
//! "done when"): a stdio server in `config.yaml` offers `mcp__calc__add` in the first
//! model request, the call runs with `--yes` and its answer goes back to the model, and
//! is denied without it (MCP tools ask); a server whose command does not exist is
//! named on stderr while the run goes on; `doctor` lists the tools (and fails naming
//! the broken server); a project's `.mcp.json` starts nothing until the project is
//! trusted, then works the same.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mcp.rs"]
mod mcp_support;
mod support;

use serde_json::{Value, json};
use support::*;

const KEY: &str = "sk-mcp-test-key-1234";

fn script() -> ScriptedServer {
    ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "m1",
            "mcp__calc__add",
            json!({"a": 2, "b": 3}),
        )])),
        Reply::Sse(sse_text("the sum is 5")),
    ])
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn tool_result(request: &Value, id: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .map(content_text)
        .unwrap_or_else(|| panic!("no result for {id}: {request}"))
}

fn calc_yaml(env: &TestEnv) -> String {
    format!(
        "    command: \"{}\"\n    env:\n      MCP_TEST_DIR: \"{}\"\n",
        mcp_support::mcp_test_server().display(),
        env.dir.path().display()
    )
}

fn run(env: &TestEnv, yes: bool) -> std::process::Output {
    let mut args = vec!["run", "--output-format", "json"];
    if yes {
        args.push("--yes");
    }
    args.push("add two and three");
    env.cmd().args(args).output().unwrap()
}

#[test]
fn config_server_tools_reach_the_model_and_ask_for_approval() {
    let server = script();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let mut config = std::fs::read_to_string(&env.config).unwrap();
    config += &format!(
        "mcp_servers:\n  ghost:\n    command: /nonexistent/mcp-ghost\n  calc:\n{}",
        calc_yaml(&env)
    );
    std::fs::write(&env.config, config).unwrap();

    let out = run(&env, true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr
            .contains("MCP server 'ghost' is not available: cannot start '/nonexistent/mcp-ghost'"),
        "{stderr}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let offered = tool_names(&requests[0]);
    assert!(
        offered.contains(&"mcp__calc__add".to_string()),
        "{offered:?}"
    );
    assert!(!offered.iter().any(|n| n.contains("ghost")), "{offered:?}");
    assert_eq!(tool_result(&requests[1], "m1"), "5");

    // Without --yes the call asks, and headless that is a denial.
    let server = script();
    env.use_openai(&server.base_url, KEY);
    let mut config = std::fs::read_to_string(&env.config).unwrap();
    config += &format!("mcp_servers:\n  calc:\n{}", calc_yaml(&env));
    std::fs::write(&env.config, config).unwrap();
    let out = run(&env, false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let denied = tool_result(&server.requests()[1], "m1");
    assert!(denied.contains("denied"), "{denied}");
    assert!(!denied.contains('5'), "{denied}");
}

#[test]
fn doctor_lists_each_servers_tools_and_names_the_broken_one() {
    let env = TestEnv::new();
    std::fs::write(
        &env.config,
        format!(
            "mcp_servers:\n  calc:\n{}  ghost:\n    command: /nonexistent/mcp-ghost\n    env: {{GHOST_TOKEN: \"secret-ghost-value-99\"}}\n",
            calc_yaml(&env)
        ),
    )
    .unwrap();
    let out = env.cmd().arg("doctor").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("mcp       2 server(s)"), "{stdout}");
    assert!(
        stdout.contains("    tools 7 (add, big, crash, env, fail, picture, slow)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  server  ghost (config.yaml): /nonexistent/mcp-ghost\n    failed cannot start"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("secret-ghost-value-99"), "{stdout}");
}

#[test]
fn a_projects_mcp_json_starts_only_once_trusted() {
    let env = TestEnv::new();
    let mcp_json = json!({"mcpServers": {"calc": {
        "type": "stdio",
        "command": mcp_support::mcp_test_server(),
        "args": [],
        "env": {"MCP_TEST_DIR": env.dir.path()},
    }}});
    std::fs::write(env.project.join(".mcp.json"), mcp_json.to_string()).unwrap();

    let server = script();
    env.use_openai(&server.base_url, KEY);
    let out = run(&env, true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let offered = tool_names(&server.requests()[0]);
    assert!(
        !offered.iter().any(|n| n.starts_with("mcp__")),
        "{offered:?}"
    );
    assert!(
        !env.dir.path().join("starts").exists(),
        "an untrusted project's server started"
    );
    let doctor = env.cmd().arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(text.contains(".mcp.json not trusted"), "{text}");

    env.cmd().arg("trust").assert().success();
    let server = script();
    env.use_openai(&server.base_url, KEY);
    let out = run(&env, true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    assert!(tool_names(&requests[0]).contains(&"mcp__calc__add".to_string()));
    assert_eq!(tool_result(&requests[1], "m1"), "5");
}

const AGENT: &str = "---\nmeta:\n  name: calculator\n  description: Adds numbers.\n\
tools:\n  - module: tool-mcp\n    config:\n      servers:\n        calc:\n          command: \"SERVER\"\n          env:\n            API_TOKEN: \"${MCP_SECRET_VALUE}\"\n---\nYou add.\n";

#[test]
fn an_agents_tool_mcp_servers_with_an_allow_rule_and_secrets_scrubbed() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[
            ("m1", "mcp__calc__add", json!({"a": 40, "b": 2})),
            ("m2", "mcp__calc__env", json!({"name": "API_TOKEN"})),
        ])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let mut config = std::fs::read_to_string(&env.config).unwrap();
    config += "approvals:\n  \"mcp__calc__*\": allow\n";
    std::fs::write(&env.config, config).unwrap();
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    let agent = AGENT.replace(
        "SERVER",
        &mcp_support::mcp_test_server().display().to_string(),
    );
    std::fs::write(agents.join("calculator.md"), agent).unwrap();

    let secret = "mcp-secret-5d1e0b7a93";
    let out = env
        .cmd()
        .env("MCP_SECRET_VALUE", secret)
        .args([
            "run",
            "--agent",
            "calculator",
            "--output-format",
            "json",
            "go",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // Allowed by the per-server rule: it ran without --yes.
    assert_eq!(tool_result(&requests[1], "m1"), "42");
    // The server got the expanded value; the model and the session files do not.
    assert_eq!(tool_result(&requests[1], "m2"), "[REDACTED]");
    assert!(!requests[1].to_string().contains(secret));
    assert!(files_containing(env.dir.path(), secret).is_empty());
}

/// Issue 22 "Resources": a tool answering 16.5 MB comes back capped like `bash` output
/// (head and tail kept, the cut stated) and a call with no answer within the server's
/// `call_timeout` gets an error result; the turn goes on and ends quickly.
#[test]
fn a_huge_mcp_result_is_capped_and_a_slow_call_times_out() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[
            ("b1", "mcp__calc__big", json!({"bytes": 16_500_000})),
            ("s1", "mcp__calc__slow", json!({"seconds": 60})),
        ])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let mut config = std::fs::read_to_string(&env.config).unwrap();
    config += &format!(
        "mcp_servers:\n  calc:\n{}    call_timeout: 2\n",
        calc_yaml(&env)
    );
    std::fs::write(&env.config, config).unwrap();

    let started = std::time::Instant::now();
    let out = run(&env, true);
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let big = tool_result(&requests[1], "b1");
    assert!(big.len() < 51 * 1024, "{} bytes came back", big.len());
    assert!(
        big.starts_with("STARTxxx") && big.ends_with("xxxEND"),
        "{big:.80}"
    );
    assert!(big.contains(" bytes cut …"), "no cut stated");
    let slow = tool_result(&requests[1], "s1");
    assert!(
        slow.contains("no result from 'slow' within 2s (its call_timeout)"),
        "{slow}"
    );
    assert!(env.dir.path().join("started-slow").exists());
}
