//! Steer and queue in the open thread (SPEC §13): Enter while its turn runs steers,
//! Tab with text queues (otherwise it still cycles focus), the waiting messages are
//! listed under the thread with the word "queued" and can be taken back to edit or
//! removed until sent, a returned message goes back to the composer, quitting while
//! messages wait asks first — in a child thread too.

use super::*;
use arbor::session::protocol::{
    PromptMode, PromptQueuedEvent, PromptSentEvent, PromptUnqueuedEvent, UnqueueReason,
};

fn running(h: &mut Harness, id: &str, parent: Option<&str>) {
    h.engine(EngineEvent::status(SessionStatus::Running), id, parent, 20);
}

fn queued(h: &mut Harness, id: u64, mode: PromptMode, text: &str, position: Option<usize>) {
    let msg = EngineEvent::PromptQueued(PromptQueuedEvent {
        id,
        mode,
        prompt: text.into(),
        position,
    });
    h.engine(msg, ROOT, None, 21);
}

fn unqueued(h: &mut Harness, id: u64, mode: PromptMode, text: &str, reason: UnqueueReason) {
    let msg = EngineEvent::PromptUnqueued(PromptUnqueuedEvent {
        id,
        mode,
        prompt: text.into(),
        reason,
    });
    h.engine(msg, ROOT, None, 22);
}

/// The root thread open with its turn running, focus in the composer.
fn root_running() -> Harness {
    let mut h = with_root_open();
    running(&mut h, ROOT, None);
    h.press(KeyCode::Tab); // chat → composer (nothing typed: Tab cycles focus)
    assert_eq!(h.app.focus(), Focus::Composer);
    h
}

#[test]
fn enter_steers_and_tab_queues_while_the_turn_runs() {
    let mut h = root_running();
    h.type_text("also check the README");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::Steer {
            session_id: ROOT.into(),
            text: "also check the README".into()
        }]
    );
    assert_eq!(h.app.composer_text(), "");
    h.type_text("then run the tests");
    h.press(KeyCode::Tab);
    assert_eq!(
        h.drain(),
        [EngineCommand::Queue {
            session_id: ROOT.into(),
            text: "then run the tests".into(),
            position: None
        }]
    );
    assert_eq!(h.app.focus(), Focus::Composer, "Tab queued, focus stayed");
    // An empty composer: Tab cycles focus as ever.
    h.press(KeyCode::Tab);
    assert_eq!(h.app.focus(), Focus::Tree);
    assert!(h.drain().is_empty());
}

#[test]
fn tab_cycles_focus_when_no_turn_runs_and_keeps_the_text() {
    let mut h = with_root_open();
    h.press(KeyCode::Tab); // chat → composer
    h.type_text("draft");
    h.press(KeyCode::Tab);
    assert_eq!(h.app.focus(), Focus::Tree);
    assert_eq!(h.app.composer_text(), "draft");
    assert!(h.drain().is_empty());
}

#[test]
fn waiting_messages_are_listed_under_the_thread_until_sent() {
    let mut h = root_running();
    queued(&mut h, 1, PromptMode::Steer, "also check the README", None);
    queued(&mut h, 2, PromptMode::Queue, "then run the tests", Some(0));
    queued(
        &mut h,
        3,
        PromptMode::Queue,
        "and summarise\nin two lines",
        Some(1),
    );
    insta::assert_snapshot!("waiting_messages_80x24", h.screen(80, 24));
    insta::assert_snapshot!("waiting_messages_50x16", h.screen(50, 16));
    h.engine(
        EngineEvent::PromptSent(PromptSentEvent {
            id: 1,
            mode: PromptMode::Steer,
            prompt: "also check the README".into(),
        }),
        ROOT,
        None,
        23,
    );
    let screen = h.screen(80, 24);
    assert!(!screen.contains("↳ steer"), "{screen}");
    assert!(screen.contains("⏵ queued then run the tests"), "{screen}");
}

