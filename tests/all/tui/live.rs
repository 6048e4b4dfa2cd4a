//! Live sessions seen from the TUI: opening a session mid-reply, transcripts racing
//! the bus, the provider label learning its model, the header learning its agent,
//! and the tree after `--continue`.

use super::*;

const WORDS: &str = "Working on it. Here is a careful answer ";

fn delta(h: &mut Harness, id: &str, parent: Option<&str>, text: &str) {
    h.engine(EngineEvent::delta(DeltaKind::Text, text), id, parent, 20);
}

/// The root thread open with its task card, the child's turn running.
pub(super) fn with_child_running() -> Harness {
    let mut h = with_root_open();
    h.engine(
        EngineEvent::status(SessionStatus::Running),
        CHILD,
        Some(ROOT),
        20,
    );
    h
}

fn open_child(h: &mut Harness) {
    h.screen(80, 24);
    h.press(KeyCode::Up);
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: CHILD.into()
        }]
    );
}

fn user_instruction() -> Value {
    json!({"role": "user", "content": "List the modules", "timestamp": "2025-03-01T12:00:20.5Z"})
}

#[test]
fn opening_a_running_session_shows_what_streamed_before_it_was_opened() {
    let mut h = with_child_running();
    h.engine(appended(user_instruction()), CHILD, Some(ROOT), 20);
    h.engine(
        EngineEvent::delta(DeltaKind::Thinking, "weighing options"),
        CHILD,
        Some(ROOT),
        20,
    );
    delta(&mut h, CHILD, Some(ROOT), "Working on it.\nHere is ");
    open_child(&mut h);
    // Streams on while the transcript loads (its user message is on disk already).
    delta(&mut h, CHILD, Some(ROOT), "a careful ");
    h.load(CHILD, Some(ROOT), "explorer", vec![msg(user_instruction())]);
    delta(&mut h, CHILD, Some(ROOT), "answer ");
    let screen = h.screen(80, 24);
    assert!(screen.contains("Working on it."), "{screen}");
    assert!(screen.contains("Here is a careful answer ▍"), "{screen}");
    assert!(screen.contains("weighing options"), "{screen}");
    assert_eq!(screen.matches("› List the modules").count(), 1, "{screen}");
    // The final message replaces the stream, shown once.
    h.engine(
        appended(json!({"role": "assistant", "content": format!("{WORDS}done.")})),
        CHILD,
        Some(ROOT),
        21,
    );
    let screen = h.screen(80, 24);
    assert!(h.app.thread().unwrap().streaming().is_none());
    assert_eq!(screen.matches("Here is a careful").count(), 1, "{screen}");
    assert!(screen.contains("careful answer done."), "{screen}");
}

#[test]
fn messages_appended_while_loading_or_already_on_disk_show_once() {
    let mut h = with_child_running();
    delta(&mut h, CHILD, Some(ROOT), WORDS);
    open_child(&mut h);
    // While loading: the user message (read from disk too) and the reply (appended
    // after the read, so not on disk).
    let reply =
        json!({"role": "assistant", "content": WORDS.trim(), "timestamp": "2025-03-01T12:00:21Z"});
    h.engine(appended(user_instruction()), CHILD, Some(ROOT), 20);
    h.engine(appended(reply.clone()), CHILD, Some(ROOT), 21);
    h.load(CHILD, Some(ROOT), "explorer", vec![msg(user_instruction())]);
    let screen = h.screen(80, 24);
    assert_eq!(screen.matches("› List the modules").count(), 1, "{screen}");
    assert_eq!(screen.matches("Here is a careful").count(), 1, "{screen}");
    assert!(h.app.thread().unwrap().streaming().is_none(), "{screen}");

    // Reopen after the next reply reached the disk but before its event was handled:
    // the queued event confirms the loaded message instead of repeating it.
    h.press(KeyCode::BackTab);
    h.press(KeyCode::Up);
    h.press(KeyCode::Enter); // tree: open the root
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: ROOT.into()
        }]
    );
    h.load(ROOT, None, "zen-architect", root_transcript());
    delta(&mut h, CHILD, Some(ROOT), "Second reply.");
    while h.app.focus() != Focus::Chat {
        h.press(KeyCode::Tab);
    }
    open_child(&mut h);
    let second = json!({"role": "assistant", "content": "Second reply.", "timestamp": "2025-03-01T12:00:22Z"});
    h.load(
        CHILD,
        Some(ROOT),
        "explorer",
        vec![msg(user_instruction()), msg(reply), msg(second.clone())],
    );
    let screen = h.screen(80, 24);
    assert_eq!(screen.matches("Second reply.").count(), 1, "{screen}");
    h.engine(appended(second), CHILD, Some(ROOT), 22);
    let screen = h.screen(80, 24);
    assert_eq!(screen.matches("Second reply.").count(), 1, "{screen}");
    assert!(h.app.thread().unwrap().streaming().is_none());
    // A genuinely new message after that is shown.
    h.engine(
        appended(json!({"role": "assistant", "content": "Third reply."})),
        CHILD,
        Some(ROOT),
        23,
    );
    assert!(h.screen(80, 24).contains("Third reply."));
}

