//! `arbor session diff` and config `notify:` through the real binary: a run against a
//! scripted loopback provider writes and edits files with `--yes`; the diff rebuilt
//! from the transcript shows a created file as one diff from nothing and an edit of a
//! file that existed before without line numbers. A bad `notify:` value stops startup
//! and `arbor doctor` with the value quoted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::*;

#[test]
fn session_diff_prints_what_the_tools_changed() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "w1",
            "write_file",
            json!({"file_path": "notes.md", "content": "a\nb\nc\n"}),
        )])),
        Reply::Sse(sse_tool_calls(&[
            (
                "e1",
                "edit_file",
                json!({"file_path": "notes.md", "old_string": "b", "new_string": "B"}),
            ),
            (
                "e2",
                "edit_file",
                json!({"file_path": "old.txt", "old_string": "y", "new_string": "Y"}),
            ),
            (
                "e3",
                "edit_file",
                json!({"file_path": "old.txt", "old_string": "absent", "new_string": "z"}),
            ),
        ])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test");
    std::fs::write(env.project.join("old.txt"), "x\ny\n").unwrap();
    let out = env
        .cmd()
        .args(["run", "--yes", "--output-format", "json", "go"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    let id = result["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        std::fs::read_to_string(env.project.join("old.txt")).unwrap(),
        "x\nY\n"
    );

    let out = env
        .cmd()
        .args(["session", "diff", &id[..8]])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The failed edit (e3: no match) changed nothing and is not there.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1,3 @@\n+a\n+B\n+c\n\
         --- a/old.txt\n+++ b/old.txt\n@@ edit_file (line numbers unknown) @@\n-y\n+Y\n"
    );

    let out = env
        .cmd()
        .args(["session", "diff", "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn a_bad_notify_value_is_reported_by_doctor_and_at_startup() {
    let env = TestEnv::new();
    std::fs::write(&env.config, "notify: beep\n").unwrap();
    let out = env.cmd().arg("doctor").output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("beep"), "{text}");
    let out = env.cmd().args(["session", "list"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("beep"));
    std::fs::write(&env.config, "notify: off\n").unwrap();
    let out = env.cmd().args(["session", "list"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
