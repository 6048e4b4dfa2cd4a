//! "Needs you" and the diff key, seen from the TUI (issue 10 item 6, issue 9 item 6):
//! the status bar's count, the jump key, the bell / OSC 9 notification down to the
//! bytes the terminal receives, and the diff overlay.

use arbor::config::Notify;
use arbor::tool::filesystem::changes::{FileDiff, SessionDiff};
use arbor::tui::notify::Notification;
use futures::StreamExt;
use ratatui::backend::CrosstermBackend;

use super::recover::stored;
use super::*;

const SIBLING: &str = "5f0e1c2a11114222-7777888899990000_tester";

/// Root open; stored: the explorer child failed, the tester child interrupted.
fn with_stored_failures() -> Harness {
    let mut h = harness_with(Ok("openai/gpt-4o".into()), Some(ROOT));
    h.drain();
    h.app
        .handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(vec![
            stored(ROOT, None, "arbor", SessionStatus::Completed, 0),
            stored(CHILD, Some(ROOT), "explorer", SessionStatus::Failed, 1),
            stored(SIBLING, Some(ROOT), "tester", SessionStatus::Interrupted, 2),
        ]))));
    h.load(ROOT, None, "arbor", root_transcript());
    h
}

#[test]
fn the_status_bar_counts_who_needs_you_and_a_listing_rings_nothing() {
    let mut h = with_stored_failures();
    assert_eq!(h.app.needs_you_count(), 2);
    assert_eq!(
        h.app.take_notification(),
        None,
        "stored sessions did not just start needing anyone"
    );
    let screen = h.screen(80, 24);
    assert!(screen.contains("⚑ 2 need you (Ctrl+g)"), "{screen}");
    insta::assert_snapshot!("needs_you_80", screen);
    let narrow = h.screen(40, 24);
    assert!(narrow.contains("⚑ 2 need you"), "{narrow}");
    insta::assert_snapshot!("needs_you_40", narrow);
}

#[test]
fn ctrl_g_opens_the_next_one_and_a_seen_failure_stops_counting() {
    let mut h = with_stored_failures();
    h.key(KeyCode::Char('g'), KeyModifiers::CONTROL);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: CHILD.into()
        }]
    );
    assert_eq!(h.app.tree().selected.as_deref(), Some(CHILD));
    let screen = h.screen(80, 24);
    assert!(screen.contains("⚑ explorer: failed"), "{screen}");
    // Opened, so seen: only the interrupted tester is left, and the jump goes there.
    assert_eq!(h.app.needs_you_count(), 1);
    h.key(KeyCode::Char('g'), KeyModifiers::CONTROL);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: SIBLING.into()
        }]
    );
    assert_eq!(h.app.needs_you_count(), 0);
    h.key(KeyCode::Char('g'), KeyModifiers::CONTROL);
    assert!(h.drain().is_empty());
    assert!(h.screen(80, 24).contains("nothing needs you"));
}

#[test]
fn a_session_that_starts_needing_you_elsewhere_notifies_once() {
    let mut h = with_root_open();
    h.app.set_notify(Notify::Osc9);
    h.engine(
        approval_bash_event("call_1", "explorer", "cargo test"),
        CHILD,
        Some(ROOT),
        20,
    );
    assert_eq!(
        h.app.take_notification(),
        Some(Notification {
            mode: Notify::Osc9,
            text: "arbor: explorer needs you (waiting for approval)".into()
        })
    );
    // Still waiting: nothing new, nothing more.
    h.engine(
        EngineEvent::status(SessionStatus::Waiting),
        CHILD,
        Some(ROOT),
        21,
    );
    assert_eq!(h.app.take_notification(), None);
    // The open thread failing is in front of the person: no notification.
    h.engine(EngineEvent::status(SessionStatus::Failed), ROOT, None, 22);
    assert_eq!(h.app.take_notification(), None);
    // With notify: off, nothing at all.
    h.app.set_notify(Notify::Off);
    h.engine(fork(ROOT, "tester"), SIBLING, Some(ROOT), 23);
    h.engine(
        EngineEvent::status(SessionStatus::Failed),
        SIBLING,
        Some(ROOT),
        24,
    );
    assert_eq!(h.app.take_notification(), None);
}

