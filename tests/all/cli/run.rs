//! `arbor run` through the real binary: its output formats (text with messages
//! separated, json, jsonl starting with `session:start`, one model name), piped stdin,
//! what it says of denied calls, `--agent`, and running with no provider.

use super::*;

#[test]
fn run_without_a_provider_says_what_it_looked_for() {
    let env = TestEnv::new();
    let assert = env.cmd().args(["run", "hello"]).assert().failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    for needle in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"] {
        assert!(stderr.contains(needle), "{needle} not in: {stderr}");
    }
    assert!(
        stderr.contains(&env.config.display().to_string()),
        "{stderr}"
    );
    let v = json_out_fail(env.cmd().args(["run", "--output-format", "json", "hello"]));
    assert_eq!(v["status"], "error");
    assert!(v["error"].as_str().unwrap().contains("OPENAI_API_KEY"));
}

fn json_out_fail(cmd: &mut assert_cmd::Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn run_streams_text_and_jsonl_events_then_sessions_are_listed() {
    let server = text_server("Hello from the scripted model.");
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    env.cmd()
        .args(["run", "hi"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Hello from the scripted model."));

    let out = env
        .cmd()
        .args(["run", "--output-format", "jsonl", "hi again"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines = jsonl_lines(&out.stdout);
    let last = lines.last().unwrap();
    assert_eq!(last["status"], "success");
    let events: Vec<&str> = lines[..lines.len() - 1]
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    for name in [
        "prompt:submit",
        "provider:request",
        "content_block:delta",
        "provider:response",
        "orchestrator:complete",
    ] {
        assert!(events.contains(&name), "{name} not in {events:?}");
    }
    let id = last["session_id"].as_str().unwrap().to_string();

    let list = json_out(env.cmd().args(["session", "list", "--json"]));
    assert_eq!(list.as_array().unwrap().len(), 2);
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == id.as_str())
        .unwrap();
    for key in [
        "parent_id",
        "agent_name",
        "status",
        "depth",
        "turn_count",
        "created",
        "last_updated",
        "children",
    ] {
        assert!(entry.get(key).is_some(), "{key}");
    }
    assert_eq!(entry["turn_count"], 1);

    let show = json_out(
        env.cmd()
            .args(["session", "show", &id[..8], "--json", "--transcript"]),
    );
    assert_eq!(show["session_id"], id.as_str());
    assert_eq!(show["transcript"][0]["content"], "hi again");

    env.cmd()
        .args(["session", "tree"])
        .assert()
        .success()
        .stdout(predicate::str::contains(&id));
    env.cmd()
        .args(["session", "export", &id, "--format", "md"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Hello from the scripted model."));
    let export = json_out(
        env.cmd()
            .args(["session", "export", &id, "--format", "json"]),
    );
    // One document whose messages are JSON objects, not strings holding JSON.
    assert_eq!(export["format"], "arbor.session-export");
    assert_eq!(export["root"], id.as_str());
    let transcript = export["session"]["transcript"].as_array().unwrap();
    assert_eq!(transcript[0]["role"], "user");
    assert_eq!(transcript[0]["content"], "hi again");
    assert_eq!(transcript[1]["role"], "assistant");
    assert!(
        transcript[1]["content"]
            .to_string()
            .contains("Hello from the scripted model."),
        "{}",
        transcript[1]
    );
    let all = json_out(
        env.cmd()
            .args(["session", "list", "--all-projects", "--json"]),
    );
    assert_eq!(all.as_array().unwrap().len(), 2);
}

#[test]
fn run_with_agent_uses_that_agents_instruction() {
    let server = text_server("ok");
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let v = json_out(env.cmd().args([
        "run",
        "--agent",
        "reviewer",
        "--output-format",
        "json",
        "look",
    ]));
    assert_eq!(v["agent"], "reviewer");
    let show = json_out(
        env.cmd()
            .args(["agent", "show", "reviewer", "--format", "json"]),
    );
    let system = &server.requests()[0]["messages"][0];
    assert_eq!(system["role"], "system");
    assert!(content_text(system).contains(show["instruction"].as_str().unwrap()));
}

/// An OpenAI stream answering `text` and then calling `tool` with `args` (call `id`).
fn sse_text_then_call(text: &str, id: &str, tool: &str, args: Value) -> String {
    let chunk = |delta: Value, finish: Option<&str>| {
        let c = serde_json::json!({
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "scripted-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {c}\n\n")
    };
    let mut out = chunk(
        serde_json::json!({"role": "assistant", "content": text}),
        None,
    );
    out += &chunk(
        serde_json::json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": tool, "arguments": args.to_string()}}]}),
        None,
    );
    out += &chunk(serde_json::json!({}), Some("tool_calls"));
    out + "data: [DONE]\n\n"
}

/// Issue 23 item 9: two assistant messages of one turn are separated by a blank line;
/// a call denied for want of `--yes` is named on stderr with what allows it, and the
/// run still succeeds.
#[test]
fn run_separates_messages_and_says_what_it_denied() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_text_then_call(
            "I will write the notes.",
            "w1",
            "write_file",
            serde_json::json!({"file_path": "notes.md", "content": "hi\n"}),
        )),
        Reply::Sse(sse_text("The write was denied.")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let out = env.cmd().args(["run", "write notes"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stdout, "I will write the notes.\n\nThe write was denied.\n",
        "{stderr}"
    );
    assert!(
        stderr.contains("denied write_file `write notes.md`") && stderr.contains("--yes"),
        "{stderr}"
    );
    assert!(
        stderr.contains("approvals: {write_file: allow}"),
        "{stderr}"
    );
    assert!(!env.project.join("notes.md").exists());
}

/// Issue 23 item 9: text piped to stdin follows the prompt; `-` is the piped text
/// alone; `-` with nothing piped is an error saying so.
#[test]
fn run_reads_piped_stdin() {
    let server = text_server("ok");
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    env.cmd()
        .args(["run", "summarise this"])
        .write_stdin("line one\nline two\n")
        .assert()
        .success();
    env.cmd()
        .args(["run", "-"])
        .write_stdin("the whole prompt\n")
        .assert()
        .success();
    let users: Vec<String> = server.requests().iter().map(last_user_text).collect();
    assert_eq!(
        users,
        ["summarise this\n\nline one\nline two", "the whole prompt"]
    );
    env.cmd()
        .args(["run", "-"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("reads the prompt from stdin"));
}

/// Issue 23 item 9: `--output-format jsonl` starts with the root's `session:start`
/// then its first status, and `provider:request` and `provider:response` name the
/// same model.
#[test]
fn run_jsonl_starts_with_session_start_and_names_one_model() {
    let server = text_server("hello");
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let out = env
        .cmd()
        .args(["run", "--output-format", "jsonl", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines = jsonl_lines(&out.stdout);
    let names: Vec<&str> = lines
        .iter()
        .map(|l| l["event"].as_str().unwrap_or("(final)"))
        .collect();
    assert_eq!(names[0], "session:start", "{names:?}");
    assert_eq!(names[1], "session:status", "{names:?}");
    let model_of = |name: &str| {
        lines
            .iter()
            .find(|l| l["event"] == name)
            .map(|l| l["data"]["model"].clone())
            .unwrap()
    };
    assert_eq!(model_of("provider:request"), "scripted-model");
    assert_eq!(model_of("provider:response"), "scripted-model");
}

/// Issue 24 item 1: `arbor run` drives the engine through its handle as the TUI does
/// (`--model` as the model of new roots, then `Submit` without a session id), so its
/// jsonl starts with the new root's one `session:start` — naming the chosen model —
/// and every event is that root's; `session resume` (a `Submit` with the id) starts
/// with that session's `session:resume`.
#[test]
fn run_and_resume_jsonl_start_with_the_sessions_lifecycle_event() {
    let server = text_server("hello");
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    let out = env
        .cmd()
        .args([
            "run",
            "--output-format",
            "jsonl",
            "hi",
            "--model",
            "picked-model",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    let lines = jsonl_lines(&out.stdout);
    let (last, events) = lines.split_last().unwrap();
    assert_eq!(last["status"], "success", "{last}");
    let id = last["session_id"].as_str().unwrap();
    assert_eq!(events[0]["event"], "session:start", "{events:?}");
    assert_eq!(events[0]["session_id"], id);
    let model = events[0]["data"]["model"].as_str().unwrap();
    assert!(model.ends_with("picked-model"), "{model}");
    let starts = events.iter().filter(|l| l["event"] == "session:start");
    assert_eq!(starts.count(), 1, "{events:?}");
    assert!(events.iter().all(|l| l["session_id"] == id), "{events:?}");

    let out = env
        .cmd()
        .args(["session", "resume", id, "again", "--output-format", "jsonl"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = jsonl_lines(&out.stdout);
    let (last, events) = lines.split_last().unwrap();
    assert_eq!(last["status"], "success", "{last}");
    assert_eq!(last["session_id"], id);
    assert_eq!(events[0]["event"], "session:resume", "{events:?}");
    assert_eq!(events[0]["session_id"], id);
    assert!(events.iter().any(|l| l["event"] == "orchestrator:complete"));

    // `session resume --model` is a `SetModel` to the headless handle: switched, and
    // no model list asked for a warning nobody would read.
    let out = env
        .cmd()
        .args([
            "session",
            "resume",
            id,
            "more",
            "--model",
            "openai/second-model",
        ])
        .args(["--output-format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent: Vec<Value> = server.requests();
    assert_eq!(sent.last().unwrap()["model"], "second-model");
    let heads = server.heads();
    assert!(heads.iter().all(|h| !h.contains("/models")), "{heads:?}");
}
