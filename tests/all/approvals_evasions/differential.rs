//! The differential test of issue 22: scripts generated from a small grammar of safe
//! words and hostile constructs are read by the approval policy and, when it says an
//! `allow` rule covers them, run by the real shells in an empty temp dir. A covered
//! script may only run `echo`, `true` and `ls`, none of which makes a file, so any
//! file left behind means the parser covered a script that does more.
//!
//! [`run_script`] is the one place that runs a script: inside arbor's kernel sandbox
//! (`arbor __sandbox`, writes only in the temp dir, no network), so a script the
//! parser wrongly covered cannot touch anything outside it either.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;

use arbor::config::approvals::{ApprovalPolicy, Decision, Grants, Rules};

/// Program words: the covered ones, and others that are not.
const PROGRAMS: &[&str] = &["echo", "true", "ls", "ls -la", "echo ok", "touch m_prog"];

/// Arguments: plain, quoted, and hostile (each hostile one makes a file `m_…`).
const ARGS: &[&str] = &[
    "a",
    "-l",
    "'x y'",
    "\"q r\"",
    "'it''s'",
    "2>&1",
    ">/dev/null",
    "$(touch m_sub)",
    "`touch m_tick`",
    "\"$(touch m_dq)\"",
    "$\\\n(touch m_cont)",
    "# it's a comment\ntouch m_comment\n#'",
    "<<EOF\n$(touch m_heredoc)\nEOF\n",
    "<<'EOF'\nx\nEOF\ntouch m_after_heredoc",
    ">& m_fd",
    "> m_redir",
    ">> m_append",
    "&> m_both",
    "2> m_err",
    "$HOME",
    "${X:=$(touch m_param)}",
    "$((0))",
    "{a,b}",
    "*",
    "\\\ntouch m_cont2",
    "a\\;touch m_esc",
    "'unclosed",
    "\"unclosed",
    "&& touch m_and",
    "; touch m_semi",
    "| sh -c 'touch m_pipe'",
    "& touch m_bg",
    "\r\ntouch m_cr",
    "|& touch m_pipe_err",
];

/// What goes between commands.
const SEPARATORS: &[&str] = &[" ; ", " && ", " || ", " | ", "\n", " & ", " ;\n", "\n\n"];

/// The policy under test: `echo` and `ls` with anything, `true` alone.
fn policy() -> ApprovalPolicy {
    let rules = Rules::from_value(&json!({
        "bash(echo*)": "allow",
        "bash(ls*)": "allow",
        "bash(true)": "allow",
    }));
    ApprovalPolicy::new(&rules.unwrap_or_default())
}

fn script() -> impl Strategy<Value = String> {
    let command = (
        prop::sample::select(PROGRAMS),
        prop::collection::vec(prop::sample::select(ARGS), 0..3),
    );
    prop::collection::vec((command, prop::sample::select(SEPARATORS)), 1..4).prop_map(|units| {
        let mut out = String::new();
        for (i, ((program, args), sep)) in units.iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            out.push_str(program);
            for a in args {
                out.push(' ');
                out.push_str(a);
            }
        }
        out
    })
}

/// Runs `script` with `shell -c` in `dir` inside arbor's sandbox (writable: `dir`
/// only; no network; stdin empty, output dropped), killed after a few seconds. The one
/// place a generated script runs.
fn run_script(shell: &str, script: &str, dir: &Path) -> Result<(), String> {
    let policy = arbor::sandbox::Policy {
        writable: vec![dir.to_path_buf()],
        ..Default::default()
    };
    let helper = Path::new(env!("CARGO_BIN_EXE_arbor"));
    let mut child = arbor::sandbox::command(helper, &policy, shell, ["-c", script])
        .current_dir(dir)
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {shell}: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return Ok(()),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{shell} -c {script:?} did not finish"));
            }
        }
    }
}

/// The files `dir` holds (names).
fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_covered_script_never_does_more_than_its_rule_says() {
    let policy = policy();
    let mut runner = TestRunner::new(Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    });
    let covered = std::cell::Cell::new(0usize);
    let result = runner.run(&script(), |text| {
        let input = json!({ "command": text });
        let verdict = policy.decide("bash", "tool-bash", &input, &Grants::default());
        if verdict.decision != Decision::Allow {
            return Ok(());
        }
        covered.set(covered.get() + 1);
        for shell in ["sh", "bash"] {
            let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
            run_script(shell, &text, dir.path()).map_err(TestCaseError::fail)?;
            let made = files_in(dir.path());
            prop_assert!(
                made.is_empty(),
                "covered by {}, but `{shell} -c {text:?}` made {made:?}",
                verdict.decided_by
            );
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // The grammar must reach covered scripts, or the test proves nothing.
    eprintln!("covered scripts run: {}", covered.get());
    assert!(
        covered.get() >= 10,
        "only {} covered scripts",
        covered.get()
    );
}

#[test]
fn the_runner_sees_a_file_an_uncovered_script_makes() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = "echo ok # it's fine\ntouch m_comment";
    assert_ne!(
        policy()
            .decide(
                "bash",
                "tool-bash",
                &json!({ "command": hostile }),
                &Grants::default()
            )
            .decision,
        Decision::Allow
    );
    run_script("sh", hostile, dir.path()).unwrap();
    assert_eq!(files_in(dir.path()), ["m_comment"]);
}
