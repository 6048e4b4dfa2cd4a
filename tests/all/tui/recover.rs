//! Recovering a tree after a crash, seen from the TUI (issue 10 items 2 and 5):
//! interrupted sessions in the tree and the thread header, `r` continuing a stopped
//! node, `R` resuming every interrupted node of a tree, titles instead of agent names.

use arbor::session::protocol::SessionRenamedEvent;

use super::*;

const SIBLING: &str = "5f0e1c2a11114222-7777888899990000_zen-architect";
const GRANDCHILD: &str = "0a1b2c3d4e5f6071-1234123412341234_tester";

pub(super) fn stored(
    id: &str,
    parent: Option<&str>,
    agent: &str,
    status: SessionStatus,
    secs: i64,
) -> Metadata {
    let at = (T0.parse::<Timestamp>().unwrap() + jiff::SignedDuration::from_secs(secs)).to_string();
    Metadata {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        agent_name: Some(agent.into()),
        created: at.clone(),
        last_updated: at,
        status,
        depth: u32::from(parent.is_some()),
        ..Default::default()
    }
}

/// What `session list` gives after a `kill -9` of a delegating run: the titled root
/// and two of its sub-sessions interrupted, one sub-session completed before the kill.
fn after_a_crash() -> Vec<Metadata> {
    vec![
        Metadata {
            name: Some("Survey the repo and report what each module owns".into()),
            ..stored(ROOT, None, "arbor", SessionStatus::Interrupted, 0)
        },
        stored(CHILD, Some(ROOT), "explorer", SessionStatus::Interrupted, 1),
        stored(
            SIBLING,
            Some(ROOT),
            "zen-architect",
            SessionStatus::Completed,
            2,
        ),
        stored(
            GRANDCHILD,
            Some(CHILD),
            "tester",
            SessionStatus::Interrupted,
            3,
        ),
    ]
}

/// The crashed tree listed, the tree focused with the root expanded.
fn crashed_tree() -> Harness {
    let mut h = harness();
    h.app.handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(
        after_a_crash(),
    ))));
    h.press(KeyCode::Tab); // composer → tree
    assert_eq!(h.app.focus(), Focus::Tree);
    h.press(KeyCode::Right); // expand the root
    h
}

fn select(h: &mut Harness, id: &str) {
    for _ in 0..h.app.tree().len() {
        h.press(KeyCode::Up);
    }
    for _ in 0..h.app.tree().len() {
        if h.app.tree().selected.as_deref() == Some(id) {
            return;
        }
        h.press(KeyCode::Down);
    }
    panic!("{id} is not visible in the tree");
}

#[test]
fn interrupted_sessions_show_as_interrupted_in_the_tree_and_the_thread() {
    let mut h = crashed_tree();
    let screen = h.screen(80, 24);
    assert!(
        screen.contains("! Survey the repo an…"),
        "the root shows its title and the interrupted glyph: {screen}"
    );
    assert!(!screen.contains(" arbor"), "{screen}");
    assert!(screen.contains("! explorer"), "{screen}");
    assert!(screen.contains("! tester"), "{screen}");
    assert!(screen.contains("✓ zen-architect"), "{screen}");
    insta::assert_snapshot!("interrupted_tree_80", screen);

    select(&mut h, CHILD);
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: CHILD.into()
        }]
    );
    h.load(
        CHILD,
        Some(ROOT),
        "explorer",
        vec![
            msg(json!({"role": "user", "content": "List the modules"})),
            msg(json!({"role": "assistant", "content": "Reading src/ now", "metadata": {"partial": true}})),
        ],
    );
    let screen = h.screen(80, 24);
    assert!(
        screen.contains("sub-session #0a1b2c3d · explorer · ! interrupted"),
        "{screen}"
    );
    insta::assert_snapshot!("interrupted_child_thread_80", screen);
    let narrow = h.screen(40, 24);
    assert!(narrow.contains("#0a1b2c3d · explorer · !"), "{narrow}");
    insta::assert_snapshot!("interrupted_child_thread_40", narrow);
}

