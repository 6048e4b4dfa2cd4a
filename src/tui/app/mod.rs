//! The `App`: the single writer of UI state. Every input arrives as an [`AppEvent`];
//! every request to the engine leaves as an [`EngineCommand`] on a channel. Drawing
//! (`draw`) lays out the visible window and hands borrowed state to pure views.
//!
//! Owns: focus, the tree, the open thread, the composer pane (`prompt`), the status
//! line, the Ctrl+C window and the messages waiting for running turns, and the
//! **stack** of components over the panes (`stack`): the help, agent browser, MCP,
//! diff and wall overlays, the trust, approval and confirmation (merge, discard,
//! rewind here) prompts and the find bar, one file
//! each under `components/`, each owning its state, keys and drawing. Key routing, the
//! key context (status-bar hints) and drawing walk that one stack, then the panes.
//!
//! Split by responsibility: `input` (keys, mouse, paste, pane actions), `component`
//! (the trait), `stack` (the order and the walk), `components` (the components and what
//! opens them), `panes` (where each part of a frame goes),
//! `engine` (bus events, registry and watcher events), `replies` (the engine's
//! replies), `model` (switching a model), `copy`
//! (OSC 52), `mouse`, `palette` (the composer's popup and slash commands), `history`
//! (prompt history keys), `mentions` (`@file` completion and attachment), `steer`
//! (steer, queue and the waiting messages), `cancel` (Esc's cancel and quitting),
//! `needs_you` (sessions that need the person), `undo` (the answer to a merge,
//! discard or rewind here), `draw` (layout + views). Does not own:
//! executing commands (`executor`), the terminal (`terminal`), the event loop
//! (`runloop`).
//!
//! The composer's popup (slash commands, `/resume`'s sessions, `@` files, the Ctrl+R
//! history search) stays part of the composer pane (`prompt`, `palette`): it is not
//! modal (keys it has no binding for edit the composer), its rows are recomputed from
//! the composer's text after every edit, and it sits below a docked approval prompt in
//! the key order but above the find bar's marks on screen.
//!
//! # Adding an overlay
//!
//! 1. `components/NAME.rs`: a type implementing `component::Component` — `layer`
//!    (`Overlay` for a full overlay), `overlay` (its `Overlay` tag, if tests or the
//!    layout need one), `context` (its keymap context), `handle_key`, `draw`, and as
//!    needed `layout`, `wheel`, `paste` — plus `fn open(cx: &mut Ctx) ->
//!    Option<Box<dyn Component>>`. An engine event or reply it needs reaches it as a
//!    typed call from the `App`'s dispatchers (`state::dispatch`, `replies`). It asks the `App`
//!    for anything else through `Ctx` (`send`, `note`, `emit`, `close`).
//! 2. `components/mod.rs`: `mod NAME;` and its row in `opener` (the actions that open
//!    it; slash commands reach it through the same actions).
//! 3. Keys of its own: its rows in `keymap::actions!` (a new `keymap::Context` if it
//!    has its own section in the help).

mod cancel;
mod chat_pane;
mod component;
mod components;
mod copy;
mod draw;
mod engine;
mod history;
mod input;
mod mentions;
mod model;
mod mouse;
mod needs_you;
mod palette;
mod panes;
mod prompt;
mod replies;
mod stack;
mod steer;
mod undo;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ratatui::layout::Rect;
use tokio::sync::mpsc::UnboundedSender;

use super::app_event::{AppEvent, EngineCommand};
use super::clock::Clock;
use super::error::NoProvider;
use super::keymap::{Action, Keymap};
use super::state::approvals::ApprovalQueue;
use super::state::browser::ReloadMark;
use super::state::diff::DiffState;
use super::state::inflight::InflightStreams;
use super::state::note::Note;
use super::state::pending::PendingPrompts;
use super::state::thread::Thread;
use super::state::thread_earlier::EarlierLayout;
use super::state::tree::SessionTree;
use super::state::trust::TrustPrompt;
use super::theme::{Slot, Theme};
use crate::agent::Registry;
use crate::tui::notify::Notification;
use components::DiffOverlay;
use components::trust::TrustLayer;
use prompt::Prompt;
use stack::Stack;

/// How long a second Ctrl+C quits.
pub const QUIT_WINDOW_MS: i64 = 2_000;
/// How long status-bar notes stay.
const NOTE_MS: i64 = 4_000;

/// Which pane has keyboard focus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Tree,
    Chat,
    Composer,
}

