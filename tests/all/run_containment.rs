//! Issue 22 "Resources" and "Secrets" through the real binary: `arbor run` treats
//! SIGTERM, SIGHUP and SIGQUIT as it treats Ctrl+C (the running command's process group
//! is killed, the final object says `cancelled`), and no key of the environment reaches
//! what `arbor run` prints — not the prompt echo, a tool's arguments or result, nor the
//! answer, even streamed in pieces — in any output format.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

const SHELL_AGENT: &str = "---\nmeta:\n  name: shell\n  description: Runs commands.\n\
tools:\n  - module: tool-bash\n---\nYou run commands.\n";

/// An environment whose user agent `shell` has `bash`, its model at `server`.
fn shell_env(server: &ScriptedServer, key: &str) -> TestEnv {
    let env = TestEnv::new();
    env.use_openai(&server.base_url, key);
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("shell.md"), SHELL_AGENT).unwrap();
    env
}

/// Runs `sleep 3; touch M` under `--yes`, sends `signal` once the command started, and
/// checks that the run ends at once, cancelled, with the command's process group gone
/// and `M` never written.
#[cfg(unix)]
fn a_signal_cancels_the_run_and_kills_the_command(signal: &str) {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": "echo $$ > pgid; touch started; sleep 3; touch M"}),
        )])),
        Reply::Sse(sse_text("never asked")),
    ]);
    let env = shell_env(&server, "sk-signal-test-key-1234");
    let mut child = env
        .std_cmd()
        .args([
            "run",
            "--agent",
            "shell",
            "--yes",
            "--output-format",
            "json",
            "wait a bit",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = env.project.join("started");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the command never started");
        assert!(child.try_wait().unwrap().is_none(), "arbor ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    let command_started = Instant::now();
    let pgid: i32 = std::fs::read_to_string(env.project.join("pgid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "SIG{signal}: arbor still runs 10 s later"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let ended_after = command_started.elapsed();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "SIG{signal}");
    assert!(
        out.status.code().is_some(),
        "SIG{signal} ended arbor by the signal instead of a cancelled turn"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "SIG{signal}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(v["status"], "cancelled", "SIG{signal}: {v}");
    assert!(
        ended_after < Duration::from_secs(3),
        "SIG{signal}: {ended_after:?}"
    );
    let alive = live_members(pgid);
    assert!(
        alive.is_empty(),
        "SIG{signal}: the command's process group is alive: {alive:?}"
    );
    // Past the moment the command would have written M.
    std::thread::sleep(Duration::from_secs(4).saturating_sub(command_started.elapsed()));
    assert!(
        !env.project.join("M").exists(),
        "SIG{signal}: the command ran on"
    );
    assert_eq!(server.requests().len(), 1, "SIG{signal}");
}

/// The processes of group `pgid` that are not zombies (a killed process stays a
/// zombie until whoever inherited it reaps it; it runs nothing), from `/proc`.
#[cfg(unix)]
fn live_members(pgid: i32) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid) && fields[0] != "Z" {
            out.push(stat);
        }
    }
    out
}

#[cfg(unix)]
#[test]
fn sigterm_cancels_the_run_like_ctrl_c() {
    a_signal_cancels_the_run_and_kills_the_command("TERM");
}

#[cfg(unix)]
#[test]
fn sighup_cancels_the_run_like_ctrl_c() {
    a_signal_cancels_the_run_and_kills_the_command("HUP");
}

#[cfg(unix)]
#[test]
fn sigquit_cancels_the_run_like_ctrl_c() {
    a_signal_cancels_the_run_and_kills_the_command("QUIT");
}

const KEY: &str = "sk-test-SECRET-5f0c9a1d2e3b4c5d";

/// An OpenAI stream answering `pieces` as separate deltas.
fn sse_pieces(pieces: &[&str]) -> String {
    let chunk = |delta: Value, finish: Option<&str>| {
        let c = json!({
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "scripted-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {c}\n\n")
    };
    let mut out = chunk(json!({"role": "assistant", "content": ""}), None);
    for piece in pieces {
        out += &chunk(json!({"content": piece}), None);
    }
    out += &chunk(json!({}), Some("stop"));
    out + "data: [DONE]\n\n"
}

/// The key in the environment (not in the config): a prompt quoting it, a model that
/// passes it to a command and streams it back split in two pieces. Nothing printed
/// holds it, in any format; the answer around it is still printed.
#[test]
fn no_key_reaches_what_arbor_run_prints() {
    let (head, tail) = KEY.split_at(9);
    for format in ["text", "json", "jsonl"] {
        let server = ScriptedServer::sequence(vec![
            Reply::Sse(sse_tool_calls(&[(
                "b1",
                "bash",
                json!({"command": format!("echo {KEY}")}),
            )])),
            Reply::Sse(sse_pieces(&["The key is ", head, tail, " — keep it."])),
        ]);
        let env = shell_env(&server, "placeholder");
        std::fs::write(
            &env.config,
            format!(
                "providers:\n  - module: provider-openai\n    config:\n      base_url: \"{}\"\n      default_model: scripted-model\n",
                server.base_url
            ),
        )
        .unwrap();
        let out = env
            .cmd()
            .env("OPENAI_API_KEY", KEY)
            .args([
                "run",
                "--agent",
                "shell",
                "--yes",
                "--output-format",
                format,
                &format!("print my key {KEY} please"),
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{format}: {stdout}\n{stderr}");
        assert_eq!(server.requests().len(), 2, "{format}");
        for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            assert!(!text.contains(KEY), "{format} {name}: {text}");
            assert!(!text.contains(tail), "{format} {name}: {text}");
        }
        assert!(
            stdout.contains("The key is [REDACTED] — keep it."),
            "{format}: {stdout}"
        );
        if format == "jsonl" {
            assert!(
                stdout.contains("print my key [REDACTED] please"),
                "{stdout}"
            );
            assert!(stdout.contains("echo [REDACTED]"), "{stdout}");
        }
    }
}
