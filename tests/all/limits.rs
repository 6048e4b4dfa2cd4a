//! Runaway delegation ends by itself (issue 8 item 1), through the real binary: a
//! project agent asks for `max_recursion_depth: 1000` and `max_parallel: 50`, and a
//! scripted server answers every request with 50 parallel `task` calls. The agent gets
//! the bundle's limits instead (agent files only tighten them), the tree stops at the
//! config's `limits.max_sessions_per_tree`, and the refused calls' results name the
//! limit that held.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};
use support::*;

/// The agent asking for far more than the bundle allows (and few iterations, to keep
/// the test short: a tighter limit, which agent files may set).
const RUNAWAY_AGENT: &str = "---
meta:
  name: x
  description: Delegates everything, as wide and deep as it can.
tools:
  - module: tool-task
    config: {max_recursion_depth: 1000, max_parallel: 50}
session:
  orchestrator:
    config: {max_iterations: 2}
---
You delegate every task to x, fifty at a time.
";

/// Every request, from any session, gets 50 parallel `task` calls to `x`.
fn runaway_server() -> ScriptedServer {
    let calls: Vec<(String, Value)> = (0..50)
        .map(|n| {
            (
                format!("call_{n}"),
                json!({"agent": "x", "instruction": format!("part {n}")}),
            )
        })
        .collect();
    ScriptedServer::start(Arc::new(move |_| {
        let reply = Reply::Sse(sse_task_calls(&calls));
        async move { reply }.boxed()
    }))
}

/// A test environment whose project has the runaway agent and whose config points at
/// `server` with the extra config `limits` YAML.
fn runaway_env(server: &ScriptedServer, limits: &str) -> TestEnv {
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-limits");
    if !limits.is_empty() {
        env.append_config(limits);
    }
    let agents = env.project.join(".amplifier").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("x.md"), RUNAWAY_AGENT).unwrap();
    env
}

/// Runs `arbor run --agent x` to its end; returns the root session id.
fn run_runaway(env: &TestEnv) -> String {
    let out = env
        .cmd()
        .args([
            "run",
            "--agent",
            "x",
            "--output-format",
            "json",
            "Do it all",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {stdout}\nstderr {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    result["session_id"].as_str().unwrap().to_string()
}

/// Every session directory of the project.
fn session_dirs(env: &TestEnv) -> Vec<std::path::PathBuf> {
    env.session_dirs("")
}

/// The content of every tool result in a transcript.
fn tool_results(dir: &Path) -> Vec<String> {
    read_jsonl(&dir.join("transcript.jsonl"))
        .into_iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Checks what every runaway run must show: at most `limit` sessions (exactly that
/// many: far more were asked for), none deeper than the bundle's depth 2, the agent's
/// limits cut to the bundle's, and the root's refused calls naming the limit.
fn assert_bounded(env: &TestEnv, root: &str, limit: usize) {
    let dirs = session_dirs(env);
    assert_eq!(dirs.len(), limit, "sessions: {}", dirs.len());
    for dir in &dirs {
        let id = dir.file_name().unwrap().to_string_lossy().to_string();
        let meta = env.metadata(&id);
        assert!(
            meta["depth"].as_u64().unwrap() <= 2,
            "{id} at {}",
            meta["depth"]
        );
        let tools = meta["config"]["tools"].as_array().unwrap();
        let task = tools.iter().find(|t| t["module"] == "tool-task").unwrap();
        assert_eq!(
            task["config"],
            json!({"max_recursion_depth": 2, "max_parallel": 4}),
            "{id}"
        );
    }
    let refusals: Vec<String> = tool_results(&env.sessions_dir().join(root))
        .into_iter()
        .filter(|c| c.contains("max_sessions_per_tree"))
        .collect();
    assert!(!refusals.is_empty(), "no refusal in the root's transcript");
    assert!(
        refusals[0].contains("limit reached")
            && refusals[0].contains(&format!("max_sessions_per_tree is {limit}")),
        "{}",
        refusals[0]
    );
}

#[test]
fn a_runaway_project_agent_stops_at_the_configured_tree_limit() {
    let server = runaway_server();
    let env = runaway_env(&server, "limits:\n  max_sessions_per_tree: 12\n");
    let root = run_runaway(&env);
    assert_bounded(&env, &root, 12);
    // Sessions at depth 2 were offered no task tool, and their calls said why.
    let deepest = session_dirs(&env)
        .into_iter()
        .find(|d| env.metadata(&d.file_name().unwrap().to_string_lossy())["depth"] == 2)
        .expect("a session at depth 2");
    let results = tool_results(&deepest);
    assert!(
        results
            .iter()
            .all(|r| r.contains("depth limit reached") && r.contains("max_recursion_depth is 2")),
        "{results:?}"
    );
}

#[test]
fn a_runaway_project_agent_stops_at_100_sessions_by_default() {
    let server = runaway_server();
    let env = runaway_env(&server, "");
    let root = run_runaway(&env);
    assert_bounded(&env, &root, 100);
}

#[test]
fn sub_sessions_beyond_the_concurrency_limit_are_refused_by_name() {
    let server = runaway_server();
    let env = runaway_env(&server, "limits:\n  max_concurrent_sub_sessions: 1\n");
    let root = run_runaway(&env);
    let all: Vec<String> = session_dirs(&env)
        .iter()
        .flat_map(|d| tool_results(d))
        .collect();
    let refused = all
        .iter()
        .find(|r| r.contains("max_concurrent_sub_sessions is 1"))
        .unwrap_or_else(|| panic!("no concurrency refusal among {} results", all.len()));
    assert!(refused.contains("Concurrency limit reached"), "{refused}");
    assert!(
        tool_results(&env.sessions_dir().join(&root))
            .iter()
            .any(|r| r.contains("max_concurrent_sub_sessions")),
        "the root's own parallel calls were refused too"
    );
}