/// Which overlay is open (takes all keys but `global.quit`): the tag the open
/// overlay component reports (`component::Component::overlay`), for tests and the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    None,
    Help,
    Browser,
    /// A session's changes (`state::diff`).
    Diff,
    /// The wall of running sub-sessions (`components::wall`).
    Wall,
    /// The MCP servers of this process, their state and tools.
    Mcp,
    /// Every hook of this process, active or skipped with why (`/hooks`).
    Hooks,
}

/// Where the theme came from, so a theme-file change can reload it.
#[derive(Debug, Clone)]
pub struct ThemeSource {
    pub name: Option<String>,
    pub dir: PathBuf,
    pub no_color: bool,
}

/// What the `App` starts from.
pub struct AppOptions {
    pub theme: Theme,
    /// Reload the theme from here on theme-file changes (`None`: never).
    pub theme_source: Option<ThemeSource>,
    pub keymap: Keymap,
    pub clock: Clock,
    /// `provider/model` for the status bar, or the no-provider text for the banner.
    pub provider_label: Result<String, NoProvider>,
    pub registry: Arc<Registry>,
    /// `--agent`: the agent of new root sessions.
    pub agent: Option<String>,
    /// `--resume`: open this session (id or prefix) at start.
    pub open_session: Option<String>,
    /// `--continue`: open the most recent root session once sessions are listed.
    pub continue_last: bool,
}

/// Screen areas of the last frame (mouse hit-testing, paging).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Areas {
    pub tree: Option<Rect>,
    pub chat: Option<Rect>,
    pub composer: Option<Rect>,
    /// The wall, while it is open.
    pub wall: Option<Rect>,
}

/// The UI state and its only writer.
pub struct App {
    theme: Theme,
    theme_source: Option<ThemeSource>,
    keymap: Keymap,
    clock: Clock,
    registry: Arc<Registry>,
    /// `--agent`: the agent of new root sessions.
    default_agent: Option<String>,
    focus: Focus,
    /// The overlays, prompts and bars over the panes (`stack`).
    stack: Stack,
    tree: SessionTree,
    thread: Option<Thread>,
    /// What every session with a turn in flight streamed since its last assistant
    /// message (seeds a thread opened mid-reply).
    inflight: InflightStreams,
    /// Steers and queued messages waiting in every session's inbox.
    pending: PendingPrompts,
    /// The composer pane: its text, popup, history, files and the message edited.
    prompt: Prompt,
    /// What the status bar says besides the keys.
    status: StatusLine,
    /// Quitting and cancelling by key (Ctrl+C twice, Esc's cancel question).
    interrupt: cancel::Interrupts,
    /// What leaves the `App`: commands to the engine, requests to the run loop.
    outbox: Outbox,
    /// Which sessions need the person, and how to tell them.
    attention: needs_you::Attention,
    /// Start-up requests met once sessions are listed or loaded.
    launch: Launch,
    /// The user's config file, where "always and save" writes its rule (`None`: not
    /// saveable, e.g. in tests).
    config_file: Option<PathBuf>,
    /// "Always and save" just wrote the config file: the watcher's next
    /// `ConfigChanged` is that write, not the person's edit (no "restart" note).
    own_config_write: bool,
    dirty: bool,
    areas: Areas,
}

/// What the status bar says besides the keys.
struct StatusLine {
    /// `Ok("provider/model")` or the no-provider text (the banner).
    provider_label: Result<String, NoProvider>,
    note: Option<Note>,
    /// The registry's last reload, while its mark shows.
    reload_mark: Option<ReloadMark>,
}

/// What leaves the `App`: commands to the engine, and requests the run loop takes
/// (`take_*`) and writes to the terminal.
struct Outbox {
    commands: UnboundedSender<EngineCommand>,
    /// "Open this file in `$EDITOR`", until the run loop takes it.
    editor_request: Option<PathBuf>,
    /// A notification for the run loop to write to the terminal.
    notification: Option<Notification>,
    /// Clipboard copies and mouse-capture changes for the run loop to write.
    terminal_writes: Vec<crate::tui::term_write::TerminalWrite>,
    /// Whether the mouse is captured (the terminal starts with it captured).
    mouse_capture: bool,
    /// Earlier parts of transcripts to lay out off the UI thread (the run loop takes
    /// them).
    layouts: Vec<EarlierLayout>,
}

/// Start-up requests (`--continue`, `--resume`), each met once.
struct Launch {
    /// `--continue`: open the most recent root session once sessions are listed.
    continue_last: bool,
    /// Expand the next opened session's node once it loads (`--resume`/`--continue`).
    expand_on_load: bool,
}

