//! The kernel sandbox of `bash` (issue #22) through the real binary and a scripted
//! loopback provider: a `--yes` agent's command cannot write outside the working
//! directory, cannot read a deny-listed key (`~/.ssh/id_rsa` under the temp HOME,
//! arbor's own config file), cannot connect to a loopback listener the test runs
//! (and can with `sandbox.network: allow`); `required: true` with `mode: off` refuses
//! the command; `doctor` reports the sandbox. These run for real, in CI too (the
//! machines have Landlock and user namespaces).

use crate::support;

use std::net::TcpListener;

use serde_json::{Value, json};
use support::*;

const SHELL_AGENT: &str = "---\nmeta:\n  name: shell\n  description: Runs commands.\n\
tools:\n  - module: tool-filesystem\n    config:\n      read_only: false\n  - module: tool-bash\n---\nYou run commands.\n";

const KEY: &str = "PRIVATE-KEY-abcdef-123456";

/// Runs one `bash` call of `command` under `sandbox_yaml` (a `sandbox:` section, or
/// empty for the defaults); returns the tool result the model got back (parsed when
/// it is the bash JSON, else as a string) and the environment.
fn run_bash(command: &str, sandbox_yaml: &str) -> (Value, TestEnv) {
    run_bash_with(command, sandbox_yaml, &[])
}

/// [`run_bash`] with extra environment variables for the arbor process.
fn run_bash_with(command: &str, sandbox_yaml: &str, vars: &[(&str, &str)]) -> (Value, TestEnv) {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": command}),
        )])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-config-key-1");
    env.append_config(sandbox_yaml);
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("shell.md"), SHELL_AGENT).unwrap();
    let ssh = env.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), KEY).unwrap();

    let out = env
        .cmd()
        .envs(vars.iter().copied())
        .args([
            "run",
            "--agent",
            "shell",
            "--yes",
            "--output-format",
            "json",
            "go",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let text = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "b1")
        .map(content_text)
        .unwrap();
    let result = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (result, env)
}

/// A loopback listener and a command that connects to it with bash's `/dev/tcp`.
fn listener() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'");
    (listener, connect)
}

fn stdout(result: &Value) -> String {
    result["stdout"].as_str().unwrap_or_default().to_string()
}

#[test]
fn sandboxed_bash_writes_only_inside_reads_no_keys_and_has_no_network() {
    let (listener, connect) = listener();
    let command = format!(
        "touch inside && echo in-ok; touch ../outside; echo out=$?; \
         cat \"$HOME/.ssh/id_rsa\"; echo key=$?; cat \"$ARBOR_CONFIG\"; \
         echo tmp=$(touch \"$TMPDIR/t\" && echo ok); {connect}; echo net=$?"
    );
    let (result, env) = run_bash(&command, "");
    let printed = stdout(&result);
    assert!(printed.contains("in-ok"), "{result}");
    assert!(env.project.join("inside").exists());
    assert!(printed.contains("out=1"), "{result}");
    assert!(!env.dir.path().join("outside").exists(), "a write escaped");
    assert!(printed.contains("key=1"), "{result}");
    assert!(
        !result.to_string().contains(KEY),
        "the key was read: {result}"
    );
    assert!(
        !printed.contains("sk-test-config-key-1") && !printed.contains("[REDACTED]"),
        "arbor's config was read: {result}"
    );
    assert!(printed.contains("tmp=ok"), "{result}");
    assert!(!printed.contains("net=0"), "{result}");
    assert!(
        listener.accept().is_err(),
        "the sandboxed command connected to the loopback listener"
    );
}

#[test]
fn network_allow_lets_the_command_connect_and_still_confines_writes() {
    let (listener, connect) = listener();
    let command = format!("{connect}; echo net=$?; touch ../outside; echo out=$?");
    let (result, env) = run_bash(&command, "sandbox: {network: allow}\n");
    let printed = stdout(&result);
    assert!(printed.contains("net=0"), "{result}");
    assert!(listener.accept().is_ok(), "no connection arrived");
    assert!(printed.contains("out=1"), "{result}");
    assert!(!env.dir.path().join("outside").exists());
}

