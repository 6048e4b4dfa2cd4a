//! The event loop: one task that feeds the `App` from every source (terminal input,
//! the engine's ordered stream, the TUI's own events, registry and watcher channels,
//! ticks), submits the `App`'s engine commands through an [`Executor`], lays out what
//! the `App` asks for off the UI thread, and draws frames on demand.
//!
//! The engine is one source: its stream carries every event and every reply of the
//! TUI's commands in the order they happened (a new root's `session:start` before its
//! `SessionCreated`, a turn's deltas before its `TurnFinished`), and the loop applies
//! them in that order.
//!
//! Everything already queued — the TUI's own events, terminal input, the engine's
//! stream — is applied before a frame is drawn, and then one frame shows it all. A
//! frame that shows input is drawn at once; the frame cap ([`MIN_FRAME_INTERVAL`]) only
//! spaces out frames that show nothing but engine progress (a streaming reply), so a
//! key press never waits for the next frame slot or behind a backlog of deltas.
//!
//! Generic over the backend, the input stream and the engine's stream so tests drive
//! it with a `TestBackend` and scripted items. Owns: the select loop and its
//! priorities. Does not own: terminal modes (`terminal`), the engine connection
//! (`executor`).

use std::io;
use std::path::Path;
use std::task::Poll;

use crossterm::event::Event as TermEvent;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;

use super::TuiError;
use super::app::App;
use super::app_event::{AppEvent, EngineCommand};
use super::frame::{FrameScheduler, MIN_FRAME_INTERVAL};
use super::notify::Notification;
use super::term_write::TerminalWrite;
use crate::agent::registry::RegistryHandle;
use crate::agent::reload::ReloadEvent;
use crate::engine::{EngineOutput, EngineStream};
use crate::tui::state::thread_earlier::EarlierLayout;

/// Hands the `App`'s commands to the engine. Their replies come back on the engine
/// stream the run loop reads ([`Channels::engine`]), in order with the events.
pub trait Executor {
    /// Starts `command`; must not block.
    fn submit(&self, command: EngineCommand);

    /// Ends the engine's work before the TUI exits: the run loop awaits it once when
    /// the app quits or input ends, so every running turn (sub-sessions included)
    /// can save its partial output. Nothing by default.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Things only the real terminal can do.
pub trait Host<B: Backend> {
    /// Suspends the TUI, runs `$EDITOR` on `path`, restores the TUI.
    ///
    /// Errors: why the editor could not run (shown as a note).
    fn open_editor(&mut self, terminal: &mut Terminal<B>, path: &Path) -> std::io::Result<()>;

    /// Writes `notification` (a bell or an OSC 9 notification: a session started
    /// needing the person) to the terminal. Nothing by default (test backends have no
    /// terminal to ring).
    ///
    /// Errors: the terminal's write error (logged by the loop; nothing else happens).
    fn notify(
        &mut self,
        terminal: &mut Terminal<B>,
        notification: &Notification,
    ) -> io::Result<()> {
        let _ = (terminal, notification);
        Ok(())
    }

