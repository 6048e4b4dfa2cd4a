//! Agent trees end to end through the real binary (issue 12, SPEC §11): `arbor run
//! --agent helpdesk` whose model calls `transfer_to_agent(billing)` ends with billing's
//! answer in one session, `session show --json` reports the active agent, `session
//! resume` sends the next message to the agent ADK's selection picks, and `agent
//! validate` refuses a `sub_agents` cycle. The provider is a scripted loopback server
//! answering by the agent whose instruction opens the system prompt.

use crate::support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::{
    Reply, ScriptedServer, TestEnv, content_text, jsonl_lines, sse_text, sse_tool_calls,
};

fn write_agent(env: &TestEnv, name: &str, frontmatter: &str) {
    let dir = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.md")),
        format!("---\nmeta:\n  name: {name}\n  description: The {name} desk\n{frontmatter}---\nYou are {name}.\n"),
    )
    .unwrap();
}

/// helpdesk (sub_agents billing, tech), billing (`billing_extra` frontmatter), tech.
fn helpdesk_tree(env: &TestEnv, billing_extra: &str) {
    write_agent(env, "helpdesk", "sub_agents: [billing, tech]\n");
    write_agent(env, "billing", billing_extra);
    write_agent(env, "tech", "");
}

/// The agent whose instruction opens the request's system prompt.
fn agent_of(body: &Value) -> String {
    let system = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "system"))
        .map(content_text)
        .unwrap_or_default();
    ["helpdesk", "billing", "tech"]
        .into_iter()
        .find(|a| system.starts_with(&format!("You are {a}.")))
        .unwrap_or("?")
        .to_string()
}

/// helpdesk hands anything about an invoice to billing and answers the rest itself;
/// billing and tech answer with their name.
fn desk_server() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        let agent = agent_of(&body);
        let last = support::last_user_text(&body);
        let last_role = support::last_role(&body);
        let reply = if agent == "helpdesk" && last.contains("invoice") && last_role == "user" {
            sse_tool_calls(&[(
                "call_t1",
                "transfer_to_agent",
                json!({"agent_name": "billing"}),
            )])
        } else {
            sse_text(&format!("{agent} answers: {last}"))
        };
        Box::pin(async move { Reply::Sse(reply) })
    }))
}