#[test]
fn the_newest_waiting_message_can_be_edited_in_place_or_removed() {
    let mut h = root_running();
    queued(&mut h, 1, PromptMode::Queue, "first", None);
    queued(&mut h, 2, PromptMode::Queue, "secnd", Some(1));
    queued(&mut h, 3, PromptMode::Queue, "third", Some(2));
    // Remove the newest.
    h.key(KeyCode::Char('x'), KeyModifiers::ALT);
    assert_eq!(
        h.drain(),
        [EngineCommand::Unqueue {
            session_id: ROOT.into(),
            id: 3
        }]
    );
    unqueued(
        &mut h,
        3,
        PromptMode::Queue,
        "third",
        UnqueueReason::Removed,
    );
    assert_eq!(h.app.pending().of(ROOT).len(), 2);
    assert_eq!(h.app.composer_text(), "", "a removal fills nothing");
    // Edit the (now) newest: its text comes back once the engine gave it up.
    h.key(KeyCode::Up, KeyModifiers::ALT);
    assert_eq!(
        h.drain(),
        [EngineCommand::Unqueue {
            session_id: ROOT.into(),
            id: 2
        }]
    );
    assert_eq!(h.app.composer_text(), "");
    unqueued(
        &mut h,
        2,
        PromptMode::Queue,
        "secnd",
        UnqueueReason::Removed,
    );
    assert_eq!(h.app.composer_text(), "secnd");
    h.press(KeyCode::End);
    h.press(KeyCode::Left);
    h.press(KeyCode::Left);
    h.type_text("o");
    // Tab puts it back where it was.
    h.press(KeyCode::Tab);
    assert_eq!(
        h.drain(),
        [EngineCommand::Queue {
            session_id: ROOT.into(),
            text: "second".into(),
            position: Some(1)
        }]
    );
}

#[test]
fn editing_needs_an_empty_composer_and_a_waiting_message() {
    let mut h = root_running();
    h.key(KeyCode::Up, KeyModifiers::ALT);
    assert!(h.drain().is_empty());
    assert!(h.screen(80, 24).contains("no waiting message"));
    queued(&mut h, 1, PromptMode::Queue, "later", None);
    h.type_text("draft");
    h.key(KeyCode::Up, KeyModifiers::ALT);
    assert!(h.drain().is_empty(), "the draft is never overwritten");
    assert_eq!(h.app.composer_text(), "draft");
}

#[test]
fn a_returned_message_goes_back_to_the_composer() {
    let mut h = root_running();
    queued(&mut h, 1, PromptMode::Queue, "later", None);
    h.type_text("draft");
    unqueued(
        &mut h,
        1,
        PromptMode::Queue,
        "later",
        UnqueueReason::Returned,
    );
    assert_eq!(h.app.composer_text(), "draft\nlater");
    assert_eq!(h.app.pending().count(), 0);
    // A failed steer command gives its text back too.
    h.app.handle(AppEvent::Reply(EngineReply::NotSent {
        session_id: ROOT.into(),
        text: Some("steered".into()),
        error: arbor::engine::EngineError::Other(
            "session is open in another process (pid 7)".into(),
        ),
    }));
    assert_eq!(h.app.composer_text(), "draft\nlater\nsteered");
    assert!(h.screen(80, 24).contains("not sent: session is open"));
}

#[test]
fn quitting_with_waiting_messages_asks_first() {
    let mut h = root_running();
    queued(&mut h, 1, PromptMode::Queue, "later", None);
    h.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    h.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(!h.app.should_quit());
    let screen = h.screen(100, 24);
    assert!(
        screen.contains("1 waiting message not sent yet — Ctrl+c again quits without them"),
        "{screen}"
    );
    h.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(h.app.should_quit());
}

#[test]
fn a_running_child_thread_is_steered_and_queued_too() {
    let mut h = live::with_child_running();
    h.screen(80, 24);
    h.press(KeyCode::Up); // the task card
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: CHILD.into()
        }]
    );
    h.load(CHILD, Some(ROOT), "explorer", vec![]);
    h.press(KeyCode::Tab); // chat → composer
    h.type_text("only the tests");
    h.press(KeyCode::Enter);
    h.type_text("then stop");
    h.press(KeyCode::Tab);
    assert_eq!(
        h.drain(),
        [
            EngineCommand::Steer {
                session_id: CHILD.into(),
                text: "only the tests".into()
            },
            EngineCommand::Queue {
                session_id: CHILD.into(),
                text: "then stop".into(),
                position: None
            }
        ]
    );
    assert!(h.screen(80, 24).contains("Steer #"));
}