fn approval_bash_event(call: &str, agent: &str, command: &str) -> EngineEvent {
    arbor::tui::testing::approval_bash(call, agent, command)
}

/// What the terminal receives: a byte buffer the test keeps a handle to.
#[derive(Clone, Default)]
struct Bytes(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Bytes {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes every notification to a crossterm terminal over [`Bytes`], as the real host
/// does to stdout.
struct BytesHost;

impl arbor::tui::runloop::Host<CrosstermBackend<Bytes>> for BytesHost {
    fn open_editor(
        &mut self,
        _: &mut Terminal<CrosstermBackend<Bytes>>,
        _: &std::path::Path,
    ) -> std::io::Result<()> {
        Err(std::io::Error::other("no editor in tests"))
    }

    fn notify(
        &mut self,
        terminal: &mut Terminal<CrosstermBackend<Bytes>>,
        notification: &Notification,
    ) -> std::io::Result<()> {
        arbor::tui::runloop::notify_crossterm(terminal, notification)
    }
}

/// Runs the loop with `notify` while a child of the open root fails, then quits; the
/// bytes the terminal received.
async fn terminal_bytes(notify: Notify) -> Vec<u8> {
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
            open_session: Some(ROOT.into()),
            continue_last: false,
        },
        commands_tx,
    );
    app.set_notify(notify);
    for event in [
        Event::new(ROOT, None, start("arbor")),
        Event::new(CHILD, Some(ROOT), fork(ROOT, "explorer")),
        Event::new(
            CHILD,
            Some(ROOT),
            EngineEvent::status(SessionStatus::Failed),
        ),
    ] {
        engine_tx.unbounded_send(output(event)).unwrap();
    }
    let key = |code, mods| -> std::io::Result<TermEvent> {
        Ok(TermEvent::Key(KeyEvent::new(code, mods)))
    };
    // Input comes after the engine's stream has been read (the loop prefers input).
    let input = futures::stream::once(async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        key(KeyCode::Char('c'), KeyModifiers::CONTROL)
    })
    .chain(futures::stream::iter([key(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
    )]))
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
    let bytes = Bytes::default();
    let mut terminal = Terminal::new(CrosstermBackend::new(bytes.clone())).unwrap();
    arbor::tui::runloop::run_app(
        &mut terminal,
        &mut app,
        input,
        channels,
        &executor,
        &mut BytesHost,
    )
    .await
    .unwrap();
    bytes.0.lock().unwrap().clone()
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

#[tokio::test(start_paused = true)]
async fn the_terminal_receives_one_bel_or_one_osc9_notification() {
    let osc9 = terminal_bytes(Notify::Osc9).await;
    assert_eq!(
        count(&osc9, b"\x1b]9;arbor: explorer needs you (failed)\x07"),
        1,
        "{}",
        String::from_utf8_lossy(&osc9)
    );
    let bell = terminal_bytes(Notify::Bell).await;
    assert_eq!(count(&bell, b"\x07"), 1);
    assert_eq!(count(&bell, b"\x1b]9;"), 0);
    let off = terminal_bytes(Notify::Off).await;
    assert_eq!(count(&off, b"\x07"), 0);
}

fn diffs() -> Vec<SessionDiff> {
    vec![SessionDiff {
        session_id: ROOT.into(),
        agent: Some("arbor".into()),
        files: vec![
            FileDiff {
                path: "src/lib.rs".into(),
                diff: arbor::tui::testing::SAMPLE_DIFF.into(),
                added: 1,
                removed: 1,
            },
            FileDiff {
                path: "notes.md".into(),
                diff: "--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1,2 @@\n+# Notes\n+The parser is in src/parse.rs.\n".into(),
                added: 2,
                removed: 0,
            },
        ],
    }]
}