impl App {
    /// A new app. Sends [`EngineCommand::ListSessions`] (and `LoadTranscript` for
    /// `open_session`) on `commands` right away.
    pub fn new(options: AppOptions, commands: UnboundedSender<EngineCommand>) -> Self {
        let mut app = Self {
            theme: options.theme,
            theme_source: options.theme_source,
            keymap: options.keymap,
            clock: options.clock,
            registry: options.registry,
            default_agent: options.agent.clone(),
            focus: Focus::Composer,
            stack: Stack::default(),
            tree: SessionTree::default(),
            thread: None,
            inflight: InflightStreams::default(),
            pending: PendingPrompts::default(),
            prompt: Prompt::default(),
            status: StatusLine {
                provider_label: options.provider_label,
                note: None,
                reload_mark: None,
            },
            interrupt: cancel::Interrupts::default(),
            outbox: Outbox {
                commands,
                editor_request: None,
                notification: None,
                terminal_writes: Vec::new(),
                mouse_capture: true,
                layouts: Vec::new(),
            },
            attention: needs_you::Attention::default(),
            launch: Launch {
                continue_last: options.continue_last,
                expand_on_load: options.open_session.is_some() || options.continue_last,
            },
            config_file: None,
            own_config_write: false,
            dirty: true,
            areas: Areas::default(),
        };
        app.tree.set_local_host(crate::remote::wire::hostname());
        app.refresh_placeholder();
        app.send(EngineCommand::ListSessions);
        match options.open_session {
            Some(id) => app.open_thread(&id),
            None => app.thread = Some(Thread::new_root(options.agent)),
        }
        app
    }

    /// Applies one event. Marks the app for redraw when anything visible changed.
    pub fn handle(&mut self, event: AppEvent) {
        if let Some(quiet) = self.apply_event(event) {
            self.sync_needs_you(quiet);
        }
        self.drop_stale_cancel_question();
    }

    /// Applies `event`; how who needs the person follows it
    /// ([`App::needs_you_sync`]).
    fn apply_event(&mut self, event: AppEvent) -> Option<bool> {
        let mut sync = Self::needs_you_sync(&event);
        match event {
            AppEvent::Input(ev) => self.on_input(ev),
            AppEvent::Engine(ev) => {
                if !self.on_engine_event(&ev) {
                    sync = None;
                }
            }
            AppEvent::Reply(reply) => self.on_reply(reply),
            AppEvent::RegistryReloaded(reg) => self.on_registry(reg),
            AppEvent::Reload(ev) => self.on_reload_event(ev),
            AppEvent::EarlierLoaded {
                session_id,
                end,
                result,
            } => self.on_earlier(&session_id, end, result),
            AppEvent::EditorFinished { path, result } => self.on_editor_finished(&path, result),
            AppEvent::Tick => {
                self.expire_notes();
                if !self.animating() {
                    return sync;
                }
            }
            AppEvent::Shutdown => self.interrupt.quit = true,
        }
        self.dirty = true;
        sync
    }

    /// Whether the user asked to quit (Ctrl+C twice) or a shutdown arrived.
    pub fn should_quit(&self) -> bool {
        self.interrupt.quit
    }

    /// Takes the pending "open this file in `$EDITOR`" request, if any.
    pub fn take_editor_request(&mut self) -> Option<PathBuf> {
        self.outbox.editor_request.take()
    }

