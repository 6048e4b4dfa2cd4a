//! Issue 22 "a parser that fails closed", through the real binary and a scripted
//! loopback provider: every way a model tried to slip a command past an approval rule
//! (`bash(echo*)`/`bash(ls*): allow`, `bash(rm*): deny`) is asked or denied, and the
//! plain allowed command still runs. Everything runs in temp dirs (HOME,
//! AMPLIFIER_HOME, ARBOR_CONFIG, the project); the commands only create or delete
//! files in the temp project.

mod deleters;
mod differential;
use crate::support;

use serde_json::{Value, json};
use support::*;

const KEY: &str = "sk-evasions-test-0123456789";

/// Runs `arbor run` (jsonl output) on one reply calling `bash` with each command of
/// `calls` (ids as given), under a config adding `approvals` (YAML lines). Returns the
/// printed lines and the chat request that carried the results back.
fn run_calls(env: &TestEnv, approvals: &str, yes: bool, calls: &[(String, String)]) -> Vec<Value> {
    let tool_calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, c)| (id.as_str(), "bash", json!({ "command": c })))
        .collect();
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&tool_calls)),
        Reply::Sse(sse_text("done")),
    ]);
    env.use_openai(&server.base_url, KEY);
    env.append_config("approvals:\n");
    env.append_config(approvals);
    let mut cmd = env.cmd();
    cmd.arg("run");
    if yes {
        cmd.arg("--yes");
    }
    cmd.args(["--output-format", "jsonl", "go"]);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `decision` of the `approval:granted`/`approval:denied` event of call `id`
/// (`policy`, `headless` …), prefixed by the event: `granted:policy`.
fn outcome(lines: &[Value], id: &str) -> String {
    lines
        .iter()
        .filter(|e| e["data"]["tool_call_id"] == id)
        .filter_map(|e| {
            let event = e["event"].as_str()?;
            let kind = event.strip_prefix("approval:")?;
            let decision = e["data"]["decision"].as_str()?;
            (kind != "required").then(|| format!("{kind}:{decision}"))
        })
        .next_back()
        .unwrap_or_else(|| format!("no approval event for {id}"))
}

/// Nineteen ways to run `rm` past `bash(rm*): deny` (issue 22). Each deletes its own
/// victim file `vNN` in the project when it runs under `sh` (dash here).
const DENY_EVASIONS: [&str; 19] = [
    "\\rm v01",
    "r''m v02",
    "\"rm\" v03",
    "/bin/rm v04",
    "$(echo rm) v05",
    "command rm v06",
    "env rm v07",
    "sh -c 'rm v08'",
    "x=rm; $x v09",
    "eval rm v10",
    "echo hi # it's a comment\nrm v11",
    "(rm v12)",
    "f() { rm v13; }; f",
    "`echo rm` v14",
    "sh <<EOF\nrm v15\nEOF",
    "echo v16 | xargs rm",
    "find . -name v17 -exec rm {} \\;",
    "nice rm v18",
    "nohup rm v19",
];

#[test]
fn nineteen_evasions_of_a_deny_rule_are_denied_under_yes() {
    let env = TestEnv::new();
    let calls: Vec<(String, String)> = DENY_EVASIONS
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("d{:02}", i + 1), (*c).to_string()))
        .collect();
    for i in 1..=DENY_EVASIONS.len() {
        std::fs::write(env.project.join(format!("v{i:02}")), "victim").unwrap();
    }
    let lines = run_calls(&env, "  \"bash(rm*)\": deny\n", true, &calls);
    let mut ran = Vec::new();
    for (i, (id, command)) in calls.iter().enumerate() {
        let gone = !env.project.join(format!("v{:02}", i + 1)).exists();
        let got = outcome(&lines, id);
        if gone || got != "denied:policy" {
            ran.push(format!("{id} {command:?}: {got}, victim deleted: {gone}"));
        }
    }
    eprintln!(
        "deny evasions that got past bash(rm*): {} of {}",
        ran.len(),
        calls.len()
    );
    assert!(ran.is_empty(), "{}", ran.join("\n"));
}

/// Ways to run `touch` past an allow rule (issue 22), each creating its own marker
/// `aN` when it runs. Under `bash(echo*)`/`bash(ls*): allow` and no `--yes` every one
/// must be asked (so denied headless), not allowed by the rule.
const ALLOW_EVASIONS: [&str; 10] = [
    // A comment whose quote hid the next line from the old splitter.
    "echo ok # it's fine\ntouch a1",
    // A line continuation joining `$` and `(`.
    "echo ok $\\\n(touch a2)",
    // A here-doc body: expanded by sh, quoted text to the old splitter.
    "echo x <<EOF\necho '\n$(touch a3)\nEOF\n#'",
    // `>&` into a file (bash writes it; dash refuses the fd).
    "echo ok >& a4",
    // An "always"-style rule for `ls`: `ls -la # x⏎touch`.
    "ls -la # it's fine\ntouch a5",
    "echo \"$(touch a6)\"",
    "echo ok;touch a7",
    "echo ok\ntouch a8",
    "echo ok > a9",
    "echo ok | sh -c 'touch a10'",
];

#[test]
fn allow_rule_evasions_are_asked_and_the_plain_command_runs() {
    let env = TestEnv::new();
    let mut calls: Vec<(String, String)> = ALLOW_EVASIONS
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("a{:02}", i + 1), (*c).to_string()))
        .collect();
    calls.push(("plain".into(), "echo plain-ok".into()));
    let lines = run_calls(
        &env,
        "  \"bash(echo*)\": allow\n  \"bash(ls*)\": allow\n",
        false,
        &calls,
    );
    let mut got_past = Vec::new();
    for (i, (id, command)) in calls.iter().enumerate().take(ALLOW_EVASIONS.len()) {
        let marker = env.project.join(format!("a{}", i + 1)).exists();
        let got = outcome(&lines, id);
        if marker || got != "denied:headless" {
            got_past.push(format!("{id} {command:?}: {got}, marker made: {marker}"));
        }
    }
    eprintln!(
        "allow evasions that got past bash(echo*)/bash(ls*): {} of {}",
        got_past.len(),
        ALLOW_EVASIONS.len()
    );
    assert_eq!(outcome(&lines, "plain"), "granted:policy");
    let out = lines
        .iter()
        .find(|e| e["event"] == "tool:post" && e["data"]["tool_call_id"] == "plain");
    assert!(
        out.is_some_and(|e| e.to_string().contains("plain-ok")),
        "the plain allowed command did not run: {lines:?}"
    );
    assert!(got_past.is_empty(), "{}", got_past.join("\n"));
}
