//! `arbor acp` (issue 28) driven by the official ACP TypeScript SDK as the client
//! (`tests/acp/client.mjs`, `@agentclientprotocol/sdk` pinned by
//! `tests/acp/package-lock.json`, installed with `npm ci` under `target/tmp`, never in
//! the repository) against a scripted loopback model server: a delegating prompt
//! streams its answer, shows its `task` calls, announces both children as subagent
//! sessions whose updates carry their ids, and ends with `end_turn`; a write and a
//! bash call arrive as permission requests and run once allowed. Without the
//! client's `subagents` capability the children stay inside their `task` calls.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use serde_json::{Value, json};

use crate::support::*;

pub(crate) const KEY: &str = "sk-test-acp";

/// The SDK installed once per test process (npm ci when the pinned lock changed).
fn client_dir() -> PathBuf {
    static READY: Mutex<bool> = Mutex::new(false);
    let mut ready = READY.lock().unwrap_or_else(|p| p.into_inner());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("acp-client");
    if *ready {
        return dir;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::read(src.join("package-lock.json")).unwrap();
    let installed = std::fs::read(dir.join("package-lock.json")).ok();
    for file in ["package.json", "package-lock.json", "client.mjs"] {
        std::fs::copy(src.join(file), dir.join(file)).unwrap();
    }
    let sdk = dir.join("node_modules/@agentclientprotocol/sdk/package.json");
    if installed.as_deref() != Some(&lock[..]) || !sdk.exists() {
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .output()
            .expect("npm must be installed to run the ACP client (Node.js 20+)");
        assert!(
            out.status.success(),
            "npm ci failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    *ready = true;
    dir
}

/// The tool messages after the last user message of a chat request.
fn tools_since_user(body: &Value) -> usize {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "tool")
        .count()
}

pub(crate) fn responder() -> Responder {
    Arc::new(|body: Value| {
        async move {
            let user = last_user_text(&body);
            if user.contains("Design part C") {
                // A child that streams until it is cancelled.
                return Reply::Endless {
                    chunk: sse_piece("still designing "),
                    every: std::time::Duration::from_millis(50),
                };
            }
            if user.contains("Plan the long work") {
                if last_role(&body) == "tool" {
                    return Reply::Sse(sse_text("Part A is designed; part C was stopped."));
                }
                return Reply::Sse(sse_tool_calls(&[
                    (
                        "call_a",
                        "task",
                        json!({"agent": "zen-architect", "instruction": "Design part A"}),
                    ),
                    (
                        "call_c",
                        "task",
                        json!({"agent": "zen-architect", "instruction": "Design part C"}),
                    ),
                ]));
            }
            if user.contains("Design part") {
                let part = if user.contains("part A") { "A" } else { "B" };
                return Reply::Sse(sse_text(&format!("Child answer for part {part}.")));
            }
            if user.contains("Plan the work") {
                if last_role(&body) == "tool" {
                    return Reply::Sse(sse_text("Both parts are designed and agreed."));
                }
                return Reply::Sse(sse_tool_calls(&[
                    (
                        "call_a",
                        "task",
                        json!({"agent": "zen-architect", "instruction": "Design part A"}),
                    ),
                    (
                        "call_b",
                        "task",
                        json!({"agent": "zen-architect", "instruction": "Design part B"}),
                    ),
                ]));
            }
            match tools_since_user(&body) {
                0 => Reply::Sse(sse_tool_calls(&[(
                    "call_w",
                    "write_file",
                    json!({"file_path": "note.txt", "content": "acp was here\n"}),
                )])),
                1 => Reply::Sse(sse_tool_calls(&[(
                    "call_x",
                    "bash",
                    json!({"command": "cat note.txt"}),
                )])),
                _ => Reply::Sse(sse_text("Note written and shown.")),
            }
        }
        .boxed()
    })
}

/// Runs the SDK client against `arbor acp` in `env`'s project with `args` (prompts,
/// maybe `--no-subagents` first); returns its summary object.
pub(crate) fn drive(env: &TestEnv, args: &[&str]) -> Value {
    let out = drive_output(env, args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The client's run as [`drive`] starts it, whatever its exit.
pub(crate) fn drive_output(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let dir = client_dir();
    let arbor = env.std_cmd();
    let mut node = Command::new("node");
    for (key, value) in arbor.get_envs() {
        match value {
            Some(value) => node.env(key, value),
            None => node.env_remove(key),
        };
    }
    node.arg(dir.join("client.mjs"))
        .arg(arbor.get_program())
        .arg(&env.project)
        .args(args)
        .current_dir(&env.project);
    node.output()
        .expect("node must be installed to run the ACP client (Node.js 20+)")
}

pub(crate) fn updates<'a>(log: &'a [Value], session: &str, kind: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|e| e["kind"] == "update" && e["sessionId"] == session)
        .map(|e| &e["update"])
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

pub(crate) fn text_of(chunks: &[&Value]) -> String {
    chunks
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[test]
fn an_editor_sees_the_tree_as_subagent_sessions_and_answers_approvals() {
    let server = ScriptedServer::start(responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let summary = drive(&env, &["Plan the work", "Write the note and show it"]);

    assert_eq!(summary["initialize"]["protocolVersion"], 1);
    assert_eq!(
        summary["initialize"]["agentCapabilities"]["loadSession"],
        true
    );
    let root = summary["sessionId"].as_str().unwrap().to_string();
    let turns = summary["turns"].as_array().unwrap();
    assert_eq!(turns[0]["stopReason"], "end_turn", "{summary:#}");
    assert_eq!(turns[1]["stopReason"], "end_turn", "{summary:#}");
    let log = summary["log"].as_array().unwrap().clone();
    let first_turn_end = log.iter().position(|e| e["kind"] == "turn_end").unwrap();
    let turn1 = &log[..first_turn_end];

    // The answer streams in pieces on the root session.
    let chunks = updates(turn1, &root, "agent_message_chunk");
    assert!(chunks.len() > 1, "{turn1:#?}");
    assert_eq!(text_of(&chunks), "Both parts are designed and agreed.");

    // Both task calls show on the root, ending with the children's answers.
    let calls = updates(turn1, &root, "tool_call");
    let titles: Vec<&str> = calls.iter().filter_map(|c| c["title"].as_str()).collect();
    assert!(
        titles.contains(&"task zen-architect: Design part A"),
        "{titles:?}"
    );
    assert!(
        titles.contains(&"task zen-architect: Design part B"),
        "{titles:?}"
    );

    // Both children are announced on the root before any of their own updates, and
    // their updates carry their own session ids.
    let announced = updates(turn1, &root, "subagent_update");
    let mut children: Vec<String> = announced
        .iter()
        .filter_map(|u| u["sessionId"].as_str().map(String::from))
        .collect();
    children.sort();
    children.dedup();
    assert_eq!(children.len(), 2, "{announced:#?}");
    for child in &children {
        assert_ne!(child, &root);
        let first_announce = turn1
            .iter()
            .position(|e| {
                e["update"]["sessionUpdate"] == "subagent_update"
                    && e["update"]["sessionId"] == child.as_str()
            })
            .unwrap();
        let first_own = turn1
            .iter()
            .position(|e| e["sessionId"] == child.as_str())
            .unwrap_or_else(|| panic!("no update of {child}: {turn1:#?}"));
        assert!(first_announce < first_own, "{child}: {turn1:#?}");
        let text = text_of(&updates(turn1, child, "agent_message_chunk"));
        assert!(text.starts_with("Child answer for part "), "{text}");
        let titles: Vec<&str> = announced
            .iter()
            .filter(|u| u["sessionId"] == child.as_str())
            .filter_map(|u| u["title"].as_str())
            .collect();
        assert!(
            titles
                .iter()
                .any(|t| t.starts_with("zen-architect: Design part ")),
            "{titles:?}"
        );
        assert!(
            announced.iter().any(|u| u["sessionId"] == child.as_str()
                && u["state"]["state"] == "idle"
                && u["state"]["stopReason"] == "end_turn"),
            "{announced:#?}"
        );
    }

    // The second prompt: a write and a bash call, each asked, each run once allowed.
    let turn2 = &log[first_turn_end..];
    let asked: Vec<&Value> = turn2
        .iter()
        .filter(|e| e["kind"] == "permission")
        .map(|e| &e["request"])
        .collect();
    assert_eq!(asked.len(), 2, "{turn2:#?}");
    assert_eq!(asked[0]["sessionId"], root.as_str());
    assert_eq!(asked[0]["toolCall"]["kind"], "edit");
    assert_eq!(asked[0]["toolCall"]["content"][0]["type"], "diff");
    assert_eq!(
        asked[0]["toolCall"]["content"][0]["newText"],
        "acp was here\n"
    );
    assert_eq!(asked[1]["toolCall"]["kind"], "execute");
    let options: Vec<&str> = asked[1]["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["optionId"].as_str())
        .collect();
    assert_eq!(options, ["allow-once", "allow-always", "reject"]);
    assert_eq!(
        std::fs::read_to_string(env.project.join("note.txt")).unwrap(),
        "acp was here\n"
    );
    let done = updates(turn2, &root, "tool_call_update");
    let bash = done
        .iter()
        .find(|u| u["toolCallId"] == "call_x" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{done:#?}"));
    assert!(
        bash["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("acp was here"),
        "{bash:#}"
    );
    // The write's end keeps its diff (no content replacing it).
    let write_done = done
        .iter()
        .find(|u| u["toolCallId"] == "call_w" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{done:#?}"));
    assert!(write_done.get("content").is_none(), "{write_done:#}");
    let edit = updates(turn2, &root, "tool_call")
        .into_iter()
        .find(|c| c["toolCallId"] == "call_w")
        .unwrap();
    assert_eq!(
        edit["locations"][0]["path"],
        env.project.join("note.txt").display().to_string()
    );
}

#[test]
fn without_the_subagents_capability_children_stay_inside_their_task_calls() {
    let server = ScriptedServer::start(responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let summary = drive(&env, &["--no-subagents", "Plan the work"]);
    let root = summary["sessionId"].as_str().unwrap();
    assert_eq!(summary["turns"][0]["stopReason"], "end_turn");
    let log = summary["log"].as_array().unwrap();
    assert!(
        log.iter()
            .filter(|e| e["kind"] == "update")
            .all(|e| e["sessionId"] == root && e["update"]["sessionUpdate"] != "subagent_update"),
        "{log:#?}"
    );
    let finished = updates(log, root, "tool_call_update");
    let task_a = finished
        .iter()
        .find(|u| u["toolCallId"] == "call_a" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{finished:#?}"));
    assert!(
        task_a["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Child answer for part A"),
        "{task_a:#}"
    );
}

#[test]
fn a_stored_session_loads_as_replayed_updates_and_takes_the_next_prompt() {
    let server = ScriptedServer::start(responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let first = drive(&env, &["Plan the work"]);
    assert_eq!(first["turns"][0]["stopReason"], "end_turn");
    // The ACP session is an ordinary stored arbor session: its root in the store.
    let roots: Vec<String> = std::fs::read_dir(env.sessions_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| !name.contains('_'))
        .collect();
    assert_eq!(roots.len(), 1, "{roots:?}");
    let root = &roots[0];

    let load = format!("--load={root}");
    let summary = drive(&env, &[&load, "Write the note and show it"]);
    let log = summary["log"].as_array().unwrap();
    let loaded = log.iter().position(|e| e["kind"] == "loaded").unwrap();
    let replay = &log[..loaded];
    let said = text_of(&updates(replay, root, "user_message_chunk"));
    assert!(said.contains("Plan the work"), "{replay:#?}");
    let answer = text_of(&updates(replay, root, "agent_message_chunk"));
    assert_eq!(answer, "Both parts are designed and agreed.");
    let calls = updates(replay, root, "tool_call");
    assert_eq!(calls.len(), 2, "{replay:#?}");
    let ended = updates(replay, root, "tool_call_update");
    assert!(
        ended.iter().all(|u| u["status"] == "completed"),
        "{ended:#?}"
    );
    // The loaded session runs the next prompt (approvals asked on it).
    assert_eq!(summary["turns"][0]["stopReason"], "end_turn");
    assert!(
        log[loaded..]
            .iter()
            .any(|e| e["kind"] == "permission" && e["request"]["sessionId"] == root.as_str()),
        "{log:#?}"
    );
    assert!(env.project.join("note.txt").exists());
}

/// One OpenAI stream chunk carrying `text` (for an endless answer).
fn sse_piece(text: &str) -> String {
    let c = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "scripted-model",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}],
    });
    format!("data: {c}\n\n")
}

#[test]
fn cancelling_a_subagent_session_stops_that_child_only() {
    let server = ScriptedServer::start(responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let summary = drive(&env, &["--cancel=part C", "Plan the long work"]);
    let root = summary["sessionId"].as_str().unwrap();
    let log = summary["log"].as_array().unwrap();
    let cancelled = log
        .iter()
        .find(|e| e["kind"] == "cancel")
        .unwrap_or_else(|| panic!("{log:#?}"))["sessionId"]
        .as_str()
        .unwrap();
    assert_ne!(cancelled, root);
    // The child stopped as cancelled; its sibling and the root finished.
    let states: Vec<&Value> = updates(log, root, "subagent_update")
        .into_iter()
        .filter(|u| u["state"]["state"] == "idle")
        .collect();
    assert!(
        states
            .iter()
            .any(|u| u["sessionId"] == cancelled && u["state"]["stopReason"] == "cancelled"),
        "{states:#?}"
    );
    assert!(
        states
            .iter()
            .any(|u| u["sessionId"] != cancelled && u["state"]["stopReason"] == "end_turn"),
        "{states:#?}"
    );
    assert_eq!(summary["turns"][0]["stopReason"], "end_turn");
    assert_eq!(
        text_of(&updates(log, root, "agent_message_chunk")),
        "Part A is designed; part C was stopped."
    );
}

#[test]
fn a_call_config_denies_is_never_asked_in_the_editor() {
    let server = ScriptedServer::start(responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let config = std::fs::read_to_string(&env.config).unwrap();
    std::fs::write(&env.config, format!("{config}approvals:\n  bash: deny\n")).unwrap();
    let summary = drive(&env, &["Write the note and show it"]);
    let log = summary["log"].as_array().unwrap();
    let root = summary["sessionId"].as_str().unwrap();
    let asked: Vec<&Value> = log.iter().filter(|e| e["kind"] == "permission").collect();
    // The write is asked; the bash call is denied by config without asking.
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["request"]["toolCall"]["toolCallId"], "call_w");
    let failed = updates(log, root, "tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == "call_x")
        .unwrap_or_else(|| panic!("{log:#?}"));
    assert_eq!(failed["status"], "failed", "{failed:#}");
    assert_eq!(summary["turns"][0]["stopReason"], "end_turn");
}

#[test]
fn the_editors_mcp_servers_are_mounted_like_config_ones() {
    let calc = crate::support::mcp::mcp_test_server();
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "m1",
            "mcp__calc__add",
            json!({"a": 2, "b": 3}),
        )])),
        Reply::Sse(sse_text("the sum is 5")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let mcp = format!("--mcp-stdio=calc={}", calc.display());
    let summary = drive(&env, &[&mcp, "Add 2 and 3"]);
    let root = summary["sessionId"].as_str().unwrap();
    let log = summary["log"].as_array().unwrap();
    assert_eq!(summary["turns"][0]["stopReason"], "end_turn", "{log:#?}");
    let offered: Vec<String> = server.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(String::from))
        .collect();
    assert!(
        offered.contains(&"mcp__calc__add".to_string()),
        "{offered:?}"
    );
    // MCP tools ask, as they do from config; allowed in the editor, the call runs.
    assert!(
        log.iter()
            .any(|e| e["kind"] == "permission" && e["request"]["toolCall"]["toolCallId"] == "m1"),
        "{log:#?}"
    );
    let done = updates(log, root, "tool_call_update")
        .into_iter()
        .rfind(|u| u["toolCallId"] == "m1")
        .unwrap_or_else(|| panic!("{log:#?}"));
    assert_eq!(done["status"], "completed");
    assert_eq!(done["content"][0]["content"]["text"], "5");
}

#[test]
fn every_request_read_is_answered_before_exit_and_bad_input_gets_errors() {
    let env = TestEnv::new();
    let input = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/fly"}"#,
        "not json",
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":7}}"#,
    ]
    .join("\n");
    let out = env
        .cmd()
        .arg("acp")
        .write_stdin(input + "\n")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: Value| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {answers:#?}"))
    };
    assert_eq!(by_id(json!(1))["result"]["protocolVersion"], 1);
    assert_eq!(by_id(json!(2))["error"]["code"], -32601);
    assert_eq!(by_id(Value::Null)["error"]["code"], -32700);
    assert_eq!(by_id(json!(3))["error"]["code"], -32602);
    assert_eq!(by_id(json!(4))["error"]["code"], -32602);
    assert_eq!(answers.len(), 5, "{answers:#?}");
}

#[test]
fn loading_an_unknown_session_says_which_project_was_searched() {
    let server = ScriptedServer::start(responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let out = drive_output(&env, &["--load=bogus", "Plan the work"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "No session id or short id starts with 'bogus'. Looked among the sessions of project"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("Sub-session"), "{stderr}");
}