    /// Whether a redraw is due; clears the flag.
    pub fn take_redraw(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// When the next [`AppEvent::Tick`] is wanted: 100 ms while something runs
    /// (spinners, live elapsed times), else when the next note expires; `None` when idle.
    pub fn next_tick(&self) -> Option<Duration> {
        if self.animating() {
            return Some(Duration::from_millis(100));
        }
        let now = self.clock.now().as_millisecond();
        [
            self.status.note.as_ref().map(|n| n.until),
            self.status.reload_mark.as_ref().map(|m| m.until),
        ]
        .into_iter()
        .flatten()
        .map(|t| Duration::from_millis(u64::try_from(t.as_millisecond() - now).unwrap_or(0) + 1))
        .min()
    }

    fn animating(&self) -> bool {
        self.tree.running_count() > 0 || self.thread.as_ref().is_some_and(|t| t.turn_in_flight)
    }

    fn expire_notes(&mut self) {
        let now = self.clock.now();
        if self.status.note.as_ref().is_some_and(|n| n.until <= now) {
            self.status.note = None;
            self.dirty = true;
        }
        if self
            .status
            .reload_mark
            .as_ref()
            .is_some_and(|m| m.until <= now)
        {
            self.status.reload_mark = None;
            self.dirty = true;
        }
    }

    fn send(&mut self, command: EngineCommand) {
        if self.outbox.commands.send(command).is_err() {
            tracing::warn!("engine command channel closed");
        }
    }

    fn set_note(&mut self, text: impl Into<String>, warning: bool) {
        let until = self.clock.now() + jiff::SignedDuration::from_millis(NOTE_MS);
        self.status.note = Some(Note {
            text: text.into(),
            warning,
            until,
        });
    }

    fn refresh_placeholder(&mut self) {
        let text = format!(
            "Message… ({} send · {} new line)",
            self.keymap.label(Action::Submit),
            self.keymap
                .keys_for(Action::Newline)
                .first()
                .map(ToString::to_string)
                .unwrap_or_default()
        );
        let style = self.theme.style(Slot::ComposerPlaceholder);
        self.prompt.composer.set_placeholder(&text, style);
    }

    /// Whether the open thread's session has a turn running.
    pub fn thread_running(&self) -> bool {
        let Some(t) = &self.thread else {
            return false;
        };
        t.turn_in_flight
            || t.session_id
                .as_deref()
                .and_then(|id| self.tree.get(id))
                .is_some_and(|n| n.status.turn_in_progress())
    }

    /// Focused pane.
    pub fn focus(&self) -> Focus {
        self.focus
    }

    /// Open overlay.
    pub fn overlay(&self) -> Overlay {
        self.stack.overlay()
    }

    /// The diff overlay's state, while one was opened.
    pub fn diff(&self) -> Option<&DiffState> {
        self.stack.find::<DiffOverlay>().map(|d| &d.state)
    }

    /// The find bar's state, while it is open.
    pub fn find(&self) -> Option<&super::state::find::Find> {
        self.stack
            .find::<components::find::FindBar>()
            .map(|f| &f.find)
    }

    /// The approval prompts waiting (the front one is shown and takes the keys).
    pub fn approvals(&self) -> &ApprovalQueue {
        &self.stack.approval.queue
    }

    /// Asks whether to trust the current project (`tui::run` does at start when
    /// `config::trust::untrusted_project` names one): the prompt takes the keyboard
    /// until answered; the composer keeps its text.
    pub fn ask_trust(&mut self, prompt: TrustPrompt) {
        self.stack.push(Box::new(TrustLayer { prompt }));
        self.dirty = true;
    }

    /// Shows `text` as a status-bar note (never a modal): start-up notices such as the
    /// local server in use.
    pub fn notice(&mut self, text: impl Into<String>) {
        self.set_note(text, false);
        self.dirty = true;
    }

    /// The trust prompt, while it waits for an answer.
    pub fn trust_prompt(&self) -> Option<&TrustPrompt> {
        self.stack.find::<TrustLayer>().map(|t| &t.prompt)
    }

    /// The session tree.
    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    /// The open thread.
    pub fn thread(&self) -> Option<&Thread> {
        self.thread.as_ref()
    }

    /// The messages waiting in sessions' inboxes (steers and queued turns).
    pub fn pending(&self) -> &PendingPrompts {
        &self.pending
    }

    /// The composer's text.
    pub fn composer_text(&self) -> String {
        self.prompt.composer.text()
    }

    /// The current status-bar note.
    pub fn note(&self) -> Option<&Note> {
        self.status.note.as_ref()
    }

    /// The visible reload mark.
    pub fn reload_mark(&self) -> Option<&ReloadMark> {
        self.status.reload_mark.as_ref()
    }

    /// The status-bar label: `Ok("provider/model")` (updated from the engine's
    /// `ProviderLabel` reply and `provider:response`) or the no-provider text.
    pub fn provider_label(&self) -> &Result<String, NoProvider> {
        &self.status.provider_label
    }

    /// Whether the status-bar label is a provider without a model (a local server
    /// whose model is resolved lazily): the run loop then asks the engine for it
    /// ([`EngineCommand::ResolveProviderLabel`]).
    pub fn wants_provider_label(&self) -> bool {
        matches!(&self.status.provider_label, Ok(label) if crate::tui::views::status::model_part(label).is_none())
    }

    /// The registry the browser shows.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The clock (tests advance a manual one).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }
}
