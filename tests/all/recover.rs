//! After `kill -9` of a delegating `arbor run` (issue 10 "Done when"): no session is
//! reported `running`, the root and both sub-sessions read as `interrupted`, short ids
//! (a root's 8-character prefix, a child's span) work in `session show`, and
//! `session resume <root> continue` repairs the root's orphaned task calls with
//! "interrupted" results and runs, while `session continue <root> --tree` first
//! finishes the sub-sessions and hands their answers to the root's task calls. Then titles: the first prompt names the root,
//! `session rename` changes it. The real binary against a scripted loopback server.

use crate::support;

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arbor::engine::repair::INTERRUPTED_RESULT;
use arbor::session::ids::short_id;
use futures::FutureExt;
use serde_json::{Value, json};
use support::*;

const RESUMED: &str = "Resumed after the crash.";

/// The root delegates two designs at once; the sub-sessions' model calls never answer
/// (the process is killed meanwhile); a later `continue` gets an answer.
fn crash_responder() -> Responder {
    Arc::new(|body: Value| {
        async move {
            let user = last_user_text(&body);
            if last_role(&body) == "user" && user == "continue" {
                return Reply::Sse(sse_text(RESUMED));
            }
            if user.contains("Design the") {
                return futures::future::pending::<Reply>().await;
            }
            Reply::Sse(sse_tool_calls(&[
                (
                    "call_1",
                    "task",
                    json!({"agent": "zen-architect", "instruction": "Design the cache"}),
                ),
                (
                    "call_2",
                    "task",
                    json!({"agent": "zen-architect", "instruction": "Design the queue"}),
                ),
            ]))
        }
        .boxed()
    })
}

