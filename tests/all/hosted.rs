//! External ACP agents hosted as nodes of arbor's tree (issue 37 item 3), through
//! the real `arbor run`: a root's `task` to an agent file with `acp:` starts that
//! agent with arbor as its ACP client. The real agent (codex-acp) is in
//! `hosted_codex.rs`; here a small scripted agent (`tests/hosted/fake_agent.mjs`)
//! covers the client side's edges: its updates stored in arbor's layout, a
//! permission request through the approval gate, fs calls confined to the node, a
//! writing node in its worktree, a terminal run as `bash`, cost against the budget,
//! `session/load` on resume, a crash and a refused `initialize` failing the node with
//! the agent's own message. The helpers are shared with `hosted_codex.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::support::*;

fn fake_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hosted/fake_agent.mjs")
}

/// What the loopback server answers a Responses API request (codex's) with.
pub(crate) type CodexReply = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// A root model that delegates `instruction` to agent `agent` (call `t1`) and then
/// answers "Root done."; a request in the Responses API shape (codex's) gets what
/// `codex` makes of it.
pub(crate) fn root_model(
    agent: &'static str,
    instruction: &'static str,
    codex: Option<CodexReply>,
) -> ScriptedServer {
    ScriptedServer::start(Arc::new(move |body: Value| {
        let reply = if body.get("input").is_some() {
            Reply::Sse(codex.as_ref().map(|c| c(&body)).unwrap_or_default())
        } else if last_role(&body) == "tool" {
            Reply::Sse(sse_text("Root done."))
        } else {
            Reply::Sse(sse_tool_calls(&[(
                "t1",
                "task",
                json!({"agent": agent, "instruction": instruction}),
            )]))
        };
        Box::pin(async move { reply })
    }))
}

/// The task result the root's model got for call `t1` (parsed), from the request
/// that carried it.
pub(crate) fn task_result_sent(server: &ScriptedServer) -> Value {
    let request = server
        .requests()
        .into_iter()
        .filter(|r| r.get("messages").is_some())
        .find(|r| r.to_string().contains("\"tool_call_id\":\"t1\""))
        .unwrap_or_else(|| {
            panic!(
                "no root request holds the task result: {:?}",
                server.requests()
            )
        });
    let text = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "t1")
        .map(content_text)
        .unwrap();
    serde_json::from_str(&text).unwrap_or_else(|_| json!({"response": text}))
}

/// Writes user agent `name` (`$AMPLIFIER_HOME/agents`: an untrusted project's own
/// agent files may not add tools such as `tool-bash`) with `acp:` running `command`
/// with `args` and `env`, and `extra` frontmatter lines.
pub(crate) fn write_acp_agent(
    env: &TestEnv,
    name: &str,
    command: &Path,
    args: &[&str],
    vars: &[(&str, String)],
    extra: &str,
) {
    let dir = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    let mut text = format!(
        "---\nmeta:\n  name: {name}\n  description: A hosted ACP agent\nacp:\n  command: {:?}\n  args: [{}]\n",
        command.display().to_string(),
        args.join(", ")
    );
    if !vars.is_empty() {
        text.push_str("  env:\n");
        for (k, v) in vars {
            text.push_str(&format!("    {k}: {v:?}\n"));
        }
    }
    text.push_str(extra);
    text.push_str("---\nYou are hosted.\n");
    std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
}

pub(crate) fn write_fake(env: &TestEnv, mode: &str) {
    write_fake_with(env, mode, "");
}

/// [`write_fake`] with `extra` frontmatter lines (`tools:` …).
pub(crate) fn write_fake_with(env: &TestEnv, mode: &str, extra: &str) {
    let script = fake_agent().display().to_string();
    write_acp_agent(env, "fake", Path::new("node"), &[&script, mode], &[], extra);
}

pub(crate) fn run(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let mut cmd = env.cmd();
    cmd.arg("run").args(args);
    cmd.timeout(std::time::Duration::from_secs(120));
    cmd.output().unwrap()
}

