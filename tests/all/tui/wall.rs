//! The wall (issue 14): `w` shows a tile per session running under the open thread,
//! with its live tail; finished tiles stay; Enter opens a tile's thread; pages; side by
//! side on wide terminals. Also the tree's `queued` / `paused` words and budgets.

use super::*;
use arbor::session::protocol::SessionBudgetEvent;

const TESTER: &str = "5f0e1c2a11114222-1122334455667788_tester";
const WRITER: &str = "5f0e1c2a11114222-aabbccddeeff0011_writer";
const REVIEWER: &str = "0a1b2c3d4e5f6071-99aabbccddeeff00_reviewer";

fn delta(h: &mut Harness, id: &str, parent: &str, text: &str, secs: i64) {
    h.engine(
        EngineEvent::delta(DeltaKind::Text, text),
        id,
        Some(parent),
        secs,
    );
}

fn status(h: &mut Harness, id: &str, parent: &str, s: SessionStatus, secs: i64) {
    h.engine(EngineEvent::status(s), id, Some(parent), secs);
}

/// The root open with four children: explorer streaming, tester queued, writer
/// paused at its budget, reviewer (a grandchild) done.
fn busy_tree() -> Harness {
    let mut h = with_root_open();
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 10);
    status(&mut h, CHILD, ROOT, SessionStatus::Running, 10);
    h.engine(fork(ROOT, "tester"), TESTER, Some(ROOT), 11);
    status(&mut h, TESTER, ROOT, SessionStatus::Queued, 11);
    h.engine(fork(ROOT, "writer"), WRITER, Some(ROOT), 12);
    let budget = SessionBudgetEvent {
        tokens: Some(10),
        ..Default::default()
    };
    h.engine(EngineEvent::SessionBudget(budget), WRITER, Some(ROOT), 12);
    status(&mut h, WRITER, ROOT, SessionStatus::Running, 12);
    h.engine(fork(CHILD, "reviewer"), REVIEWER, Some(CHILD), 13);
    status(&mut h, REVIEWER, CHILD, SessionStatus::Running, 13);
    h
}

/// Streams into the tiles and ends some turns (after the wall opened).
fn stream_and_finish(h: &mut Harness) {
    delta(
        h,
        CHILD,
        ROOT,
        "Scanning src/engine for the turn loop.\nFound ",
        20,
    );
    delta(
        h,
        CHILD,
        ROOT,
        "turn.rs, stream.rs and spawn.rs; reading",
        21,
    );
    delta(h, WRITER, ROOT, "Drafting the README section.", 22);
    h.engine(tokens(12, 3, Some(0.0042)), WRITER, Some(ROOT), 23);
    status(h, WRITER, ROOT, SessionStatus::Paused, 23);
    delta(h, REVIEWER, CHILD, "Looks good to me.", 24);
    h.engine(tokens(1200, 300, None), REVIEWER, Some(CHILD), 25);
    status(h, REVIEWER, CHILD, SessionStatus::Completed, 25);
    h.clock.advance(Duration::from_secs(30));
}

#[test]
fn the_wall_shows_every_running_sub_session_with_its_tail() {
    let mut h = busy_tree();
    h.press(KeyCode::Char('w'));
    assert_eq!(h.app.overlay(), Overlay::Wall);
    stream_and_finish(&mut h);
    let screen = h.screen(80, 24);
    insta::assert_snapshot!("wall_80x24", screen);
    // Both streams are on screen at once, with their agents.
    for text in [
        "explorer",
        "turn.rs, stream.rs",
        "writer",
        "Drafting the README",
        "reviewer",
        "Looks good",
    ] {
        assert!(screen.contains(text), "{text} missing:\n{screen}");
    }
    assert!(screen.contains("queued"), "{screen}");
    assert!(screen.contains("paused"), "{screen}");
    assert!(screen.contains("15/10 tok"), "{screen}");
}

#[test]
fn a_wide_terminal_shows_the_thread_and_the_wall_side_by_side() {
    let mut h = busy_tree();
    h.press(KeyCode::Char('w'));
    stream_and_finish(&mut h);
    let screen = h.screen(160, 45);
    insta::assert_snapshot!("wall_160x45", screen);
    // The parent's thread stays readable on the left.
    assert!(screen.contains("All done."), "{screen}");
    assert!(screen.contains("Wall"), "{screen}");
}

#[test]
fn enter_opens_the_selected_tiles_thread_and_esc_closes_the_wall() {
    let mut h = busy_tree();
    h.press(KeyCode::Char('w'));
    h.screen(80, 24);
    h.press(KeyCode::Right);
    h.press(KeyCode::Enter);
    assert_eq!(h.app.overlay(), Overlay::None);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: TESTER.into()
        }]
    );
    h.press(KeyCode::Char('w'));
    assert_eq!(h.app.overlay(), Overlay::Wall);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.overlay(), Overlay::None);
    assert!(h.drain().is_empty(), "Esc on the wall cancels nothing");
}

#[test]
fn more_tiles_than_fit_page() {
    let mut h = with_root_open();
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 10);
    let ids: Vec<String> = (0..9)
        .map(|n| format!("5f0e1c2a11114222-{n:016x}_worker"))
        .collect();
    for (n, id) in ids.iter().enumerate() {
        h.engine(fork(ROOT, "worker"), id, Some(ROOT), 10 + n as i64);
        status(&mut h, id, ROOT, SessionStatus::Running, 10 + n as i64);
        delta(&mut h, id, ROOT, &format!("worker {n} streaming"), 20);
    }
    h.press(KeyCode::Char('w'));
    let first = h.screen(80, 24);
    assert!(first.contains("page 1/2"), "{first}");
    assert!(first.contains("worker 0 streaming"), "{first}");
    assert!(!first.contains("worker 8 streaming"), "{first}");
    h.press(KeyCode::PageDown);
    let second = h.screen(80, 24);
    assert!(second.contains("page 2/2"), "{second}");
    assert!(second.contains("worker 8 streaming"), "{second}");
    assert!(!second.contains("worker 0 streaming"), "{second}");
}

#[test]
fn tree_rows_say_queued_and_paused_with_spend_against_budget() {
    let mut h = busy_tree();
    stream_and_finish(&mut h);
    h.press(KeyCode::BackTab); // chat → tree
    let screen = h.screen(80, 24);
    insta::assert_snapshot!("tree_queued_paused_80x24", screen);
    let row = |name: &str| {
        screen
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("tester").contains("queued"), "{screen}");
    assert!(row("wri").contains("paused 15/10"), "{screen}");
}
