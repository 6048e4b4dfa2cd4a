//! Issue 34 (lower items): a hook's decision counts whatever it printed before it.
//! A `PreToolUse` hook that prints more than 64 KiB — whitespace, a long `reason`,
//! megabytes of log lines — and then its JSON decision still blocks the `bash` call,
//! and one that exits 2 after a flood of output blocks too; the command never runs.

use crate::hooks::{env_with, run};
use crate::support;

use serde_json::json;
use support::*;

/// Runs one `bash` call (`touch should-not-exist`) behind a `PreToolUse` hook that
/// runs `python3 -c <script>`; returns whether the command ran and the tool result.
fn behind_hook(script: &str) -> (bool, String) {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "b1",
            "bash",
            json!({"command": "touch should-not-exist"}),
        )])),
        Reply::Sse(sse_text("understood")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("hook.py");
    std::fs::write(&hook, script).unwrap();
    let hooks = format!(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{{type: command, command: \"python3 {}\", timeout: 30}}]\n",
        hook.display()
    );
    let env = env_with(&server, &hooks);
    run(&env, true);
    let result = server.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "b1")
        .map(content_text)
        .unwrap();
    (env.project.join("should-not-exist").exists(), result)
}

#[test]
fn a_decision_after_a_flood_of_output_still_blocks() {
    let cases = [
        (
            "whitespace before the JSON",
            r#"import sys; sys.stdout.write(" \n" * 100000 + '{"decision": "block", "reason": "NO-1"}')"#,
        ),
        (
            "a reason longer than 64 KiB",
            r#"import json, sys; sys.stdout.write(json.dumps({"reason": "NO-2 " + "x" * 200000, "decision": "block"}))"#,
        ),
        (
            "2 MiB of log lines, the decision last",
            r#"import sys
for i in range(40000): sys.stdout.write("log line %06d padding padding padding\n" % i)
sys.stdout.write('{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "NO-3"}}\n')"#,
        ),
        (
            "exit 2 after 200 KiB on both streams",
            r#"import sys
sys.stdout.write("o" * 200000); sys.stderr.write("e" * 200000 + "\nNO-4\n"); sys.exit(2)"#,
        ),
    ];
    let mut ignored = Vec::new();
    for (i, (what, script)) in cases.into_iter().enumerate() {
        let (ran, result) = behind_hook(script);
        let reason = format!("NO-{}", i + 1);
        if ran || !result.contains("blocked by a PreToolUse hook") || !result.contains(&reason) {
            ignored.push(format!("{what} (ran: {ran}): {result}"));
        }
    }
    assert!(
        ignored.is_empty(),
        "{} of 4 decisions ignored:\n{}",
        ignored.len(),
        ignored.join("\n")
    );
}
