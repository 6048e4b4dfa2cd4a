//! Sessions cross between arbor and Amplifier (issue 11 items 1 and 2), in the forms
//! amplifier-app-cli f16375f (`session_store.py`, `main.py` root saves,
//! `session_spawner.py` child saves and resume) and foundation d0d96f7 read and write.
//!
//! Amplifier → arbor: a root with `bundle` and no `config`, a sub-session whose id
//! starts with sixteen zeros and whose metadata has no `depth`, are listed, shown
//! (right depth, the rebuild noted) and resumed by arbor, never "Corrupted".
//!
//! arbor → Amplifier: a root's `bundle` is a `file://` URI Amplifier's
//! `load_and_prepare_bundle` loads directly (the built-in bundle is published under
//! arbor's state directory); a stored plan's `agents` is Amplifier's map of agent
//! configs (the spawner and foundation's `delegate` iterate `config["agents"]
//! .items()`), with arbor's own access form kept beside it; tool events carry the keys
//! Amplifier's hooks read. `tests/interop/run.sh` feeds such stores to the real Python
//! code.

use crate::support;

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

/// `arbor session resume ID PROMPT --output-format json`: the output and its stderr.
fn resume(env: &TestEnv, id: &str, prompt: &str) -> (std::process::Output, String) {
    let out = env
        .cmd()
        .args(["session", "resume", id, prompt, "--output-format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out, stderr)
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
    let (out, stderr) = resume(&env, ROOT, "Again");
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
    assert_eq!(
        meta["name"], "Map the crate",
        "titled by its own first prompt, not by the one arbor sent"
    );
    assert!(
        meta["turn_started"].is_string(),
        "the resumed turn is timed"
    );
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
    let (out, stderr) = resume(&env, ROOT, "Again");
    assert_eq!(stdout_json(&out)["response"], "Local.");
    assert!(
        !stderr.contains("rebuilt from arbor's active bundle"),
        "{stderr}"
    );
    let body = server.requests()[0].to_string();
    assert!(body.contains("You are the team assistant."), "{body}");
    assert!(!body.contains("You are arbor"));
}

/// Issue 22: a resumed Amplifier root naming `bundle:foundation` never loads the
/// project's `.amplifier/bundles/foundation` (nor starts its MCP server) until the
/// project is trusted.
#[test]
fn a_resumed_root_never_loads_an_untrusted_projects_bundle_by_name() {
    let env = TestEnv::new();
    // Inside the project: the only place a sandboxed project MCP server may write.
    let marker = env.project.join("mcp-started");
    let bundle = env.project.join(".amplifier/bundles/foundation");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::write(
        bundle.join("bundle.md"),
        format!(
            "---\nbundle:\n  name: foundation\ntools:\n  - module: tool-mcp\n    config:\n      servers:\n        evil: {{command: /bin/sh, args: [\"-c\", \"touch {}\"]}}\n---\nYou are the project's foundation.\n",
            marker.display()
        ),
    )
    .unwrap();
    amplifier_tree(&env, "bundle:foundation");
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("Resumed."))]);
    env.use_openai(&server.base_url, "sk-test-interop");
    let (out, stderr) = resume(&env, ROOT, "Again");
    assert_eq!(stdout_json(&out)["response"], "Resumed.");
    assert!(stderr.contains("which is not trusted"), "{stderr}");
    let body = server.requests()[0].to_string();
    assert!(!body.contains("the project's foundation"), "{body}");
    assert!(
        body.contains("You are arbor"),
        "the active bundle stands in"
    );
    assert!(!marker.exists(), "the project's MCP server started");

    // Trusted, the same resume loads it (and starts its server).
    env.cmd().arg("trust").assert().success();
    // The first resume stored its rebuilt plan; drop it so the bundle is looked up again.
    let meta_path = env.sessions_dir().join(ROOT).join("metadata.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta.as_object_mut().unwrap().remove("config");
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let out = env
        .cmd()
        .args([
            "session",
            "resume",
            ROOT,
            "Trusted now",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = server.requests().last().unwrap().to_string();
    assert!(last.contains("You are the project's foundation."), "{last}");
    assert!(
        marker.exists(),
        "a trusted project's bundle starts its server"
    );
}

#[test]
fn an_amplifier_child_resumes_from_its_stored_config() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("Child again."))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-interop");
    amplifier_tree(&env, "bundle:foundation");
    let (out, _) = resume(&env, CHILD, "More");
    assert_eq!(stdout_json(&out)["response"], "Child again.");
    let body = server.requests()[0].to_string();
    assert!(body.contains("You explore code bases."), "{body}");
    assert_eq!(env.metadata(CHILD)["depth"], 1);
}

