//! A real external ACP agent hosted as a node (issue 37 item 3), through the real
//! `arbor run`: Zed's `codex-acp` (`@zed-industries/codex-acp` 0.16.0, pinned by
//! `tests/hosted/package-lock.json`, installed with `npm ci` under `target/tmp`,
//! never in the repository; it ships its native binary in an optional platform
//! package). It gets a temp `CODEX_HOME` whose `config.toml` selects a model provider
//! at the loopback server (`wire_api = "responses"`, a dummy key in `env_key`), which
//! answers with captured Responses API streams (`../shared/fixtures/sse`) rewritten:
//! a text, or an `exec_command` call. No test reaches a public network or the real
//! home (`HOME` is the test's, `CODEX_HOME` a temp dir).
//!
//! The done test: a root's `task` to the agent file runs codex, and its answer is
//! the task result in the root's next model request and in the store (`arbor session
//! show --transcript`). Then codex's own `session/request_permission` for a command
//! goes through arbor's approval gate: a deny rule refuses it even with `--yes` (the
//! command never runs), `--yes` alone allows it (it runs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::hosted::{CodexReply, root_model, run, task_result_sent, write_acp_agent};
use crate::support::*;

/// `@zed-industries/codex-acp` installed once per test process (npm ci when the
/// pinned lock changed); the path of its launcher.
fn codex_acp() -> PathBuf {
    static READY: Mutex<bool> = Mutex::new(false);
    let mut ready = READY.lock().unwrap_or_else(|p| p.into_inner());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hosted");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hosted-agents");
    let bin = dir.join("node_modules/.bin/codex-acp");
    if *ready {
        return bin;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::read(src.join("package-lock.json")).unwrap();
    let installed = std::fs::read(dir.join("package-lock.json")).ok();
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(src.join(file), dir.join(file)).unwrap();
    }
    if installed.as_deref() != Some(&lock[..]) || !bin.exists() {
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .output()
            .expect("npm must be installed to run codex-acp (Node.js 20+)");
        assert!(
            out.status.success(),
            "npm ci failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    *ready = true;
    bin
}

/// The captured Responses API streams: `(text, function call)`.
fn captured() -> Option<(String, String)> {
    let read = |name: &str| {
        shared::fixtures(&format!("sse/{name}")).map(|p| std::fs::read_to_string(p).unwrap())
    };
    Some((
        read("openai-responses-text.sse")?,
        read("openai-responses-function-call.sse")?,
    ))
}

/// The captured text stream answering `text`.
fn text_stream(captured: &str, text: &str) -> String {
    captured.replace("\"pong\"", &format!("{text:?}"))
}

/// The captured function-call stream calling `name` with `arguments` (the argument
/// deltas dropped; every `function_call` item and the `done` event rewritten).
fn call_stream(captured: &str, name: &str, arguments: &Value) -> String {
    let arguments = arguments.to_string();
    let mut out = String::new();
    for block in captured.trim().split("\n\n") {
        let (event, data) = block.split_once('\n').unwrap();
        let mut data: Value = serde_json::from_str(data.trim_start_matches("data: ")).unwrap();
        if data["type"] == "response.function_call_arguments.delta" {
            continue;
        }
        if data["type"] == "response.function_call_arguments.done" {
            data["arguments"] = json!(arguments);
        }
        rewrite_calls(&mut data, name, &arguments);
        out += &format!("{event}\ndata: {data}\n\n");
    }
    out
}

fn rewrite_calls(value: &mut Value, name: &str, arguments: &str) {
    match value {
        Value::Object(map) => {
            if map.get("type") == Some(&json!("function_call")) {
                map.insert("name".into(), json!(name));
                map.insert("arguments".into(), json!(arguments));
            }
            map.values_mut()
                .for_each(|v| rewrite_calls(v, name, arguments));
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| rewrite_calls(v, name, arguments)),
        _ => {}
    }
}

/// A project whose agent `codex` is codex-acp with a temp `CODEX_HOME` pointing at
/// the loopback server, whose root delegates `instruction` to it; `reply` answers
/// codex's requests.
fn codex_env(instruction: &'static str, reply: CodexReply) -> (TestEnv, ScriptedServer) {
    let env = TestEnv::new();
    let server = root_model("codex", instruction, Some(reply));
    env.use_openai(&server.base_url, "sk-root");
    let codex_home = env.dir.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model_provider = \"loopback\"\nmodel = \"gpt-5.5\"\n\n[model_providers.loopback]\nname = \"loopback\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"LOOPBACK_KEY\"\n",
            server.base_url
        ),
    )
    .unwrap();
    write_acp_agent(
        &env,
        "codex",
        &codex_acp(),
        &[],
        &[
            ("CODEX_HOME", codex_home.display().to_string()),
            ("LOOPBACK_KEY", "sk-dummy".into()),
        ],
        "",
    );
    (env, server)
}

