//! The `App`: the single writer of UI state. Every input arrives as an [`AppEvent`];
//! every request to the engine leaves as an [`EngineCommand`] on a channel. Drawing
//! (`draw`) lays out the visible window and hands borrowed state to pure views.
//!
//! Owns: focus, overlays, the approval prompts, the trust prompt, the tree, the open thread, the
//! composer, notes, the Ctrl+C window and the messages waiting for running turns. Split by
//! responsibility: `input` (keys, mouse, paste), `engine` (bus events and command results),
//! `model` (switching a model), `find` (find in the thread), `copy` (OSC 52), `mouse`,
//! `palette` (the composer's popup and slash commands), `history` (prompt history keys),
//! `mentions` (`@file` completion and attachment), `steer` (steer, queue and the
//! waiting messages), `draw`
//! (layout + views). Does not own: executing
//! commands (`executor`), the terminal (`terminal`), the event loop (`runloop`).

mod approval_dock;
mod cancel;
mod copy;
mod diff;
mod draw;
mod engine;
mod find;
mod history;
mod input;
mod mentions;
mod model;
mod mouse;
mod needs_you;
mod palette;
mod steer;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use ratatui::layout::Rect;
use tokio::sync::mpsc::UnboundedSender;

use super::app_event::{AppEvent, EngineCommand};
use super::clock::Clock;
use super::composer::Composer;
use super::keymap::{Action, Keymap};
use super::state::approvals::ApprovalQueue;
use super::state::browser::{BrowserState, ReloadMark};
use super::state::diff::DiffState;
use super::state::inflight::InflightStreams;
use super::state::note::Note;
use super::state::pending::PendingPrompts;
use super::state::thread::Thread;
use super::state::tree::SessionTree;
use super::state::trust::TrustPrompt;
use super::state::wall::Wall;
use super::theme::{Slot, Theme};
use crate::agent::Registry;
use crate::config::Notify;
use crate::tui::notify::Notification;

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

