//! The help overlay (F1): generated from the keymap, a section for every context, long
//! descriptions wrapped, paged with PgUp/PgDn/Home/End, closed with Esc.

use super::*;

#[test]
fn help_overlay_lists_keymap_and_closes() {
    let mut h = harness();
    h.press(KeyCode::F(1));
    assert_eq!(h.app.overlay(), Overlay::Help);
    let screen = h.screen(80, 30);
    assert!(screen.contains("Cancel subtree"), "{screen}");
    h.press(KeyCode::Esc);
    assert_eq!(h.app.overlay(), Overlay::None);
}

/// Every page of the help overlay, paged with PgDn from the top (Home) until the last
/// page (End) shows.
fn help_pages(h: &mut Harness, w: u16, rows: u16) -> String {
    h.press(KeyCode::F(1));
    assert_eq!(h.app.overlay(), Overlay::Help);
    h.press(KeyCode::End);
    let last = h.screen(w, rows);
    h.press(KeyCode::Home);
    let mut pages = vec![h.screen(w, rows)];
    for _ in 0..100 {
        if pages.last() == Some(&last) {
            return pages.join("\n");
        }
        h.press(KeyCode::PageDown);
        pages.push(h.screen(w, rows));
    }
    panic!("PgDn never reached the last page (End):\n{last}");
}

/// Issue 23 item 4: help has a section for every keymap context (Wall and Find
/// included), says what Enter and Tab do while a turn runs and the composer's editing
/// keys, wraps long descriptions, and scrolls with PgUp/PgDn/Home/End.
#[test]
fn help_covers_every_context_wraps_and_pages() {
    let mut h = harness();
    let all = help_pages(&mut h, 80, 24);
    for ctx in arbor::tui::keymap::Context::ALL {
        assert!(all.contains(ctx.title()), "no {:?} section:\n{all}", ctx);
    }
    for spec in arbor::tui::keymap::TABLE {
        assert!(
            arbor::tui::keymap::Context::ALL.contains(&spec.context),
            "{} has no help section",
            spec.name
        );
    }
    assert!(
        all.contains("Wall") && all.contains("Find in the thread"),
        "{all}"
    );
    assert!(all.contains("While the thread's turn runs: steer"), "{all}");
    assert!(all.contains("with text: queue it as"), "{all}");
    assert!(all.contains("Ctrl+Z / Ctrl+Y"), "{all}");
    // A description longer than the overlay is wrapped, not cut.
    assert!(!all.contains('…'), "{all}");
    assert!(all.contains("again: back)"), "{all}");
    // Home is the top again; PgUp from a page down comes back.
    h.press(KeyCode::Home);
    let top = h.screen(80, 24);
    assert!(top.contains("Everywhere"), "{top}");
    h.press(KeyCode::PageDown);
    assert_ne!(h.screen(80, 24), top);
    h.press(KeyCode::PageUp);
    assert_eq!(h.screen(80, 24), top);
}

/// The chat's hint bar shows `y`, `u` and `d` where they apply (issue 39 item 7):
/// none with nothing selected in a thread that changed nothing; `y` and `u` once a
/// cell of a turn is selected; `d` once the session changed a file.
#[test]
fn the_chat_hint_bar_shows_y_u_and_d_where_they_apply() {
    let mut h = with_root_open();
    while h.app.focus() != Focus::Chat {
        h.press(KeyCode::Tab);
    }
    let status = |h: &mut Harness| {
        let screen = h.screen(160, 30);
        screen.lines().last().unwrap_or_default().to_string()
    };
    let bare = status(&mut h);
    for hint in ["y Copy this", "u Rewind here", "d Diff"] {
        assert!(
            !bare.contains(hint),
            "{hint} shown with nothing selected: {bare}"
        );
    }
    h.press(KeyCode::Char('k'));
    assert!(h.app.thread().unwrap().selected.is_some());
    let selected = status(&mut h);
    assert!(selected.contains("y Copy this"), "{selected}");
    assert!(selected.contains("u Rewind here"), "{selected}");
    assert!(!selected.contains("d Diff"), "{selected}");
    h.engine(
        arbor::tui::testing::file_written("src/lib.rs", 3, 1),
        ROOT,
        None,
        30,
    );
    let changed = status(&mut h);
    assert!(changed.contains("d Diff"), "{changed}");
}