// ---- arbor → Amplifier ---------------------------------------------------------

fn run_json(env: &TestEnv, args: &[&str]) -> Value {
    stdout_json(&env.cmd().args(args).output().unwrap())
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
    assert_eq!(published, include_str!("../../agents/bundle.md"));
    assert_eq!(
        std::fs::read_to_string(dir.join("agents").join("explorer.md")).unwrap(),
        include_str!("../../agents/explorer.md")
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
    let (out, _) = resume(&env, &child_id, "More");
    assert_eq!(stdout_json(&out)["response"], "Again.");
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

// ---- real bundles ---------------------------------------------------------------

/// The real foundation bundle (amplifier-foundation d0d96f7), extracted into `env`'s
/// temp dir; `None` (skipped) outside CI when the fixture is absent.
fn foundation_bundle(env: &TestEnv) -> Option<std::path::PathBuf> {
    let tarball = support::shared::fixtures("amplifier-src/amplifier-foundation-d0d96f7.tar.gz")?;
    let out = env.dir.path().join("src");
    std::fs::create_dir_all(&out).unwrap();
    let status = std::process::Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "tar failed on {}", tarball.display());
    Some(out.join("amplifier-foundation"))
}

#[test]
fn foundations_bundle_mounts_delegate_with_whole_agent_descriptions() {
    let env = TestEnv::new();
    let Some(foundation) = foundation_bundle(&env) else {
        return;
    };
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("Hello."))]);
    env.use_openai(&server.base_url, "sk-test-interop");
    let bundle = foundation.join("bundle.md");
    let bundle = bundle.to_str().unwrap();
    let result = run_json(
        &env,
        &["--bundle", bundle, "run", "--output-format", "json", "Hi"],
    );
    assert_eq!(result["response"], "Hello.");
    let body = &server.requests()[0];
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(names.contains(&"delegate"), "{names:?}");
    assert!(
        !names.contains(&"task"),
        "foundation mounts delegate only: {names:?}"
    );
    let delegate = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "delegate")
        .unwrap();
    let description = delegate["function"]["description"].as_str().unwrap();
    assert!(
        description.starts_with("Spawn a specialized agent to handle tasks autonomously."),
        "{description}"
    );
    // The whole description, its line breaks included, as foundation's tool lists it.
    assert!(
        description.contains(
            "  - foundation:explorer: Deep local-context reconnaissance agent. IMPORTANT:"
        ),
        "{description}"
    );
    assert!(
        description.contains(
            "<commentary>The agent spans code, docs, and content to answer the request.</commentary>\n</example>\n  - foundation:file-ops:"
        ),
        "{description}"
    );
    assert!(
        description.contains("  - foundation:session-analyst: "),
        "an included behavior's agent"
    );
    let schema = &delegate["function"]["parameters"];
    assert_eq!(schema["required"], json!(["instruction"]));
    assert!(schema["properties"]["context_scope"].is_object());
}

