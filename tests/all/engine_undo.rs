//! Merge, discard, rewind and fork through the engine handle (issue 25; the TUI's
//! keys send these commands): `ForkSession` with `rewind` forks at a turn after
//! restoring the files changed since — "rewind here" — answered with `Undone`;
//! a merge of a root and a fork out of range are refused with typed errors and
//! change nothing. Scripted provider, temp dirs (`support/fixture.rs`).

use crate::support::fixture;

use arbor::config::isolation::{IsolationSetting, MergePolicy};
use arbor::engine::handle::undo::{UndoDone, UndoError};
use arbor::engine::testing::{Drive, Step, after_tool_results, last_user_text};
use arbor::engine::{Engine, EngineReply, Replies};
use arbor::session::EngineCommand;
use arbor::session::SessionId;
use arbor::session::fork::ForkError;
use fixture::*;
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;

/// Sends `command` and returns its one `Undone` answer.
async fn undo(engine: &Engine, command: EngineCommand) -> Result<UndoDone, UndoError> {
    let (tx, mut rx) = unbounded_channel();
    engine.execute(command, Replies::channel(tx));
    match tokio::time::timeout(GUARD, rx.recv()).await.unwrap() {
        Some(EngineReply::Undone { result, .. }) => result,
        other => panic!("not an Undone reply: {other:?}"),
    }
}

/// Turn 1 writes `inside.txt` = `one`, turn 2 writes it `two`.
fn two_writing_turns() -> Fixture {
    let tools = plan(json!({"tools": [{"module": "tool-filesystem"}]}));
    Fixture::new(tools, &[], |r| {
        if after_tool_results(r) {
            return vec![Step::text("done")];
        }
        let content = if last_user_text(r).contains("first") {
            "one\n"
        } else {
            "two\n"
        };
        vec![Step::call(
            "w",
            "write_file",
            json!({"file_path": "inside.txt", "content": content}),
        )]
    })
}

#[tokio::test]
async fn rewind_here_forks_at_the_turn_and_restores_the_files_changed_after_it() {
    let fx = two_writing_turns();
    let engine = fx.engine();
    let id = engine.create_root(None).unwrap();
    engine.run_turn(&id, "first".into()).await.unwrap();
    engine.run_turn(&id, "second".into()).await.unwrap();
    let file = fx.paths.cwd.join("inside.txt");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");

    // Out of range: refused with the valid range, nothing written.
    let refused = undo(
        &engine,
        EngineCommand::ForkSession {
            session_id: id.clone(),
            at_turn: Some(5),
            rewind: false,
        },
    )
    .await;
    match refused {
        Err(UndoError::Fork(e @ ForkError::OutOfRange { .. })) => {
            assert_eq!(e.to_string(), "Turn 5 out of range. Valid range: 1-2")
        }
        other => panic!("{other:?}"),
    }
    let rewind = undo(
        &engine,
        EngineCommand::RewindSession {
            session_id: id.clone(),
            to_turn: 9,
            force: false,
        },
    )
    .await;
    assert!(
        rewind
            .as_ref()
            .is_err_and(|e| e.to_string() == "Turn 9 out of range. Valid range: 0-2"),
        "{rewind:?}"
    );
    // A root has no worktree to merge.
    let root = undo(
        &engine,
        EngineCommand::MergeSession {
            session_id: id.clone(),
            markers: false,
        },
    )
    .await;
    assert!(matches!(root, Err(UndoError::Root(_))), "{root:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");

    let done = undo(
        &engine,
        EngineCommand::ForkSession {
            session_id: id.clone(),
            at_turn: Some(1),
            rewind: true,
        },
    )
    .await
    .unwrap();
    let UndoDone::Forked { forked, rewound } = done else {
        panic!("{done:?}");
    };
    assert_eq!(forked.parent_id, id);
    assert_eq!(forked.forked_from_turn, 1);
    assert_eq!(
        rewound.map(|r| r.files),
        Some(vec!["inside.txt".to_string()])
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
    let fork = fx.transcript(forked.session_id.as_str());
    let users = fork.iter().filter(|m| m["role"] == "user").count();
    assert_eq!(users, 1, "the fork holds turn 1 only");
    assert_ne!(forked.session_id, SessionId::from(id.as_str()));
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// The root sends `writer` to change `inside.txt`; the writer works in a worktree.
fn worktree_child() -> Fixture {
    let tools = plan(json!({"tools": [{"module": "tool-filesystem"}, {"module": "tool-task"}]}));
    let mut fx = Fixture::new(tools, &[("writer", "You write.")], |r| {
        if after_tool_results(r) {
            vec![Step::text("done")]
        } else if last_user_text(r).contains("Change it") {
            vec![Step::call(
                "w",
                "write_file",
                json!({"file_path": "inside.txt", "content": "changed\n"}),
            )]
        } else {
            vec![Step::call(
                "t",
                "task",
                json!({"agent": "writer", "instruction": "Change it"}),
            )]
        }
    });
    // The branch stays for the merge under test (issue 35 merges by default).
    fx.config.isolation = Some(IsolationSetting {
        mode: None,
        merge: Some(MergePolicy::Manual),
    });
    git(&fx.paths.cwd, &["init", "--quiet"]);
    git(&fx.paths.cwd, &["add", "inside.txt"]);
    git(&fx.paths.cwd, &["commit", "--quiet", "-m", "init"]);
    fx
}

/// A worktree child that ran in this process (its session still live here, holding
/// its lock) is merged through the engine, as the TUI's `m` does: the parent's
/// checkout gets the change, the record says `merged`, a second merge says so.
#[tokio::test]
async fn a_live_worktree_child_merges_through_the_engine() {
    let fx = worktree_child();
    let engine = fx.engine();
    let root = engine.create_root(None).unwrap();
    engine.run_turn(&root, "delegate".into()).await.unwrap();
    let file = fx.paths.cwd.join("inside.txt");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "inside\n",
        "main untouched"
    );
    let child = std::fs::read_dir(fx.paths.sessions_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .find(|n| n.ends_with("_writer"))
        .unwrap();
    assert_eq!(fx.metadata(&child)["worktree"]["state"], "active");

    let done = undo(
        &engine,
        EngineCommand::MergeSession {
            session_id: child.as_str().into(),
            markers: false,
        },
    )
    .await
    .unwrap();
    let UndoDone::Merged(merged) = done else {
        panic!("{done:?}");
    };
    assert_eq!(merged.files, ["inside.txt"]);
    assert!(!merged.worktree.exists(), "the worktree is removed");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed\n");
    assert_eq!(fx.metadata(&child)["worktree"]["state"], "merged");

    let again = undo(
        &engine,
        EngineCommand::DiscardSession {
            session_id: child.as_str().into(),
        },
    )
    .await;
    assert!(
        matches!(
            &again,
            Err(UndoError::Gone {
                state: "already merged",
                ..
            })
        ),
        "{again:?}"
    );
}
