//! The full-screen TUI (SPEC §13): session tree, chat pane, composer, status bar,
//! agent browser and help overlays.
//!
//! Entry point: [`run`]`(engine, options)` (an `Engine::interactive`). `main`/`cli` builds [`TuiOptions`]:
//!
//! ```ignore
//! let options = arbor::tui::TuiOptions {
//!     open_session: cli.resume.clone(),            // --resume ID (id or prefix)
//!     continue_last: cli.continue_,                // --continue
//!     agent: cli.agent.clone(),                    // --agent NAME
//!     theme: cli.theme.clone().or(config.theme.clone()),
//!     provider_label: engine.provider_label().map_err(|e| error::NoProvider(e.to_string())),
//!     registry: watcher.registry.clone(),
//!     reloads: Some(watcher.reloads),              // or None without a watcher
//!     keymap: config.keymap.clone(),
//!     paths: paths.clone(),
//!     no_color: arbor::tui::no_color_from_env(),
//!     notify: config.notify,
//!     mouse: config.mouse_capture(),               // config `mouse:` (default true)
//!     notice: None,                                // e.g. the local server in use
//! };
//! arbor::tui::run(engine, options).await?;
//! ```
//!
//! Architecture (STYLE.md): the [`App`] is the single writer of UI state; inputs are
//! [`AppEvent`]s; requests to the engine leave as [`EngineCommand`]s that the run loop
//! submits through the TUI's engine client (`executor`); the engine's one ordered
//! stream brings back every event and the commands' typed replies, which the `App`
//! takes whole (one dispatcher over events, one over replies). Views (`views/`) are
//! pure. The keymap (`keymap`) and theme (`theme`) are data. Frames are drawn on
//! demand, coalesced and capped at ~60 fps (`frame`). Terminal modes and the panic
//! hook live in `terminal`.
//!
//! Submitting while the open thread's turn is running is refused with a note (the
//! text stays in the composer); Esc cancels the running turn.
//!
//! Does not own: the engine, the store, the registry or the watcher — it consumes
//! them (the store only through the engine's replies). It never prints to
//! stdout/stderr; logging goes through `tracing`.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod action;
pub mod app;
pub mod app_event;
pub mod clock;
pub mod composer;
pub mod error;
pub mod executor;
pub mod frame;
pub mod host;
mod key;
pub mod keymap;
pub mod markdown;
pub mod notify;
pub mod runloop;
pub mod state;
pub mod term_write;
pub mod terminal;
#[doc(hidden)]
pub mod testing;
pub mod theme;
pub mod views;
pub mod wrap;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

pub use app::{App, AppOptions, Focus, Overlay};
pub use app_event::{AppEvent, EngineCommand, EngineReply, KeyOutcome, UiAction};
pub use terminal::install_panic_hook;

use crate::agent::registry::RegistryHandle;
use crate::agent::reload::ReloadEvent;
use crate::paths::Paths;
use state::trust::TrustPrompt;

/// Everything [`run`] needs besides the runtime.
pub struct TuiOptions {
    /// `--resume ID`: open this session (full id or unambiguous prefix) at start.
    pub open_session: Option<String>,
    /// `--continue`: open the most recent root session of this project.
    pub continue_last: bool,
    /// `--agent NAME`: the agent of new root sessions (bundle root agent when `None`).
    pub agent: Option<String>,
    /// Theme name (`--theme`, else config `theme:`); `dark` when `None`.
    pub theme: Option<String>,
    /// `Ok("provider/model")` for the status bar, or `Err(no-provider text)` (the
    /// `EngineError::NoProvider` message) shown in a warning banner.
    pub provider_label: Result<String, error::NoProvider>,
    /// The live registry (the watcher updates it).
    pub registry: RegistryHandle,
    /// Watcher events (bundle/config/theme changes); `None` without a watcher.
    pub reloads: Option<mpsc::UnboundedReceiver<ReloadEvent>>,
    /// Config `keymap:` overrides (see [`keymap`]).
    pub keymap: Map<String, Value>,
    /// For `themes_dir` (user themes).
    pub paths: Paths,
    /// Drop colours (`NO_COLOR`); see [`no_color_from_env`].
    pub no_color: bool,
    /// Config `notify:`: how a session that starts needing the person is announced
    /// while another thread is open (bell, OSC 9, off).
    pub notify: crate::config::Notify,
    /// Config `mouse:`: capture the mouse at start (`true`, the default) or leave it
    /// to the terminal's own selection (`false`; `global.mouse` toggles it).
    pub mouse: bool,
    /// A start-up notice for the status bar (e.g. which local server is used).
    pub notice: Option<String>,
}

