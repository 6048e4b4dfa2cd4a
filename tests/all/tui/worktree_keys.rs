//! Merge, discard and "rewind here" keys (issue 25 items 2, 4, 5): on a tree node
//! with an unmerged worktree `m` / `D` ask first (a small modal box) and send
//! `MergeSession` / `DiscardSession` only on `y`; `n` cancels with a note; a merge
//! refused for conflicts names the files in a note; after a merge the node loses its
//! "unmerged" mark. On a turn in the thread `u` asks, then sends `ForkSession` with
//! `rewind` at that turn and opens the fork. A child spawned in this process learns
//! its branch from the listing sent when its parent's turn ends.

use std::path::PathBuf;

use arbor::engine::handle::undo::{Discarded, Merged, Rewound, UndoDone};
use arbor::session::fork::Forked;

use super::*;

const KID: &str = "5f0e1c2a11114222-1a2b3c4d5e6f7081_implementer";

fn meta(id: &str, parent: Option<&str>, agent: &str) -> Metadata {
    Metadata {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        agent_name: Some(agent.into()),
        created: T0.into(),
        last_updated: T0.into(),
        status: SessionStatus::Completed,
        ..Default::default()
    }
}

/// A root and its implementer child with an active worktree on `arbor/1a2b3c4d`,
/// the child selected in the tree (focus there).
fn child_selected() -> Harness {
    let mut h = harness();
    let mut kid = meta(KID, Some(ROOT), "implementer");
    kid.arbor.worktree = Some(serde_json::from_value(json!({"path": "/w", "branch": "arbor/1a2b3c4d", "base": "0", "repo": "/r", "state": "active"})).unwrap());
    h.app
        .handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(vec![
            meta(ROOT, None, "zen-architect"),
            kid,
        ]))));
    h.press(KeyCode::Tab); // composer → tree
    assert_eq!(h.app.focus(), Focus::Tree);
    h.press(KeyCode::Right); // expand the root
    h.press(KeyCode::Down);
    assert_eq!(h.app.tree().selected.as_deref(), Some(KID));
    assert_eq!(branch(&h).as_deref(), Some("arbor/1a2b3c4d"));
    h
}

/// The branch the child's node shows ("⎇ arbor/… unmerged"), if any.
fn branch(h: &Harness) -> Option<String> {
    h.app.tree().get(KID).and_then(|n| n.branch.clone())
}

fn note(h: &Harness) -> String {
    h.app.note().map(|n| n.text.clone()).unwrap_or_default()
}

#[test]
fn m_then_y_merges_and_the_node_loses_its_unmerged_mark() {
    let mut h = child_selected();
    h.press(KeyCode::Char('m'));
    let screen = h.screen(100, 20);
    assert!(
        screen.contains("merge arbor/1a2b3c4d into the parent's checkout?"),
        "{screen}"
    );
    assert!(screen.contains("y yes · n/Esc no"), "{screen}");
    insta::assert_snapshot!("merge_confirm_100", screen);
    // Other keys do nothing while it asks: no command, the tree keeps its selection.
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('D'));
    assert!(h.drain().is_empty());
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.drain(),
        vec![EngineCommand::MergeSession {
            session_id: KID.into(),
            markers: false,
        }]
    );
    assert!(!h.screen(100, 20).contains("into the parent's checkout?"));
    h.app.handle(AppEvent::Reply(EngineReply::Undone {
        session_id: KID.into(),
        result: Ok(UndoDone::Merged(Merged {
            branch: "arbor/1a2b3c4d".into(),
            target: PathBuf::from("/r"),
            files: vec!["app.py".into()],
            conflicted: vec![],
            worktree: PathBuf::from("/w"),
            notes: vec![],
        })),
    }));
    assert_eq!(branch(&h), None, "the node lost its unmerged mark");
    assert!(
        note(&h).contains("merged arbor/1a2b3c4d (1 file) into /r"),
        "{}",
        note(&h)
    );
    // Nothing left to merge: the key says so and asks nothing.
    h.press(KeyCode::Char('m'));
    assert!(h.drain().is_empty());
    assert!(
        note(&h).contains("has no unmerged worktree"),
        "{}",
        note(&h)
    );
}

#[test]
fn n_cancels_a_merge_and_esc_a_discard() {
    let mut h = child_selected();
    h.press(KeyCode::Char('m'));
    h.press(KeyCode::Char('n'));
    assert!(h.drain().is_empty());
    assert_eq!(note(&h), "not merged");
    assert!(branch(&h).is_some());

    h.press(KeyCode::Char('D'));
    let screen = h.screen(100, 20);
    assert!(
        screen.contains("discard arbor/1a2b3c4d and its changes?"),
        "{screen}"
    );
    h.press(KeyCode::Esc);
    assert!(h.drain().is_empty());
    assert_eq!(note(&h), "not discarded");
    // A yes sends the discard; its answer clears the mark.
    h.press(KeyCode::Char('D'));
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.drain(),
        vec![EngineCommand::DiscardSession {
            session_id: KID.into()
        }]
    );
    h.app.handle(AppEvent::Reply(EngineReply::Undone {
        session_id: KID.into(),
        result: Ok(UndoDone::Discarded(Discarded {
            branch: "arbor/1a2b3c4d".into(),
            worktree: PathBuf::from("/w"),
            notes: vec![],
        })),
    }));
    assert_eq!(branch(&h), None);
    assert_eq!(note(&h), "discarded arbor/1a2b3c4d");
}

