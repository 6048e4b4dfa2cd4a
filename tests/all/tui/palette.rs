//! The slash-command palette (issue 15 item 1): `/` in the composer lists the
//! commands of the one table, filtered by what follows; Up/Down select, Enter/Tab
//! accept, Esc closes; a sent known command runs instead of reaching the model, an
//! unknown `/name` is a notice, a path-like `/usr/bin …` is an ordinary message.

use super::*;
use arbor::tui::state::palette::PopupKind;
use arbor::tui::state::palette_commands::SLASH_COMMANDS;

fn popup_values(h: &Harness) -> Vec<String> {
    h.app
        .popup()
        .map(|p| p.items.iter().map(|i| i.value.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn slash_lists_every_command_and_typing_filters() {
    let mut h = harness();
    h.press(KeyCode::Char('/'));
    assert_eq!(popup_values(&h).len(), SLASH_COMMANDS.len());
    let screen = h.screen(80, 24);
    for spec in SLASH_COMMANDS {
        assert!(screen.contains(&format!("/{}", spec.name)), "{screen}");
    }
    insta::assert_snapshot!("palette_all_80", screen);
    insta::assert_snapshot!("palette_all_40", h.screen(40, 24));

    h.type_text("re");
    assert_eq!(popup_values(&h), ["resume", "rename"]);
    let screen = h.screen(80, 24);
    insta::assert_snapshot!("palette_filtered_80", screen);
    assert!(!screen.contains("/agents"), "{screen}");

    // Down + Tab completes the command that needs a title; the popup closes.
    h.press(KeyCode::Down);
    h.press(KeyCode::Tab);
    assert_eq!(h.app.composer_text(), "/rename ");
    assert!(h.app.popup().is_none());
    assert!(h.drain().is_empty());

    // Esc closes the popup until the text changes; the text stays.
    let mut h = harness();
    h.type_text("/m");
    assert!(h.app.popup().is_some());
    h.press(KeyCode::Esc);
    assert!(h.app.popup().is_none());
    assert_eq!(h.app.composer_text(), "/m");
    h.press(KeyCode::Char('c'));
    assert_eq!(popup_values(&h), ["mcp"]);
}

#[test]
fn model_with_a_name_sends_set_model_for_the_open_session() {
    let mut h = with_root_open();
    h.press(KeyCode::Tab); // chat → composer
    h.type_text("/model anthropic/claude-sonnet-4-5");
    assert!(h.app.popup().is_none(), "an argument closes the palette");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::SetModel {
            session_id: Some(ROOT.into()),
            model: "anthropic/claude-sonnet-4-5".into(),
        }]
    );
    assert_eq!(h.app.composer_text(), "");
    assert!(
        h.screen(80, 24)
            .contains("switching the model to anthropic")
    );

    // Enter on the palette's row runs a command that takes no argument.
    h.type_text("/mc");
    h.press(KeyCode::Enter);
    assert_eq!(h.app.overlay(), Overlay::Mcp);
    assert_eq!(h.drain(), [EngineCommand::ListMcpServers]);
}

#[test]
fn unknown_commands_are_not_sent_and_paths_are_plain_messages() {
    let mut h = harness();
    h.type_text("/frobnicate now");
    h.press(KeyCode::Enter);
    assert!(
        h.drain().is_empty(),
        "an unknown command never reaches the model"
    );
    assert_eq!(h.app.composer_text(), "/frobnicate now");
    let screen = h.screen(80, 24);
    assert!(screen.contains("unknown command /frobnicate"), "{screen}");

    let mut h = harness();
    h.type_text("/usr/bin is where it lives");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::Submit {
            session_id: None,
            agent: None,
            prompt: "/usr/bin is where it lives".into(),
            cleared: false,
        }]
    );
}

#[test]
fn rename_export_clear_and_resume_act_on_the_open_session() {
    let mut h = with_root_open();
    h.press(KeyCode::Tab);
    h.type_text("/rename Survey of the repo");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::RenameSession {
            session_id: ROOT.into(),
            title: "Survey of the repo".into(),
        }]
    );
    h.app.handle(AppEvent::Reply(EngineReply::SessionRenamed {
        session_id: ROOT.into(),
        result: Ok("Survey of the repo".into()),
    }));
    assert_eq!(
        h.app.tree().get(ROOT).unwrap().title.as_deref(),
        Some("Survey of the repo")
    );

    h.type_text("/export");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::ExportSession {
            session_id: ROOT.into()
        }]
    );
    h.app.handle(AppEvent::Reply(EngineReply::Exported {
        session_id: ROOT.into(),
        result: Ok("/work/p/arbor-export-5f0e1c2a.md".into()),
    }));
    assert!(
        h.screen(80, 24)
            .contains("exported to /work/p/arbor-export-5f0e1c2a.md")
    );

    // /clear: a fresh root; the old one stays in the tree.
    h.type_text("/clear");
    h.press(KeyCode::Enter);
    assert_eq!(h.app.thread().unwrap().session_id, None);
    assert!(h.app.tree().get(ROOT).is_some());
    assert!(h.screen(80, 24).contains("stays in the tree"));

    // /resume lists root sessions; Enter opens the selected one.
    h.type_text("/resume");
    h.press(KeyCode::Enter);
    assert_eq!(h.app.composer_text(), "/resume ");
    let popup = h.app.popup().unwrap();
    assert_eq!(popup.kind, PopupKind::Sessions);
    assert_eq!(popup_values(&h), [ROOT]);
    insta::assert_snapshot!("palette_resume_80", h.screen(80, 24));
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: ROOT.into()
        }]
    );
    assert_eq!(h.app.focus(), Focus::Chat);
}

#[test]
fn rename_before_the_session_exists_says_why() {
    let mut h = harness();
    h.type_text("/rename X");
    h.press(KeyCode::Enter);
    assert!(h.drain().is_empty());
    assert!(h.screen(80, 24).contains("nothing to rename"));
}
