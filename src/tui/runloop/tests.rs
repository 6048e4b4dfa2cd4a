//! The run loop's priorities and frames, with a `TestBackend`, scripted input and a
//! scripted engine stream (paused time).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;

use super::*;
use crate::agent::Registry;
use crate::engine::EngineReply;
use crate::tui::app::AppOptions;
use crate::tui::clock::Clock;
use crate::tui::keymap::Keymap;
use crate::tui::theme::Theme;
use std::sync::Arc;

/// A scripted engine stream: its sender and the stream the loop reads.
fn engine() -> (EngineTx, EngineOutputs) {
    let (tx, rx) = futures::channel::mpsc::unbounded();
    (tx, rx.boxed())
}

type EngineTx = futures::channel::mpsc::UnboundedSender<EngineOutput>;

/// Makes `app`'s clock follow tokio's paused test clock (5 ms steps).
fn follow_paused_clock(app: &App) {
    let clock = app.clock().clone();
    tokio::spawn(async move {
        let mut last = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let now = Instant::now();
            clock.advance(now - last);
            last = now;
        }
    });
}

/// `reply` to command 1, as the engine stream carries it.
fn reply(reply: EngineReply) -> EngineOutput {
    EngineOutput::Reply {
        command: crate::engine::CommandId(1),
        reply,
    }
}

/// Records commands and shutdowns; answers `ResolveProviderLabel` with
/// `openai/-` (what a llama.cpp server lists) at once, on the engine stream.
struct LabelExecutor(Mutex<Vec<EngineCommand>>, AtomicUsize, EngineTx);

impl LabelExecutor {
    fn new(engine: EngineTx) -> Self {
        Self(Mutex::default(), AtomicUsize::default(), engine)
    }
}

impl Executor for LabelExecutor {
    fn submit(&self, command: EngineCommand) {
        if command == EngineCommand::ResolveProviderLabel {
            let label = EngineReply::ProviderLabel("openai/-".into());
            self.2.unbounded_send(reply(label)).unwrap();
        }
        self.0.lock().unwrap().push(command);
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {})
    }
}

struct NoHost;

impl<B: Backend> Host<B> for NoHost {
    fn open_editor(&mut self, _: &mut Terminal<B>, _: &Path) -> std::io::Result<()> {
        Err(std::io::Error::other("no editor in tests"))
    }
}

/// Runs the loop for a moment (then Ctrl+C twice) with `label`; the commands
/// executed and the status bar of the last frame.
async fn run_with(label: &str) -> (Vec<EngineCommand>, String) {
    let (commands_tx, commands) = tokio::sync::mpsc::unbounded_channel();
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let (engine_tx, engine) = engine();
    let mut app = test_app(commands_tx, label);
    let ctrl_c = || {
        Ok(TermEvent::Key(KeyEvent::new(
            KeyCode::Char('c'),
            KeyModifiers::CONTROL,
        )))
    };
    let input = futures::stream::once(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        ctrl_c()
    })
    .chain(futures::stream::iter([ctrl_c()]))
    .boxed();
    let channels = Channels {
        commands,
        engine: Some(engine),
        events_tx,
        events,
        registry: None,
        reloads: None,
    };
    let executor = LabelExecutor::new(engine_tx);
    let mut terminal = Terminal::new(TestBackend::new(100, 20)).unwrap();
    run_app(
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
        executor.1.load(Ordering::SeqCst),
        1,
        "quitting ends the engine's turns once"
    );
    let buffer = terminal.backend().buffer();
    let status: String = (0..buffer.area.width)
        .map(|x| buffer[(x, buffer.area.height - 1)].symbol().to_string())
        .collect();
    let executed = executor.0.lock().unwrap().clone();
    (executed, status)
}

/// The loop's sources besides input, as a test scripts them.
struct Sources {
    commands: tokio::sync::mpsc::UnboundedReceiver<EngineCommand>,
    engine_tx: EngineTx,
    engine: EngineOutputs,
    events_tx: UnboundedSender<AppEvent>,
    events: tokio::sync::mpsc::UnboundedReceiver<AppEvent>,
}

impl Sources {
    /// Fresh channels; the `App`'s command sender.
    fn new() -> (Self, UnboundedSender<EngineCommand>) {
        let (commands_tx, commands) = tokio::sync::mpsc::unbounded_channel();
        let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
        let (engine_tx, engine) = engine();
        let sources = Sources {
            commands,
            engine_tx,
            engine,
            events_tx,
            events,
        };
        (sources, commands_tx)
    }
}