#[test]
fn every_agent_file_of_the_real_sources_loads() {
    let env = TestEnv::new();
    let Some(foundation) = foundation_bundle(&env) else {
        return;
    };
    let bundle = foundation.join("bundle.md");
    let out = env
        .cmd()
        .args(["--bundle", bundle.to_str().unwrap(), "agent", "list"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let files = std::fs::read_dir(foundation.join("agents"))
        .unwrap()
        .count();
    let listed = stdout.lines().filter(|l| l.contains(" bundle ")).count();
    assert_eq!(listed, files, "{stdout}");
    assert!(!stdout.contains("invalid"), "{stdout}");
}

#[test]
fn a_foundation_agents_system_prompt_carries_its_mentioned_files() {
    let env = TestEnv::new();
    let Some(foundation) = foundation_bundle(&env) else {
        return;
    };
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "call_1",
            "delegate",
            json!({"agent": "foundation:explorer", "instruction": "Map it"}),
        )])),
        Reply::Sse(sse_text("Mapped.")),
        Reply::Sse(sse_text("Done.")),
    ]);
    env.use_openai(&server.base_url, "sk-test-interop");
    let bundle = foundation.join("bundle.md");
    let result = run_json(
        &env,
        &[
            "--bundle",
            bundle.to_str().unwrap(),
            "run",
            "--output-format",
            "json",
            "Hi",
        ],
    );
    assert_eq!(result["response"], "Done.");
    let requests = server.requests();
    let system = requests[1]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let language =
        std::fs::canonicalize(foundation.join("context/LANGUAGE_PHILOSOPHY.md")).unwrap();
    let head = format!(
        "<context_file paths=\"@foundation:context/LANGUAGE_PHILOSOPHY.md → {}\">\n{}\n</context_file>\n\n",
        language.display(),
        std::fs::read_to_string(&language).unwrap()
    );
    assert!(
        system.starts_with(&head),
        "{}",
        &system[..300.min(system.len())]
    );
    assert!(
        system.contains("common-agent-base.md → "),
        "the second mention is loaded too"
    );
    assert!(
        system.ends_with("@foundation:context/shared/common-agent-base.md"),
        "the mentions stay in the text"
    );
    assert!(system.len() > 30_000, "{} chars", system.len());
}

/// An Amplifier-written transcript (OpenAI-style `tool_calls` with string arguments,
/// block content, tool results, a system note) longer than the tail opened first:
/// the tail then the earlier part give what one read gives.
#[test]
fn an_amplifier_transcript_opens_tail_first() {
    let env = TestEnv::new();
    let mut transcript = vec![json!({"role": "system", "content": "context note"})];
    for i in 0..400 {
        let id = format!("call_{}", i % 3);
        transcript.push(
            json!({"role": "user", "content": [{"type": "text", "text": format!("step {i}")}]}),
        );
        transcript.push(json!({"role": "assistant", "content": [{"type": "text", "text": "Looking."}],
            "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "read_file", "arguments": "{\"file_path\":\"src/lib.rs\"}"}}]}));
        transcript.push(json!({"role": "tool", "tool_call_id": id, "name": "read_file", "content": format!("line {i} {}", "x".repeat(1000))}));
    }
    write_session(
        &env,
        ROOT,
        &json!({"session_id": ROOT, "created": "2025-11-20T10:00:00.000000+00:00",
            "bundle": "bundle:foundation", "working_dir": env.project.display().to_string()}),
        &transcript,
    );
    let store = arbor::session::SessionStore::new(env.sessions_dir());
    let whole = store.load(ROOT).unwrap();
    assert_eq!(whole.transcript.len(), 1201);
    let (tail, earlier) = store.load_tail(ROOT, 256).unwrap();
    assert!(tail.transcript.len() >= 256 && tail.transcript.len() < 1201);
    assert_eq!(tail.metadata, whole.metadata);
    let earlier = earlier.expect("the transcript is longer than its tail");
    let read = earlier.read().unwrap();
    let mut messages = read.messages;
    messages.extend(tail.transcript);
    assert_eq!(messages, whole.transcript);
    assert_eq!(read.warnings, whole.warnings);
}