    /// Writes `write` (a copy to the clipboard with OSC 52, a mouse-capture change)
    /// to the terminal. Nothing by default (test backends have no terminal).
    ///
    /// Errors: the terminal's write error (logged by the loop; nothing else happens).
    fn write_terminal(
        &mut self,
        terminal: &mut Terminal<B>,
        write: &TerminalWrite,
    ) -> io::Result<()> {
        let _ = (terminal, write);
        Ok(())
    }
}

/// [`Host::write_terminal`] for a crossterm terminal over any writer: the bytes go to
/// the terminal's writer between frames, flushed.
///
/// Errors: the writer's.
pub fn write_crossterm<W: io::Write>(
    terminal: &mut Terminal<ratatui::backend::CrosstermBackend<W>>,
    write: &TerminalWrite,
) -> io::Result<()> {
    write.write_to(terminal.backend_mut())
}

/// [`Host::notify`] for a crossterm terminal over any writer: the notification's bytes
/// go to the terminal's writer between frames, flushed.
///
/// Errors: the writer's.
pub fn notify_crossterm<W: io::Write>(
    terminal: &mut Terminal<ratatui::backend::CrosstermBackend<W>>,
    notification: &Notification,
) -> io::Result<()> {
    notification.write_to(terminal.backend_mut())
}

/// The engine's ordered stream as the loop reads it (see [`engine_outputs`]; tests
/// script one).
pub type EngineOutputs = BoxStream<'static, EngineOutput>;

/// `stream` as the loop reads it.
pub fn engine_outputs(stream: EngineStream) -> EngineOutputs {
    futures::stream::unfold(stream, |mut stream| async move {
        stream.next().await.map(|output| (output, stream))
    })
    .boxed()
}

/// Every channel the loop reads besides terminal input. `None` sources are skipped.
pub struct Channels {
    /// Engine commands from the `App` (its sender was given to `App::new`).
    pub commands: UnboundedReceiver<EngineCommand>,
    /// The engine's stream: every event and the replies of the commands the
    /// executor submitted, in the order they happened.
    pub engine: Option<EngineOutputs>,
    /// The TUI's own events: signals and laid-out earlier parts (the loop hands
    /// `events_tx` clones to that work).
    pub events_tx: UnboundedSender<AppEvent>,
    pub events: UnboundedReceiver<AppEvent>,
    /// The live registry.
    pub registry: Option<RegistryHandle>,
    /// Watcher events (bundle, config, themes).
    pub reloads: Option<UnboundedReceiver<ReloadEvent>>,
}

async fn recv_opt<T>(rx: &mut Option<UnboundedReceiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The engine stream's next item; `None` once it ended (then pending forever).
async fn next_output(engine: &mut Option<EngineOutputs>) -> Option<EngineOutput> {
    match engine {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}

async fn registry_changed(rx: &mut Option<RegistryHandle>) -> bool {
    match rx {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

async fn sleep_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Runs until the app quits or `input` ends, then awaits [`Executor::shutdown`] (every
/// running turn ends and saves what it streamed). At start, when the status-bar label has
/// no model, [`EngineCommand::ResolveProviderLabel`] is submitted first (the answer
/// arrives on the engine stream).
///
/// Priorities: a due frame is drawn first (so streaming never starves drawing); then
/// (biased) the next frame's deadline, the TUI's own events (a signal), then input,
/// then the engine's stream, registry and watcher, then ticks. Everything already
/// queued (own events, input, the engine's stream) is applied before the next frame
/// is drawn. A frame after input is due at once; other frames wait for the cap.
///
/// Errors: terminal I/O failures (reading input or drawing).
pub async fn run_app<B, S, X, H>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    mut input: S,
    mut channels: Channels,
    executor: &X,
    host: &mut H,
) -> Result<(), TuiError>
where
    B: Backend,
    S: Stream<Item = io::Result<TermEvent>> + Unpin,
    X: Executor,
    H: Host<B>,
{
    let mut frames = FrameScheduler::new(MIN_FRAME_INTERVAL);
    frames.request(Instant::now());
    // Input was applied since the last frame: the next frame is due at once.
    let mut input_seen = false;
    if app.wants_provider_label() {
        executor.submit(EngineCommand::ResolveProviderLabel);
    }
    // Events applied since the last chance to draw (bounded by `QUEUE_LIMIT`); starts
    // at the limit so the first frame is drawn before anything queued is applied.
    let mut applied = QUEUE_LIMIT;
    loop {
        while let Ok(command) = channels.commands.try_recv() {
            executor.submit(command);
        }
        if app.should_quit() {
            executor.shutdown().await;
            return Ok(());
        }
        for layout in app.take_layouts() {
            spawn_layout(layout, channels.events_tx.clone());
        }
        if let Some(path) = app.take_editor_request() {
            let result = host.open_editor(terminal, &path);
            app.handle(AppEvent::EditorFinished {
                path,
                result: result.map_err(Into::into),
            });
        }
        if let Some(notification) = app.take_notification()
            && let Err(e) = host.notify(terminal, &notification)
        {
            tracing::warn!("cannot notify the terminal: {e}");
        }
        for write in app.take_terminal_writes() {
            if let Err(e) = host.write_terminal(terminal, &write) {
                tracing::warn!("cannot write to the terminal: {e}");
            }
        }
        if app.take_redraw() {
            if input_seen {
                frames.request_now(Instant::now());
            } else {
                frames.request(Instant::now());
            }
        }
        // What is already queued is applied before drawing (each event still passes
        // the steps above: its commands run, a quit or an editor request is seen).
        if applied < QUEUE_LIMIT
            && let Some(ready) = next_ready(&mut input, &mut channels).await
        {
            applied += 1;
            if let Some(end) = apply(app, ready, &mut input_seen) {
                executor.shutdown().await;
                return end;
            }
            continue;
        }
        applied = 0;
        // A due frame is drawn before waiting: a busy runtime never parks, so a timer
        // alone could starve drawing while events stream in.
        if frames.deadline().is_some_and(|d| d <= Instant::now()) {
            terminal
                .draw(|f| {
                    app.layout(f.area());
                    app.draw(f);
                })
                .map_err(|e| TuiError::Io(io::Error::other(e.to_string())))?;
            frames.drawn(Instant::now());
            input_seen = false;
        }
        let tick_at = app.next_tick().map(|d| Instant::now() + d);
        let woke = tokio::select! {
            biased;
            () = sleep_opt(frames.deadline()) => None,
            Some(ev) = channels.events.recv() => Some(Ready::Own(ev)),
            ev = input.next() => Some(Ready::Input(ev)),
            output = next_output(&mut channels.engine) => match output {
                Some(output) => Some(Ready::Engine(output)),
                None => {
                    channels.engine = None;
                    None
                }
            },
            changed = registry_changed(&mut channels.registry) => {
                match (changed, &mut channels.registry) {
                    (true, Some(rx)) => {
                        let reg = rx.borrow_and_update().clone();
                        app.handle(AppEvent::RegistryReloaded(reg));
                    }
                    _ => channels.registry = None,
                }
                None
            }
            Some(ev) = recv_opt(&mut channels.reloads) => {
                app.handle(AppEvent::Reload(ev));
                None
            }
            () = sleep_opt(tick_at) => {
                app.handle(AppEvent::Tick);
                None
            }
        };
        if let Some(ready) = woke
            && let Some(end) = apply(app, ready, &mut input_seen)
        {
            executor.shutdown().await;
            return end;
        }
    }
}

/// Lays out `layout` on a blocking thread; its [`AppEvent::EarlierLoaded`] comes back
/// on `events` (the loop's own channel), so the UI thread only splices the cells in.
fn spawn_layout(layout: EarlierLayout, events: UnboundedSender<AppEvent>) {
    tokio::task::spawn_blocking(move || {
        // Fails only once the loop is gone: nobody waits for the cells then.
        let _ = events.send(AppEvent::laid_out(layout));
    });
}

/// At most this many queued events are applied in a row without a chance to draw, so
/// a source that never runs dry (a flood of deltas) cannot hold a frame back.
const QUEUE_LIMIT: usize = 4096;

/// An item taken from one of the loop's sources.
enum Ready {
    /// The TUI's own event (a signal, laid-out cells).
    Own(AppEvent),
    /// The input stream's next item (`None`: input ended).
    Input(Option<io::Result<TermEvent>>),
    /// The engine stream's next item.
    Engine(EngineOutput),
}

/// The next item already queued, without waiting, in the select's order: the TUI's
/// own event, then terminal input, then the engine's stream. `None` when nothing is
/// queued.
///
/// Input and the engine's stream are polled with this task's own waker (never a no-op
/// one): crossterm's `EventStream` keeps the waker of the poll that started its
/// wake-up thread, so a foreign waker would leave a later key unnoticed.
async fn next_ready<S>(input: &mut S, channels: &mut Channels) -> Option<Ready>
where
    S: Stream<Item = io::Result<TermEvent>> + Unpin,
{
    if let Ok(ev) = channels.events.try_recv() {
        return Some(Ready::Own(ev));
    }
    if let Poll::Ready(ev) = std::future::poll_fn(|cx| Poll::Ready(input.poll_next_unpin(cx))).await
    {
        return Some(Ready::Input(ev));
    }
    let engine = channels.engine.as_mut()?;
    match std::future::poll_fn(|cx| Poll::Ready(engine.poll_next_unpin(cx))).await {
        Poll::Ready(Some(output)) => Some(Ready::Engine(output)),
        Poll::Ready(None) => {
            channels.engine = None;
            None
        }
        Poll::Pending => None,
    }
}

/// Applies `ready` to the app (`input_seen` set for input); `Some` when input ended
/// (`Ok`) or failed (`Err`) and the loop must end.
fn apply(app: &mut App, ready: Ready, input_seen: &mut bool) -> Option<Result<(), TuiError>> {
    match ready {
        Ready::Own(ev) => app.handle(ev),
        Ready::Input(Some(Ok(ev))) => {
            app.handle(AppEvent::Input(ev));
            *input_seen = true;
        }
        Ready::Input(Some(Err(e))) => return Some(Err(TuiError::Io(e))),
        Ready::Input(None) => return Some(Ok(())),
        Ready::Engine(output) => {
            if let Some(ev) = AppEvent::from_engine(output) {
                app.handle(ev);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
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

        fn clear_region(
            &mut self,
            clear_type: ratatui::backend::ClearType,
        ) -> Result<(), Self::Error> {
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
        // The app's clock follows the paused test clock.
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
}
