//! `arbor session …` through the real binary: the tree with broken parent links, exact
//! resume errors, and ids that are missing, ambiguous or listed across projects.

use super::*;

/// Broken parent links in stored metadata (a cycle, a self-parent, a deleted parent)
/// hide no session from `session tree`; each detached root says why.
#[test]
fn session_tree_shows_sessions_with_broken_parent_links() {
    let env = TestEnv::new();
    let write = |id: &str, agent: &str, parent: Option<&str>, created: &str| {
        let dir = env.sessions_dir().join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({
            "session_id": id, "parent_id": parent, "agent_name": agent,
            "created": created, "last_updated": created, "status": "completed",
        });
        std::fs::write(dir.join("metadata.json"), meta.to_string()).unwrap();
        std::fs::write(dir.join("transcript.jsonl"), "").unwrap();
    };
    write("r", "zen-architect", None, "2025-03-01T12:00:05Z");
    write("b", "coder", Some("a"), "2025-03-01T12:00:02Z");
    write("a", "planner", Some("b"), "2025-03-01T12:00:01Z");
    write("s", "tester", Some("s"), "2025-03-01T12:00:04Z");
    write("o", "reviewer", Some("deleted"), "2025-03-01T12:00:06Z");
    let out = env.cmd().args(["session", "tree"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        "reviewer o [completed] 0 turns  (parent missing: deleted)\n\
         zen-architect r [completed] 0 turns\n\
         tester s [completed] 0 turns  (own parent: s)\n\
         planner a [completed] 0 turns  (parent cycle: b)\n\
         └─ coder b [completed] 0 turns\n"
    );
}

#[test]
fn resume_errors_are_exact() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.sessions_dir()).unwrap();
    env.cmd()
        .args(["session", "resume", "0123456789abcdef-fedcba9876543210_x", "go"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "Sub-session '0123456789abcdef-fedcba9876543210_x' not found. It may have expired or was never created.",
        ));
    env.cmd()
        .args(["session", "resume", "../etc", "go"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("invalid session id"));
    assert!(!env.amplifier_home.join("etc").exists());
}

/// Issue 23 item 10: a missing root id says what was looked for, where, and how to
/// look in every project; an ambiguous prefix lists its matches readably; the
/// all-projects table has a project column, full ids and times to the second.
#[test]
fn session_ids_missing_ambiguous_and_listed_across_projects() {
    let env = TestEnv::new();
    let write = |id: &str, parent: Option<&str>| {
        let dir = env.sessions_dir().join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({
            "session_id": id, "parent_id": parent, "agent_name": "coder",
            "created": "2025-03-01T12:00:05.123456789Z",
            "last_updated": "2025-03-01T12:00:05.123456789Z", "status": "completed",
            "working_dir": env.project.display().to_string(), "turn_count": 1,
        });
        std::fs::write(dir.join("metadata.json"), meta.to_string()).unwrap();
        std::fs::write(dir.join("transcript.jsonl"), "").unwrap();
    };
    let a = "0123abcd-0000-4000-8000-000000000001";
    let b = "0123abcd-0000-4000-8000-000000000002";
    let child = "0123abcd00004000-00000000000000aa_coder";
    write(a, None);
    write(b, None);
    write(child, Some(a));

    let missing = "99999999-0000-4000-8000-000000000000";
    let out = env
        .cmd()
        .args(["session", "show", missing])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("Root session '{missing}' not found")),
        "{stderr}"
    );
    assert!(!stderr.contains("Sub-session"), "{stderr}");
    assert!(
        stderr.contains(&env.project.display().to_string()),
        "{stderr}"
    );
    assert!(
        stderr.contains("arbor session list --all-projects"),
        "{stderr}"
    );

    let out = env
        .cmd()
        .args(["session", "show", "0123abcd-0000"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("matches 2 sessions: {a}, {b}")),
        "{stderr}"
    );
    assert!(!stderr.contains("[\""), "{stderr}");

    let out = env
        .cmd()
        .env("TZ", "UTC")
        .args(["session", "list", "--all-projects"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("PROJECT"), "{table}");
    let row = lines.iter().find(|l| l.contains(child)).unwrap();
    assert!(
        row.starts_with(&env.project.display().to_string()),
        "{table}"
    );
    assert!(row.contains(a), "the parent id in full: {table}");
    assert!(row.contains("2025-03-01 12:00:05 "), "{table}");
    assert!(!table.contains(".123456789"), "{table}");

    let tree = env.cmd().args(["session", "tree"]).output().unwrap();
    assert!(String::from_utf8_lossy(&tree.stdout).contains("[completed] 1 turn\n"));
}