/// Runs `app` over `input` in a 100×20 [`Recording`] terminal with a
/// [`LabelExecutor`] until the input ends; returns every flushed frame.
async fn run_recorded(
    app: &mut App,
    input: impl futures::Stream<Item = io::Result<TermEvent>> + Unpin,
    sources: Sources,
) -> Vec<(Instant, String)> {
    let executor = LabelExecutor::new(sources.engine_tx);
    let channels = Channels {
        commands: sources.commands,
        engine: Some(sources.engine),
        events_tx: sources.events_tx,
        events: sources.events,
        registry: None,
        reloads: None,
    };
    let backend = Recording {
        inner: TestBackend::new(100, 20),
        frames: Vec::new(),
    };
    let mut terminal = Terminal::new(backend).unwrap();
    run_app(&mut terminal, app, input, channels, &executor, &mut NoHost)
        .await
        .unwrap();
    std::mem::take(&mut terminal.backend_mut().frames)
}

/// A `TestBackend` that records every frame it flushes: when (the paused test
/// clock) and the screen's text.
struct Recording {
    inner: TestBackend,
    frames: Vec<(Instant, String)>,
}

impl Backend for Recording {
    type Error = <TestBackend as Backend>::Error;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a ratatui::buffer::Cell)>,
    {
        self.inner.draw(content)
    }

    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> Result<ratatui::layout::Position, Self::Error> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<ratatui::layout::Position>>(
        &mut self,
        position: P,
    ) -> Result<(), Self::Error> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> Result<(), Self::Error> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ratatui::backend::ClearType) -> Result<(), Self::Error> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> Result<ratatui::layout::Size, Self::Error> {
        self.inner.size()
    }

    fn window_size(&mut self) -> Result<ratatui::backend::WindowSize, Self::Error> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        let buffer = self.inner.buffer();
        let text = buffer.content().iter().map(|c| c.symbol()).collect();
        self.frames.push((Instant::now(), text));
        self.inner.flush()
    }
}

fn test_app(commands_tx: UnboundedSender<EngineCommand>, label: &str) -> App {
    App::new(
        AppOptions {
            theme: Theme::builtin_dark(true),
            theme_source: None,
            keymap: Keymap::defaults(),
            clock: Clock::manual("2025-03-01T12:00:00Z".parse().unwrap()),
            provider_label: Ok(label.to_string()),
            registry: Arc::new(Registry::default()),
            agent: None,
            open_session: None,
            continue_last: false,
        },
        commands_tx,
    )
}

/// While replies stream in every 2 ms (each one a redraw, so frames run at the
/// cap), three keys typed at once 201 ms in are drawn in the frame drawn at that
/// instant — not at the next frame slot — and together (applied before one draw);
/// frames without input stay spaced by the cap.
#[tokio::test(start_paused = true)]
async fn typed_keys_are_drawn_at_once_while_a_stream_is_capped() {
    let t0 = Instant::now();
    let (sources, commands_tx) = Sources::new();
    let mut app = test_app(commands_tx, "anthropic/claude-sonnet-4-5");
    let stream_tx = sources.engine_tx.clone();
    tokio::spawn(async move {
        for i in 0..200u64 {
            tokio::time::sleep_until(t0 + Duration::from_millis(10 + 2 * i)).await;
            let label = EngineReply::ProviderLabel("anthropic/claude-sonnet-4-5".into());
            if stream_tx.unbounded_send(reply(label)).is_err() {
                return;
            }
        }
    });
    let key_at = t0 + Duration::from_millis(201);
    let (keys_tx, input) = futures::channel::mpsc::unbounded();
    tokio::spawn(async move {
        tokio::time::sleep_until(key_at).await;
        for c in ['z', 'q', 'x'] {
            let key = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
            keys_tx.unbounded_send(Ok(TermEvent::Key(key))).unwrap();
        }
        tokio::time::sleep_until(t0 + Duration::from_millis(500)).await;
        drop(keys_tx); // input ends: the loop returns
    });
    let frames = &run_recorded(&mut app, input, sources).await;
    let first = frames
        .iter()
        .find(|(_, text)| text.contains("zq"))
        .expect("the typed keys are drawn");
    assert_eq!(first.0, key_at, "drawn when typed, not at the next slot");
    assert!(first.1.contains("zqx"), "all three keys in one frame");
    let stream_only: Vec<Instant> = frames
        .iter()
        .filter(|(at, _)| *at > t0 + Duration::from_millis(20) && *at != key_at)
        .map(|(at, _)| *at)
        .collect();
    assert!(stream_only.len() > 10, "{} frames", stream_only.len());
    for pair in stream_only.windows(2) {
        assert!(
            pair[1] - pair[0] >= MIN_FRAME_INTERVAL - Duration::from_millis(1),
            "stream frames stay capped: {:?}",
            pair[1] - pair[0]
        );
    }
}