#[test]
fn r_continues_a_stopped_session_and_says_why_not_otherwise() {
    let mut h = crashed_tree();
    select(&mut h, CHILD);
    h.press(KeyCode::Char('r'));
    assert_eq!(
        h.drain(),
        [EngineCommand::Continue {
            session_id: CHILD.into()
        }]
    );
    assert_eq!(h.app.note().unwrap().text, "continuing explorer…");

    select(&mut h, SIBLING);
    h.press(KeyCode::Char('r'));
    assert!(h.drain().is_empty(), "a completed session is not continued");
    let note = &h.app.note().unwrap().text;
    assert!(
        note.starts_with("zen-architect is completed: r continues"),
        "{note}"
    );

    // Failed, cancelled and paused sessions are stopped too.
    for (status, secs) in [
        (SessionStatus::Failed, 10),
        (SessionStatus::Cancelled, 11),
        (SessionStatus::Paused, 12),
    ] {
        h.engine(EngineEvent::status(status), SIBLING, Some(ROOT), secs);
        h.press(KeyCode::Char('r'));
        assert_eq!(
            h.drain(),
            [EngineCommand::Continue {
                session_id: SIBLING.into()
            }],
            "{status:?}"
        );
    }
    // A running one is not.
    h.engine(
        EngineEvent::status(SessionStatus::Running),
        SIBLING,
        Some(ROOT),
        13,
    );
    h.press(KeyCode::Char('r'));
    assert!(h.drain().is_empty());
}

#[test]
fn capital_r_resumes_every_interrupted_session_of_the_selected_tree() {
    let mut h = crashed_tree();
    // From any node of the tree: the command names the tree's root.
    select(&mut h, SIBLING);
    h.key(KeyCode::Char('R'), KeyModifiers::SHIFT);
    assert_eq!(
        h.drain(),
        [EngineCommand::ContinueInterrupted {
            session_id: ROOT.into()
        }]
    );
    assert_eq!(
        h.app.note().unwrap().text,
        "resuming 3 interrupted sessions…"
    );
    // A tree with nothing interrupted: a note, no command.
    for id in [ROOT, CHILD, GRANDCHILD] {
        let parent = (id != ROOT).then_some(if id == GRANDCHILD { CHILD } else { ROOT });
        h.engine(
            EngineEvent::status(SessionStatus::Completed),
            id,
            parent,
            20,
        );
    }
    h.key(KeyCode::Char('R'), KeyModifiers::SHIFT);
    assert!(h.drain().is_empty());
    assert_eq!(
        h.app.note().unwrap().text,
        "no interrupted session in this tree"
    );
    // Both keys are in the help overlay (the keymap is data).
    h.press(KeyCode::F(1));
    let help = h.screen(100, 40);
    assert!(help.contains("Continue a stopped session"), "{help}");
    assert!(
        help.contains("Resume interrupted sessions of the tree"),
        "{help}"
    );
}

#[test]
fn a_title_replaces_the_agent_name_in_the_tree_when_it_arrives() {
    let mut h = harness();
    h.engine(start("arbor"), ROOT, None, 0);
    assert!(h.screen(80, 24).contains("· arbor"), "untitled: the agent");
    h.engine(
        EngineEvent::SessionRenamed(SessionRenamedEvent {
            name: "Fix the flaky parser test".into(),
        }),
        ROOT,
        None,
        1,
    );
    let screen = h.screen(80, 24);
    assert!(screen.contains("· Fix the flaky pars…"), "{screen}");
    assert!(!screen.contains("· arbor"), "{screen}");
}

/// Issue 23 item 12: the status bar says how to continue a stopped session — `r` on
/// the selected node in the tree, and where to press it from its open thread.
#[test]
fn an_interrupted_session_says_r_continues_it() {
    let mut h = crashed_tree();
    select(&mut h, CHILD);
    let screen = h.screen(100, 24);
    assert!(
        screen.contains("r Continue this stopped session"),
        "{screen}"
    );
    h.press(KeyCode::Enter);
    h.load(
        CHILD,
        Some(ROOT),
        "explorer",
        vec![msg(json!({"role": "user", "content": "List the modules"}))],
    );
    assert_eq!(h.app.focus(), Focus::Chat);
    let screen = h.screen(100, 24);
    assert!(screen.contains("r (in the tree) continues it"), "{screen}");
    h.press(KeyCode::BackTab);
    assert_eq!(h.app.focus(), Focus::Tree);
    select(&mut h, SIBLING); // completed: nothing to continue
    assert!(!h.screen(100, 24).contains("Continue this stopped"));
}