#[test]
fn a_refused_merge_names_the_conflicting_files_and_keeps_the_mark() {
    let mut h = child_selected();
    h.press(KeyCode::Char('m'));
    h.press(KeyCode::Char('y'));
    h.drain();
    h.app.handle(AppEvent::Reply(EngineReply::Undone {
        session_id: KID.into(),
        result: Err(arbor::engine::handle::undo::UndoError::from(
            arbor::isolation::IsolationError::Conflict {
                files: vec!["app.py".into(), "lib.py".into()],
            },
        )),
    }));
    let screen = h.screen(120, 20);
    assert!(screen.contains("app.py, lib.py"), "{screen}");
    assert!(branch(&h).is_some(), "the worktree stays");
    assert!(h.app.note().is_some_and(|n| n.warning));
    // Issue 35: the refusal offers conflict markers; `y` asks for them.
    assert!(screen.contains("conflict markers into them"), "{screen}");
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.drain(),
        vec![EngineCommand::MergeSession {
            session_id: KID.into(),
            markers: true,
        }]
    );
}

/// Declining the markers leaves the branch and says so.
#[test]
fn a_refused_merge_offers_markers_and_n_leaves_the_branch() {
    let mut h = child_selected();
    h.app.handle(AppEvent::Reply(EngineReply::Undone {
        session_id: KID.into(),
        result: Err(arbor::engine::handle::undo::UndoError::from(
            arbor::isolation::IsolationError::Conflict {
                files: vec!["app.py".into()],
            },
        )),
    }));
    assert!(
        h.screen(120, 20)
            .contains("the merge conflicts in 1 file (app.py); write conflict"),
        "{}",
        h.screen(120, 20)
    );
    h.press(KeyCode::Char('n'));
    assert!(h.drain().is_empty());
    assert_eq!(note(&h), "not merged; the branch stays");
    assert!(branch(&h).is_some());
}

#[test]
fn merge_on_a_node_without_a_worktree_says_so() {
    let mut h = child_selected();
    h.press(KeyCode::Up); // the root
    h.press(KeyCode::Char('m'));
    assert!(h.drain().is_empty());
    assert!(
        note(&h).contains("zen-architect has no unmerged worktree"),
        "{}",
        note(&h)
    );
    assert!(!h.screen(100, 20).contains("Merge?"));
}

#[test]
fn u_on_a_turn_forks_there_with_a_rewind_and_opens_the_fork() {
    let mut h = with_root_open();
    h.drain();
    // No cursor yet: it asks for one.
    h.press(KeyCode::Char('u'));
    assert!(note(&h).contains("move the cursor"), "{}", note(&h));
    assert!(h.drain().is_empty());
    // The cursor on the first turn's last reply.
    h.press(KeyCode::Char('['));
    h.press(KeyCode::Char('u'));
    let screen = h.screen(100, 24);
    assert!(screen.contains("Rewind here?"), "{screen}");
    assert!(
        screen.contains("fork #5f0e1c2a at turn 1 and restore"),
        "{screen}"
    );
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.drain(),
        vec![EngineCommand::ForkSession {
            session_id: ROOT.into(),
            at_turn: Some(1),
            rewind: true,
        }]
    );
    let fork_id = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b";
    h.app.handle(AppEvent::Reply(EngineReply::Undone {
        session_id: ROOT.into(),
        result: Ok(UndoDone::Forked {
            forked: Forked {
                session_id: fork_id.into(),
                parent_id: ROOT.into(),
                forked_from_turn: 1,
                message_count: 2,
                events_count: 0,
            },
            rewound: Some(Rewound {
                dir: PathBuf::from("/p"),
                to_turn: 1,
                files: vec!["app.py".into()],
                forced: vec![],
            }),
        }),
    }));
    assert_eq!(
        h.drain(),
        vec![
            EngineCommand::ListSessions,
            EngineCommand::LoadTranscript {
                session_id: fork_id.into()
            }
        ]
    );
    assert_eq!(
        note(&h),
        "forked #9e8d7c6b at turn 1; restored 1 file to after turn 1: app.py"
    );
}

#[test]
fn the_keys_are_in_the_help() {
    let mut h = harness();
    h.press(KeyCode::F(1));
    h.press(KeyCode::End);
    let mut all = String::new();
    h.press(KeyCode::Home);
    for _ in 0..40 {
        all.push_str(&h.screen(120, 40));
        h.press(KeyCode::PageDown);
    }
    for text in [
        "Merge the session's worktree",
        "Discard the session's worktree",
        "Rewind here",
        "Confirmation (merge, discard, rewind here)",
    ] {
        assert!(all.contains(text), "no {text:?} in the help:\n{all}");
    }
}

/// A child spawned in this process learns its worktree's branch from the listing
/// sent when its parent's turn ends (its bus events carry none), so `m` can merge it.
#[test]
fn a_live_child_learns_its_branch_when_the_parents_turn_ends() {
    let mut h = with_root_open();
    h.drain();
    assert_eq!(h.app.tree().get(CHILD).and_then(|n| n.branch.clone()), None);
    h.app.handle(AppEvent::Reply(EngineReply::TurnFinished(
        arbor::engine::TurnOutcome {
            session_id: ROOT.into(),
            agent: "zen-architect".into(),
            status: SessionStatus::Completed,
            response: "All done.".into(),
            turn_count: 1,
            error: None,
        },
    )));
    assert_eq!(h.drain(), vec![EngineCommand::ListSessions]);
    let mut child = meta(CHILD, Some(ROOT), "explorer");
    child.arbor.worktree = Some(serde_json::from_value(json!({"path": "/w", "branch": "arbor/0a1b2c3d", "base": "0", "repo": "/r", "state": "active"})).unwrap());
    h.app
        .handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(vec![
            meta(ROOT, None, "zen-architect"),
            child,
        ]))));
    assert_eq!(
        h.app
            .tree()
            .get(CHILD)
            .and_then(|n| n.branch.clone())
            .as_deref(),
        Some("arbor/0a1b2c3d")
    );
}
