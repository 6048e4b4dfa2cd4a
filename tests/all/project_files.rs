//! Issue 34 items 4 and 6 through the real binary: project files are read as arbor
//! reads `@mentions`, and trust covers exactly the agent files the registry loads.
//!
//! - An untrusted repository's `AGENTS.md`, `.amplifier/AGENTS.md`,
//!   `.claude/commands/*.md` or `.amplifier/agents/*.md` linked to a file outside the
//!   project, to `~/.ssh/id_rsa` of the (temp) home, or to `/proc/self/environ`: none
//!   of it reaches a model request or the session store; a link to a file inside the
//!   project still works.
//! - `AGENTS.md → /dev/zero`, or a FIFO as `AGENTS.md` or a command file: `arbor run`
//!   ends promptly with a warning.
//! - In a trusted project, an agent file that adds `tool-mcp` as `x.MD`, with a BOM
//!   before its frontmatter, or as the 2,001st file: the server does not start until
//!   the project is trusted again (or, past the cap, is not loaded at all).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support;
use crate::support::mcp as mcp_support;
use serde_json::Value;
use support::*;

const KEY: &str = "sk-project-files-test";
const OUTSIDE: &str = "OUTSIDE-FILE-MARKER-5521";
const SSH_KEY: &str = "SSH-PRIVATE-KEY-MARKER-9034";
const ENVIRON: &str = "ENVIRON-MARKER-7731";

