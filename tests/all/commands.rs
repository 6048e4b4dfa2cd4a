//! Custom slash commands from files (issue 29) through the real binary: a project's
//! `.claude/commands/review.md` makes `arbor run "/review …"` send its prompt with
//! `$ARGUMENTS` and `$1` filled in; the user's `<config dir>/arbor/commands/` adds
//! more; an edited file counts at the next use; an unknown `/name` is refused before
//! anything is sent, as in the TUI (issue 39).

use crate::support;

use support::*;

fn sent_prompt(env: &TestEnv, message: &str) -> String {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("ok"))]);
    env.use_openai(&server.base_url, "sk-test");
    let out = env
        .cmd()
        .args(["run", "--output-format", "json", message])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    last_user_text(&server.requests()[0])
}

#[test]
fn a_command_file_becomes_a_slash_command_with_its_arguments() {
    let env = TestEnv::new();
    let project = env.project.join(".claude/commands");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("review.md"),
        "---\ndescription: Review files\nargument-hint: \"[files…]\"\n---\nReview $ARGUMENTS for bugs, starting with $1.\n",
    )
    .unwrap();
    let user = env.home.join(".config/arbor/commands");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("standup.md"), "Summarize what changed today.\n").unwrap();

    assert_eq!(
        sent_prompt(&env, "/review src/a.rs src/b.rs"),
        "Review src/a.rs src/b.rs for bugs, starting with src/a.rs."
    );
    assert_eq!(
        sent_prompt(&env, "/standup"),
        "Summarize what changed today."
    );
    // Edited: the next use reads the new text.
    std::fs::write(project.join("review.md"), "Look hard at $ARGUMENTS.\n").unwrap();
    assert_eq!(sent_prompt(&env, "/review x.rs"), "Look hard at x.rs.");
    // No file of that name: refused, nothing sent (issue 39; it used to go as typed).
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("ok"))]);
    env.use_openai(&server.base_url, "sk-test");
    let out = env.cmd().args(["run", "/nothing here"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("unknown command /nothing"), "{stderr}");
    assert!(server.requests().is_empty());
}

/// The TUI's palette lists a command file with its hint, description and source, and
/// sends its expanded prompt.
#[cfg(unix)]
#[test]
fn the_palette_lists_command_files_with_their_source() {
    use std::time::Duration;

    let env = TestEnv::new();
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("reviewed it"))]);
    env.use_openai(&server.base_url, "sk-test");
    let project = env.project.join(".amplifier/commands");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("review.md"),
        "---\ndescription: Review files\nargument-hint: \"[files]\"\n---\nReview $ARGUMENTS now.\n",
    )
    .unwrap();
    let tui = env.tui();
    tui.send(b"/revi");
    assert!(
        tui.wait_for(Duration::from_secs(20), |s| s.contains("/review [files]")
            && s.contains("Review files (project:"))
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
