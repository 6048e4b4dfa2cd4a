//! Switching a model from the TUI (issue 15 item 5): `ctrl+o` sends the composer's
//! text as [`EngineCommand::SetModel`] for the open thread's session (new root
//! sessions before it has one); the answer is a status-bar note, never a modal, and
//! the status bar names the model the session's next turns use.

use super::*;

#[test]
fn ctrl_o_switches_the_open_sessions_model_and_the_status_bar_says_so() {
    let mut h = with_root_open();
    // An empty composer only says how, and what is in use now.
    h.key(KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert!(h.drain().is_empty());
    let screen = h.screen(80, 24);
    assert!(
        screen.contains("model: openai/gpt-4o · type MODEL or PROVIDER/MODEL"),
        "{screen}"
    );

    h.press(KeyCode::Tab); // chat → composer
    h.type_text("anthropic/claude-sonnet-4-5");
    h.key(KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert_eq!(
        h.drain(),
        [EngineCommand::SetModel {
            session_id: Some(ROOT.into()),
            model: "anthropic/claude-sonnet-4-5".into(),
        }]
    );
    assert_eq!(h.app.composer_text(), "", "the choice leaves the composer");
    h.app.handle(AppEvent::Reply(EngineReply::ModelSwitched {
        session_id: Some(ROOT.into()),
        result: Ok("anthropic/claude-sonnet-4-5".into()),
        warning: None,
    }));
    assert_eq!(
        h.app.provider_label(),
        &Ok("anthropic/claude-sonnet-4-5".to_string())
    );
    assert_eq!(
        h.app.tree().get(ROOT).unwrap().model.as_deref(),
        Some("anthropic/claude-sonnet-4-5")
    );
    let screen = h.screen(80, 24);
    insta::assert_snapshot!("model_switched_80", screen);
    assert!(
        screen.contains("model anthropic/claude-sonnet-4-5 for this session's next"),
        "{screen}"
    );
    insta::assert_snapshot!("model_switched_40", h.screen(40, 24));

    // A refused choice is a warning note; the label stays.
    h.type_text("nope/x*");
    h.key(KeyCode::Char('o'), KeyModifiers::CONTROL);
    h.drain();
    h.app.handle(AppEvent::Reply(EngineReply::ModelSwitched {
        session_id: Some(ROOT.into()),
        result: Err(arbor::engine::EngineError::Other(
            "model x*: no match among the 1 models openai lists".into(),
        )),
        warning: None,
    }));
    let screen = h.screen(80, 24);
    assert!(screen.contains("model not switched: model x*"), "{screen}");
    assert_eq!(
        h.app.provider_label(),
        &Ok("anthropic/claude-sonnet-4-5".to_string())
    );
}

#[test]
fn before_the_root_session_exists_the_switch_is_for_new_sessions() {
    let mut h = harness();
    h.type_text("gpt-4.1");
    h.key(KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert_eq!(
        h.drain(),
        [EngineCommand::SetModel {
            session_id: None,
            model: "gpt-4.1".into(),
        }]
    );
    h.app.handle(AppEvent::Reply(EngineReply::ModelSwitched {
        session_id: None,
        result: Ok("openai/gpt-4.1".into()),
        warning: None,
    }));
    assert_eq!(h.app.provider_label(), &Ok("openai/gpt-4.1".to_string()));
    assert!(
        h.screen(80, 24)
            .contains("model openai/gpt-4.1 for new sessions")
    );
}

/// Issue 23 item 7: text with spaces is no model name — Ctrl+O and `/model` refuse it
/// and the composer keeps it; a model the provider does not list is switched to with
/// a warning.
#[test]
fn a_message_is_not_taken_as_a_model_and_an_unlisted_one_warns() {
    let mut h = with_root_open();
    h.press(KeyCode::Tab); // chat → composer
    h.type_text("a steer msg");
    h.key(KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert!(h.drain().is_empty(), "nothing was switched");
    assert_eq!(h.app.composer_text(), "a steer msg", "the text stays");
    let screen = h.screen(100, 24);
    assert!(screen.contains("not a model name"), "{screen}");
    h.key(KeyCode::Char('l'), KeyModifiers::CONTROL);
    h.type_text("/model gpt 4o");
    h.press(KeyCode::Enter);
    assert!(h.drain().is_empty(), "nothing was switched");
    assert_eq!(h.app.composer_text(), "/model gpt 4o");
    h.key(KeyCode::Char('l'), KeyModifiers::CONTROL);
    h.type_text("/model gpt-4o-typo");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::SetModel {
            session_id: Some(ROOT.into()),
            model: "gpt-4o-typo".into(),
        }]
    );
    h.app.handle(AppEvent::Reply(EngineReply::ModelSwitched {
        session_id: Some(ROOT.into()),
        result: Ok("openai/gpt-4o-typo".into()),
        warning: Some(
            "gpt-4o-typo is not among the 3 models openai lists (used anyway: the server decides)"
                .into(),
        ),
    }));
    let note = h.app.note().unwrap();
    assert!(note.warning);
    assert!(
        note.text.contains("is not among the 3 models openai lists"),
        "{}",
        note.text
    );
}
