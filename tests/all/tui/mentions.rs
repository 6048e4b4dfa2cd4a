//! `@file` completion in the composer (issue 15 item 2): `@` + a partial path asks
//! for the project's file list once (off the UI thread), lists matching files in the
//! popup, and Tab/Enter completes the path; the sent message carries the file.

use super::*;
use arbor::tui::state::palette::PopupKind;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the notes body\n").unwrap();
    std::fs::write(dir.path().join("src/notation.rs"), "fn main() {}\n").unwrap();
    dir
}

#[test]
fn at_partial_lists_project_files_and_tab_completes() {
    let dir = project();
    let root = dir.path().to_path_buf();
    let mut h = harness();
    h.app.set_project_root(root.clone());
    h.type_text("look at @not");
    // The list is asked for once, off the UI thread.
    assert_eq!(
        h.drain(),
        [EngineCommand::ListProjectFiles { root: root.clone() }]
    );
    assert!(h.app.popup().is_none(), "no list yet");
    let files = arbor::tui::state::mentions::list_files(&root);
    h.app.handle(AppEvent::Reply(EngineReply::ProjectFiles {
        root: root.clone(),
        files: Arc::new(files),
    }));
    let popup = h.app.popup().unwrap();
    assert_eq!(popup.kind, PopupKind::Files);
    let values: Vec<_> = popup.items.iter().map(|i| i.value.as_str()).collect();
    assert_eq!(values, ["notes.txt", "src/notation.rs"]);
    insta::assert_snapshot!("files_popup_80", h.screen(80, 24));
    insta::assert_snapshot!("files_popup_40", h.screen(40, 24));

    h.press(KeyCode::Tab);
    assert_eq!(h.app.composer_text(), "look at @notes.txt ");
    assert!(h.app.popup().is_none());
    h.type_text("please");
    assert!(h.drain().is_empty(), "the list is kept, not walked again");
    h.press(KeyCode::Enter);
    let sent = h.drain();
    let [EngineCommand::Submit { prompt, .. }] = sent.as_slice() else {
        panic!("{sent:?}");
    };
    assert!(
        prompt.starts_with("<context_file paths=\"@notes.txt → "),
        "{prompt}"
    );
    assert!(prompt.contains("the notes body"), "{prompt}");
    assert!(prompt.ends_with("look at @notes.txt please"), "{prompt}");
    assert!(h.screen(80, 24).contains("attached @notes.txt"));

    // A path typed out in full: Enter sends at once.
    let mut h = harness();
    h.app.set_project_root(root.clone());
    h.type_text("see @notes.txt");
    h.drain();
    let files = arbor::tui::state::mentions::list_files(&root);
    h.app.handle(AppEvent::Reply(EngineReply::ProjectFiles {
        root,
        files: Arc::new(files),
    }));
    assert!(h.app.popup().is_some());
    h.press(KeyCode::Enter);
    assert!(matches!(
        h.drain().as_slice(),
        [EngineCommand::Submit { .. }]
    ));
}

/// A pasted path of a project file (a file dragged into the terminal, quoted) is
/// attached as `@path` is (issue 39 item 5); a paste that is not only files stays
/// text.
#[test]
fn a_pasted_file_path_attaches_like_a_mention() {
    let dir = project();
    let root = dir.path().to_path_buf();
    let mut h = harness();
    h.app.set_project_root(root.clone());
    h.type_text("what is in ");
    let dragged = format!(
        "'{}'",
        root.canonicalize().unwrap().join("notes.txt").display()
    );
    h.app.handle(AppEvent::Input(TermEvent::Paste(dragged)));
    assert_eq!(h.app.composer_text(), "what is in @notes.txt ");
    h.press(KeyCode::Enter);
    let sent = h.drain();
    let Some(EngineCommand::Submit { prompt, .. }) = sent.last() else {
        panic!("{sent:?}");
    };
    assert!(prompt.contains("the notes body"), "{prompt}");

    let mut h = harness();
    h.app.set_project_root(root);
    h.app.handle(AppEvent::Input(TermEvent::Paste(
        "notes.txt is where it lives".into(),
    )));
    assert_eq!(h.app.composer_text(), "notes.txt is where it lives");
}