/// Issue 23 item 14 ("a status note that stayed 20 s"): a note set while no key
/// comes leaves the screen when it expires — the loop's tick wakes and redraws
/// without any input.
#[tokio::test(start_paused = true)]
async fn a_note_leaves_the_screen_when_it_expires_with_no_input() {
    let t0 = Instant::now();
    let (sources, commands_tx) = Sources::new();
    let mut app = test_app(commands_tx, "anthropic/claude-sonnet-4-5");
    follow_paused_clock(&app);
    let note_tx = sources.events_tx.clone();
    tokio::spawn(async move {
        tokio::time::sleep_until(t0 + Duration::from_millis(100)).await;
        let changed = AppEvent::Reload(crate::agent::reload::ReloadEvent::ConfigChanged);
        note_tx.send(changed).unwrap();
    });
    let (keys_tx, input) = futures::channel::mpsc::unbounded::<io::Result<TermEvent>>();
    tokio::spawn(async move {
        tokio::time::sleep_until(t0 + Duration::from_secs(10)).await;
        drop(keys_tx); // input ends: the loop returns
    });
    let frames = &run_recorded(&mut app, input, sources).await;
    let shown = |text: &String| text.contains("config changed");
    let first = frames.iter().position(|(_, t)| shown(t)).expect("shown");
    let gone = frames[first..]
        .iter()
        .find(|(_, t)| !shown(t))
        .expect("a frame without the note");
    let after = gone.0 - t0;
    assert!(
        after >= Duration::from_millis(4_100) && after <= Duration::from_millis(4_300),
        "redrawn without the note {after:?} in"
    );
}

#[tokio::test(start_paused = true)]
async fn a_label_without_a_model_is_resolved_at_start_and_shown() {
    let (executed, status) = run_with("openai").await;
    assert_eq!(
        executed,
        [
            EngineCommand::ResolveProviderLabel,
            EngineCommand::ListSessions
        ]
    );
    assert!(status.starts_with(" openai/- "), "{status}");
    assert!(!status.contains("default model"), "{status}");
}

#[tokio::test(start_paused = true)]
async fn a_label_with_a_model_is_not_resolved_again() {
    let (executed, status) = run_with("anthropic/claude-sonnet-4-5").await;
    assert_eq!(executed, [EngineCommand::ListSessions]);
    assert!(
        status.starts_with(" anthropic/claude-sonnet-4-5 "),
        "{status}"
    );
}

/// Issue 36: the engine's stream is one source applied in its order. A turn's
/// deltas queued before its `TurnFinished` land before it: the partial answer, then
/// the cancel notice, and no reply left streaming below it (applied the other way
/// round, the deltas would open a new stream after the notice). A new root's
/// `session:start`, queued before its `SessionCreated`, does not adopt it: the reply
/// to the prompt typed does, and the thread's header has the agent the start named.
#[tokio::test(start_paused = true)]
async fn replies_and_events_are_applied_in_stream_order() {
    use crate::engine::TurnOutcome;
    use crate::session::protocol::DeltaKind;
    use crate::session::{EngineEvent, Event, SessionStatus};
    use crate::tui::state::cells::CellKind;

    const ROOT: &str = "5f0e1c2a-1111-4222-8333-444455556666";
    let (sources, commands_tx) = Sources::new();
    let mut app = test_app(commands_tx, "anthropic/claude-sonnet-4-5");
    let event = |msg| EngineOutput::Event(Arc::new(Event::new(ROOT, None, msg)));
    let cancelled = TurnOutcome {
        session_id: ROOT.into(),
        agent: "zen-architect".into(),
        status: SessionStatus::Cancelled,
        response: "partial answer".into(),
        turn_count: 1,
        error: None,
    };
    for output in [
        event(crate::tui::testing::start("zen-architect")),
        reply(EngineReply::SessionCreated {
            session_id: ROOT.into(),
        }),
        event(EngineEvent::status(SessionStatus::Running)),
        event(EngineEvent::delta(DeltaKind::Text, "partial ")),
        event(EngineEvent::delta(DeltaKind::Text, "answer")),
        reply(EngineReply::TurnFinished(cancelled)),
    ] {
        sources.engine_tx.unbounded_send(output).unwrap();
    }
    // The prompt that starts the root is typed first (input goes before the stream).
    let (keys_tx, input) = futures::channel::mpsc::unbounded::<io::Result<TermEvent>>();
    for code in [KeyCode::Char('h'), KeyCode::Char('i'), KeyCode::Enter] {
        let key = KeyEvent::new(code, KeyModifiers::NONE);
        keys_tx.unbounded_send(Ok(TermEvent::Key(key))).unwrap();
    }
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(keys_tx); // input ends: the loop returns
    });
    let frames = run_recorded(&mut app, input, sources).await;

    let thread = app.thread().unwrap();
    assert_eq!(thread.session_id.as_deref(), Some(ROOT));
    assert_eq!(thread.agent.as_deref(), Some("zen-architect"));
    assert!(!thread.awaiting_root);
    assert!(thread.streaming().is_none(), "no reply left streaming");
    assert!(!thread.turn_in_flight);
    let kinds: Vec<&CellKind> = thread.cells.iter().map(|c| &c.kind).collect();
    assert!(
        matches!(
            kinds[..],
            [.., CellKind::Assistant(a), CellKind::Notice(n)]
                if &**a == "partial answer" && &**n == "turn cancelled"
        ),
        "{kinds:?}"
    );
    let (_, last) = frames.last().unwrap();
    let (answer, notice) = (last.find("partial answer"), last.find("turn cancelled"));
    assert!(answer.is_some() && answer < notice, "{last}");
}