/// A project (with `.git`) whose home holds a fake `~/.ssh/id_rsa`, with a file
/// outside the project; the three link targets, each with its marker.
fn leaky_env() -> (TestEnv, Vec<(std::path::PathBuf, &'static str)>) {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.join(".git")).unwrap();
    let ssh = env.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(
        ssh.join("id_rsa"),
        format!("-----BEGIN KEY-----\n{SSH_KEY}\n"),
    )
    .unwrap();
    let outside = env.dir.path().join("outside.md");
    std::fs::write(&outside, format!("Secret notes: {OUTSIDE}\n")).unwrap();
    let targets = vec![
        (outside, OUTSIDE),
        (ssh.join("id_rsa"), SSH_KEY),
        ("/proc/self/environ".into(), ENVIRON),
    ];
    (env, targets)
}

fn link(from: &Path, to: &Path) {
    std::fs::create_dir_all(from.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(from);
    std::os::unix::fs::symlink(to, from).unwrap();
}

/// `arbor run` with `args`, the marker in its environment, ended after 30 s.
fn run(env: &TestEnv, args: &[&str]) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = env
        .cmd()
        .env("ARBOR_TEST_LEAK", ENVIRON)
        .timeout(Duration::from_secs(30))
        .args(args)
        .output()
        .unwrap();
    (out, started.elapsed())
}

/// Every request the server got, and every file of arbor's store, free of `marker`.
fn assert_not_leaked(env: &TestEnv, server: &ScriptedServer, marker: &str, what: &str) {
    for request in server.requests() {
        assert!(
            !request.to_string().contains(marker),
            "{what}: {marker} reached the request"
        );
    }
    let stored = files_containing(&env.amplifier_home, marker);
    assert!(stored.is_empty(), "{what}: {marker} stored in {stored:?}");
}

#[test]
fn agents_md_linked_out_of_the_project_never_reaches_the_request() {
    let (env, targets) = leaky_env();
    for name in ["AGENTS.md", ".amplifier/AGENTS.md"] {
        for (target, marker) in &targets {
            let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("ok"))]);
            env.use_openai(&server.base_url, KEY);
            link(&env.project.join(name), target);
            let (out, _) = run(&env, &["run", "--output-format", "json", "hello"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "{name} → {}: {stderr}",
                target.display()
            );
            assert_eq!(server.requests().len(), 1, "{stderr}");
            assert_not_leaked(&env, &server, marker, name);
            assert!(
                stderr.contains("leads outside the project"),
                "{name} → {}: no warning: {stderr}",
                target.display()
            );
            std::fs::remove_file(env.project.join(name)).unwrap();
        }
    }

    // A link to a file inside the project is read.
    std::fs::create_dir_all(env.project.join("docs")).unwrap();
    std::fs::write(env.project.join("docs/guide.md"), "Use tabs, always.").unwrap();
    link(&env.project.join("AGENTS.md"), Path::new("docs/guide.md"));
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("ok"))]);
    env.use_openai(&server.base_url, KEY);
    let (out, _) = run(&env, &["run", "--output-format", "json", "hello"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let system = server.requests()[0]["messages"][0]["content"].to_string();
    assert!(system.contains("Use tabs, always."), "{system}");
}

#[test]
fn command_files_linked_out_of_the_project_are_not_commands() {
    let (env, targets) = leaky_env();
    for dir in [".claude/commands", ".amplifier/commands"] {
        for (target, marker) in &targets {
            let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("ok"))]);
            env.use_openai(&server.base_url, KEY);
            let file = env.project.join(dir).join("leak.md");
            link(&file, target);
            let (out, _) = run(&env, &["run", "--output-format", "json", "/leak now"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            // Not a command: refused as an unknown one (the JSON result says so),
            // nothing sent.
            let said = format!("{}{stderr}", String::from_utf8_lossy(&out.stdout));
            assert!(
                !out.status.success() && said.contains("unknown command /leak"),
                "{dir} → {}: {stderr}",
                target.display()
            );
            assert_not_leaked(&env, &server, marker, dir);
            assert!(server.requests().is_empty());
            std::fs::remove_file(&file).unwrap();
        }
    }
    // Inside the project: a command.
    std::fs::write(env.project.join("prompt.md"), "Review $ARGUMENTS.").unwrap();
    link(
        &env.project.join(".claude/commands/review.md"),
        &env.project.join("prompt.md"),
    );
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("ok"))]);
    env.use_openai(&server.base_url, KEY);
    let (out, _) = run(&env, &["run", "--output-format", "json", "/review a.rs"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(last_user_text(&server.requests()[0]), "Review a.rs.");
}

#[test]
fn agent_files_linked_out_of_the_project_are_not_instructions() {
    let (env, targets) = leaky_env();
    for (target, marker) in &targets {
        let server = ScriptedServer::start(std::sync::Arc::new(|_| {
            Box::pin(async { Reply::Sse(sse_text("ok")) })
        }));
        env.use_openai(&server.base_url, KEY);
        let file = env.project.join(".amplifier/agents/helper.md");
        link(&file, target);
        let (out, _) = run(
            &env,
            &["run", "--agent", "helper", "--output-format", "json", "hi"],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_not_leaked(&env, &server, marker, "agent file");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains(marker) && !stderr.contains(marker),
            "{}: {stderr}",
            target.display()
        );
        let list = env
            .cmd()
            .args(["agent", "list", "--format", "json"])
            .output()
            .unwrap();
        assert!(!String::from_utf8_lossy(&list.stdout).contains(marker));
        std::fs::remove_file(&file).unwrap();
    }
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

#[test]
fn dev_zero_and_fifos_as_project_files_do_not_hang_the_run() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.join(".git")).unwrap();
    // `AGENTS.md → /dev/zero`, then a FIFO as `AGENTS.md`.
    link(&env.project.join("AGENTS.md"), Path::new("/dev/zero"));
    mkfifo(&env.project.join("sub-fifo"));
    for (round, expect) in [(0, "AGENTS.md"), (1, "not a regular file (a FIFO)")] {
        if round == 1 {
            std::fs::remove_file(env.project.join("AGENTS.md")).unwrap();
            mkfifo(&env.project.join("AGENTS.md"));
        }
        let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("ok"))]);
        env.use_openai(&server.base_url, KEY);
        let (out, took) = run(&env, &["run", "--output-format", "json", "hello"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            took < Duration::from_secs(20),
            "round {round} took {took:?}"
        );
        assert!(out.status.success(), "round {round}: {stderr}");
        assert!(stderr.contains(expect), "round {round}: {stderr}");
        assert_eq!(server.requests().len(), 1);
    }
    // A FIFO as a command file: not a command, no wait.
    mkfifo(&env.project.join(".claude-fifo"));
    std::fs::create_dir_all(env.project.join(".claude/commands")).unwrap();
    mkfifo(&env.project.join(".claude/commands/wait.md"));
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("ok"))]);
    env.use_openai(&server.base_url, KEY);
    let (out, took) = run(&env, &["run", "--output-format", "json", "/wait"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
    // Skipped, so no command of that name: refused, nothing sent.
    let said = format!("{}{stderr}", String::from_utf8_lossy(&out.stdout));
    assert!(
        !out.status.success() && said.contains("unknown command /wait"),
        "{said}"
    );
    assert!(server.requests().is_empty());
}

/// An agent file starting a `tool-mcp` server `calc` that records each start in
/// `dir/starts`; `prefix` goes before the frontmatter.
fn mcp_agent(name: &str, prefix: &str, dir: &Path) -> String {
    let server = mcp_support::mcp_test_server();
    format!(
        "{prefix}---\nmeta:\n  name: {name}\n  description: Adds.\ntools:\n  - module: tool-mcp\n    config:\n      servers:\n        calc:\n          command: \"{}\"\n          env:\n            MCP_TEST_DIR: \"{}\"\n---\nYou add.\n",
        server.display(),
        dir.display()
    )
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// In a trusted project, `file` (written after `arbor trust`) adds `tool-mcp` to agent
/// `name`: a run with that agent starts no server and offers no MCP tool.
fn added_power_file_is_not_trusted(file: &str, prefix: &str, filler: usize) {
    let env = TestEnv::new();
    let agents = env.project.join(".amplifier/agents");
    std::fs::create_dir_all(&agents).unwrap();
    for i in 0..filler {
        std::fs::write(agents.join(format!("a{i:05}.md")), "Plain agent.\n").unwrap();
    }
    let trust = env.cmd().arg("trust").output().unwrap();
    assert!(
        trust.status.success(),
        "{}",
        String::from_utf8_lossy(&trust.stderr)
    );
    std::fs::write(agents.join(file), mcp_agent("adder", prefix, &env.project)).unwrap();

    let server = ScriptedServer::start(std::sync::Arc::new(|_| {
        Box::pin(async { Reply::Sse(sse_text("ok")) })
    }));
    env.use_openai(&server.base_url, KEY);
    let out = env
        .cmd()
        .args([
            "run",
            "--agent",
            "adder",
            "--yes",
            "--output-format",
            "json",
            "add",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !env.project.join("starts").exists(),
        "{file}: the added server started with no new trust: {stderr}"
    );
    for request in server.requests() {
        let offered = tool_names(&request);
        assert!(
            !offered.iter().any(|n| n.starts_with("mcp__")),
            "{file}: {offered:?}"
        );
    }
    if filler == 0 {
        assert!(out.status.success(), "{file}: {stderr}");
        assert!(
            stderr.contains(&format!("{file} changed since you trusted it")),
            "{file}: {stderr}"
        );
        // Trusting again covers it: the server starts.
        env.cmd().arg("trust").assert().success();
        let out = env
            .cmd()
            .args([
                "run",
                "--agent",
                "adder",
                "--yes",
                "--output-format",
                "json",
                "add",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            env.project.join("starts").exists(),
            "{file}: trusted, not started"
        );
    }
}

#[test]
fn an_upper_case_md_agent_file_needs_trust_again() {
    added_power_file_is_not_trusted("adder.MD", "", 0);
}

#[test]
fn an_agent_file_with_a_bom_needs_trust_again() {
    added_power_file_is_not_trusted("adder.md", "\u{feff}", 0);
}

#[test]
fn the_agent_file_past_the_cap_is_neither_trusted_nor_loaded() {
    added_power_file_is_not_trusted("zz-adder.md", "", 2_000);
}

#[test]
fn a_power_key_under_meta_needs_trust_again() {
    // `meta: tools:` is lifted to `tools` by the registry; trust must see it too.
    let env = TestEnv::new();
    let agents = env.project.join(".amplifier/agents");
    std::fs::create_dir_all(&agents).unwrap();
    env.cmd().arg("trust").assert().success();
    let text = format!(
        "---\nmeta:\n  name: adder\n  description: Adds.\n  tools:\n    - module: \"tool-\\x6dcp\"\n      config:\n        servers:\n          calc:\n            command: \"{}\"\n            env:\n              MCP_TEST_DIR: \"{}\"\n---\nYou add.\n",
        mcp_support::mcp_test_server().display(),
        env.project.display()
    );
    std::fs::write(agents.join("adder.md"), text).unwrap();
    let server = ScriptedServer::start(std::sync::Arc::new(|_| {
        Box::pin(async { Reply::Sse(sse_text("ok")) })
    }));
    env.use_openai(&server.base_url, KEY);
    let out = env
        .cmd()
        .args([
            "run",
            "--agent",
            "adder",
            "--yes",
            "--output-format",
            "json",
            "add",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!env.project.join("starts").exists(), "started: {stderr}");
    assert!(
        stderr.contains("adder.md changed since you trusted it"),
        "{stderr}"
    );
}

/// Typing `/` in the TUI lists the command files; a FIFO among them (and a link to
/// `~/.ssh/id_rsa`) neither freezes the screen nor shows up as a command.
#[test]
fn a_fifo_command_file_does_not_freeze_the_tui_palette() {
    let (env, _) = leaky_env();
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("reviewed it"))]);
    env.use_openai(&server.base_url, KEY);
    let commands = env.project.join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    mkfifo(&commands.join("a-wait.md"));
    link(&commands.join("leak.md"), &env.home.join(".ssh/id_rsa"));
    std::fs::write(
        commands.join("review.md"),
        "---\ndescription: Review files\n---\nReview $ARGUMENTS now.\n",
    )
    .unwrap();
    let tui = env.tui();
    tui.send(b"/");
    assert!(
        tui.wait_text("/agents", Duration::from_secs(20)).is_some(),
        "the palette did not open: {}",
        tui.screen()
    );
    for (typed, shown) in [(&b"a-w"[..], "/a-wait"), (b"\x7f\x7f\x7flea", "/leak")] {
        tui.send(typed);
        std::thread::sleep(Duration::from_millis(500));
        let screen = tui.screen();
        assert!(
            !screen.contains(shown) && !screen.contains(SSH_KEY),
            "{screen}"
        );
    }
    tui.send(b"\x7f\x7f\x7frevi");
    assert!(
        tui.wait_text("Review files (project:", Duration::from_secs(20))
            .is_some(),
        "{}",
        tui.screen()
    );
    tui.send(b"\t");
    tui.send(b"lib.rs\r");
    assert!(
        tui.wait_text("reviewed it", Duration::from_secs(30))
            .is_some(),
        "{}",
        tui.screen()
    );
    assert_eq!(last_user_text(&server.requests()[0]), "Review lib.rs now.");
    drop(tui);
}

/// A FIFO as `.claude/settings.json` (read to see whether the project has hooks, so
/// whether it needs trust) does not hang `arbor run`.
#[test]
fn a_fifo_settings_file_does_not_hang_the_run() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    mkfifo(&env.project.join(".claude/settings.json"));
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("ok"))]);
    env.use_openai(&server.base_url, KEY);
    let (out, took) = run(&env, &["run", "--output-format", "json", "hello"]);
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests().len(), 1);
}
