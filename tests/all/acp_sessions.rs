//! `arbor acp`'s stable ACP v1 session surface (issue 37 items 1 and 2), driven by the
//! official TypeScript SDK (`tests/acp/client.mjs`) against a loopback model server:
//! the id `session/new` answers is a stored arbor session another `arbor acp`
//! process loads with its context (and the CLI opens); `session/list` pages the
//! project's sessions, Amplifier's included; `session/resume` opens without replay;
//! `session/close` ends a session; the `model` config option switches the model the
//! next request names, the `approvals` one answers without asking; `usage_update`,
//! `available_commands_update` and `session_info_update` arrive; a call waiting for
//! approval is `pending`.

use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};

use super::acp::{KEY, drive, drive_output, responder, text_of, updates};
use crate::support::*;

/// A server answering each prompt with `You said: <its last user text>.`
fn echo() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        async move { Reply::Sse(sse_text(&format!("You said: {}.", last_user_text(&body)))) }
            .boxed()
    }))
}

/// Every message text of a chat request, joined.
fn all_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .map(|m| m.iter().map(content_text).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

fn log_of(summary: &Value) -> Vec<Value> {
    summary["log"].as_array().cloned().unwrap_or_default()
}

/// The config option `id` of an answer carrying `configOptions`.
fn option<'a>(answer: &'a Value, id: &str) -> &'a Value {
    answer["configOptions"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["id"] == id))
        .unwrap_or_else(|| panic!("no option {id}: {answer:#}"))
}

/// The values a select option offers (flat or grouped).
fn values(option: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for o in option["options"].as_array().into_iter().flatten() {
        match o["options"].as_array() {
            Some(group) => out.extend(
                group
                    .iter()
                    .filter_map(|g| g["value"].as_str().map(String::from)),
            ),
            None => out.extend(o["value"].as_str().map(String::from)),
        }
    }
    out
}