/// An overlay drawn over the panes (takes all keys but `global.quit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    None,
    Help,
    Browser,
    /// A session's changes (`state::diff`).
    Diff,
    /// The wall of running sub-sessions (`App::wall`).
    Wall,
    /// The MCP servers of this process, their state and tools.
    Mcp,
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
    pub provider_label: Result<String, String>,
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
    provider_label: Result<String, String>,
    registry: Arc<Registry>,
    default_agent: Option<String>,
    continue_last: bool,
    focus: Focus,
    overlay: Overlay,
    tree: SessionTree,
    thread: Option<Thread>,
    /// What every session with a turn in flight streamed since its last assistant
    /// message (seeds a thread opened mid-reply).
    inflight: InflightStreams,
    /// The wall's tiles and tails (kept up to date while `overlay` is the wall).
    wall: Wall,
    /// Expand the next opened session's node once it loads (`--resume`/`--continue`).
    expand_on_load: bool,
    composer: Composer,
    /// The composer's popup (slash commands, sessions to resume), while open.
    popup: Option<super::state::palette::Popup>,
    /// The composer text the popup was closed for with Esc (stays closed until the
    /// text changes).
    popup_dismissed: Option<String>,
    /// The project's sent prompts (Up/Down, Ctrl+R).
    history: super::state::history::History,
    /// The prompt the Up/Down walk shows (index into the history).
    history_pos: Option<usize>,
    /// The project's files for `@` completion.
    files: mentions::ProjectFiles,
    /// Approval prompts waiting for the person; the front one is modal.
    approvals: ApprovalQueue,
    /// The start-up trust prompt, until answered (modal, below approval prompts).
    trust: Option<TrustPrompt>,
    browser: BrowserState,
    /// The diff overlay's content (kept while `overlay` is `Diff`).
    diff: Option<DiffState>,
    help_scroll: u16,
    /// Rows the help overlay showed at once in the last frame (its page).
    help_page: u16,
    /// The MCP view's servers (as last listed) and first row shown.
    mcp: Vec<crate::tool::mcp::McpServerStatus>,
    mcp_scroll: u16,
    note: Option<Note>,
    /// The find bar over the open thread, while open (`app::find`).
    find: Option<super::state::find::Find>,
    reload_mark: Option<ReloadMark>,
    last_ctrl_c: Option<Timestamp>,
    /// When an Esc last closed something (`cancel`: a cancel Esc right after it is not
    /// a cancel).
    esc_closed_at: Option<Timestamp>,
    /// The question "cancel this turn and its N running sub-sessions? y/n", while up.
    confirm_cancel: Option<cancel::ConfirmCancel>,
    /// Quitting was asked about waiting messages (reset by a fresh Ctrl+C).
    quit_warned: bool,
    /// Steers and queued messages waiting in every session's inbox.
    pending: PendingPrompts,
    /// A waiting message asked back for editing, until the engine gives it up.
    edit_request: Option<steer::EditRequest>,
    /// The waiting message being edited in the composer.
    editing: Option<steer::Editing>,
    commands: UnboundedSender<EngineCommand>,
    quit: bool,
    editor_request: Option<PathBuf>,
    /// The user's config file, where "always and save" writes its rule (`None`: not
    /// saveable, e.g. in tests).
    config_file: Option<PathBuf>,
    dirty: bool,
    areas: Areas,
    /// How to tell the person a session started needing them (config `notify:`).
    notify: Notify,
    /// The sessions that needed the person after the last event (to notice new ones).
    needs_you: HashSet<String>,
    /// Failed / interrupted sessions the person has seen, kept across restarts.
    seen: super::state::seen::SeenStore,
    /// A notification for the run loop to write to the terminal.
    notification: Option<Notification>,
    /// Clipboard copies and mouse-capture changes for the run loop to write.
    terminal_writes: Vec<crate::tui::term_write::TerminalWrite>,
    /// Whether the mouse is captured (the terminal starts with it captured).
    mouse_capture: bool,
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
            provider_label: options.provider_label,
            registry: options.registry,
            default_agent: options.agent.clone(),
            continue_last: options.continue_last,
            focus: Focus::Composer,
            overlay: Overlay::None,
            tree: SessionTree::default(),
            thread: None,
            inflight: InflightStreams::default(),
            wall: Wall::default(),
            expand_on_load: options.open_session.is_some() || options.continue_last,
            composer: Composer::new(),
            popup: None,
            popup_dismissed: None,
            history: Default::default(),
            history_pos: None,
            files: Default::default(),
            approvals: ApprovalQueue::default(),
            trust: None,
            browser: BrowserState::default(),
            diff: None,
            help_scroll: 0,
            help_page: 1,
            mcp: Vec::new(),
            mcp_scroll: 0,
            note: None,
            find: None,
            reload_mark: None,
            last_ctrl_c: None,
            esc_closed_at: None,
            confirm_cancel: None,
            quit_warned: false,
            pending: PendingPrompts::default(),
            edit_request: None,
            editing: None,
            commands,
            quit: false,
            editor_request: None,
            config_file: None,
            dirty: true,
            areas: Areas::default(),
            notify: Notify::default(),
            needs_you: HashSet::new(),
            seen: Default::default(),
            notification: None,
            terminal_writes: Vec::new(),
            mouse_capture: true,
        };
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
        let sync = Self::needs_you_sync(&event);
        self.apply_event(event);
        if let Some(quiet) = sync {
            self.sync_needs_you(quiet);
        }
        self.drop_stale_cancel_question();
    }

    fn apply_event(&mut self, event: AppEvent) {
        match event {
            AppEvent::Input(ev) => self.on_input(ev),
            AppEvent::Engine(ev) => self.on_engine_event(&ev),
            AppEvent::RegistryReloaded(reg) => self.on_registry(reg),
            AppEvent::Reload(ev) => self.on_reload_event(ev),
            AppEvent::SessionsListed(result) => self.on_sessions_listed(result),
            AppEvent::StoredSessionChanged(metadata) => self.tree.refresh_stored(&metadata),
            AppEvent::McpServersListed(servers) => self.mcp = servers,
            AppEvent::TranscriptLoaded { requested, result } => {
                self.on_transcript(&requested, result, None)
            }
            AppEvent::TranscriptTailLoaded {
                requested,
                session,
                earlier,
            } => self.on_transcript(&requested, Ok(session), Some(earlier)),
            AppEvent::EarlierLoaded {
                session_id,
                end,
                result,
            } => self.on_earlier(&session_id, end, result),
            AppEvent::SessionCreated { session_id } => self.on_session_created(&session_id),
            AppEvent::TurnFinished(outcome) => self.on_turn_finished(outcome),
            AppEvent::ProviderLabelResolved { label } => self.on_provider_label(label),
            AppEvent::ModelSwitched {
                session_id,
                result,
                warning,
            } => self.on_model_switched(session_id, result, warning),
            AppEvent::CommandFailed {
                session_id,
                message,
            } => self.on_command_failed(session_id, &message),
            AppEvent::NotSent {
                session_id: _,
                text,
                message,
            } => self.on_not_sent(text, &message),
            AppEvent::EditorFinished { path, result } => self.on_editor_finished(&path, result),
            AppEvent::DiffLoaded {
                session_id,
                subtree,
                result,
            } => {
                if let Some(d) = &mut self.diff {
                    d.load(&session_id, subtree, result);
                }
            }
            AppEvent::SessionRenamed { session_id, result } => self.on_renamed(&session_id, result),
            AppEvent::Exported {
                session_id: _,
                result,
            } => self.on_exported(result),
            AppEvent::ProjectFiles { root, files } => self.on_project_files(root, files),
            AppEvent::Compacted { note } => self.set_note(note, false),
            AppEvent::Tick => {
                self.expire_notes();
                if !self.animating() {
                    return;
                }
            }
            AppEvent::Shutdown => self.quit = true,
        }
        self.dirty = true;
    }

    /// Whether the user asked to quit (Ctrl+C twice) or a shutdown arrived.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Takes the pending "open this file in `$EDITOR`" request, if any.
    pub fn take_editor_request(&mut self) -> Option<PathBuf> {
        self.editor_request.take()
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
            self.note.as_ref().map(|n| n.until),
            self.reload_mark.as_ref().map(|m| m.until),
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
        if self.note.as_ref().is_some_and(|n| n.until <= now) {
            self.note = None;
            self.dirty = true;
        }
        if self.reload_mark.as_ref().is_some_and(|m| m.until <= now) {
            self.reload_mark = None;
            self.dirty = true;
        }
    }

    fn send(&mut self, command: EngineCommand) {
        if self.commands.send(command).is_err() {
            tracing::warn!("engine command channel closed");
        }
    }

    fn set_note(&mut self, text: impl Into<String>, warning: bool) {
        let until = self.clock.now() + jiff::SignedDuration::from_millis(NOTE_MS);
        self.note = Some(Note {
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
        self.composer.set_placeholder(&text, style);
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
        self.overlay
    }

    /// The diff overlay's state, while one was opened.
    pub fn diff(&self) -> Option<&DiffState> {
        self.diff.as_ref()
    }

    /// The approval prompts waiting (the front one is shown and takes the keys).
    pub fn approvals(&self) -> &ApprovalQueue {
        &self.approvals
    }

    /// Asks whether to trust the current project (`tui::run` does at start when
    /// `config::trust::untrusted_project` names one): the prompt takes the keyboard
    /// until answered; the composer keeps its text.
    pub fn ask_trust(&mut self, prompt: TrustPrompt) {
        self.trust = Some(prompt);
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
        self.trust.as_ref()
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
        self.composer.text()
    }

    /// The current status-bar note.
    pub fn note(&self) -> Option<&Note> {
        self.note.as_ref()
    }

    /// The visible reload mark.
    pub fn reload_mark(&self) -> Option<&ReloadMark> {
        self.reload_mark.as_ref()
    }

    /// The status-bar label: `Ok("provider/model")` (updated from
    /// [`AppEvent::ProviderLabelResolved`] and `provider:response`) or the no-provider
    /// text.
    pub fn provider_label(&self) -> &Result<String, String> {
        &self.provider_label
    }

    /// Whether the status-bar label is a provider without a model (a local server
    /// whose model is resolved lazily): the run loop then asks the engine for it
    /// ([`EngineCommand::ResolveProviderLabel`]).
    pub fn wants_provider_label(&self) -> bool {
        matches!(&self.provider_label, Ok(label) if crate::tui::views::status::model_part(label).is_none())
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
