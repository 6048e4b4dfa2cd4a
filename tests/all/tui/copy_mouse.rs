//! Copy with OSC 52 and the mouse (issue 15 item 4): `[`/`]` move the chat's cursor
//! by message, `y` copies the message, `Y` the nearest code block, as
//! `ESC ] 52 ; c ; <base64> BEL` written through the run loop's host; the wheel
//! scrolls the pane under the pointer, a click in the tree selects the session there,
//! and Alt+M leaves the mouse to the terminal (status bar: `mouse off`).

use std::sync::Mutex;

use arbor::config::ArborConfig;
use arbor::tui::keymap::Action;
use arbor::tui::state::layout::Scroll;
use arbor::tui::term_write::TerminalWrite;
use base64::Engine as _;
use crossterm::event::{MouseEvent, MouseEventKind};
use ratatui::backend::CrosstermBackend;

use super::*;

const ANSWER: &str = "Run the tests:\n\n```sh\ncargo test --test tui\n```\n\nThen look.";

fn with_code_thread() -> Harness {
    let mut h = harness_with(Ok("openai/gpt-4o".into()), Some(ROOT));
    h.drain();
    h.engine(start("zen-architect"), ROOT, None, 0);
    let mut transcript = vec![msg(json!({"role": "user", "content": "How do I test?"}))];
    transcript.push(msg(json!({"role": "assistant", "content": ANSWER})));
    h.load(ROOT, None, "zen-architect", transcript);
    h.screen(100, 30);
    h.press(KeyCode::Tab); // composer → tree
    h.press(KeyCode::Tab); // tree → chat
    h
}

/// A writer the test can read after the terminal took it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What the real host writes to the terminal for the app's queued writes.
fn written(h: &mut Harness) -> Vec<u8> {
    let out = Shared::default();
    let mut terminal = Terminal::new(CrosstermBackend::new(out.clone())).unwrap();
    for w in h.app.take_terminal_writes() {
        arbor::tui::runloop::write_crossterm(&mut terminal, &w).unwrap();
    }
    out.0.lock().unwrap().clone()
}

fn osc52(text: &str) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text);
    format!("\x1b]52;c;{b64}\x07").into_bytes()
}

#[test]
fn y_copies_the_message_under_the_cursor_and_shift_y_its_code_block() {
    let mut h = with_code_thread();
    h.press(KeyCode::Char('[')); // the newest message: the answer
    assert_eq!(h.app.thread().unwrap().selected, Some(1));
    h.press(KeyCode::Char('y'));
    let bytes = written(&mut h);
    assert_eq!(bytes, osc52(ANSWER));
    // The base64 decodes back to the message's text, as a terminal would.
    let b64 = &bytes[b"\x1b]52;c;".len()..bytes.len() - 1];
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), ANSWER);
    assert_eq!(
        h.app.note().unwrap().text,
        "copied 7 lines (message) to the clipboard"
    );
    h.key(KeyCode::Char('Y'), KeyModifiers::SHIFT);
    assert_eq!(written(&mut h), osc52("cargo test --test tui\n"));
    assert_eq!(
        h.app.note().unwrap().text,
        "copied 1 line (code block) to the clipboard"
    );
    h.press(KeyCode::Char('[')); // the question
    h.press(KeyCode::Char('y'));
    assert_eq!(written(&mut h), osc52("How do I test?"));
    h.press(KeyCode::Char(']'));
    assert_eq!(h.app.thread().unwrap().selected, Some(1));
    // Nothing is sent to the engine, nothing typed into the composer.
    assert!(h.drain().is_empty());
    assert_eq!(h.app.composer_text(), "");
}

#[test]
fn y_without_a_cursor_copies_the_newest_message_and_a_thread_without_code_says_so() {
    let mut h = with_root_open();
    h.press(KeyCode::Char('y'));
    assert_eq!(written(&mut h), osc52("All done."));
    h.key(KeyCode::Char('Y'), KeyModifiers::SHIFT);
    assert!(written(&mut h).is_empty());
    let note = h.app.note().unwrap();
    assert!(
        note.warning && note.text.contains("no code block"),
        "{note:?}"
    );
}

fn mouse(h: &mut Harness, kind: MouseEventKind, column: u16, row: u16) {
    let ev = TermEvent::Mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    });
    h.app.handle(AppEvent::Input(ev));
}

