//! `@file` end to end (issue 15 item 2): in the TUI, `@not` + Tab completes to a real
//! file of a temp project; sent through the TUI's own executor, its content reaches a
//! scripted provider as a `<context_file>` block before the typed text, and the
//! transcript stores what the model got.

use crate::support::fixture;
use crate::support::harness;

use arbor::engine::testing::{Drive, Step};
use arbor::tui::executor::RuntimeExecutor;
use arbor::tui::runloop::Executor;
use arbor::tui::{AppEvent, EngineCommand, EngineReply};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use fixture::*;
use serde_json::json;

fn press(app: &mut arbor::tui::App, code: KeyCode) {
    let ev = TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE));
    app.handle(AppEvent::Input(ev));
}

#[tokio::test]
async fn a_completed_mention_carries_the_files_content_to_the_model() {
    let fx = Fixture::new(plan(json!({})), &[], |_| vec![Step::text("read it")]);
    let project = fx.paths.cwd.clone();
    std::fs::write(project.join("notes.txt"), "NOTES-CONTENT-42\n").unwrap();
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let loaded = rt.load_session(&id).await.unwrap();
    let (mut app, mut commands) = harness::app_for(&id, "scripted/scripted-model", loaded);
    app.set_project_root(project.clone());
    while commands.try_recv().is_ok() {}

    let (executor, mut stream) = RuntimeExecutor::connect(&rt);
    for c in "what is in @not".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    // The file list comes from the executor, as in the real TUI.
    let list = commands.try_recv().unwrap();
    assert!(
        matches!(list, EngineCommand::ListProjectFiles { .. }),
        "{list:?}"
    );
    executor.submit(list);
    harness::pump(&mut app, &mut stream, |r| {
        matches!(r, EngineReply::ProjectFiles { .. })
    })
    .await;
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.composer_text(), "what is in @notes.txt ");
    press(&mut app, KeyCode::Enter);

    let submit = commands.try_recv().unwrap();
    executor.submit(submit);
    harness::pump(&mut app, &mut stream, |r| {
        matches!(r, EngineReply::TurnFinished(_))
    })
    .await;

    let requests = fx.provider.requests();
    let sent = arbor::engine::testing::last_user_text(requests.last().unwrap());
    assert!(sent.contains("NOTES-CONTENT-42"), "{sent}");
    assert!(
        sent.contains("<context_file paths=\"@notes.txt → "),
        "{sent}"
    );
    assert!(sent.trim_end().ends_with("what is in @notes.txt"), "{sent}");
    let stored = fx.transcript(&id);
    assert!(
        stored.iter().any(|m| m["role"] == "user"
            && m["content"]
                .as_str()
                .unwrap_or("")
                .contains("NOTES-CONTENT-42")),
        "{stored:?}"
    );
}
