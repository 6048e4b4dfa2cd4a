//! Find in the open thread (issue 15 item 4): Ctrl+F opens the bar, typing highlights
//! every visible match, Enter/n and Shift+Enter/N step through them scrolling each
//! into view, Esc closes the bar before it would cancel anything.

use arbor::tui::state::find::Hit;
use arbor::tui::theme::Slot;
use ratatui::buffer::Buffer;

use super::*;

/// A thread of 80 messages: every tenth says "Needle" once, message 35 twice
/// ("needle … NEEDLE"), the rest say nothing of it. 10 matches in all.
fn haystack() -> Vec<Message> {
    (0..80)
        .map(|i| {
            let text = match i {
                35 => format!("message {i}: a needle and a NEEDLE"),
                i if i % 10 == 0 => format!("message {i}: the Needle is here"),
                _ => format!("message {i}: hay, only hay"),
            };
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            msg(json!({"role": role, "content": text}))
        })
        .collect()
}

fn with_haystack() -> Harness {
    let mut h = harness_with(Ok("openai/gpt-4o".into()), Some(ROOT));
    h.drain();
    h.engine(start("zen-architect"), ROOT, None, 0);
    h.load(ROOT, None, "zen-architect", haystack());
    h.screen(80, 24);
    h
}

fn ctrl(h: &mut Harness, c: char) {
    h.key(KeyCode::Char(c), KeyModifiers::CONTROL);
}

/// Draws a frame and returns its buffer.
fn frame(h: &mut Harness, w: u16, rows: u16) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(w, rows)).unwrap();
    terminal
        .draw(|f| {
            h.app.layout(f.area());
            h.app.draw(f);
        })
        .unwrap();
    terminal.backend().buffer().clone()
}

/// The highlighted runs on screen, as `(row text of the run, is current)`.
fn highlights(buf: &Buffer) -> Vec<(String, bool)> {
    let theme = Theme::builtin_dark(false);
    let (hit, current) = (theme.style(Slot::FindMatch), theme.style(Slot::FindCurrent));
    let mut runs = Vec::new();
    for y in 0..buf.area.height {
        let mut run: Option<(String, bool)> = None;
        for x in 0..buf.area.width {
            let cell = &buf[(x, y)];
            let kind = if cell.bg == hit.bg.unwrap()
                && cell.modifier.contains(ratatui::style::Modifier::UNDERLINED)
            {
                Some(false)
            } else if cell.fg == current.fg.unwrap()
                && cell.modifier.contains(ratatui::style::Modifier::REVERSED)
            {
                Some(true)
            } else {
                None
            };
            match (kind, &mut run) {
                (Some(k), Some((text, c))) if *c == k => text.push_str(cell.symbol()),
                (Some(k), _) => {
                    runs.extend(run.take());
                    run = Some((cell.symbol().to_string(), k));
                }
                (None, _) => runs.extend(run.take()),
            }
        }
        runs.extend(run);
    }
    runs
}

fn top_cell(h: &Harness) -> usize {
    h.app.thread().unwrap().window[0].0
}

#[test]
fn typing_highlights_every_visible_match_and_counts_them_all() {
    let mut h = with_haystack();
    h.press(KeyCode::Tab); // composer → tree
    h.press(KeyCode::Tab); // tree → chat
    ctrl(&mut h, 'f');
    h.type_text("needle");
    let find = h.app.find().expect("the bar is open");
    assert_eq!(find.hits().len(), 10);
    // The view followed the end: the first match at or below its top is message 70.
    assert_eq!(find.current(), Some(Hit { cell: 70, nth: 0 }));
    assert_eq!(find.label(), "10 of 10");
    let buf = frame(&mut h, 80, 24);
    let screen = buffer_text(&buf);
    assert!(screen.contains("Find needle▏  10 of 10"), "{screen}");
    // Every match on screen is highlighted, message 70's as the current one.
    let runs = highlights(&buf);
    let shown: usize = screen
        .lines()
        .filter(|l| !l.contains(" Find "))
        .map(|l| l.to_lowercase().matches("needle").count())
        .sum();
    assert!(shown >= 1, "{screen}");
    assert_eq!(runs.len(), shown, "{runs:?}\n{screen}");
    assert!(
        runs.iter()
            .all(|(text, _)| text.eq_ignore_ascii_case("needle")),
        "{runs:?}"
    );
    assert_eq!(runs.iter().filter(|(_, c)| *c).count(), 1, "{runs:?}");
    // Typing is not sent anywhere, and no message was selected.
    assert!(h.drain().is_empty());
    assert_eq!(h.app.composer_text(), "");
}