/// Runs `arbor args…` in `env`; fails the test (with stderr) unless it succeeds.
fn run_ok(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let out = env.cmd().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The desk server and an environment using it, with [`helpdesk_tree`].
fn desk(billing_extra: &str) -> (ScriptedServer, TestEnv) {
    let server = desk_server();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-x");
    helpdesk_tree(&env, billing_extra);
    (server, env)
}

fn json_of(cmd: &mut assert_cmd::Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

fn transfer_enum(body: &Value) -> Value {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["function"]["name"] == "transfer_to_agent")
        .map(|t| t["function"]["parameters"]["properties"]["agent_name"]["enum"].clone())
        .unwrap_or(Value::Null)
}

#[test]
fn a_transfer_answers_in_the_same_session_and_the_next_message_stays_with_billing() {
    let (server, env) = desk("");

    let out = run_ok(
        &env,
        &[
            "run",
            "--agent",
            "helpdesk",
            "--output-format",
            "jsonl",
            "where is my invoice?",
        ],
    );
    let lines = jsonl_lines(&out.stdout);
    let last = lines.last().unwrap();
    assert_eq!(last["status"], "success");
    assert_eq!(last["response"], "billing answers: where is my invoice?");
    let transfer = lines
        .iter()
        .find(|e| e["event"] == "agent:transfer")
        .expect("an agent:transfer event");
    assert_eq!(transfer["data"]["from"], "helpdesk");
    assert_eq!(transfer["data"]["to"], "billing");
    let id = last["session_id"].as_str().unwrap().to_string();

    // Two model calls, one per agent, each with its own instruction and targets.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(agent_of(&requests[0]), "helpdesk");
    assert_eq!(transfer_enum(&requests[0]), json!(["billing", "tech"]));
    assert_eq!(agent_of(&requests[1]), "billing");
    assert_eq!(transfer_enum(&requests[1]), json!(["helpdesk", "tech"]));
    assert!(tool_names(&requests[1]).contains(&"transfer_to_agent".to_string()));

    // One session, no sub-session; every message records its author.
    let list = json_of(env.cmd().args(["session", "list", "--json"]));
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let show = json_of(
        env.cmd()
            .args(["session", "show", &id, "--json", "--transcript"]),
    );
    assert_eq!(show["active_agent"], "billing");
    assert_eq!(show["agent_name"], "helpdesk");
    let transcript = show["transcript"].as_array().unwrap();
    let authors: Vec<(&str, &str)> = transcript
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["metadata"]["author"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        authors,
        [
            ("user", "-"),
            ("assistant", "helpdesk"),
            ("tool", "helpdesk"),
            ("assistant", "billing")
        ]
    );
    assert_eq!(transcript[2]["metadata"]["transfer_to_agent"], "billing");

    // The next message goes to billing, with billing's instruction.
    run_ok(
        &env,
        &[
            "session",
            "resume",
            &id,
            "and the next one?",
            "--output-format",
            "json",
        ],
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(agent_of(&requests[2]), "billing");
    let show = json_of(env.cmd().args(["session", "show", &id, "--json"]));
    assert_eq!(show["active_agent"], "billing");
}

#[test]
fn an_agent_that_may_not_return_to_its_parent_hands_the_next_message_back() {
    let (server, env) = desk("disallow_transfer_to_parent: true\n");

    let out = run_ok(
        &env,
        &[
            "run",
            "--agent",
            "helpdesk",
            "--output-format",
            "json",
            "my invoice?",
        ],
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["response"], "billing answers: my invoice?");
    let id = result["session_id"].as_str().unwrap().to_string();
    // billing cannot transfer to its parent, only to its peer.
    let requests = server.requests();
    assert_eq!(agent_of(&requests[1]), "billing");
    assert_eq!(transfer_enum(&requests[1]), json!(["tech"]));

    let show = json_of(env.cmd().args(["session", "show", &id, "--json"]));
    assert_eq!(show["active_agent"], "helpdesk");
    run_ok(
        &env,
        &[
            "session",
            "resume",
            &id,
            "thanks",
            "--output-format",
            "json",
        ],
    );
    let requests = server.requests();
    assert_eq!(agent_of(requests.last().unwrap()), "helpdesk");
}

#[test]
fn agent_validate_refuses_a_sub_agents_cycle() {
    let env = TestEnv::new();
    write_agent(&env, "a", "sub_agents: [b]\n");
    write_agent(&env, "b", "sub_agents: [a]\n");
    write_agent(&env, "c", "sub_agents: [ghost]\n");
    let out = env.cmd().args(["agent", "validate"]).output().unwrap();
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("sub_agents cycle: a → b → a"), "{stdout}");
    assert!(stdout.contains("unknown agent 'ghost'"), "{stdout}");
    // A run with an agent of the cycle is refused before any model call.
    let out = env
        .cmd()
        .args(["run", "--agent", "a", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn text_output_keeps_the_answer_on_stdout_and_marks_the_hand_off_on_stderr() {
    let (_server, env) = desk("");
    let out = run_ok(&env, &["run", "--agent", "helpdesk", "an invoice question"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.trim(), "billing answers: an invoice question");
    assert!(stderr.contains("[helpdesk → billing]"), "{stderr}");
    let list = json_of(env.cmd().args(["session", "list", "--json"]));
    let id = list[0]["session_id"].as_str().unwrap().to_string();
    let show = env.cmd().args(["session", "show", &id]).output().unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("active    billing"), "{text}");
}
