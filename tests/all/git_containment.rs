//! arbor's own git and the repository it works in (issue 34 items 1 and 3), through
//! the real binary and a scripted loopback model:
//!
//! - a repository that *arrives* with a hostile `.git/config` (`core.fsmonitor`, a
//!   `filter=` driver from `.gitattributes` or `.git/info/attributes`, one pulled in by
//!   `include.path`, a textconv): `arbor run` checkpoints before and after the turn and
//!   runs none of them;
//! - a sandboxed `bash` cannot change `.git/config` or the hooks, or move `.git`
//!   away, and `git commit` still works; `write_file .git/config` is refused;
//! - a worktree child cannot move the person's branch, nor point its worktree at
//!   another repository through its `.git` file.

use crate::isolation::git;
use crate::support;

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use support::*;

const SHELL_AGENT: &str = "---\nmeta:\n  name: shell\n  description: Runs commands.\n\
tools:\n  - module: tool-filesystem\n    config:\n      read_only: false\n  - module: tool-bash\n---\nYou run commands.\n";

/// A project that is a git repository with `app.py` committed, and the `shell` agent.
fn project(env: &TestEnv) {
    git(&env.project, &["init", "--quiet"]);
    std::fs::write(env.project.join("app.py"), "VALUE = 0\n").unwrap();
    git(&env.project, &["add", "app.py"]);
    git(&env.project, &["commit", "--quiet", "-m", "init"]);
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("shell.md"), SHELL_AGENT).unwrap();
}

