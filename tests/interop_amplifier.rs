//! Sessions cross from Amplifier to arbor (issue 11 item 2): a store written the way
//! amplifier-app-cli writes it — a root with `bundle` and no `config`, a sub-session
//! whose id starts with sixteen zeros and whose metadata has no `depth` — is listed,
//! shown (right depth, the rebuild noted) and resumed by arbor, never "Corrupted".
//! The shapes follow `session_store.py`, `main.py` (root saves) and
//! `session_spawner.py` (child saves) of amplifier-app-cli f16375f.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::*;

const ROOT: &str = "4f6d2c1a-9b7e-4c3d-8a2f-1e0d9c8b7a65";
const CHILD: &str = "0000000000000000-7a1b2c3d4e5f6071_explorer";

fn write_session(env: &TestEnv, id: &str, metadata: &Value, transcript: &[Value]) {
    let dir = env.sessions_dir().join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("metadata.json"),
        serde_json::to_string_pretty(metadata).unwrap(),
    )
    .unwrap();
    let lines: Vec<String> = transcript.iter().map(Value::to_string).collect();
    std::fs::write(dir.join("transcript.jsonl"), lines.join("\n") + "\n").unwrap();
}

/// An Amplifier root (`bundle:foundation`, no `config`, no `depth`, no `status`) and
/// its child (a `config` whose `agents` is Amplifier's map).
fn amplifier_tree(env: &TestEnv, bundle: &str) {
    let working_dir = env.project.display().to_string();
    write_session(
        env,
        ROOT,
        &json!({
            "session_id": ROOT,
            "created": "2025-11-20T10:00:00.000000+00:00",
            "bundle": bundle,
            "model": "claude-sonnet-4-5",
            "turn_count": 1,
            "working_dir": working_dir,
        }),
        &[
            json!({"role": "user", "content": "Map the crate"}),
            json!({"role": "assistant", "content": "Delegated to explorer."}),
        ],
    );
    write_session(
        env,
        CHILD,
        &json!({
            "session_id": CHILD,
            "parent_id": ROOT,
            "trace_id": ROOT,
            "agent_name": "explorer",
            "child_span": "7a1b2c3d4e5f6071",
            "created": "2025-11-20T10:00:05.000000+00:00",
            "config": {
                "session": {"orchestrator": {"module": "loop-streaming"}, "context": {"module": "context-simple"}},
                "providers": [{"module": "provider-openai", "config": {"api_key": "[REDACTED]", "default_model": "gpt-5"}}],
                "tools": [{"module": "tool-filesystem"}, {"module": "tool-search"}],
                "agents": {"foundation:explorer": {"name": "foundation:explorer", "description": "Explores"}},
                "instruction": "You explore code bases."
            },
            "agent_overlay": {"instruction": "You explore code bases."},
            "turn_count": 1,
            "bundle_context": {"module_paths": {}, "mention_mappings": {}},
            "self_delegation_depth": 0,
            "working_dir": working_dir,
        }),
        &[
            json!({"role": "user", "content": "Map the crate"}),
            json!({"role": "assistant", "content": "src/ holds lib.rs."}),
        ],
    );
}

fn stdout_json(out: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout {stdout}\nstderr {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

#[test]
fn an_amplifier_tree_lists_with_depth_from_the_parent_chain() {
    let env = TestEnv::new();
    amplifier_tree(&env, "bundle:foundation");
    let list = stdout_json(
        &env.cmd()
            .args(["session", "list", "--json"])
            .output()
            .unwrap(),
    );
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    let by_id = |id: &str| list.iter().find(|s| s["session_id"] == id).unwrap().clone();
    assert_eq!(by_id(ROOT)["depth"], 0);
    assert_eq!(by_id(CHILD)["depth"], 1);
    assert_eq!(by_id(ROOT)["children"], json!([CHILD]));
    let show = stdout_json(
        &env.cmd()
            .args(["session", "show", CHILD, "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(show["depth"], 1);
}

#[test]
fn show_notes_how_a_root_without_config_will_be_rebuilt() {
    let env = TestEnv::new();
    amplifier_tree(&env, "bundle:foundation");
    let out = env.cmd().args(["session", "show", ROOT]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("bundle    bundle:foundation"), "{stdout}");
    assert!(
        stdout.contains(
            "note      bundle 'bundle:foundation' is not on this machine; rebuilt from arbor's active bundle 'arbor'"
        ),
        "{stdout}"
    );
}

#[test]
fn an_amplifier_root_resumes_from_the_active_bundle_with_a_note() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("Resumed."))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-interop");
    amplifier_tree(&env, "bundle:foundation");
    let out = env
        .cmd()
        .args([
            "session",
            "resume",
            ROOT,
            "Again",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let result = stdout_json(&out);
    assert_eq!(result["response"], "Resumed.");
    assert!(
        stderr.contains("is not on this machine; rebuilt from arbor's active bundle 'arbor'"),
        "{stderr}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].to_string();
    assert!(
        body.contains("You are arbor"),
        "the active bundle's instruction"
    );
    assert!(
        body.contains("Map the crate"),
        "the stored transcript is sent"
    );
    let events = read_jsonl(&env.sessions_dir().join(ROOT).join("events.jsonl"));
    let rebuilt = events
        .iter()
        .find(|e| e["event"] == "session:rebuilt")
        .expect("the rebuild is logged");
    assert_eq!(rebuilt["data"]["bundle"], "bundle:foundation");
    let meta = env.metadata(ROOT);
    assert!(meta["config"].is_object(), "the rebuilt plan is stored");
    assert_eq!(meta["bundle"], "bundle:foundation", "the reference is kept");
}

#[test]
fn an_amplifier_root_resumes_from_its_bundle_when_it_is_registered_locally() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("Local."))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-interop");
    let bundle = env.amplifier_home.join("bundles").join("team");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::write(
        bundle.join("bundle.md"),
        "---\nbundle:\n  name: team\ntools:\n  - module: tool-filesystem\n---\nYou are the team assistant.\n",
    )
    .unwrap();
    amplifier_tree(&env, "team");
    let out = env
        .cmd()
        .args([
            "session",
            "resume",
            ROOT,
            "Again",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(stdout_json(&out)["response"], "Local.");
    assert!(
        !stderr.contains("rebuilt from arbor's active bundle"),
        "{stderr}"
    );
    let body = server.requests()[0].to_string();
    assert!(body.contains("You are the team assistant."), "{body}");
    assert!(!body.contains("You are arbor"));
}

#[test]
fn an_amplifier_child_resumes_from_its_stored_config() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("Child again."))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-interop");
    amplifier_tree(&env, "bundle:foundation");
    let out = env
        .cmd()
        .args([
            "session",
            "resume",
            CHILD,
            "More",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(stdout_json(&out)["response"], "Child again.");
    let body = server.requests()[0].to_string();
    assert!(body.contains("You explore code bases."), "{body}");
    assert_eq!(env.metadata(CHILD)["depth"], 1);
}
