//! Issue 36, what the TUI takes from the engine's one ordered stream: a new root is
//! adopted once, on its `SessionCreated` reply (its `session:start` came first and
//! adopts nothing), and a failed command's error arrives whole and shows its own
//! text.

use arbor::engine::EngineError;
use arbor::engine::compact::CompactError;

use super::*;

/// Another root of this process, started while the thread waits for its own.
const OTHER: &str = "77777777-1111-4222-8333-444455556666";

/// The thread waiting for its new root: its prompt typed and submitted.
fn waiting_for_a_root() -> Harness {
    let mut h = harness();
    h.type_text("hi");
    h.press(KeyCode::Enter);
    assert!(matches!(
        h.drain()[..],
        [EngineCommand::Submit {
            session_id: None,
            ..
        }]
    ));
    assert!(h.app.thread().unwrap().awaiting_root);
    h
}

fn created(h: &mut Harness, id: &str) {
    h.app.handle(AppEvent::Reply(EngineReply::SessionCreated {
        session_id: id.into(),
    }));
}

#[test]
fn a_new_root_is_adopted_once_on_its_reply() {
    let mut h = waiting_for_a_root();
    // Starts of roots adopt nothing, another's (the old adoption on `session:start`
    // took the first root start that came) or its own.
    h.engine(start("explorer"), OTHER, None, 0);
    h.engine(start("zen-architect"), ROOT, None, 1);
    let thread = h.app.thread().unwrap();
    assert_eq!(thread.session_id, None, "a start adopts nothing");
    assert!(thread.awaiting_root);

    created(&mut h, ROOT);
    let thread = h.app.thread().unwrap();
    assert_eq!(thread.session_id.as_deref(), Some(ROOT));
    assert!(!thread.awaiting_root);
    assert_eq!(
        thread.agent.as_deref(),
        Some("zen-architect"),
        "the agent its start named"
    );
    assert_eq!(h.app.tree().get(ROOT).unwrap().agent, "zen-architect");

    // Once: a later root's reply does not move the thread.
    created(&mut h, OTHER);
    assert_eq!(h.app.thread().unwrap().session_id.as_deref(), Some(ROOT));
    let screen = h.screen(100, 24);
    assert!(
        screen.lines().next().unwrap().contains("zen-architect"),
        "{screen}"
    );
}

#[test]
fn an_error_reply_shows_its_typed_text() {
    // A new root the engine could not create: the engine's own words, in the thread.
    let mut h = waiting_for_a_root();
    let unknown = EngineError::UnknownAgent {
        name: "ghost".into(),
        available: vec!["explorer".into(), "zen-architect".into()],
    };
    h.app.handle(AppEvent::Reply(EngineReply::Failed {
        session_id: None,
        error: unknown,
    }));
    let screen = h.screen(100, 24);
    assert!(
        screen.contains("✗ unknown agent 'ghost'. Available agents: explorer, zen-architect"),
        "{screen}"
    );
    let thread = h.app.thread().unwrap();
    assert!(!thread.awaiting_root && !thread.turn_in_flight);

    // `/compact` refused (a compaction error, not an engine error): in its thread.
    let mut h = with_root_open();
    h.app.handle(AppEvent::Reply(EngineReply::Compacted {
        session_id: ROOT.into(),
        result: Err(CompactError::TurnTooLarge {
            tokens: 9000,
            max_tokens: 8000,
        }),
    }));
    let screen = h.screen(100, 30);
    assert!(
        screen.contains("✗ the newest turn alone needs about 9000 tokens"),
        "{screen}"
    );
}