#[test]
fn next_and_previous_scroll_each_match_into_view_and_wrap() {
    let mut h = with_haystack();
    ctrl(&mut h, 'f'); // from the composer: the bar takes the keys, focus moves to the chat
    assert_eq!(h.app.focus(), Focus::Chat);
    h.type_text("NEEDLE");
    h.press(KeyCode::Enter); // 10 of 10: message 70 → 0 (wraps)
    let find = h.app.find().unwrap();
    assert_eq!(find.current(), Some(Hit { cell: 0, nth: 0 }));
    assert!(!find.editing, "Enter leaves typing");
    h.screen(80, 24);
    assert_eq!(top_cell(&h), 0, "the thread scrolled to the top");
    h.press(KeyCode::Char('n'));
    h.press(KeyCode::Char('n'));
    h.press(KeyCode::Char('n'));
    h.press(KeyCode::Char('n')); // 10, 20, 30, then message 35's first match
    assert_eq!(
        h.app.find().unwrap().current(),
        Some(Hit { cell: 35, nth: 0 })
    );
    let buf = frame(&mut h, 80, 24);
    let window = &h.app.thread().unwrap().window;
    assert!(window.iter().any(|&(c, _)| c == 35), "{window:?}");
    let runs = highlights(&buf);
    assert!(runs.contains(&("needle".to_string(), true)), "{runs:?}");
    assert!(runs.contains(&("NEEDLE".to_string(), false)), "{runs:?}");
    h.press(KeyCode::Char('n'));
    assert_eq!(
        h.app.find().unwrap().current(),
        Some(Hit { cell: 35, nth: 1 })
    );
    assert_eq!(h.app.find().unwrap().label(), "6 of 10");
    h.press(KeyCode::Char('N'));
    h.press(KeyCode::Char('N'));
    assert_eq!(
        h.app.find().unwrap().current(),
        Some(Hit { cell: 30, nth: 0 })
    );
    h.screen(80, 24);
    let top = top_cell(&h);
    h.key(KeyCode::Enter, KeyModifiers::SHIFT); // previous: message 20
    h.screen(80, 24);
    assert_eq!(
        h.app.find().unwrap().current(),
        Some(Hit { cell: 20, nth: 0 })
    );
    assert!(top_cell(&h) < top, "scrolled up to message 20");
    // Backspace edits the query again only after Ctrl+F.
    ctrl(&mut h, 'f');
    h.press(KeyCode::Backspace);
    assert_eq!(h.app.find().unwrap().query, "NEEDL");
}

#[test]
fn esc_closes_the_bar_before_it_cancels_the_running_turn() {
    let mut h = with_haystack();
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 5);
    ctrl(&mut h, 'f');
    h.type_text("hay");
    h.press(KeyCode::Esc);
    assert!(h.app.find().is_none());
    assert!(h.drain().is_empty(), "the first Esc only closed the bar");
    // A second Esc at once is part of the closing, not a cancel (issue 23 item 2).
    h.press(KeyCode::Esc);
    assert!(
        h.drain().is_empty(),
        "the Esc right after the close cancelled"
    );
    h.clock.advance(std::time::Duration::from_secs(2));
    h.press(KeyCode::Esc);
    assert_eq!(
        h.drain(),
        [EngineCommand::Cancel {
            session_id: ROOT.into()
        }]
    );
}

#[test]
fn the_find_bar_at_80_and_40_columns() {
    let mut h = with_haystack();
    ctrl(&mut h, 'f');
    h.type_text("needle");
    insta::assert_snapshot!("find_bar_80x24", h.screen(80, 24));
    h.press(KeyCode::Enter); // message 0
    h.press(KeyCode::Char('n')); // message 10
    insta::assert_snapshot!("find_bar_40x24", h.screen(40, 24));
    ctrl(&mut h, 'f');
    h.type_text("zzz");
    let screen = h.screen(80, 24);
    assert!(screen.contains("Find needlezzz▏  no matches"), "{screen}");
}

#[test]
fn matches_in_a_streaming_reply_and_new_messages_are_counted_as_they_arrive() {
    let mut h = with_haystack();
    ctrl(&mut h, 'f');
    h.type_text("needle");
    assert_eq!(h.app.find().unwrap().hits().len(), 10);
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 5);
    h.engine(
        EngineEvent::delta(DeltaKind::Text, "found the needle"),
        ROOT,
        None,
        6,
    );
    h.screen(80, 24);
    assert_eq!(h.app.find().unwrap().hits().len(), 11);
    h.engine(
        EngineEvent::delta(DeltaKind::Text, ", and another needle\n"),
        ROOT,
        None,
        7,
    );
    h.screen(80, 24);
    assert_eq!(h.app.find().unwrap().hits().len(), 12);
    assert_eq!(
        h.app.find().unwrap().label(),
        "10 of 12",
        "the current match stays"
    );
}

/// Issue 23 item 5: the bar's hint is true in each mode — while typing `n` types into
/// the query, so it says Enter / Shift+Enter; after Enter it says n / N.
#[test]
fn the_find_bar_hint_names_the_keys_that_work_now() {
    let mut h = with_haystack();
    ctrl(&mut h, 'f');
    h.type_text("n");
    let screen = h.screen(100, 24);
    assert!(
        screen.contains("Enter next · Shift+Enter prev · Esc close"),
        "{screen}"
    );
    assert!(!screen.contains("n next"), "{screen}");
    h.type_text("eedle");
    h.press(KeyCode::Enter);
    let screen = h.screen(100, 24);
    assert!(screen.contains("n next · N prev · Esc close"), "{screen}");
}
