//! Layout and drawing through the App and the run loop: layout is the update step and
//! drawing reads state only, layout work does not grow with the history, the run loop
//! executes commands and quits, and any terminal size renders without a panic.

use super::*;

/// Drawing reads state only (`App::draw` takes `&App`): the chat's visible window is
/// laid out by `App::layout`, the update step before a frame, never by drawing, and
/// the same state draws the same frame twice.
#[test]
fn layout_is_the_update_step_and_draw_reads_state_only() {
    let mut h = with_root_open();
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut draw = |app: &App| {
        terminal.draw(|f| app.draw(f)).unwrap();
        buffer_text(terminal.backend().buffer())
    };
    let unlaid = draw(&h.app);
    assert!(!unlaid.contains("Survey the repo"), "{unlaid}");
    h.app.layout(Rect::new(0, 0, 80, 24));
    let first = draw(&h.app);
    assert!(first.contains("Survey the repo"), "{first}");
    assert_eq!(draw(&h.app), first);
    assert_eq!(filter_ids(&first), h.screen(80, 24));
}

#[test]
fn layout_work_is_independent_of_history_length() {
    fn run(n: usize) -> (u64, u64, u64) {
        let mut h = harness_with(Ok("p/m".into()), Some(ROOT));
        let transcript: Vec<Message> = (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    Message::user(format!("question {i}"))
                } else {
                    msg(json!({"role": "assistant", "content": format!("answer {i} with **markdown**\n\n- a\n- b")}))
                }
            })
            .collect();
        h.load(ROOT, None, "zen-architect", transcript);
        h.screen(80, 24);
        let first = h.app.thread().unwrap().stats.cells_wrapped;
        h.screen(80, 24);
        let warm = h.app.thread().unwrap().stats.cells_wrapped - first;
        for _ in 0..5 {
            h.press(KeyCode::PageUp);
            h.screen(80, 24);
        }
        let paged = h.app.thread().unwrap().stats.cells_wrapped;
        (first, warm, paged)
    }
    let small = run(1_000);
    let big = run(100_000);
    assert_eq!(small, big, "the same work for 1k and 100k messages");
    assert!(big.0 < 30, "only visible cells are laid out: {big:?}");
    assert_eq!(big.1, 0, "a warm cache lays out nothing");
}

#[tokio::test]
async fn the_run_loop_executes_commands_draws_and_quits_on_double_ctrl_c() {
    use futures::StreamExt;
    let (commands_tx, commands) = unbounded_channel();
    let (events_tx, events) = unbounded_channel();
    let (engine_tx, engine) = engine_stream();
    let mut app = App::new(
        AppOptions {
            theme: Theme::builtin_dark(false),
            theme_source: None,
            keymap: Keymap::defaults(),
            clock: Clock::system(),
            provider_label: Ok("p/m".into()),
            registry: Arc::new(registry()),
            agent: None,
            open_session: None,
            continue_last: false,
        },
        commands_tx,
    );
    // An engine event queued before the loop starts is applied too.
    engine_tx
        .unbounded_send(output(Event::new(ROOT, None, start("zen-architect"))))
        .unwrap();
    let key = |code, mods| Ok(TermEvent::Key(KeyEvent::new(code, mods)));
    // The quitting keys come once the engine's stream has been read (the loop
    // prefers input).
    let input = futures::stream::iter(vec![
        key(KeyCode::Char('h'), KeyModifiers::NONE),
        key(KeyCode::Char('i'), KeyModifiers::NONE),
        key(KeyCode::Enter, KeyModifiers::NONE),
    ])
    .chain(
        futures::stream::once(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            key(KeyCode::Char('c'), KeyModifiers::CONTROL)
        })
        .chain(futures::stream::iter(vec![
            key(KeyCode::Char('c'), KeyModifiers::CONTROL),
            key(KeyCode::Char('z'), KeyModifiers::NONE),
        ])),
    )
    .boxed();
    let channels = arbor::tui::runloop::Channels {
        commands,
        engine: Some(engine),
        events_tx,
        events,
        registry: None,
        reloads: None,
    };
    let executor = FakeExecutor(Default::default(), engine_tx);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    arbor::tui::runloop::run_app(
        &mut terminal,
        &mut app,
        input,
        channels,
        &executor,
        &mut NoHost,
    )
    .await
    .unwrap();
    assert!(app.should_quit());
    assert_eq!(
        app.composer_text(),
        "",
        "the key after the second Ctrl+C was never read"
    );
    let executed = executor.0.lock().unwrap().clone();
    assert_eq!(
        executed,
        [
            EngineCommand::ListSessions,
            EngineCommand::Submit {
                session_id: None,
                agent: None,
                prompt: "hi".into(),
                cleared: false,
            }
        ]
    );
    assert!(app.tree().get(ROOT).is_some());
    let drawn = format!("{}", terminal.backend());
    assert!(drawn.contains("Sessions"), "at least one frame was drawn");
}