fn json_of(env: &TestEnv, args: &[&str]) -> Value {
    let out = env.cmd().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn status_of(list: &Value, id: &str) -> String {
    list.as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {list}"))["status"]
        .as_str()
        .unwrap()
        .to_string()
}

fn dir_name(path: &std::path::Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// Waits until `n` sub-sessions exist and their model calls are in flight; their ids.
fn running_children(env: &TestEnv, server: &ScriptedServer, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let children = loop {
        let dirs = env.session_dirs("_zen-architect");
        // A directory may not hold its metadata yet: read it only once it does.
        let running = dirs
            .iter()
            .filter_map(|d| std::fs::read_to_string(d.join("metadata.json")).ok())
            .filter_map(|text| serde_json::from_str::<Value>(&text).ok())
            .filter(|m| m["status"] == "running")
            .count();
        if server.requests().len() > n && running == n {
            break dirs;
        }
        assert!(
            Instant::now() < deadline,
            "sub-sessions never started: {dirs:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    children.iter().map(|d| dir_name(d)).collect()
}

#[test]
fn kill_9_mid_delegation_leaves_an_interrupted_tree_that_resumes() {
    let server = ScriptedServer::start(crash_responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-recover-0123456789");
    let mut run = env
        .std_cmd()
        .args(["run", "Plan the work"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    let children = running_children(&env, &server, 2);
    let root = env.metadata(&children[0])["parent_id"]
        .as_str()
        .unwrap()
        .to_string();

    // Alive: the process holds the locks, so the tree reads as running.
    let list = json_of(&env, &["session", "list", "--json"]);
    assert_eq!(status_of(&list, &root), "running");

    run.kill().unwrap(); // SIGKILL
    run.wait().unwrap();

    let list = json_of(&env, &["session", "list", "--json"]);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] != "running"),
        "{list}"
    );
    for id in children.iter().chain([&root]) {
        assert_eq!(status_of(&list, id), "interrupted", "{id}");
        // The files still say what was written; only readers derive `interrupted`.
        assert_eq!(env.metadata(id)["status"], "running");
    }

    // Short ids as the TUI shows them.
    let root_prefix = &root[..8];
    let shown = json_of(&env, &["session", "show", root_prefix, "--json"]);
    assert_eq!(
        shown["session_id"],
        root.as_str(),
        "the root, not its children"
    );
    assert_eq!(shown["status"], "interrupted");
    assert_eq!(shown["name"], "Plan the work");
    for child in &children {
        let span = short_id(child);
        assert_eq!(span.len(), 8);
        for typed in [span.clone(), format!("#{span}")] {
            let shown = json_of(&env, &["session", "show", &typed, "--json"]);
            assert_eq!(shown["session_id"], child.as_str(), "{typed}");
            assert_eq!(shown["status"], "interrupted");
        }
    }
    let tree = env
        .cmd()
        .args(["session", "tree", root_prefix])
        .output()
        .unwrap();
    let tree = String::from_utf8(tree.stdout).unwrap();
    assert_eq!(tree.matches("[interrupted]").count(), 3, "{tree}");

    // Resuming repairs the root's two orphaned task calls and runs.
    let resumed = json_of(
        &env,
        &[
            "session",
            "resume",
            root_prefix,
            "continue",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(resumed["status"], "success", "{resumed}");
    assert_eq!(resumed["response"], RESUMED);
    let transcript = read_jsonl(&env.sessions_dir().join(&root).join("transcript.jsonl"));
    for call in ["call_1", "call_2"] {
        let result = transcript
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == call)
            .unwrap_or_else(|| panic!("no result for {call}"));
        // The sub-session never finished: the result says which one and how to
        // continue it.
        let content = result["content"].as_str().unwrap();
        assert!(content.starts_with(INTERRUPTED_RESULT), "{content}");
        assert!(
            children
                .iter()
                .any(|c| content.contains(&format!("task with session_id \"{c}\""))),
            "{content}"
        );
    }
    let request = server.requests().last().unwrap().clone();
    let roles: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["role"].as_str())
        .filter(|r| *r != "system")
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
    let list = json_of(&env, &["session", "list", "--json"]);
    assert_eq!(status_of(&list, &root), "completed");
    for child in &children {
        assert_eq!(status_of(&list, child), "interrupted");
    }
}

/// Three designs delegated at once; until `killed` is set the sub-sessions' model
/// calls never answer, then each answers `<instruction>: done`; the root answers
/// `ALL_IN` once it has its task results.
fn three_children_responder(killed: Arc<AtomicBool>) -> Responder {
    Arc::new(move |body: Value| {
        let killed = killed.clone();
        async move {
            let user = last_user_text(&body);
            if last_role(&body) == "tool" {
                return Reply::Sse(sse_text(ALL_IN));
            }
            if user.contains("Design the") {
                if !killed.load(Ordering::SeqCst) {
                    return futures::future::pending::<Reply>().await;
                }
                return Reply::Sse(sse_text(&format!("{user}: done")));
            }
            let calls: Vec<(String, Value)> = ["cache", "queue", "index"]
                .iter()
                .enumerate()
                .map(|(i, what)| {
                    (
                        format!("call_{}", i + 1),
                        json!({"agent": "zen-architect", "instruction": format!("Design the {what}")}),
                    )
                })
                .collect();
            Reply::Sse(sse_task_calls(&calls))
        }
        .boxed()
    })
}

const ALL_IN: &str = "All three designs are in.";

#[test]
fn session_continue_tree_hands_the_childrens_answers_to_the_root() {
    let killed = Arc::new(AtomicBool::new(false));
    let server = ScriptedServer::start(three_children_responder(killed.clone()));
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-recover-0123456789");
    let mut run = env
        .std_cmd()
        .args(["run", "Plan the work"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let children = running_children(&env, &server, 3);
    let root = env.metadata(&children[0])["parent_id"]
        .as_str()
        .unwrap()
        .to_string();
    run.kill().unwrap(); // SIGKILL mid-delegation
    run.wait().unwrap();
    killed.store(true, Ordering::SeqCst);

    let out = env
        .cmd()
        .args([
            "session",
            "continue",
            &root[..8],
            "--tree",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["status"], "success", "{outcome}");
    assert_eq!(outcome["session_id"], root.as_str());
    assert_eq!(outcome["response"], ALL_IN);

    // The root's model request holds one result per task call: each child's answer.
    let request = server
        .requests()
        .into_iter()
        .rfind(|r| last_role(r) == "tool")
        .unwrap();
    let messages = request["messages"].as_array().unwrap();
    let mut answers: Vec<(String, String, String)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let result: Value = serde_json::from_str(&content_text(m)).unwrap_or(Value::Null);
            (
                m["tool_call_id"].as_str().unwrap_or("?").to_string(),
                result["response"].as_str().unwrap_or("?").to_string(),
                result["session_id"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    answers.sort();
    let responses: Vec<(&str, &str)> = answers
        .iter()
        .map(|(call, response, _)| (call.as_str(), response.as_str()))
        .collect();
    assert_eq!(
        responses,
        [
            ("call_1", "Design the cache: done"),
            ("call_2", "Design the queue: done"),
            ("call_3", "Design the index: done"),
        ],
        "{request}"
    );
    let mut sessions: Vec<&str> = answers.iter().map(|(_, _, s)| s.as_str()).collect();
    sessions.sort_unstable();
    let mut expected: Vec<&str> = children.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(sessions, expected);
    let list = json_of(&env, &["session", "list", "--json"]);
    for id in children.iter().chain([&root]) {
        assert_eq!(status_of(&list, id), "completed", "{id}");
    }

    // Nothing left to continue: said, exit 0; a bad id: a clear error, exit 1.
    let again = env
        .cmd()
        .args(["session", "continue", &root, "--tree"])
        .output()
        .unwrap();
    assert!(again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("nothing to continue"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let done = env
        .cmd()
        .args(["session", "continue", &root])
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&done.stderr)
            .contains("is completed: continue resumes a stopped session"),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let missing = env
        .cmd()
        .args(["session", "continue", "nosuchsession"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nosuchsession"));
}

#[test]
fn the_first_prompt_titles_the_root_and_rename_changes_it() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("Done."))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-recover-0123456789");
    let prompt = format!(
        "Write a migration plan for the {} old billing tables\nwith rollback steps",
        "very ".repeat(10)
    );
    let out = json_of(&env, &["run", "--output-format", "json", &prompt]);
    let id = out["session_id"].as_str().unwrap().to_string();
    let list = json_of(&env, &["session", "list", "--json"]);
    let title = list[0]["name"].as_str().unwrap().to_string();
    assert_eq!(title.chars().count(), 60, "{title}");
    assert!(
        title.starts_with("Write a migration plan for the very"),
        "{title}"
    );
    assert!(title.ends_with('…'), "{title}");

    let out = env
        .cmd()
        .args(["session", "rename", &id[..8], "Billing migration"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{id}: Billing migration\n")
    );
    let table = env.cmd().args(["session", "list"]).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    let header = table.lines().next().unwrap();
    assert!(header.ends_with("TITLE"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.ends_with("Billing migration")),
        "{table}"
    );
    let tree = env.cmd().args(["session", "tree"]).output().unwrap();
    assert!(
        String::from_utf8(tree.stdout)
            .unwrap()
            .contains(&format!("arbor \"Billing migration\" {id} [completed]")),
    );
    let out = env
        .cmd()
        .args(["session", "rename", &id, "  "])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs at least one visible character"));
}
