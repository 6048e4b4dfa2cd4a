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
    // The app's next tick, kept across waits: a stream of engine events never pushes
    // it later, and a due tick is handed over before anything queued (notes expire,
    // spinners turn while children stream).
    let mut tick_at: Option<Instant> = None;
    loop {
        while let Ok(command) = channels.commands.try_recv() {
            executor.submit(command);
        }
        let now = Instant::now();
        tick_at = match (tick_at, app.next_tick().map(|d| now + d)) {
            (Some(kept), Some(wanted)) => Some(kept.min(wanted)),
            (_, wanted) => wanted,
        };
        if tick_at.is_some_and(|t| t <= now) {
            app.handle(AppEvent::Tick);
            // The next one, as the app now wants it (a spinner: 100 ms on).
            tick_at = app.next_tick().map(|d| now + d);
        }
        if app.should_quit() {
            executor.shutdown().await;
            return Ok(());
        }
        serve_requests(terminal, app, host, &channels.events_tx);
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
            draw(terminal, app)?;
            frames.drawn(Instant::now());
            input_seen = false;
        }
        let woke = wait(app, &mut input, &mut channels, (frames.deadline(), tick_at)).await;
        if let Some(ready) = woke
            && let Some(end) = apply(app, ready, &mut input_seen)
        {
            executor.shutdown().await;
            return end;
        }
    }
}

/// Hands the `App`'s requests to the outside: earlier parts to lay out off the UI
/// thread (their cells come back on `events`), `$EDITOR` to run, notifications and
/// other writes to the terminal (their failures logged).
fn serve_requests<B: Backend, H: Host<B>>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    host: &mut H,
    events: &UnboundedSender<AppEvent>,
) {
    for layout in app.take_layouts() {
        spawn_layout(layout, events.clone());
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
}

/// Draws one frame of `app`.
///
/// Errors: the terminal's.
fn draw<B: Backend>(terminal: &mut Terminal<B>, app: &mut App) -> Result<(), TuiError> {
    terminal
        .draw(|f| {
            app.layout(f.area());
            app.draw(f);
        })
        .map_err(|e| TuiError::Io(io::Error::other(e.to_string())))?;
    Ok(())
}

/// Waits for the first of: the next frame's deadline (`frame_at`), the TUI's own
/// events, input, the engine's stream, the registry, the watcher and the app's next
/// tick (`tick_at`, kept by the loop, which hands a due tick over at its top) — in
/// that order when several are ready. What the loop applies comes back
/// ([`Ready`]); the registry and the watcher are handed to `app` here, and a
/// source that ended is dropped from `channels`.
async fn wait<S>(
    app: &mut App,
    input: &mut S,
    channels: &mut Channels,
    (frame_at, tick_at): (Option<Instant>, Option<Instant>),
) -> Option<Ready>
where
    S: Stream<Item = io::Result<TermEvent>> + Unpin,
{
    tokio::select! {
        biased;
        () = sleep_opt(frame_at) => None,
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
        // The loop hands a due tick over at its top.
        () = sleep_opt(tick_at) => None,
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
mod tests;