/// The scripted agent's stream lands in the child's transcript in arbor's layout:
/// thinking and text blocks, its tool call with its result, its plan as `todo`; its
/// cost (`usage_update`) and tokens (the prompt's `usage`) in the child's usage, the
/// agent's name as its model, the file its edit's diff names among the node's
/// changed files.
#[test]
fn a_hosted_agents_updates_are_stored_as_arbors_own_turns() {
    let env = TestEnv::new();
    let server = root_model("fake", "Say something", None);
    env.use_openai(&server.base_url, "sk-root");
    write_fake(&env, "answer");
    let out = run(&env, &["Delegate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = task_result_sent(&server);
    assert_eq!(
        result["response"], "fake answer to: Say something",
        "{result}"
    );
    let child = result["session_id"].as_str().unwrap().to_string();
    let transcript = read_jsonl(&env.sessions_dir().join(&child).join("transcript.jsonl"));
    let text = serde_json::to_string(&transcript).unwrap();
    assert!(text.contains("\"thinking\":\"thinking it over\""), "{text}");
    assert!(text.contains("looked: nothing odd"), "{text}");
    assert!(text.contains("\"tool\":\"todo\""), "{text}");
    let tool = transcript
        .iter()
        .find(|m| m["role"] == "tool" && m["content"] == "looked: nothing odd");
    assert_eq!(tool.unwrap()["name"], "read");
    let metadata = env.metadata(&child);
    assert_eq!(metadata["usage"]["cost"], 0.25, "{metadata}");
    assert_eq!(metadata["usage"]["input_tokens"], 11, "{metadata}");
    assert_eq!(metadata["usage"]["output_tokens"], 5, "{metadata}");
    assert_eq!(metadata["model"], "acp/fake-agent 1.0.0", "{metadata}");
    // The file its edit's diff names is among the node's changed files.
    let changed = &metadata["files_changed"][0];
    assert_eq!(changed["path"], "notes.md", "{metadata}");
    assert_eq!(changed["lines_added"], 1, "{metadata}");
    assert_eq!(metadata["todos"][1]["status"], "in_progress", "{metadata}");
}

/// A permission request goes through the approval gate: a deny rule refuses it even
/// with `--yes`; `--yes` allows it without one; headless without `--yes` refuses.
#[test]
fn a_hosted_agents_permission_request_is_decided_by_the_approval_gate() {
    for (rule, yes, chosen) in [
        (true, true, "no-once"),
        (false, true, "yes-once"),
        (false, false, "no-once"),
    ] {
        let env = TestEnv::new();
        let server = root_model("fake", "Clean the build", None);
        env.use_openai(&server.base_url, "sk-root");
        if rule {
            env.append_config("approvals:\n  \"bash(rm *)\": deny\n");
        }
        write_fake(&env, "permission");
        let args: &[&str] = if yes {
            &["--yes", "Delegate"]
        } else {
            &["Delegate"]
        };
        let out = run(&env, args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let result = task_result_sent(&server);
        let response = result["response"].as_str().unwrap();
        assert!(
            response.contains(&format!("\"optionId\":\"{chosen}\"")),
            "rule {rule}, --yes {yes}: {response}"
        );
    }
}

/// fs calls are served within the node: a write and a read in its working directory
/// work (the write as arbor's `write_file`, recorded in `files_changed`); a read and
/// a write outside it are refused.
#[test]
fn a_hosted_agents_fs_calls_are_confined_to_its_node() {
    let env = TestEnv::new();
    let server = root_model("fake", "Take notes", None);
    env.use_openai(&server.base_url, "sk-root");
    std::fs::write(env.project.parent().unwrap().join("secret.txt"), "secret").unwrap();
    write_fake(&env, "fs");
    let out = run(&env, &["--yes", "Delegate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = task_result_sent(&server);
    let response = result["response"].as_str().unwrap();
    assert!(response.contains("write inside: {}"), "{response}");
    assert!(
        response.contains("read inside: {\"content\":\"written by the hosted agent\\n\"}"),
        "{response}"
    );
    assert!(response.contains("read outside: error:"), "{response}");
    assert!(!response.contains("secret\""), "{response}");
    assert!(response.contains("write outside: error:"), "{response}");
    assert!(!env.project.parent().unwrap().join("escaped.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.project.join("hosted-note.txt")).unwrap(),
        "written by the hosted agent\n"
    );
}

/// A writing node in a git repository works in its own worktree (the agent's
/// `session/new` cwd), and its work comes home before the root reads its answer.
#[test]
fn a_hosted_agent_writes_in_its_worktree_and_its_work_comes_home() {
    let env = TestEnv::new();
    crate::isolation::git_project(&env);
    let server = root_model("fake", "Take notes", None);
    env.use_openai(&server.base_url, "sk-root");
    write_fake(&env, "fs");
    let out = run(&env, &["--yes", "Delegate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = task_result_sent(&server);
    let response = result["response"].as_str().unwrap();
    let cwd = response.lines().next().unwrap().trim_start_matches("cwd: ");
    assert_ne!(Path::new(cwd), env.project, "{response}");
    assert!(response.contains("write inside: {}"), "{response}");
    assert_eq!(
        std::fs::read_to_string(env.project.join("hosted-note.txt")).unwrap(),
        "written by the hosted agent\n",
        "{result}"
    );
    assert!(
        result["isolation"]
            .as_str()
            .unwrap_or_default()
            .contains("merged"),
        "{result}"
    );
}

/// A hosted root resumed by a later `arbor` process loads its earlier ACP session
/// (`session/load`, the agent offering `loadSession`) instead of starting a new one,
/// and the history the agent replays is not stored again.
#[test]
fn a_hosted_node_resumed_by_a_new_process_loads_its_acp_session() {
    let env = TestEnv::new();
    let server = root_model("fake", "unused", None);
    env.use_openai(&server.base_url, "sk-root");
    write_fake(&env, "resumable");
    let out = run(
        &env,
        &["--agent", "fake", "--output-format", "json", "first"],
    );
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        first["response"], "answer in fake-session-1 (sessions opened: 1)",
        "{first}"
    );
    let id = first["session_id"].as_str().unwrap().to_string();
    let out = env
        .cmd()
        .args(["session", "resume", &id, "second"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("answer in fake-session-1 (sessions opened: 0)"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let transcript =
        std::fs::read_to_string(env.sessions_dir().join(&id).join("transcript.jsonl")).unwrap();
    assert!(!transcript.contains("replayed history"), "{transcript}");
    assert_eq!(env.metadata(&id)["acp_session_id"], "fake-session-1");
}

/// The agent's reported cost counts against the node's budget: once spent, the
/// agent is cancelled and the node ends `paused`, as arbor's own sessions do.
#[test]
fn a_hosted_agents_cost_spends_its_budget_and_pauses_the_node() {
    let env = TestEnv::new();
    let server = root_model("fake", "Say something", None);
    env.use_openai(&server.base_url, "sk-root");
    write_fake_with(&env, "answer", "budget:\n  cost_usd: 0.1\n");
    let out = run(&env, &["Delegate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = task_result_sent(&server).to_string();
    assert!(result.contains("status: paused"), "{result}");
    assert!(result.contains("spent: $0.2500/$0.1"), "{result}");
}

/// `authenticate` uses the method the agent file names (`acp.auth`), else the first
/// `env_var` method whose variables are all set, else none; a method the agent does
/// not offer fails the node naming the ones it does.
#[test]
fn a_hosted_agent_authenticates_with_the_method_its_agent_file_or_environment_gives() {
    for (extra, expected) in [
        ("", "authenticated with: none"),
        (
            "  env:\n    FAKE_AGENT_KEY: k-123\n",
            "authenticated with: fake-key",
        ),
        ("  auth: fake-login\n", "authenticated with: fake-login"),
        (
            "  auth: sso\n",
            "acp.auth 'sso' is not one of the agent's auth methods (fake-login, fake-key)",
        ),
    ] {
        let env = TestEnv::new();
        let server = root_model("fake", "Who are you?", None);
        env.use_openai(&server.base_url, "sk-root");
        let script = fake_agent().display().to_string();
        // `extra` continues the `acp:` mapping.
        write_acp_agent(
            &env,
            "fake",
            Path::new("node"),
            &[&script, "whoami"],
            &[],
            "",
        );
        let file = env.amplifier_home.join("agents/fake.md");
        let text = std::fs::read_to_string(&file).unwrap();
        let text = text.replacen(
            "---\nYou are hosted.",
            &format!("{extra}---\nYou are hosted."),
            1,
        );
        std::fs::write(&file, text).unwrap();
        let out = run(&env, &["Delegate"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let result = task_result_sent(&server).to_string();
        assert!(result.contains(expected), "{extra}: {result}");
    }
}

/// A terminal runs its command as arbor's `bash` call, so only where the node may
/// run commands: refused for an agent without `tool-bash` (the bundle keeps it from
/// sub-sessions), run with its exit and output for one that adds it.
#[test]
fn a_hosted_agents_terminal_runs_as_arbors_bash() {
    for (tools, expected) in [
        ("", "bash is not mounted for this agent"),
        (
            "tools:\n  - module: tool-bash\n",
            "terminal exit: {\"exitCode\":0",
        ),
    ] {
        let env = TestEnv::new();
        let server = root_model("fake", "Run it", None);
        env.use_openai(&server.base_url, "sk-root");
        write_fake_with(&env, "terminal", tools);
        let out = run(&env, &["--yes", "Delegate"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let response = task_result_sent(&server)["response"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(response.contains(expected), "{tools}: {response}");
        if !tools.is_empty() {
            assert!(response.contains("from-terminal"), "{response}");
        }
    }
}

/// An agent that crashes, or refuses `initialize`, fails its node with its own
/// message (stderr tail), and the root goes on.
#[test]
fn a_crash_or_a_refused_initialize_fails_the_node_with_the_agents_message() {
    for (mode, needle) in [
        ("crash", "fatal: the fake model exploded"),
        ("refuse", "unsupported client: fake agent refuses arbor"),
    ] {
        let env = TestEnv::new();
        let server = root_model("fake", "Try", None);
        env.use_openai(&server.base_url, "sk-root");
        write_fake(&env, mode);
        let out = run(&env, &["Delegate"]);
        let result = task_result_sent(&server);
        assert_eq!(result["status"], "failed", "{mode}: {result}");
        let error = result["error"].as_str().unwrap_or_default();
        assert!(error.contains(needle), "{mode}: {result}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Root done."));
    }
}
