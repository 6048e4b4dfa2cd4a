//! `arbor session diff` and config `notify:` through the real binary: a run against a
//! scripted loopback provider writes and edits files with `--yes`; the diff rebuilt
//! from the transcript shows a created file as one diff from nothing and each edit of a
//! file that existed before as its own patch with the hunks recorded when it was made,
//! so `git apply` reproduces the session's files on the pre-session tree. A bad
//! `notify:` value stops startup and `arbor doctor` with the value quoted.

use crate::support;

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
         --- a/old.txt\n+++ b/old.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+Y\n"
    );

    let out = env
        .cmd()
        .args(["session", "diff", "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

fn git(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Issue 23 item 11: a scripted session writes a new file and edits an existing one
/// twice (the second edit far from the first) and one with no newline at its end; `session diff` applies with `git apply`
/// to a copy of the pre-session tree and reproduces the session's files.
#[test]
fn session_diff_applies_with_git_apply_to_the_pre_session_tree() {
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "w1",
            "write_file",
            json!({"file_path": "src/new.py", "content": "def f():\n    return 1\n"}),
        )])),
        Reply::Sse(sse_tool_calls(&[(
            "e1",
            "edit_file",
            json!({"file_path": "app.py", "old_string": "line 3", "new_string": "line three"}),
        )])),
        Reply::Sse(sse_tool_calls(&[
            (
                "e2",
                "edit_file",
                json!({"file_path": "app.py", "old_string": "line 18\nline 19", "new_string": "line 18\nadded\nline 19"}),
            ),
            (
                "e3",
                "edit_file",
                json!({"file_path": "tail.txt", "old_string": "end", "new_string": "the end"}),
            ),
        ])),
        Reply::Sse(sse_text("done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test");
    let original: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(env.project.join("app.py"), &original).unwrap();
    // No newline at its end: the patch must say so.
    std::fs::write(env.project.join("tail.txt"), "start\nend").unwrap();
    git(&env.project, &["init", "-q"]);
    git(&env.project, &["add", "."]);
    git(
        &env.project,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "pre",
        ],
    );
    let pre = env.dir.path().join("pre");
    git(
        env.dir.path(),
        &[
            "clone",
            "-q",
            env.project.to_str().unwrap(),
            pre.to_str().unwrap(),
        ],
    );

    let out = env
        .cmd()
        .args(["run", "--yes", "--output-format", "json", "go"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    let id = result["session_id"].as_str().unwrap().to_string();

    let out = env.cmd().args(["session", "diff", &id]).output().unwrap();
    assert!(out.status.success());
    let patch = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!patch.contains("line numbers unknown"), "{patch}");
    let patch_file = env.dir.path().join("session.patch");
    std::fs::write(&patch_file, &patch).unwrap();
    let patch_arg = patch_file.to_str().unwrap();
    git(&pre, &["apply", "--check", patch_arg]);
    git(&pre, &["apply", patch_arg]);
    for file in ["app.py", "src/new.py", "tail.txt"] {
        assert_eq!(
            std::fs::read_to_string(pre.join(file)).unwrap(),
            std::fs::read_to_string(env.project.join(file)).unwrap(),
            "{file} after applying:\n{patch}"
        );
    }
}

/// Without `--subtree`, a session that changed nothing itself says on stderr that its
/// sub-sessions did (issue 23 item 11).
#[test]
fn session_diff_says_when_only_sub_sessions_changed_files() {
    let env = TestEnv::new();
    let session = |id: &str, parent: Option<&str>, transcript: &str| {
        let dir = env.sessions_dir().join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let meta = json!({
            "session_id": id, "parent_id": parent, "agent_name": "coder",
            "created": "2025-03-01T12:00:00Z", "last_updated": "2025-03-01T12:00:00Z",
            "status": "completed",
        });
        std::fs::write(dir.join("metadata.json"), meta.to_string()).unwrap();
        std::fs::write(dir.join("transcript.jsonl"), transcript).unwrap();
    };
    let input = json!({"file_path": "a.txt", "content": "a\n"});
    let call = json!({
        "role": "assistant",
        "content": [{"type": "tool_call", "id": "w1", "name": "write_file", "input": input}],
        "tool_calls": [{"id": "w1", "tool": "write_file", "arguments": input}],
    });
    let result = json!({
        "role": "tool", "name": "write_file", "tool_call_id": "w1", "is_error": false,
        "content": json!({"file_path": "a.txt", "bytes": 2, "created": true}).to_string(),
    });
    let root = "0123abcd-0000-4000-8000-000000000000";
    let child = "0123abcd-0000-4000-8000-000000000000-0000000000000001_coder";
    session(root, None, "");
    session(child, Some(root), &format!("{call}\n{result}\n"));

    let out = env.cmd().args(["session", "diff", root]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("changed no file itself; its sub-sessions changed 1 file in 1 session")
            && stderr.contains(&format!("arbor session diff {root} --subtree")),
        "{stderr}"
    );
    let out = env
        .cmd()
        .args(["session", "diff", root, "--subtree"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("+++ b/a.txt"));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
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