/// `arbor run --agent AGENT --yes go` against `server`; its JSON answer.
fn run(env: &TestEnv, server: &ScriptedServer, agent: &str) -> Value {
    env.use_openai(&server.base_url, "sk-test-config-key-1");
    let out = env
        .cmd()
        .args([
            "run",
            "--agent",
            agent,
            "--yes",
            "--output-format",
            "json",
            "go",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout {}\nstderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The tool result the model got for call `id` (the last request holding it).
fn tool_result(server: &ScriptedServer, id: &str) -> String {
    server
        .requests()
        .iter()
        .rev()
        .find_map(|r| {
            r["messages"]
                .as_array()?
                .iter()
                .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
                .map(content_text)
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// A model that makes one call and then says "Done.".
fn one_call(id: &'static str, tool: &'static str, args: Value) -> ScriptedServer {
    ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(id, tool, args)])),
        Reply::Sse(sse_text("Done.")),
    ])
}

/// How a variant arms the repository at its path with a command to run.
type Arm = dyn Fn(&Path, &str);

/// Each way a repository's config makes git run a program, as it arrives (no tool
/// call asks for anything): after `arbor run` (checkpoints before and after the
/// turn, a `write_file` in between) no marker exists.
#[test]
fn a_repository_arriving_with_hostile_git_config_runs_nothing() {
    let variants: [(&str, &Arm); 5] = [
        ("fsmonitor", &|p, run| {
            git(p, &["config", "core.fsmonitor", run]);
        }),
        ("filter from .gitattributes", &|p, run| {
            git(p, &["config", "filter.evil.clean", run]);
            git(p, &["config", "filter.evil.smudge", run]);
            git(p, &["config", "filter.evil.required", "true"]);
            std::fs::write(p.join(".gitattributes"), "* filter=evil\n").unwrap();
        }),
        ("process filter from .git/info/attributes", &|p, run| {
            git(p, &["config", "filter.lfsish.process", run]);
            std::fs::create_dir_all(p.join(".git/info")).unwrap();
            std::fs::write(p.join(".git/info/attributes"), "*.py filter=lfsish\n").unwrap();
        }),
        ("include.path", &|p, run| {
            let inc = p.join("included.cfg");
            std::fs::write(&inc, format!("[core]\n\tfsmonitor = {run}\n")).unwrap();
            git(p, &["config", "include.path", &inc.display().to_string()]);
        }),
        ("textconv and external diff", &|p, run| {
            git(p, &["config", "diff.evil.textconv", run]);
            git(p, &["config", "diff.external", run]);
            std::fs::write(p.join(".gitattributes"), "* diff=evil\n").unwrap();
        }),
    ];
    let mut ran = Vec::new();
    for (name, arm) in variants {
        let env = TestEnv::new();
        project(&env);
        let marker = env.dir.path().join("PWNED");
        let run_cmd = format!("sh -c 'touch {}; cat'", marker.display());
        arm(&env.project, &run_cmd);
        let server = one_call(
            "w1",
            "write_file",
            json!({"file_path": "app.py", "content": "VALUE = 1\n"}),
        );
        run(&env, &server, "shell");
        assert_eq!(
            std::fs::read_to_string(env.project.join("app.py")).unwrap(),
            "VALUE = 1\n"
        );
        if marker.exists() {
            ran.push(name);
        }
    }
    assert!(
        ran.is_empty(),
        "arbor's git ran the repository's program: {ran:?}"
    );
}

/// A sandboxed command cannot set `core.fsmonitor`, add a hook or swap `.git` for
/// one of its own — and a plain `git commit` still works.
#[test]
fn sandboxed_bash_cannot_change_git_config_hooks_or_the_git_dir() {
    let env = TestEnv::new();
    project(&env);
    let marker = env.dir.path().join("PWNED");
    let command = format!(
        "git config core.fsmonitor 'touch {m}'; echo cfg=$?; \
         printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/pre-commit; echo hook=$?; \
         echo '[core] fsmonitor = touch {m}' >> .git/config; echo append=$?; \
         mv .git .git-away; echo mv=$?; \
         echo 'x' > new.txt && git add new.txt && git -c user.name=a -c user.email=a@a commit -qm add; echo commit=$?",
        m = marker.display()
    );
    let server = one_call("b1", "bash", json!({"command": command}));
    run(&env, &server, "shell");
    let result = tool_result(&server, "b1");
    assert!(result.contains("commit=0"), "commit: {result}");
    for refused in ["cfg=0", "hook=0", "append=0", "mv=0"] {
        assert!(!result.contains(refused), "{refused}: {result}");
    }
    let config = std::fs::read_to_string(env.project.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!env.project.join(".git/hooks/pre-commit").exists());
    assert!(env.project.join(".git").is_dir());
    assert_eq!(git(&env.project, &["log", "--format=%s", "-1"]), "add");
    assert!(!marker.exists());
}

/// `write_file` into `.git` is refused, whatever the spelling.
#[test]
fn write_file_into_the_git_dir_is_refused() {
    for path in [".git/config", "./.git/hooks/post-checkout", ".GIT/config"] {
        let env = TestEnv::new();
        project(&env);
        let before = std::fs::read_to_string(env.project.join(".git/config")).unwrap();
        let server = one_call(
            "w1",
            "write_file",
            json!({"file_path": path, "content": "[core]\n\tfsmonitor = touch /tmp/x\n"}),
        );
        run(&env, &server, "shell");
        let result = tool_result(&server, "w1");
        assert!(result.contains("Access denied"), "{path}: {result}");
        let after = std::fs::read_to_string(env.project.join(".git/config")).unwrap();
        assert_eq!(before, after, "{path}");
        assert!(!env.project.join(".git/hooks/post-checkout").exists());
    }
}

/// A worktree child's `bash` tries to move the person's branch, to rewrite its
/// worktree's `.git` file and `commondir` towards a repository it controls: each is
/// refused, and arbor's end-of-turn commit lands on the child's own branch.
#[test]
fn a_worktree_child_writes_only_its_own_branch() {
    let env = TestEnv::new();
    project(&env);
    let branch = git(&env.project, &["symbolic-ref", "--short", "HEAD"]);
    let main_before = git(&env.project, &["rev-parse", &branch]);
    let evil = env.dir.path().join("evil");
    git(env.dir.path(), &["init", "--quiet", "evil"]);
    let command = format!(
        "echo 'VALUE = 2' > app.py; \
         git update-ref refs/heads/{branch} $(git rev-parse HEAD); echo main=$?; \
         git update-ref refs/heads/other HEAD; echo other=$?; \
         echo 'gitdir: {evil}/.git' > .git; echo dotgit=$?; \
         echo {evil}/.git > \"$(git rev-parse --git-dir)/commondir\"; echo commondir=$?",
        evil = evil.display()
    );
    let server = ScriptedServer::start(Arc::new(move |body: Value| {
        let reply = if last_role(&body) == "tool" {
            Reply::Sse(sse_text("Done."))
        } else if last_user_text(&body).contains("Change VALUE") {
            Reply::Sse(sse_tool_calls(&[(
                "b1",
                "bash",
                json!({"command": command}),
            )]))
        } else {
            Reply::Sse(sse_tool_calls(&[(
                "t1",
                "task",
                json!({"agent": "implementer", "instruction": "Change VALUE", "isolation": {"mode": "worktree", "merge": "manual"}}),
            )]))
        };
        Box::pin(async move { reply })
    }));
    env.use_openai(&server.base_url, "sk-test-config-key-1");
    let out = env
        .cmd()
        .args(["run", "--yes", "--output-format", "json", "go"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = tool_result(&server, "b1");
    for refused in ["main=0", "other=0", "dotgit=0", "commondir=0"] {
        assert!(!result.contains(refused), "{refused}: {result}");
    }
    assert_eq!(git(&env.project, &["rev-parse", &branch]), main_before);
    let child_branch = git(
        &env.project,
        &["branch", "--list", "arbor/*", "--format=%(refname:short)"],
    );
    assert!(!child_branch.is_empty(), "no child branch");
    let shown = git(&env.project, &["show", &format!("{child_branch}:app.py")]);
    assert_eq!(shown, "VALUE = 2");
    let evil_log = std::process::Command::new("git")
        .arg("-C")
        .arg(&evil)
        .args(["rev-parse", "--verify", "-q", "HEAD"])
        .output()
        .unwrap();
    assert!(
        !evil_log.status.success(),
        "arbor committed into the forged repository"
    );
}