/// Two roots in the tree and a long thread open; focus in the composer; 100×30.
fn with_long_thread() -> Harness {
    let mut h = harness_with(Ok("openai/gpt-4o".into()), Some(ROOT));
    h.drain();
    h.engine(start("zen-architect"), ROOT, None, 0);
    h.engine(
        start("explorer"),
        "7a7a7a7a-1111-4222-8333-444455556666",
        None,
        1,
    );
    let transcript = (0..40)
        .map(|i| msg(json!({"role": "user", "content": format!("line {i}")})))
        .collect();
    h.load(ROOT, None, "zen-architect", transcript);
    h.screen(100, 30);
    h
}

#[test]
fn the_wheel_scrolls_the_pane_under_the_pointer_not_the_focused_one() {
    let mut h = with_long_thread();
    assert_eq!(h.app.focus(), Focus::Composer);
    let tree_before = h.app.tree().selected.clone();
    // Over the chat (x 40, y 10): the thread scrolls back; the tree does not move.
    mouse(&mut h, MouseEventKind::ScrollUp, 40, 10);
    let scroll = h.app.thread().unwrap().scroll;
    assert!(matches!(scroll, Scroll::Top { .. }), "{scroll:?}");
    assert_eq!(h.app.tree().selected, tree_before);
    // Over the tree (x 5, y 3): the tree's selection moves (towards the other of its
    // two rows); the thread stays.
    let first = h.app.tree().rows()[0].node.id.clone();
    let towards = if tree_before.as_deref() == Some(first.as_str()) {
        MouseEventKind::ScrollDown
    } else {
        MouseEventKind::ScrollUp
    };
    mouse(&mut h, towards, 5, 3);
    assert_ne!(h.app.tree().selected, tree_before);
    assert_eq!(h.app.thread().unwrap().scroll, scroll);
    // Over the composer (y 28): nothing scrolls.
    mouse(&mut h, MouseEventKind::ScrollUp, 40, 28);
    assert_eq!(h.app.thread().unwrap().scroll, scroll);
    assert_eq!(
        h.app.focus(),
        Focus::Composer,
        "the wheel never moves focus"
    );
}

#[test]
fn a_click_in_the_tree_selects_the_session_under_it() {
    let mut h = with_long_thread();
    let rows: Vec<String> = h
        .app
        .tree()
        .rows()
        .iter()
        .map(|r| r.node.id.clone())
        .collect();
    assert_eq!(rows.len(), 2);
    // Row 0 of the tree is at y 1 (under the border), row 1 at y 2.
    mouse(
        &mut h,
        MouseEventKind::Down(crossterm::event::MouseButton::Left),
        5,
        2,
    );
    assert_eq!(h.app.focus(), Focus::Tree);
    assert_eq!(h.app.tree().selected.as_deref(), Some(rows[1].as_str()));
    mouse(
        &mut h,
        MouseEventKind::Down(crossterm::event::MouseButton::Left),
        5,
        1,
    );
    assert_eq!(h.app.tree().selected.as_deref(), Some(rows[0].as_str()));
    mouse(
        &mut h,
        MouseEventKind::Down(crossterm::event::MouseButton::Left),
        40,
        28,
    );
    assert_eq!(h.app.focus(), Focus::Composer);
}

#[test]
fn alt_m_leaves_the_mouse_to_the_terminal_and_the_status_bar_says_so() {
    let mut h = with_long_thread();
    assert!(h.app.mouse_capture());
    h.key(KeyCode::Char('m'), KeyModifiers::ALT);
    assert!(!h.app.mouse_capture());
    let off = written(&mut h);
    assert_eq!(off, TerminalWrite::MouseCapture(false).bytes());
    assert!(String::from_utf8_lossy(&off).contains("\x1b[?1000l"));
    let key = Keymap::defaults().label(Action::Mouse);
    let screen = h.screen(100, 30);
    let status = screen.lines().last().unwrap();
    assert!(status.contains(&format!("mouse off ({key})")), "{status}");
    h.key(KeyCode::Char('m'), KeyModifiers::ALT);
    assert!(h.app.mouse_capture());
    assert_eq!(written(&mut h), TerminalWrite::MouseCapture(true).bytes());
    assert!(!h.screen(100, 30).contains("mouse off"));
}

#[test]
fn config_mouse_false_turns_capture_off_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, "mouse: false\n").unwrap();
    assert!(!ArborConfig::load(&path).unwrap().mouse_capture());
    std::fs::write(&path, "theme: dark\n").unwrap();
    assert!(ArborConfig::load(&path).unwrap().mouse_capture());
    let mut h = with_long_thread();
    h.app.set_mouse_capture(false);
    assert_eq!(written(&mut h), TerminalWrite::MouseCapture(false).bytes());
    h.app.set_mouse_capture(false);
    assert!(written(&mut h).is_empty(), "no change, nothing written");
}
