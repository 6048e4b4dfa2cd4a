//! Prompt history (issue 15 item 3): Up/Down in an empty composer walk the prompts
//! sent before, kept per project in a file so they survive a restart; Ctrl+R searches
//! them (each row dated); Up in a composer with text of its own still moves the cursor.

use super::*;
use arbor::tui::state::history::History;
use arbor::tui::state::palette::PopupKind;

fn with_history(path: &std::path::Path) -> Harness {
    let mut h = harness();
    h.app.set_history(History::load(path.to_path_buf()));
    h
}

#[test]
fn up_recalls_the_last_prompt_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history").join("-proj.jsonl");
    let mut h = with_history(&path);
    h.type_text("first question");
    h.press(KeyCode::Enter);
    assert_eq!(h.drain().len(), 1, "sent");
    drop(h);

    // A new app (a restart) reads the same file.
    let mut h = with_history(&path);
    h.type_text("/new");
    h.press(KeyCode::Enter); // a command is a prompt too
    h.press(KeyCode::Up);
    assert_eq!(h.app.composer_text(), "/new");
    h.press(KeyCode::Up);
    assert_eq!(h.app.composer_text(), "first question");
    h.press(KeyCode::Up);
    assert_eq!(
        h.app.composer_text(),
        "first question",
        "stays at the oldest"
    );
    h.press(KeyCode::Down);
    assert_eq!(h.app.composer_text(), "/new");
    h.press(KeyCode::Down);
    assert_eq!(h.app.composer_text(), "", "past the newest: empty again");

    // Text of its own: Up moves the cursor, nothing is recalled.
    h.type_text("ab");
    h.press(KeyCode::Up);
    assert_eq!(h.app.composer_text(), "ab");
    assert!(h.drain().is_empty());
}

#[test]
fn ctrl_r_searches_earlier_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.jsonl");
    // A line an older arbor wrote (no time), then dated ones (the harness clock is T0).
    std::fs::write(&path, "{\"prompt\":\"fix the build\"}\n").unwrap();
    let mut history = History::load(path.clone());
    let t0: Timestamp = T0.parse().unwrap();
    for (p, ago) in [
        ("fix the parser", 3 * 86_400),
        ("write docs", 3_600),
        ("fix the lexer", 300),
    ] {
        let at = t0 - jiff::SignedDuration::from_secs(ago);
        history.push_at(p, at).unwrap();
    }
    let mut h = with_history(&path);
    h.key(KeyCode::Char('r'), KeyModifiers::CONTROL);
    assert_eq!(h.app.popup().unwrap().kind, PopupKind::History);
    h.type_text("fix");
    let values: Vec<_> = h
        .app
        .popup()
        .unwrap()
        .items
        .iter()
        .map(|i| i.value.clone())
        .collect();
    assert_eq!(values, ["fix the lexer", "fix the parser", "fix the build"]);
    // Each row says when it was sent, as /resume rows do: the age within a day, else
    // the date; a line without a time shows none.
    let details: Vec<_> = h
        .app
        .popup()
        .unwrap()
        .items
        .iter()
        .map(|i| i.detail.clone())
        .collect();
    assert_eq!(details, ["5m ago", "2025-02-26", ""]);
    assert_eq!(
        h.app.composer_text(),
        "",
        "typing filters, it does not edit"
    );
    insta::assert_snapshot!("history_search_80", h.screen(80, 24));
    insta::assert_snapshot!("history_search_40", h.screen(40, 24));
    h.press(KeyCode::Down);
    h.press(KeyCode::Enter);
    assert!(h.app.popup().is_none());
    assert_eq!(h.app.composer_text(), "fix the parser");
    assert!(h.drain().is_empty(), "put in the composer, not sent");
}