#[test]
fn d_shows_the_selected_sessions_diff_s_adds_sub_sessions_esc_closes() {
    let mut h = with_root_open();
    h.press(KeyCode::Tab); // chat → composer
    h.press(KeyCode::Tab); // composer → tree
    assert_eq!(h.app.focus(), Focus::Tree);
    h.press(KeyCode::Char('d'));
    assert_eq!(h.app.overlay(), Overlay::Diff);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadDiff {
            session_id: ROOT.into(),
            subtree: false
        }]
    );
    h.app.handle(AppEvent::Reply(EngineReply::DiffLoaded {
        session_id: ROOT.into(),
        subtree: false,
        result: Ok(diffs()),
    }));
    let screen = h.screen(80, 24);
    assert!(
        screen.contains("Diff · zen-architect #5f0e1c2a · 2 files +3 -1"),
        "{screen}"
    );
    assert!(screen.contains("+pub mod settings;"), "{screen}");
    insta::assert_snapshot!("diff_80", screen);
    insta::assert_snapshot!("diff_40", h.screen(40, 24));

    h.press(KeyCode::Char('s'));
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadDiff {
            session_id: ROOT.into(),
            subtree: true
        }]
    );
    h.press(KeyCode::Esc);
    assert_eq!(h.app.overlay(), Overlay::None);
    assert!(h.drain().is_empty(), "Esc in the overlay cancels nothing");
}

#[test]
fn the_diff_overlay_scrolls_and_d_in_the_chat_diffs_the_open_thread() {
    let mut h = with_root_open();
    h.press(KeyCode::Char('d'));
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadDiff {
            session_id: ROOT.into(),
            subtree: false
        }]
    );
    let mut many = diffs();
    many[0].files[1].diff = format!(
        "--- /dev/null\n+++ b/long.txt\n@@ -0,0 +1,60 @@\n{}",
        (1..=60).map(|i| format!("+line {i}\n")).collect::<String>()
    );
    h.app.handle(AppEvent::Reply(EngineReply::DiffLoaded {
        session_id: ROOT.into(),
        subtree: false,
        result: Ok(many),
    }));
    h.screen(80, 24);
    h.press(KeyCode::End);
    let bottom = h.screen(80, 24);
    assert!(bottom.contains("+line 60"), "{bottom}");
    assert!(!bottom.contains("+pub mod settings;"), "{bottom}");
    h.press(KeyCode::Home);
    assert!(h.screen(80, 24).contains("--- a/src/lib.rs"));
}

/// Issue 23 item 8: a failure the person has seen stays acknowledged after a restart
/// (the acknowledgement is kept in the state directory), until its status changes.
#[test]
fn a_seen_failure_stays_seen_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seen").join("project.json");
    let listing = || {
        vec![
            stored(ROOT, None, "arbor", SessionStatus::Completed, 0),
            stored(CHILD, Some(ROOT), "explorer", SessionStatus::Failed, 1),
            stored(SIBLING, Some(ROOT), "tester", SessionStatus::Interrupted, 2),
        ]
    };
    let start = |listed: Vec<Metadata>| {
        let mut h = harness_with(Ok("openai/gpt-4o".into()), Some(ROOT));
        h.app
            .set_seen_store(arbor::tui::state::seen::SeenStore::load(path.clone()));
        h.drain();
        h.app
            .handle(AppEvent::Reply(EngineReply::SessionsListed(Ok(listed))));
        h
    };
    let mut h = start(listing());
    assert_eq!(h.app.needs_you_count(), 2);
    h.key(KeyCode::Char('g'), KeyModifiers::CONTROL); // opens the failed explorer
    assert_eq!(h.app.needs_you_count(), 1);
    drop(h);
    let h = start(listing());
    assert_eq!(
        h.app.needs_you_count(),
        1,
        "the seen failure does not count again after a restart"
    );
    // Continued and failed again later (another process): it counts again.
    let mut again = listing();
    again[1] = stored(CHILD, Some(ROOT), "explorer", SessionStatus::Failed, 600);
    let h = start(again);
    assert_eq!(h.app.needs_you_count(), 2);
}
