//! Cancelling and quitting through the App: Esc cancels the open thread's turn (asking
//! first when sub-sessions run, never right after a close), `x` cancels a subtree,
//! Ctrl+C twice quits, and status notes and the cancel question leave by themselves.

use super::*;

/// Issue 23 item 2: F2 then Esc Esc closes the browser and leaves a running tree
/// alone; a cancel Esc of a turn with running sub-sessions asks first, naming how many.
#[test]
fn esc_never_cancels_a_running_tree_without_asking() {
    let mut h = with_root_open();
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 20);
    let children: Vec<String> = (1..=3)
        .map(|i| format!("5f0e1c2a11114222-0a1b2c3d4e5f607{i}_implementer"))
        .collect();
    for child in &children {
        h.engine(fork(ROOT, "implementer"), child, Some(ROOT), 21);
        h.engine(
            EngineEvent::status(SessionStatus::Running),
            child,
            Some(ROOT),
            21,
        );
    }

    // Closing an overlay, then a quick second Esc: nothing is cancelled.
    h.press(KeyCode::F(2));
    assert_eq!(h.app.overlay(), Overlay::Browser);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.overlay(), Overlay::None);
    h.press(KeyCode::Esc);
    assert!(h.drain().is_empty(), "the Esc after a close cancelled");
    let screen = h.screen(100, 30);
    assert!(screen.contains("turn keeps running"), "{screen}");

    // A deliberate Esc asks, naming the running sub-sessions; `n` keeps them.
    h.clock.advance(Duration::from_secs(2));
    h.press(KeyCode::Esc);
    assert!(h.drain().is_empty(), "cancelled without asking");
    let screen = h.screen(100, 30);
    assert!(
        screen.contains("cancel this turn and its 3 running sub-sessions? y/n"),
        "{screen}"
    );
    h.press(KeyCode::Char('n'));
    assert!(h.drain().is_empty());
    assert!(!h.screen(100, 30).contains("y/n"));
    // Esc answers the question too (no), and never cancels.
    h.press(KeyCode::Esc);
    h.press(KeyCode::Esc);
    assert!(h.drain().is_empty());
    // `y` cancels the turn and its sub-sessions.
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.drain(),
        [EngineCommand::Cancel {
            session_id: ROOT.into()
        }]
    );
    // With one sub-session left running, the question says so.
    for child in &children[1..] {
        h.engine(
            EngineEvent::status(SessionStatus::Cancelled),
            child,
            Some(ROOT),
            22,
        );
    }
    h.press(KeyCode::Esc);
    let screen = h.screen(100, 30);
    assert!(
        screen.contains("cancel this turn and its 1 running sub-session? y/n"),
        "{screen}"
    );
}

/// Issue 23 item 14 ("a status note that stayed 20 s"): with no key pressed, a note
/// leaves when its time is up (a Tick redraws without it), and the cancel question
/// leaves as soon as the turn it asks about ends by itself — it used to stay, asking
/// about nothing, until the next key (and that key's `y` was then a cancel).
#[test]
fn status_notes_leave_without_a_key() {
    let mut h = with_root_open();
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 20);
    h.engine(fork(ROOT, "explorer"), CHILD, Some(ROOT), 21);
    h.engine(
        EngineEvent::status(SessionStatus::Running),
        CHILD,
        Some(ROOT),
        21,
    );
    h.press(KeyCode::Esc);
    let question = "cancel this turn and its 1 running sub-session? y/n";
    assert!(h.screen(100, 30).contains(question));
    // Unanswered while the turn runs, the question stays (it waits for a key)…
    h.clock.advance(Duration::from_secs(20));
    h.app.handle(AppEvent::Tick);
    assert!(h.screen(100, 30).contains(question));
    // …but not once the turn is over.
    h.engine(
        EngineEvent::status(SessionStatus::Completed),
        CHILD,
        Some(ROOT),
        40,
    );
    h.engine(
        EngineEvent::status(SessionStatus::Completed),
        ROOT,
        None,
        41,
    );
    let screen = h.screen(100, 30);
    assert!(!screen.contains(question), "{screen}");
    assert!(screen.contains("nothing to cancel"), "{screen}");
    // The note that says so leaves on the clock alone: the next Tick is due when it
    // expires and redraws without it.
    let due = h.app.next_tick().expect("a tick for the note");
    assert!(due <= Duration::from_millis(4_001), "{due:?}");
    h.app.take_redraw();
    h.clock.advance(due);
    h.app.handle(AppEvent::Tick);
    assert!(h.app.take_redraw(), "the expiry redraws");
    assert!(h.app.note().is_none());
    assert!(!h.screen(100, 30).contains("nothing to cancel"));
    assert_eq!(h.app.next_tick(), None, "idle: no more ticks");
    h.press(KeyCode::Char('y'));
    assert!(h.drain().is_empty(), "a late y cancels nothing");
}

#[test]
fn esc_cancels_the_running_turn_of_the_open_thread() {
    let mut h = with_root_open();
    h.press(KeyCode::Esc);
    assert!(h.drain().is_empty(), "nothing runs: Esc does not cancel");
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 20);
    h.press(KeyCode::Esc);
    assert_eq!(
        h.drain(),
        [EngineCommand::Cancel {
            session_id: ROOT.into()
        }]
    );
    h.engine(
        EngineEvent::CancelCompleted(CancelCompletedEvent {}),
        ROOT,
        None,
        21,
    );
    h.engine(
        EngineEvent::status(SessionStatus::Cancelled),
        ROOT,
        None,
        21,
    );
    let screen = h.screen(80, 24);
    assert!(screen.contains("turn cancelled"), "{screen}");
    assert!(screen.contains("⊘ cancelled"), "{screen}");
}

#[test]
fn x_in_the_tree_cancels_the_selected_subtree() {
    let mut h = with_root_open();
    h.press(KeyCode::BackTab); // chat → tree
    assert_eq!(h.app.focus(), Focus::Tree);
    h.press(KeyCode::Char('x'));
    assert_eq!(
        h.drain(),
        [EngineCommand::Cancel {
            session_id: ROOT.into()
        }]
    );
}

#[test]
fn ctrl_c_twice_quits_once_does_not() {
    let mut h = harness();
    h.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(!h.app.should_quit());
    assert!(h.screen(80, 24).contains("press Ctrl+C again to quit"));
    h.clock.advance(Duration::from_secs(3));
    h.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(
        !h.app.should_quit(),
        "outside the 2 s window it starts over"
    );
    h.clock.advance(Duration::from_millis(500));
    h.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(h.app.should_quit());
}