#[test]
fn tiny_and_odd_terminal_sizes_render_without_panicking() {
    let mut h = with_root_open();
    h.engine(
        EngineEvent::delta(DeltaKind::Text, "streaming 日本語 text"),
        ROOT,
        None,
        30,
    );
    for (w, hgt) in [
        (1, 1),
        (2, 2),
        (5, 3),
        (10, 4),
        (20, 5),
        (59, 8),
        (60, 10),
        (200, 60),
    ] {
        h.screen(w, hgt);
        for overlay_key in [KeyCode::F(1), KeyCode::Esc, KeyCode::F(2), KeyCode::Esc] {
            h.press(overlay_key);
            h.screen(w, hgt);
        }
    }
    h.press(KeyCode::BackTab);
    h.screen(30, 6);
}

/// `k`/`j` in the chat after scrolling away select from where the view is (issue 39
/// item 7): the selection lands inside the window, and the view does not jump back
/// to the end.
#[test]
fn j_and_k_select_from_where_the_view_is() {
    let mut h = harness_with(Ok("p/m".into()), Some(ROOT));
    let mut transcript = Vec::new();
    for i in 0..40 {
        transcript.push(Message::user(format!("question {i}")));
        transcript.push(msg(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "bash", "arguments": format!("{{\"command\": \"echo {i}\"}}")}}]})));
        transcript.push(msg(
            json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": format!("out {i}")}),
        ));
    }
    h.load(ROOT, None, "zen-architect", transcript);
    while h.app.focus() != Focus::Chat {
        h.press(KeyCode::Tab);
    }
    h.screen(80, 24);
    for _ in 0..6 {
        h.press(KeyCode::PageUp);
        h.screen(80, 24);
    }
    let before = h.screen(80, 24);
    let shown = |screen: &str| -> Vec<usize> {
        (0..40)
            .filter(|i| screen.contains(&format!("echo {i}")))
            .collect()
    };
    let visible = shown(&before);
    assert!(
        !visible.is_empty() && *visible.last().unwrap() < 30,
        "{before}"
    );
    h.press(KeyCode::Char('k'));
    let after = h.screen(80, 24);
    let thread = h.app.thread().unwrap();
    let selected = thread.selected.expect("k selects a cell");
    assert!(
        selected < 3 * 30,
        "k jumped to the end: cell {selected}\n{after}"
    );
    assert!(
        shown(&after).iter().any(|i| visible.contains(i)),
        "the view moved away:\n{before}\n---\n{after}"
    );
    // `j` from a selection scrolled out of view starts at the view's top.
    for _ in 0..6 {
        h.press(KeyCode::PageDown);
        h.screen(80, 24);
    }
    let view = shown(&h.screen(80, 24));
    h.press(KeyCode::Char('j'));
    let next = h.app.thread().unwrap().selected.unwrap();
    assert!(next > selected, "{next} after {selected}");
    let now = shown(&h.screen(80, 24));
    assert!(now.iter().any(|i| view.contains(i)), "{view:?} → {now:?}");
}

/// The tree lists a parent's children in the order its thread shows their `task`
/// calls (issue 39 item 7), not the order they were created in (parallel calls spawn
/// in any order).
#[test]
fn the_tree_lists_children_in_the_threads_order() {
    const FIRST: &str = "5f0e1c2a11114222-1111111111111111_explorer";
    const SECOND: &str = "5f0e1c2a11114222-2222222222222222_implementer";
    let mut h = harness_with(Ok("p/m".into()), Some(ROOT));
    let meta = |id: &str, parent: Option<&str>, agent: &str, secs: i64| Metadata {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        agent_name: Some(agent.into()),
        status: SessionStatus::Completed,
        created: (T0.parse::<Timestamp>().unwrap() + jiff::SignedDuration::from_secs(secs))
            .to_string(),
        last_updated: T0.into(),
        ..Default::default()
    };
    // The second call's child was created first.
    h.app
        .handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(vec![
            meta(ROOT, None, "zen-architect", 0),
            meta(SECOND, Some(ROOT), "implementer", 1),
            meta(FIRST, Some(ROOT), "explorer", 2),
        ]))));
    let children = |h: &Harness| h.app.tree().get(ROOT).unwrap().children.clone();
    assert_eq!(children(&h), [SECOND, FIRST], "created order before");
    let call = |id: &str, agent: &str, what: &str| {
        json!({"id": id, "type": "function", "function": {"name": "task",
            "arguments": json!({"agent": agent, "instruction": what}).to_string()}})
    };
    let result = |id: &str, child: &str, agent: &str| {
        msg(
            json!({"role": "tool", "tool_call_id": id, "name": "task", "content": json!({
            "response": "done", "session_id": child, "agent": agent, "status": "completed", "turn_count": 1
        }).to_string()}),
        )
    };
    h.load(
        ROOT,
        None,
        "zen-architect",
        vec![
            Message::user("survey then fix"),
            msg(json!({"role": "assistant", "content": null, "tool_calls": [
                call("t1", "explorer", "Survey the parser"),
                call("t2", "implementer", "Fix the parser"),
            ]})),
            result("t1", FIRST, "explorer"),
            result("t2", SECOND, "implementer"),
        ],
    );
    assert_eq!(children(&h), [FIRST, SECOND], "the thread's order");
}