/// The done test: codex-acp, hosted as the child of a root's `task`, answers from
/// the loopback Responses server; the answer is the task result the root's next
/// request carries, and `session show --transcript` of the child shows it.
#[test]
fn codex_acp_answers_a_task_and_its_answer_reaches_the_parent_and_the_store() {
    let Some((text, _)) = captured() else {
        return;
    };
    let stream = text_stream(&text, "Codex says: the hosted answer is 42.");
    let (env, server) = codex_env("What is the answer?", Arc::new(move |_| stream.clone()));
    let out = run(&env, &["--yes", "Ask codex"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Codex itself called the loopback model with the task's instruction.
    assert!(
        server
            .requests()
            .iter()
            .filter(|r| r.get("input").is_some())
            .any(|r| r.to_string().contains("What is the answer?")),
        "codex never asked the loopback model: {:?}",
        server.requests()
    );
    let result = task_result_sent(&server);
    assert_eq!(result["status"], "completed", "{result}");
    assert!(
        result["response"]
            .as_str()
            .unwrap()
            .contains("the hosted answer is 42"),
        "{result}"
    );
    let child = result["session_id"].as_str().unwrap().to_string();
    let shown = env
        .cmd()
        .args(["session", "show", "--transcript", &child])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("What is the answer?"), "{shown}");
    assert!(shown.contains("the hosted answer is 42"), "{shown}");
    assert!(shown.contains("model     acp/codex-acp"), "{shown}");
    assert!(stdout.contains("Root done."), "{stdout}");
    // The node's processes (the npm launcher and the native agent it starts) end
    // with arbor: codex-acp itself does not exit when its stdin closes.
    let home = env.dir.path().join("codex-home").display().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !processes_with_env(&home).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        processes_with_env(&home),
        Vec::<u32>::new(),
        "codex outlived arbor"
    );
}

/// The processes whose environment mentions `needle` (this test's `CODEX_HOME`).
fn processes_with_env(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| String::from_utf8_lossy(&env).contains(needle))
        })
        .collect()
}

/// Codex asks before running `rm -rf build` outside its sandbox: arbor's approval
/// gate answers. A deny rule refuses it even with `--yes`; `--yes` alone allows it.
#[test]
fn codex_acps_permission_request_is_decided_by_arbors_approval_gate() {
    let Some((text, call)) = captured() else {
        return;
    };
    for (deny, removed) in [(true, false), (false, true)] {
        let (text, call) = (text.clone(), call.clone());
        let reply: CodexReply = Arc::new(move |body| {
            if body.to_string().contains("function_call_output") {
                text_stream(&text, "Cleaned up.")
            } else {
                let arguments = json!({
                    "cmd": "rm -rf build",
                    "sandbox_permissions": "require_escalated",
                    "justification": "clean the build",
                });
                call_stream(&call, "exec_command", &arguments)
            }
        });
        let (env, server) = codex_env("Clean the build", reply);
        std::fs::create_dir_all(env.project.join("build")).unwrap();
        if deny {
            env.append_config("approvals:\n  \"bash(rm *)\": deny\n");
        }
        let out = run(&env, &["--yes", "--output-format", "jsonl", "Clean up"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let events = jsonl_lines(&out.stdout);
        let decided = if deny {
            "approval:denied"
        } else {
            "approval:granted"
        };
        assert!(
            events
                .iter()
                .any(|e| e["event"] == decided && e["data"]["tool_name"] == "bash"),
            "deny {deny}: no {decided} for bash"
        );
        assert_eq!(
            !env.project.join("build").exists(),
            removed,
            "deny {deny}: {:?}",
            task_result_sent(&server)
        );
    }
}