/// Issue 39 item 7: while a child streams (an engine event every 20 ms, faster than
/// the 100 ms animation tick), a status note still leaves the screen when it
/// expires: the loop keeps its tick deadline across waits and hands a due tick over
/// before anything queued.
#[tokio::test(start_paused = true)]
async fn a_note_expires_while_children_stream() {
    use crate::session::protocol::DeltaKind;
    use crate::session::{EngineEvent, Event, SessionStatus};
    const ROOT: &str = "5f0e1c2a-1111-4222-8333-444455556666";
    const CHILD: &str = "5f0e1c2a-1111-4222-8333-444455556666_explorer-1";
    let t0 = Instant::now();
    let (sources, commands_tx) = Sources::new();
    let mut app = test_app(commands_tx, "anthropic/claude-sonnet-4-5");
    follow_paused_clock(&app);
    let engine_tx = sources.engine_tx.clone();
    tokio::spawn(async move {
        let event = |msg| EngineOutput::Event(Arc::new(Event::new(CHILD, Some(ROOT), msg)));
        engine_tx
            .unbounded_send(event(crate::tui::testing::start("explorer")))
            .unwrap();
        engine_tx
            .unbounded_send(event(EngineEvent::status(SessionStatus::Running)))
            .unwrap();
        while Instant::now() < t0 + Duration::from_secs(9) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let delta = event(EngineEvent::delta(DeltaKind::Text, "more "));
            if engine_tx.unbounded_send(delta).is_err() {
                return;
            }
        }
    });
    let note_tx = sources.events_tx.clone();
    tokio::spawn(async move {
        tokio::time::sleep_until(t0 + Duration::from_millis(100)).await;
        let changed = AppEvent::Reload(crate::agent::reload::ReloadEvent::ConfigChanged);
        note_tx.send(changed).unwrap();
    });
    let (keys_tx, input) = futures::channel::mpsc::unbounded::<io::Result<TermEvent>>();
    tokio::spawn(async move {
        tokio::time::sleep_until(t0 + Duration::from_secs(10)).await;
        drop(keys_tx);
    });
    let frames = &run_recorded(&mut app, input, sources).await;
    let shown = |text: &String| text.contains("config changed");
    let first = frames.iter().position(|(_, t)| shown(t)).expect("shown");
    let gone = frames[first..]
        .iter()
        .find(|(_, t)| !shown(t))
        .expect("a frame without the note");
    let after = gone.0 - t0;
    assert!(
        after >= Duration::from_millis(4_100) && after <= Duration::from_millis(4_400),
        "redrawn without the note {after:?} in"
    );
}

/// A running child with nothing streaming keeps the spinner turning: each tick
/// schedules the next (a tick handed over must not leave the loop with none, which
/// froze the TUI while a local model thought).
#[tokio::test(start_paused = true)]
async fn ticks_go_on_while_a_session_runs_silently() {
    use crate::session::{EngineEvent, Event, SessionStatus};
    const ROOT: &str = "5f0e1c2a-1111-4222-8333-444455556666";
    let t0 = Instant::now();
    let (sources, commands_tx) = Sources::new();
    let mut app = test_app(commands_tx, "anthropic/claude-sonnet-4-5");
    follow_paused_clock(&app);
    let event = |msg| EngineOutput::Event(Arc::new(Event::new(ROOT, None, msg)));
    sources
        .engine_tx
        .unbounded_send(event(crate::tui::testing::start("zen-architect")))
        .unwrap();
    sources
        .engine_tx
        .unbounded_send(event(EngineEvent::status(SessionStatus::Running)))
        .unwrap();
    let (keys_tx, input) = futures::channel::mpsc::unbounded::<io::Result<TermEvent>>();
    tokio::spawn(async move {
        tokio::time::sleep_until(t0 + Duration::from_secs(3)).await;
        drop(keys_tx);
    });
    let frames = &run_recorded(&mut app, input, sources).await;
    let late = frames
        .iter()
        .filter(|(at, _)| *at - t0 > Duration::from_secs(1))
        .count();
    assert!(
        late >= 10,
        "only {late} frames in the last 2 s of a running session"
    );
}