/// Why the TUI could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error(transparent)]
    Keymap(#[from] keymap::KeymapError),
    #[error(transparent)]
    Theme(#[from] theme::ThemeError),
    #[error("terminal: {0}")]
    Io(#[from] std::io::Error),
    /// `--resume ID` names no session of this project (the engine's sentence, as
    /// `arbor session show` says it).
    #[error(transparent)]
    Resume(crate::engine::EngineError),
}

/// Whether `NO_COLOR` is set to a non-empty value (no-color.org).
pub fn no_color_from_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Runs the TUI until the user quits (Ctrl+C twice) or a signal (`SIGINT`, `SIGQUIT`,
/// `SIGTERM`, `SIGHUP`) arrives. The terminal is restored on return, on error, on a
/// panic of the run loop and on every one of those signals.
///
/// Errors: a keymap conflict or unknown theme (before the terminal is touched), or a
/// terminal I/O error.
pub async fn run(engine: crate::engine::Engine, options: TuiOptions) -> Result<(), TuiError> {
    let keymap = keymap::Keymap::with_overrides(&options.keymap)?;
    let theme = theme::Theme::load(
        options.theme.as_deref(),
        &options.paths.themes_dir,
        options.no_color,
    )?;
    // `--resume ID`: the id or prefix a person typed becomes a session id, or the TUI
    // does not start and says why, as the CLI does.
    let open_session = match options.open_session {
        Some(typed) => {
            let query = crate::session::EngineQuery::ResolveSession { id: typed };
            match engine.ask(query).await {
                crate::engine::QueryReply::ResolveSession(Ok(id)) => Some(id.to_string()),
                crate::engine::QueryReply::ResolveSession(Err(e)) => {
                    return Err(TuiError::Resume(e));
                }
                _ => None,
            }
        }
        None => None,
    };
    // The one handle the TUI drives the engine through: commands in (`executor`),
    // their replies and every session's events out, in order, on one stream.
    let (executor, stream) = executor::RuntimeExecutor::connect(&engine);
    let (commands_tx, commands) = mpsc::unbounded_channel();
    let (events_tx, events) = mpsc::unbounded_channel();
    let mut registry = options.registry;
    let registry_now = registry.borrow_and_update().clone();
    let mut app = App::new(
        AppOptions {
            theme,
            theme_source: Some(app::ThemeSource {
                name: options.theme.clone(),
                dir: options.paths.themes_dir.clone(),
                no_color: options.no_color,
            }),
            keymap,
            clock: clock::Clock::system(),
            provider_label: options.provider_label,
            registry: registry_now,
            agent: options.agent,
            open_session,
            continue_last: options.continue_last,
        },
        commands_tx,
    );
    app.set_notify(options.notify);
    app.set_project_root(options.paths.cwd.clone());
    app.set_config_file(options.paths.config_file.clone());
    app.set_history(state::history::History::load(options.paths.history_file()));
    app.set_seen_store(state::seen::SeenStore::load(options.paths.seen_file()));
    app.set_mouse_capture(options.mouse);
    if let Some(text) = options.notice {
        app.notice(text);
    }
    // SPEC §12: a project with `.amplifier/agents/` or `.mcp.json` that is not trusted
    // yet is asked about once at start; any other directory never is.
    if let Some(project) = crate::config::trust::untrusted_project(&options.paths) {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        app.ask_trust(TrustPrompt::new(
            project,
            options.paths.trust_file(),
            home.as_deref(),
        ));
    }
    listen_for_signals(events_tx.clone());
    let channels = runloop::Channels {
        commands,
        engine: Some(runloop::engine_outputs(stream)),
        events_tx,
        events,
        registry: Some(registry),
        reloads: options.reloads,
    };
    install_panic_hook();
    let mut tui = terminal::setup()?;
    let input = host::PausableInput::new();
    let mut host = input.host();
    let result = runloop::run_app(&mut tui, &mut app, input, channels, &executor, &mut host).await;
    let restored = terminal::restore();
    result?;
    restored.map_err(TuiError::Io)
}

/// How long the run loop has to end after a signal before the terminal is restored
/// from the signal task and the process exits.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// `SIGINT`, `SIGQUIT`, `SIGTERM` and `SIGHUP` end the TUI with the terminal restored.
/// (In raw mode Ctrl+C and Ctrl+\ arrive as keys; these come from `kill` or a closed
/// terminal.) The first one asks the run loop to shut down ([`AppEvent::Shutdown`]),
/// which restores the terminal as it returns; a second one, or no shutdown within
/// [`SHUTDOWN_GRACE`], restores it from here and exits with 128 + the signal number.
///
/// The handlers are registered before this returns (so before the terminal is taken);
/// one that cannot be registered is logged and the others still work.
fn listen_for_signals(tx: mpsc::UnboundedSender<AppEvent>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        let register = |kind: SignalKind, number: i32| match signal(kind) {
            Ok(stream) => Some((stream, number)),
            Err(e) => {
                tracing::warn!("cannot listen for signal {number}: {e}");
                None
            }
        };
        let mut signals: Vec<(Signal, i32)> = [
            (SignalKind::interrupt(), 2),
            (SignalKind::quit(), 3),
            (SignalKind::terminate(), 15),
            (SignalKind::hangup(), 1),
        ]
        .into_iter()
        .filter_map(|(kind, number)| register(kind, number))
        .collect();
        tokio::spawn(async move {
            let Some(first) = next_signal(&mut signals).await else {
                return;
            };
            tracing::info!("signal {first}: shutting down");
            let _ = tx.send(AppEvent::Shutdown);
            let number = tokio::select! {
                second = next_signal(&mut signals) => second.unwrap_or(first),
                () = tokio::time::sleep(SHUTDOWN_GRACE) => first,
            };
            let _ = terminal::restore();
            std::process::exit(128 + number);
        });
    }
    #[cfg(not(unix))]
    drop(tx);
}

/// The number of the next signal any of `signals` receives (`None` if all closed).
#[cfg(unix)]
async fn next_signal(signals: &mut [(tokio::signal::unix::Signal, i32)]) -> Option<i32> {
    use futures::future::select_all;
    if signals.is_empty() {
        return None;
    }
    let waits = signals
        .iter_mut()
        .map(|(stream, number)| {
            let number = *number;
            Box::pin(async move { stream.recv().await.map(|()| number) })
        })
        .collect::<Vec<_>>();
    select_all(waits).await.0
}