#[test]
fn a_new_sessions_id_loads_in_another_process_with_its_context() {
    let server = echo();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let first = drive(&env, &["Remember the word pineapple"]);
    let id = first["sessionId"].as_str().unwrap().to_string();
    // The ACP id is the stored arbor session's own id.
    assert!(
        env.sessions_dir().join(&id).join("metadata.json").exists(),
        "{id}"
    );
    assert_eq!(env.metadata(&id)["session_id"], id.as_str());

    // A second process (the editor restarted) loads it and continues with its context.
    let load = format!("--load={id}");
    let second = drive(&env, &[&load, "Which word was it?"]);
    assert_eq!(second["turns"][0]["stopReason"], "end_turn", "{second:#}");
    let requests = server.requests();
    let last = requests.last().unwrap();
    let context = all_text(last);
    assert!(context.contains("Remember the word pineapple"), "{context}");
    assert!(
        context.contains("You said: Remember the word pineapple."),
        "{context}"
    );
    assert!(context.contains("Which word was it?"), "{context}");
    // Both turns are in the one stored session; the CLI opens it by the same id.
    let out = env
        .cmd()
        .args(["session", "show", &id, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["turn_count"], 2, "{shown:#}");
}

#[test]
fn loading_or_resuming_an_unknown_id_names_the_project_searched() {
    let server = echo();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    for flag in ["--load=acp-10369-1", "--resume=acp-10369-1"] {
        let out = drive_output(&env, &[flag, "hello"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("No session id or short id starts with 'acp-10369-1'. Looked among the sessions of project"),
            "{stderr}"
        );
        assert!(!stderr.contains("Sub-session"), "{stderr}");
    }
}

/// Writes an Amplifier-style root session (no `config`, no `status`) named `name`.
fn amplifier_root(env: &TestEnv, id: &str, updated: &str, name: &str) {
    let dir = env.sessions_dir().join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let metadata = json!({
        "session_id": id,
        "created": updated,
        "last_updated": updated,
        "bundle": "bundle:foundation",
        "model": "claude-sonnet-4-5",
        "turn_count": 1,
        "working_dir": env.project.display().to_string(),
        "name": name,
    });
    std::fs::write(dir.join("metadata.json"), metadata.to_string()).unwrap();
    let line = json!({"role": "user", "content": name});
    std::fs::write(dir.join("transcript.jsonl"), format!("{line}\n")).unwrap();
}

#[test]
fn session_list_pages_the_projects_sessions_with_cwd_and_title() {
    let server = echo();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    // More Amplifier sessions than one page holds, all older than the ACP one.
    let older = arbor::acp::listing::PAGE + 5;
    for i in 0..older {
        let id = format!("4f6d2c1a-9b7e-4c3d-8a2f-{i:012}");
        let updated = format!("2025-11-20T10:{:02}:{:02}.000000+00:00", i / 60, i % 60);
        amplifier_root(&env, &id, &updated, &format!("Amplifier task {i}"));
    }
    let summary = drive(&env, &["--list", "Plan the garden"]);
    let id = summary["sessionId"].as_str().unwrap();
    let pages = summary["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 2, "{pages:#?}");
    assert!(pages[0]["nextCursor"].is_string(), "{:#}", pages[0]);
    assert!(
        pages[1].get("nextCursor").is_none_or(Value::is_null),
        "{:#}",
        pages[1]
    );
    let listed: Vec<&Value> = pages
        .iter()
        .flat_map(|p| p["sessions"].as_array().unwrap())
        .collect();
    assert_eq!(
        pages[0]["sessions"].as_array().unwrap().len(),
        arbor::acp::listing::PAGE
    );
    assert_eq!(listed.len(), older + 1);
    let mut ids: Vec<&str> = listed
        .iter()
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), older + 1, "a page repeated a session");
    // The ACP session is the newest, with its cwd, its title (the first prompt) and
    // when it was last updated.
    let newest = listed[0];
    assert_eq!(newest["sessionId"], id);
    assert_eq!(newest["cwd"], env.project.display().to_string());
    assert_eq!(newest["title"], "Plan the garden");
    assert!(
        newest["updatedAt"]
            .as_str()
            .is_some_and(|u| u.starts_with("20")),
        "{newest:#}"
    );
    let amplifier = listed
        .iter()
        .find(|s| s["title"] == "Amplifier task 3")
        .unwrap();
    assert_eq!(amplifier["cwd"], env.project.display().to_string());
}

#[test]
fn resume_opens_without_replay_and_close_ends_the_session() {
    let server = echo();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let first = drive(&env, &["Remember the word pineapple"]);
    let caps = &first["initialize"]["agentCapabilities"]["sessionCapabilities"];
    for capability in ["list", "resume", "close"] {
        assert_eq!(caps[capability], json!({}), "{caps:#}");
    }
    let id = first["sessionId"].as_str().unwrap().to_string();
    let resume = format!("--resume={id}");
    let summary = drive(&env, &[&resume, "--close", "Which word was it?"]);
    let log = log_of(&summary);
    let resumed = log.iter().position(|e| e["kind"] == "resumed").unwrap();
    // Nothing of the stored turn is replayed.
    assert!(
        log[..resumed].iter().all(|e| !matches!(
            e["update"]["sessionUpdate"].as_str(),
            Some("user_message_chunk" | "agent_message_chunk" | "tool_call")
        )),
        "{log:#?}"
    );
    assert!(option(&summary["opened"], "model")["currentValue"].is_string());
    // The context meter starts where the stored session left it.
    let usage = updates(&log[..resumed], &id, "usage_update");
    assert_eq!(usage.len(), 1, "{log:#?}");
    assert!(usage[0]["used"].as_u64().unwrap() > 0, "{:#}", usage[0]);
    assert!(usage[0]["size"].as_u64().unwrap() > 0, "{:#}", usage[0]);
    // The resumed session runs the next prompt with its context.
    assert_eq!(summary["turns"][0]["stopReason"], "end_turn");
    let context = all_text(server.requests().last().unwrap());
    assert!(context.contains("Remember the word pineapple"), "{context}");
    // Closed, it takes no more prompts; it stays stored.
    let error = summary["afterClose"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!("no open session {id}")),
        "{summary:#}"
    );
    assert!(env.sessions_dir().join(&id).exists());
    assert_eq!(env.metadata(&id)["turn_count"], 2);
}

#[test]
fn the_model_option_changes_the_model_the_next_request_names() {
    let server = echo();
    let env = TestEnv::new();
    // The config names a model the server does not list; the server lists another.
    let yaml = format!(
        "providers:\n  - module: provider-openai\n    config:\n      base_url: \"{}\"\n      api_key: \"{KEY}\"\n      default_model: configured-model\n",
        server.base_url
    );
    std::fs::write(&env.config, yaml).unwrap();
    let summary = drive(
        &env,
        &[
            "--set=model=openai/scripted-model",
            "--set=model=nope/",
            "Hello",
            "/model openai/configured-model",
            "Again",
        ],
    );
    let model = option(&summary["opened"], "model");
    assert_eq!(model["category"], "model");
    assert_eq!(
        model["currentValue"], "openai/configured-model",
        "{model:#}"
    );
    let offered = values(model);
    assert!(
        offered.contains(&"openai/scripted-model".to_string()),
        "{offered:?}"
    );
    let agent = option(&summary["opened"], "agent");
    assert!(agent["currentValue"].is_string(), "{agent:#}");
    let set = &summary["set"][0];
    assert_eq!(
        option(set, "model")["currentValue"],
        "openai/scripted-model",
        "{set:#}"
    );
    assert!(
        summary["set"][1]["error"].is_string(),
        "{:#}",
        summary["set"][1]
    );
    // The next model request names the chosen model.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[0]["model"], "scripted-model");
    // `/model` switches too, and the client's options follow.
    assert_eq!(requests[1]["model"], "configured-model");
    let id = summary["sessionId"].as_str().unwrap();
    let log = log_of(&summary);
    let followed = updates(&log, id, "config_option_update");
    assert_eq!(followed.len(), 1, "{log:#?}");
    assert_eq!(
        option(followed[0], "model")["currentValue"],
        "openai/configured-model"
    );
    assert!(
        text_of(&updates(&log, id, "agent_message_chunk"))
            .contains("model: openai/configured-model")
    );
}

#[test]
fn the_approvals_option_answers_without_asking() {
    let server = ScriptedServer::start(responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let summary = drive(
        &env,
        &["--set=approvals=allow", "Write the note and show it"],
    );
    assert_eq!(
        option(&summary["set"][0], "approvals")["currentValue"],
        "allow"
    );
    let log = log_of(&summary);
    assert!(log.iter().all(|e| e["kind"] != "permission"), "{log:#?}");
    assert_eq!(
        std::fs::read_to_string(env.project.join("note.txt")).unwrap(),
        "acp was here\n"
    );
}

#[test]
fn usage_commands_and_title_arrive_as_updates() {
    let server = echo();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let config = std::fs::read_to_string(&env.config).unwrap();
    std::fs::write(
        &env.config,
        format!("{config}prices:\n  \"openai/*\": {{input: 1000000, output: 1000000}}\n"),
    )
    .unwrap();
    let commands = env.project.join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("haiku.md"),
        "---\ndescription: Write a haiku\nargument-hint: TOPIC\n---\nWrite a haiku about $ARGUMENTS\n",
    )
    .unwrap();
    let summary = drive(
        &env,
        &["Plan the garden", "/haiku tomatoes", "/rename Garden plan"],
    );
    let id = summary["sessionId"].as_str().unwrap();
    let log = log_of(&summary);

    // The commands follow the session/new answer: the built-ins and the project's.
    let announced = updates(&log, id, "available_commands_update");
    assert_eq!(announced.len(), 1, "{log:#?}");
    let names: Vec<&str> = announced[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for name in ["model", "rename", "compact", "haiku"] {
        assert!(names.contains(&name), "{names:?}");
    }
    // A custom command is sent as its expanded prompt.
    let sent = server.requests();
    assert_eq!(last_user_text(&sent[1]), "Write a haiku about tomatoes");

    // After each model call: the context used of its limit, and the cost so far.
    let usage = updates(&log, id, "usage_update");
    assert_eq!(usage.len(), 2, "{log:#?}");
    assert_eq!(usage[0]["used"], 19, "{:#}", usage[0]);
    assert!(usage[0]["size"].as_u64().unwrap() > 19, "{:#}", usage[0]);
    assert_eq!(usage[0]["cost"]["currency"], "USD");
    assert_eq!(usage[0]["cost"]["amount"], 19.0);
    assert_eq!(usage[1]["cost"]["amount"], 38.0);

    // The title: from the first prompt, then renamed.
    let titles: Vec<&str> = updates(&log, id, "session_info_update")
        .iter()
        .filter_map(|u| u["title"].as_str())
        .collect();
    assert_eq!(titles, ["Plan the garden", "Garden plan"], "{log:#?}");
    assert!(text_of(&updates(&log, id, "agent_message_chunk")).contains("renamed: Garden plan"));
}

#[test]
fn a_call_waiting_for_approval_is_pending_until_allowed() {
    let server = ScriptedServer::start(responder());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let summary = drive(&env, &["Write the note and show it"]);
    let id = summary["sessionId"].as_str().unwrap();
    let log = log_of(&summary);
    // The status of each update of the write call; a `tool_call` without one is
    // `pending` (the schema's default, left out on the wire).
    let status = |e: &Value| -> Option<String> {
        let u = &e["update"];
        if e["kind"] != "update" || e["sessionId"] != id || u["toolCallId"] != "call_w" {
            return None;
        }
        match (u["sessionUpdate"].as_str(), u["status"].as_str()) {
            (_, Some(status)) => Some(status.to_string()),
            (Some("tool_call"), None) => Some("pending".to_string()),
            _ => None,
        }
    };
    let asked = log
        .iter()
        .position(|e| {
            e["kind"] == "permission" && e["request"]["toolCall"]["toolCallId"] == "call_w"
        })
        .unwrap_or_else(|| panic!("{log:#?}"));
    let before: Vec<String> = log[..asked].iter().filter_map(status).collect();
    assert_eq!(before, ["pending"], "{log:#?}");
    let after: Vec<String> = log[asked..].iter().filter_map(status).collect();
    assert_eq!(after, ["in_progress", "completed"], "{log:#?}");
}

#[cfg(unix)]
#[test]
fn the_tui_resumes_a_session_an_editor_started() {
    let server = echo();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, KEY);
    let summary = drive(&env, &["Remember the word pineapple"]);
    let id = summary["sessionId"].as_str().unwrap();
    let term_env = term::Env {
        home: &env.home,
        amplifier_home: &env.amplifier_home,
        config: &env.config,
        cwd: &env.project,
    };
    let tui = term::Pty::spawn(env!("CARGO_BIN_EXE_arbor"), &["--resume", id], &term_env);
    assert!(
        tui.wait_text(
            "You said: Remember the word pineapple.",
            std::time::Duration::from_secs(60)
        )
        .is_some(),
        "the TUI did not open the session:\n{}",
        tui.screen()
    );
}

#[test]
fn bad_session_requests_get_json_rpc_errors() {
    let env = TestEnv::new();
    let input = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/list","params":{"cwd":"relative/dir"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/list","params":{"cursor":"not-ours"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"session/close","params":{"sessionId":"nope"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"session/resume","params":{"cwd":"/tmp"}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"session/set_config_option","params":{"sessionId":"nope","configId":"model","value":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"session/set_config_option","params":{"sessionId":"nope"}}"#,
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
    let error = |id: u64| {
        let answer = answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {answers:#?}"));
        assert_eq!(answer["error"]["code"], -32602, "{answer:#}");
        answer["error"]["message"].as_str().unwrap().to_string()
    };
    assert_eq!(error(2), "cwd must be absolute: relative/dir");
    assert_eq!(error(3), "not a session/list cursor: not-ours");
    assert_eq!(error(4), "no open session nope");
    assert!(error(5).contains("sessionId"));
    assert_eq!(error(6), "no open session nope");
    assert!(error(7).contains("missing field"));
    assert_eq!(answers.len(), 7, "{answers:#?}");
}
