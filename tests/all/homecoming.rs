//! Delegated work comes home (issue 35) through the real binary, in temp git
//! repositories: children's branches merged into the parent's checkout before their
//! task results reach the parent model; a conflict handed to the parent with both
//! sides, nothing half-applied; `session merge --markers`; `arbor run` listing what
//! it left unmerged.

use crate::isolation::{Call, child_with, git, git_project, merge_manually, read, show};
use crate::support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::*;

/// The id of the last message of a request, when it is a tool result.
fn last_tool_call_id(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["tool_call_id"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// A scripted model for a root that delegates and then checks in the same turn:
/// the root's first request gets `tasks`; the request after the task results gets a
/// `bash` call `check` running `check`; a child gets the calls of the first rule its
/// instruction matches; any other tool result gets "Done.".
fn delegate_then_check(
    rules: Vec<(&'static str, Vec<Call>)>,
    tasks: Vec<Call>,
    check: &'static str,
) -> ScriptedServer {
    ScriptedServer::start(Arc::new(move |body: Value| {
        let calls: Vec<(&str, &str, Value)> = if last_role(&body) == "tool" {
            if last_tool_call_id(&body).starts_with('t') {
                vec![("check", "bash", json!({"command": check}))]
            } else {
                Vec::new()
            }
        } else {
            let user = last_user_text(&body);
            rules
                .iter()
                .find(|(needle, _)| user.contains(needle))
                .map_or(&tasks, |(_, calls)| calls)
                .iter()
                .map(|(i, n, a)| (*i, *n, a.clone()))
                .collect()
        };
        let reply = if calls.is_empty() {
            Reply::Sse(sse_text("Done."))
        } else {
            Reply::Sse(sse_tool_calls(&calls))
        };
        Box::pin(async move { reply })
    }))
}

fn write(id: &'static str, file: &str, content: &str) -> Vec<Call> {
    vec![(
        id,
        "write_file",
        json!({"file_path": file, "content": content}),
    )]
}

fn task(id: &'static str, instruction: &str) -> Call {
    (
        id,
        "task",
        json!({"agent": "implementer", "instruction": instruction}),
    )
}

/// The tool result the root got for `call_id`, as text.
fn tool_result(server: &ScriptedServer, call_id: &str) -> String {
    let needle = format!("\"tool_call_id\":\"{call_id}\"");
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.to_string().contains(&needle))
        .unwrap_or_else(|| panic!("no request holds the result of {call_id}"));
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == call_id)
        .map(content_text)
        .unwrap_or_default()
}

/// The `isolation` text of the task result the root got for `call_id` (empty when
/// it has none).
fn isolation_of(server: &ScriptedServer, call_id: &str) -> String {
    let result: Value = serde_json::from_str(&tool_result(server, call_id)).unwrap();
    result["isolation"].as_str().unwrap_or_default().to_string()
}

/// `arbor run --yes` in text mode: (exit code, stdout, stderr).
fn run(env: &TestEnv, prompt: &str) -> (Option<i32>, String, String) {
    let out = env.cmd().args(["run", "--yes", prompt]).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn arbor_branches(env: &TestEnv) -> String {
    git(
        &env.project,
        &["branch", "--list", "arbor/*", "--format=%(refname:short)"],
    )
}

/// Two broken files, committed.
fn two_broken_files(env: &TestEnv) {
    git_project(env);
    std::fs::write(env.project.join("calc.py"), "ADD = 'broken'\n").unwrap();
    std::fs::write(env.project.join("strutil.py"), "UPPER = 'broken'\n").unwrap();
    git(&env.project, &["add", "."]);
    git(&env.project, &["commit", "--quiet", "-m", "broken"]);
}

#[test]
fn the_parents_check_in_the_same_turn_sees_both_childrens_fixes() {
    let server = delegate_then_check(
        vec![
            ("Fix calc", write("wa", "calc.py", "ADD = 'fixed'\n")),
            (
                "Fix strutil",
                write("wb", "strutil.py", "UPPER = 'fixed'\n"),
            ),
        ],
        vec![task("ta", "Fix calc"), task("tb", "Fix strutil")],
        "cat calc.py strutil.py",
    );
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-home");
    two_broken_files(&env);
    let (code, _, stderr) = run(&env, "fix the tests");
    assert_eq!(code, Some(0), "{stderr}");

    let check = tool_result(&server, "check");
    assert!(
        check.contains("ADD = 'fixed'") && check.contains("UPPER = 'fixed'"),
        "the check ran against the merged checkout: {check}"
    );
    assert_eq!(
        tool_result(&server, "ta")
            .matches("merged 1 file into the parent's checkout: calc.py")
            .count(),
        1
    );
    assert!(
        tool_result(&server, "tb").contains("merged 1 file into the parent's checkout: strutil.py")
    );
    assert_eq!(read(&env.project.join("calc.py")), "ADD = 'fixed'\n");
    assert_eq!(read(&env.project.join("strutil.py")), "UPPER = 'fixed'\n");
    assert_eq!(arbor_branches(&env), "", "no arbor/* branch left");
    let child = child_with(&env, "Fix calc");
    let shown = show(&env, &child);
    assert_eq!(shown["worktree"]["state"], "merged", "{shown}");
    assert!(
        !std::path::Path::new(shown["worktree"]["path"].as_str().unwrap()).exists(),
        "the worktree is removed"
    );
    assert!(!stderr.contains("unmerged"), "{stderr}");
    let worktrees = env.home.join(".local/state/arbor/worktrees");
    let left: Vec<_> = walkdir(&worktrees);
    assert!(
        left.is_empty(),
        "nothing left under the worktrees directory: {left:?}"
    );
}

/// The files under `dir`, recursively (none when it does not exist).
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_child_that_changes_nothing_gets_no_merge_hint() {
    let server = delegate_then_check(
        vec![("Look only", Vec::new())],
        vec![task("ta", "Look only")],
        "true",
    );
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-home");
    git_project(&env);
    let (code, _, stderr) = run(&env, "look");
    assert_eq!(code, Some(0), "{stderr}");
    let result = tool_result(&server, "ta");
    assert!(
        !result.contains("isolation") && !result.contains("arbor session"),
        "{result}"
    );
    assert_eq!(arbor_branches(&env), "");
}

#[test]
fn of_two_children_rewriting_one_line_one_lands_and_the_parent_gets_the_conflict() {
    let server = delegate_then_check(
        vec![
            ("Set VALUE to A", write("wa", "app.py", "VALUE = 'A'\n")),
            ("Set VALUE to B", write("wb", "app.py", "VALUE = 'B'\n")),
        ],
        vec![task("ta", "Set VALUE to A"), task("tb", "Set VALUE to B")],
        "cat app.py",
    );
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-home");
    git_project(&env);
    let (code, _, stderr) = run(&env, "Change VALUE");
    assert_eq!(code, Some(0), "{stderr}");

    let (a, b) = (isolation_of(&server, "ta"), isolation_of(&server, "tb"));
    // Whichever finished first landed; the other's result holds the conflict.
    let (landed, lost, lost_text) = if a.contains("merged 1 file") {
        ("A", "B", b)
    } else {
        ("B", "A", a)
    };
    assert!(lost_text.contains("NOT merged"), "{lost_text}");
    assert!(lost_text.contains("conflict with your checkout in 1 file (app.py)"));
    assert!(
        lost_text.contains(&format!("--- your checkout:\nVALUE = '{landed}'\n"))
            && lost_text.contains(&format!("):\nVALUE = '{lost}'\n")),
        "both sides: {lost_text}"
    );
    // Nothing half-applied: the checkout holds exactly the landed child's line, and
    // the parent's check in the same turn saw it.
    let checkout = format!("VALUE = '{landed}'\n");
    assert_eq!(read(&env.project.join("app.py")), checkout);
    let check: Value = serde_json::from_str(&tool_result(&server, "check")).unwrap();
    assert_eq!(check["stdout"], checkout.as_str(), "{check}");
    let loser = child_with(&env, &format!("Set VALUE to {lost}"));
    let shown = show(&env, &loser);
    assert_eq!(shown["worktree"]["state"], "active", "{shown}");
    assert_eq!(
        arbor_branches(&env).lines().count(),
        1,
        "the loser's branch stays"
    );
    let branch = shown["worktree"]["branch"].as_str().unwrap();
    assert_eq!(shown["worktree"]["merge"], "conflict", "{shown}");
    assert_eq!(shown["worktree"]["conflict"], json!(["app.py"]), "{shown}");
    let tree = env.cmd().args(["session", "tree"]).output().unwrap();
    let tree = String::from_utf8_lossy(&tree.stdout).to_string();
    assert!(
        tree.lines()
            .any(|l| l.contains(&loser) && l.ends_with(&format!("⎇ {branch} conflict"))),
        "{tree}"
    );
    assert!(
        stderr.contains("1 sub-session left unmerged")
            && stderr.contains(&format!(
                "{branch} (conflict in app.py): merge: arbor session merge {loser}   discard: arbor session discard {loser}"
            )),
        "{stderr}"
    );

    // Without --markers `session merge` still refuses whole; with it, markers.
    let refused = env
        .cmd()
        .args(["session", "merge", &loser])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(read(&env.project.join("app.py")), checkout);
    let marked = env
        .cmd()
        .args(["session", "merge", &loser, "--markers"])
        .output()
        .unwrap();
    assert!(
        marked.status.success(),
        "{}",
        String::from_utf8_lossy(&marked.stderr)
    );
    assert_eq!(
        read(&env.project.join("app.py")),
        format!(
            "<<<<<<< parent\nVALUE = '{landed}'\n=======\nVALUE = '{lost}'\n>>>>>>> {branch}\n"
        )
    );
    assert!(
        String::from_utf8_lossy(&marked.stderr).contains("conflict markers written in app.py"),
        "{}",
        String::from_utf8_lossy(&marked.stderr)
    );
    assert_eq!(arbor_branches(&env), "");
}

#[test]
fn merge_manual_leaves_the_branches_and_run_lists_them_on_stderr() {
    let server = delegate_then_check(
        vec![
            ("Fix calc", write("wa", "calc.py", "ADD = 'fixed'\n")),
            (
                "Fix strutil",
                write("wb", "strutil.py", "UPPER = 'fixed'\n"),
            ),
        ],
        vec![task("ta", "Fix calc"), task("tb", "Fix strutil")],
        "cat calc.py strutil.py",
    );
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-home");
    merge_manually(&env);
    two_broken_files(&env);
    let (code, _, stderr) = run(&env, "fix the tests");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(read(&env.project.join("calc.py")), "ADD = 'broken'\n");
    assert!(isolation_of(&server, "ta").contains("not merged (merge: manual)"));
    assert!(stderr.contains("2 sub-sessions left unmerged"), "{stderr}");
    for needle in ["Fix calc", "Fix strutil"] {
        let child = child_with(&env, needle);
        let branch = show(&env, &child)["worktree"]["branch"]
            .as_str()
            .unwrap()
            .to_string();
        let line = format!(
            "  {branch} (merge: manual): merge: arbor session merge {child}   discard: arbor session discard {child}"
        );
        assert!(stderr.lines().any(|l| l == line), "{line}\n{stderr}");
    }
    // The listed command works as printed.
    let child = child_with(&env, "Fix calc");
    let merged = env
        .cmd()
        .args(["session", "merge", &child])
        .output()
        .unwrap();
    assert!(merged.status.success());
    assert_eq!(read(&env.project.join("calc.py")), "ADD = 'fixed'\n");
}

/// `session show`, `tree` and `list` of a run's tree: each worktree child says where
/// its work stands, in text and JSON.
#[test]
fn show_tree_and_list_say_merged_discarded_unmerged_or_conflict() {
    let server = delegate_then_check(
        vec![
            ("Fix calc", write("wa", "calc.py", "ADD = 'fixed'\n")),
            (
                "Fix strutil",
                write("wb", "strutil.py", "UPPER = 'fixed'\n"),
            ),
        ],
        vec![task("ta", "Fix calc"), task("tb", "Fix strutil")],
        "true",
    );
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-home");
    merge_manually(&env);
    two_broken_files(&env);
    let (code, _, stderr) = run(&env, "fix the tests");
    assert_eq!(code, Some(0), "{stderr}");
    let (calc, strutil) = (
        child_with(&env, "Fix calc"),
        child_with(&env, "Fix strutil"),
    );
    let text = |args: &[&str]| {
        let out = env.cmd().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let line_of = |text: &str, id: &str| {
        text.lines()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("no line for {id}:\n{text}"))
            .to_string()
    };
    let shown = text(&["session", "show", &calc]);
    let branch = show(&env, &calc)["worktree"]["branch"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        shown.contains(&format!("worktree  {branch} unmerged ✎1 (in ")),
        "{shown}"
    );
    assert_eq!(show(&env, &calc)["worktree"]["merge"], "unmerged");
    assert_eq!(show(&env, &calc)["work"], "unmerged ✎1");
    let tree = text(&["session", "tree"]);
    assert!(
        line_of(&tree, &calc).ends_with(&format!("⎇ {branch} unmerged ✎1")),
        "{tree}"
    );
    let list = text(&["session", "list"]);
    assert!(
        list.lines().next().unwrap_or_default().contains("WORK"),
        "{list}"
    );
    assert!(line_of(&list, &calc).contains("unmerged ✎1"), "{list}");

    for (args, id) in [
        (["session", "merge"], &calc),
        (["session", "discard"], &strutil),
    ] {
        let out = env.cmd().args(args).arg(id).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tree = text(&["session", "tree"]);
    let list = text(&["session", "list"]);
    for (id, word) in [(&calc, "merged"), (&strutil, "discarded")] {
        assert!(line_of(&tree, id).ends_with(&format!("  {word}")), "{tree}");
        assert!(line_of(&list, id).contains(&format!(" {word} ")), "{list}");
        assert!(
            text(&["session", "show", id]).contains(&format!("worktree  {word}\n")),
            "{id}"
        );
        assert_eq!(show(&env, id)["worktree"]["merge"], word);
    }
}

/// `merge: review` headless: `--yes` answers the question (the work merges as under
/// `auto`); without it nobody is asked and the branch stays, listed at the end.
#[test]
fn merge_review_headless_merges_with_yes_and_leaves_it_without() {
    for yes in [true, false] {
        let server = delegate_then_check(
            vec![("Fix calc", write("wa", "calc.py", "ADD = 'fixed'\n"))],
            vec![task("ta", "Fix calc")],
            "cat calc.py",
        );
        let env = TestEnv::new();
        env.use_openai(&server.base_url, "sk-test-home");
        let mut config = read(&env.config);
        config.push_str(
            "isolation: {merge: review}\napprovals:\n  write_file: allow\n  bash: allow\n",
        );
        std::fs::write(&env.config, config).unwrap();
        two_broken_files(&env);
        let mut cmd = env.cmd();
        cmd.arg("run");
        if yes {
            cmd.arg("--yes");
        }
        let out = cmd.arg("fix the tests").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let note = isolation_of(&server, "ta");
        let child = child_with(&env, "Fix calc");
        if yes {
            assert!(
                note.contains("merged 1 file into the parent's checkout: calc.py"),
                "{note}"
            );
            assert_eq!(read(&env.project.join("calc.py")), "ADD = 'fixed'\n");
            assert_eq!(arbor_branches(&env), "");
            assert_eq!(show(&env, &child)["worktree"]["merge"], "merged");
        } else {
            assert!(
                note.contains(
                    "not merged (merge: review, and nobody was asked (headless run without --yes))"
                ),
                "{note}"
            );
            assert_eq!(read(&env.project.join("calc.py")), "ADD = 'broken'\n");
            assert!(stderr.contains("(merge: review)"), "{stderr}");
            assert_eq!(show(&env, &child)["worktree"]["merge"], "unmerged");
        }
    }
}

/// The same delegation over `arbor acp` (the official TypeScript SDK as the editor,
/// answering every permission with allow-once): both fixes are in the editor's
/// checkout, the root's check in the same turn saw them, no `arbor/*` branch is left.
#[test]
fn over_acp_the_childrens_fixes_land_in_the_editors_checkout() {
    let server = delegate_then_check(
        vec![
            ("Fix calc", write("wa", "calc.py", "ADD = 'fixed'\n")),
            (
                "Fix strutil",
                write("wb", "strutil.py", "UPPER = 'fixed'\n"),
            ),
        ],
        vec![task("ta", "Fix calc"), task("tb", "Fix strutil")],
        "cat calc.py strutil.py",
    );
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-home");
    two_broken_files(&env);
    let summary = crate::acp::drive(&env, &["fix the tests"]);
    assert_eq!(summary["turns"][0]["stopReason"], "end_turn", "{summary:#}");
    let check = tool_result(&server, "check");
    assert!(
        check.contains("ADD = 'fixed'") && check.contains("UPPER = 'fixed'"),
        "the check ran against the merged checkout: {check}"
    );
    assert_eq!(read(&env.project.join("calc.py")), "ADD = 'fixed'\n");
    assert_eq!(read(&env.project.join("strutil.py")), "UPPER = 'fixed'\n");
    assert_eq!(arbor_branches(&env), "", "no arbor/* branch left");
}

/// `merge: review` over `arbor acp`: each finished child's merge is a
/// `session/request_permission` carrying its diff; the editor's allow merges it.
#[test]
fn over_acp_review_asks_the_editor_with_the_diff() {
    let server = delegate_then_check(
        vec![
            ("Fix calc", write("wa", "calc.py", "ADD = 'fixed'\n")),
            (
                "Fix strutil",
                write("wb", "strutil.py", "UPPER = 'fixed'\n"),
            ),
        ],
        vec![task("ta", "Fix calc"), task("tb", "Fix strutil")],
        "cat calc.py strutil.py",
    );
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-home");
    env.append_config("isolation: {merge: review}\n");
    two_broken_files(&env);
    let summary = crate::acp::drive(&env, &["fix the tests"]);
    let asked: Vec<String> = summary["log"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "permission")
        .map(|e| e["request"].to_string())
        .filter(|r| r.contains("merge #"))
        .collect();
    assert_eq!(asked.len(), 2, "{asked:#?}");
    assert!(
        asked.iter().any(|r| r.contains("+ADD = 'fixed'")),
        "{asked:#?}"
    );
    assert_eq!(read(&env.project.join("calc.py")), "ADD = 'fixed'\n");
    assert_eq!(read(&env.project.join("strutil.py")), "UPPER = 'fixed'\n");
    assert_eq!(arbor_branches(&env), "");
}

/// A worktree child's approval prompt says where its command runs: the sandbox note
/// of its `approval:required` names the worktree's branch (headless without `--yes`
/// the call is then denied, as any).
#[test]
fn a_worktree_childs_approval_says_the_command_runs_in_its_worktree() {
    let server = delegate_then_check(
        vec![(
            "Fix calc",
            vec![("b1", "bash", json!({"command": "echo fixed > calc.py"}))],
        )],
        vec![task("ta", "Fix calc")],
        "true",
    );
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-home");
    two_broken_files(&env);
    let out = env.cmd().args(["run", "fix the tests"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let notes: Vec<String> = std::fs::read_dir(env.sessions_dir())
        .unwrap()
        .flat_map(|d| read_jsonl(&d.unwrap().path().join("events.jsonl")))
        .filter(|e| e["event"] == "approval:required" && e["data"]["tool_call_id"] == "b1")
        .map(|e| {
            e["data"]["sandbox"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("sandboxed: writes ./")
            && notes[0].contains("; runs in worktree arbor/"),
        "{notes:?}"
    );
}