#[test]
fn the_status_bar_learns_the_model_from_the_first_reply() {
    let mut h = harness_with(Ok("openai".into()), None);
    assert!(h.screen(80, 24).contains(" openai (default model) "));
    // A sub-session's reply (not open) does not change the label.
    h.engine(
        response("anthropic", "anthropic/claude-x"),
        CHILD,
        Some(ROOT),
        1,
    );
    h.engine(response("openai", "openai"), ROOT, None, 2);
    assert_eq!(h.app.provider_label(), &Ok("openai".to_string()));
    h.engine(
        response("openai", "openai/qwen2.5-coder-0.5b"),
        ROOT,
        None,
        3,
    );
    let screen = h.screen(80, 24);
    assert!(
        screen
            .lines()
            .last()
            .unwrap()
            .starts_with(" openai/qwen2.5-coder-0.5b "),
        "{screen}"
    );
    // A bare model name is prefixed with the provider.
    h.engine(response("openai", "gpt-4o-mini"), ROOT, None, 4);
    assert_eq!(
        h.app.provider_label(),
        &Ok("openai/gpt-4o-mini".to_string())
    );
}

#[test]
fn a_new_root_header_shows_the_agent_from_session_start() {
    for start_first in [false, true] {
        let mut h = harness();
        h.type_text("Plan a cache");
        h.press(KeyCode::Enter);
        assert!(matches!(
            h.drain().as_slice(),
            [EngineCommand::Submit {
                session_id: None,
                ..
            }]
        ));
        let start = |h: &mut Harness| {
            h.engine(
                EngineEvent::SessionStart(SessionStartEvent {
                    agent: "arbor".into(),
                    bundle: Some("arbor".into()),
                    model: Some("openai".into()),
                    ..Default::default()
                }),
                ROOT,
                None,
                0,
            )
        };
        if start_first {
            start(&mut h);
        }
        h.app.handle(AppEvent::Reply(EngineReply::SessionCreated {
            session_id: ROOT.into(),
        }));
        if !start_first {
            start(&mut h);
        }
        let screen = h.screen(80, 24);
        let header = screen.lines().next().unwrap();
        assert!(header.contains("· arbor ·"), "{start_first}: {screen}");
        assert!(!screen.contains("default agent"), "{screen}");
    }
}

#[test]
fn continue_opens_the_latest_root_expanded() {
    let (tx, mut rx) = unbounded_channel();
    let mut app = App::new(
        AppOptions {
            theme: Theme::builtin_dark(false),
            theme_source: None,
            keymap: Keymap::defaults(),
            clock: Clock::manual(T0.parse().unwrap()),
            provider_label: Ok("openai/gpt-4o".into()),
            registry: Arc::new(registry()),
            agent: None,
            open_session: None,
            continue_last: true,
        },
        tx,
    );
    let meta = |id: &str, parent: Option<&str>, agent: &str| Metadata {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        agent_name: Some(agent.into()),
        status: SessionStatus::Completed,
        created: T0.into(),
        last_updated: T0.into(),
        ..Default::default()
    };
    app.handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(vec![
        meta(CHILD, Some(ROOT), "explorer"),
        meta(ROOT, None, "zen-architect"),
    ]))));
    let cmds: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(
        cmds.last(),
        Some(&EngineCommand::LoadTranscript {
            session_id: ROOT.into()
        })
    );
    app.handle(AppEvent::Reply(EngineReply::Opened {
        requested: ROOT.into(),
        session: Box::new(LoadedSession {
            metadata: meta(ROOT, None, "zen-architect"),
            transcript: root_transcript(),
            warnings: vec![],
        }),
        earlier: None,
    }));
    let ids: Vec<String> = app
        .tree()
        .rows()
        .iter()
        .map(|r| r.node.id.clone())
        .collect();
    assert_eq!(ids, [ROOT, CHILD], "the opened root is expanded");
}
