//! Sessions cross from arbor to Amplifier (issue 11 item 1): what arbor stores is in
//! the forms amplifier-app-cli f16375f reads — a root's `bundle` is a `file://` URI
//! its `load_and_prepare_bundle` loads directly (the built-in bundle is published
//! under arbor's state directory), and a stored plan's `agents` is Amplifier's map of
//! agent configs (`session_spawner.py` and foundation's `delegate` iterate
//! `config["agents"].items()`), with arbor's own access form kept beside it.
//! `tests/interop/run.sh` feeds such a store to the real Python code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::*;

fn run_json(env: &TestEnv, args: &[&str]) -> Value {
    let out = env.cmd().args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "stdout {stdout}\nstderr {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

#[test]
fn a_delegating_root_and_its_child_are_stored_in_amplifier_forms() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "call_1",
            "task",
            json!({"agent": "explorer", "instruction": "Map the crate"}),
        )])),
        Reply::Sse(sse_text("src/ holds lib.rs.")),
        Reply::Sse(sse_text("Done.")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-interop");
    let result = run_json(&env, &["run", "--output-format", "json", "Map it"]);
    assert_eq!(result["response"], "Done.");
    let root_id = result["session_id"].as_str().unwrap();
    let root = env.metadata(root_id);

    // The bundle: a file:// URI of the published built-in bundle, whole on disk.
    let uri = root["bundle"].as_str().unwrap();
    let dir = std::path::PathBuf::from(uri.strip_prefix("file://").expect(uri));
    assert!(
        dir.starts_with(&env.home),
        "under the state dir in HOME: {uri}"
    );
    let published = std::fs::read_to_string(dir.join("bundle.md")).unwrap();
    assert_eq!(published, include_str!("../agents/bundle.md"));
    assert_eq!(
        std::fs::read_to_string(dir.join("agents").join("explorer.md")).unwrap(),
        include_str!("../agents/explorer.md")
    );

    // The root's `agents: all` is stored as Amplifier's map of every agent.
    let agents = root["config"]["agents"].as_object().expect("a map");
    let mut names: Vec<&str> = agents.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "explorer",
            "implementer",
            "researcher",
            "reviewer",
            "zen-architect"
        ]
    );
    let explorer = &agents["explorer"];
    assert_eq!(explorer["name"], "explorer");
    let description = explorer["description"].as_str().unwrap();
    assert!(
        description.contains('\n'),
        "the whole description: {description}"
    );
    assert!(description.contains("what touches"), "{description}");
    assert!(explorer["instruction"].as_str().unwrap().len() > 100);
    assert!(
        root["config"].get("arbor_agents").is_none(),
        "`all` needs no note"
    );

    // Tool events carry the keys Amplifier's hooks read (`tool_input`,
    // `tool_response.output`).
    let events = read_jsonl(&env.sessions_dir().join(root_id).join("events.jsonl"));
    let pre = events.iter().find(|e| e["event"] == "tool:pre").unwrap();
    assert_eq!(pre["data"]["tool_input"]["agent"], "explorer");
    let post = events.iter().find(|e| e["event"] == "tool:post").unwrap();
    assert_eq!(post["data"]["tool_response"]["success"], true);
    assert!(
        post["data"]["tool_response"]["output"]
            .as_str()
            .unwrap()
            .contains("src/ holds lib.rs."),
        "{post}"
    );

    // The child's `agents: none` is Amplifier's empty map, arbor's form beside it.
    let child_dir = env.session_dirs("_explorer");
    assert_eq!(child_dir.len(), 1);
    let child_id = child_dir[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let child = env.metadata(&child_id);
    assert_eq!(child["config"]["agents"], json!({}));
    assert_eq!(child["config"]["arbor_agents"], "none");
    assert_eq!(child["parent_id"], root_id);
}

#[test]
fn a_resumed_child_keeps_its_access_form() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "call_1",
            "task",
            json!({"agent": "explorer", "instruction": "Map the crate"}),
        )])),
        Reply::Sse(sse_text("Mapped.")),
        Reply::Sse(sse_text("Done.")),
        Reply::Sse(sse_text("Again.")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-interop");
    run_json(&env, &["run", "--output-format", "json", "Map it"]);
    let child_dir = env.session_dirs("_explorer");
    let child_id = child_dir[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let resumed = run_json(
        &env,
        &[
            "session",
            "resume",
            &child_id,
            "More",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(resumed["response"], "Again.");
    let requests = server.requests();
    let task_tool = |body: &Value| {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["function"]["name"] == "task")
            .map(|t| t["function"]["description"].to_string())
    };
    let first = task_tool(&requests[1]);
    assert!(
        first
            .as_deref()
            .is_none_or(|d| !d.contains("zen-architect")),
        "the spawned explorer may delegate to no agent: {first:?}"
    );
    assert_eq!(
        task_tool(&requests[3]),
        first,
        "`none` read back as none, not as every agent"
    );
    let child = env.metadata(&child_id);
    assert_eq!(child["config"]["agents"], json!({}));
    assert_eq!(child["config"]["arbor_agents"], "none");
}