#[test]
fn mode_off_runs_unconfined_and_required_refuses_it() {
    let (result, env) = run_bash("touch ../outside; echo out=$?", "sandbox: {mode: off}\n");
    assert!(stdout(&result).contains("out=0"), "{result}");
    assert!(env.dir.path().join("outside").exists());

    let (result, env) = run_bash(
        "touch ../outside; echo out=$?",
        "sandbox: {mode: off, required: true}\n",
    );
    assert_eq!(
        result,
        json!("refused: sandbox.required is true and sandbox.mode is off")
    );
    assert!(!env.dir.path().join("outside").exists());
}

#[test]
fn doctor_reports_the_sandbox() {
    let env = TestEnv::new();
    std::fs::write(&env.config, "sandbox: {network: allow, required: true}\n").unwrap();
    let out = env.cmd().arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "sandbox",
        "mode: auto, network: allow, required: true",
        "user namespaces: yes",
        "writes  confined",
        "keys    hidden",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    let abi: i32 = text
        .split("Landlock ABI ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no Landlock ABI:\n{text}"));
    assert!(abi >= 4, "{text}");
    assert!(text.contains("network allowed"), "{text}");
    assert!(text.contains("status  full"), "{text}");
}

/// Issue 22: a provider key exported in arbor's environment is not inherited by the
/// command, sandboxed or not (the output scrubbing would hide it from the model, but a
/// command could still use it).
#[test]
fn provider_keys_in_the_environment_are_not_inherited() {
    let vars = [
        ("ANTHROPIC_API_KEY", "sk-ant-env-secret-999"),
        ("SOME_TOOL_API_KEY", "tool-key-12345"),
        ("ARBOR_TEST_PLAIN", "plain-value"),
    ];
    let command =
        "echo a=${ANTHROPIC_API_KEY:-unset} t=${SOME_TOOL_API_KEY:-unset} p=$ARBOR_TEST_PLAIN";
    for yaml in ["", "sandbox: {mode: off}\n"] {
        let (result, _env) = run_bash_with(command, yaml, &vars);
        assert!(
            stdout(&result).contains("a=unset t=unset p=plain-value"),
            "{yaml}: {result}"
        );
    }
}

/// Issue 39 item 3: a command the sandbox stopped comes back with a note naming the
/// sandbox, what it blocked and how to allow it — no network (a refused socket, a
/// name that cannot resolve), a write outside the allowed paths, a hidden key file —
/// so the model does not chase a DNS problem. A command that failed on its own gets
/// no note.
#[test]
fn a_command_the_sandbox_stopped_says_so_and_how_to_allow_it() {
    let note = |result: &Value| result["sandbox"].as_str().unwrap_or_default().to_string();
    let (_listener, connect) = listener();
    let (result, _env) = run_bash(&connect, "");
    let said = note(&result);
    assert!(
        said.contains("sandbox") && said.contains("network") && said.contains("network: allow"),
        "{result}"
    );
    let (result, _env) = run_bash("bash -c 'echo > /dev/tcp/example.com/80'", "");
    let said = note(&result);
    assert!(
        said.contains("network") && said.contains("not a DNS problem"),
        "{result}"
    );
    let (result, _env) = run_bash("touch ../outside", "");
    let said = note(&result);
    assert!(
        said.contains("outside") && said.contains("allowed_write_paths"),
        "{result}"
    );
    let (result, _env) = run_bash("cat \"$HOME/.ssh/id_rsa\"", "");
    let said = note(&result);
    assert!(said.contains("hidden") && said.contains(".ssh"), "{result}");
    let (result, _env) = run_bash("ls no-such-file", "");
    assert!(result.get("sandbox").is_none(), "{result}");
}
