//! The component trait (issue 24 item 2, after helix's `Component`): every overlay,
//! prompt and bar over the panes owns its state, handles its keys and draws itself,
//! and asks the `App` for anything else through [`Ctx`] as [`Effect`]s.
//!
//! Owns: the trait and what a component sees and may ask. Does not own: the order
//! and the walk (`stack`) or the components (`components`).

use std::any::Any;
use std::sync::Arc;

use crossterm::event::KeyEvent;
use jiff::Timestamp;
use ratatui::Frame;

use super::panes::Panes;
use super::{Areas, Focus, Overlay};
use crate::agent::Registry;
use crate::tui::action::{KeyOutcome, UiAction};
use crate::tui::app_event::EngineCommand;
use crate::tui::keymap::{Action, Context, KeyBinding, Keymap};
use crate::tui::state::browser::ReloadMark;
use crate::tui::state::inflight::InflightStreams;
use crate::tui::state::thread::Thread;
use crate::tui::state::tree::SessionTree;
use crate::tui::theme::Theme;

/// Where a component sits, bottom to top. The approval prompt is pinned: above
/// everything while it asks, below the overlays while docked (`stack::Stack::order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Layer {
    /// A bar over a pane (find): sees keys the overlays left, before the panes.
    Bar,
    /// A full overlay (help, browser, diff, wall, MCP): one at a time.
    Overlay,
    /// A modal prompt (trust): above the overlays.
    Prompt,
}

/// What a component asks of the `App` while it handles a key or an event: applied
/// in order right after the call.
pub(crate) enum Effect {
    /// Take the asking component off the stack.
    Close,
    /// Close every overlay ([`Layer::Overlay`]).
    CloseOverlays,
    /// Perform a widget request as the panes' widgets do.
    Ui(UiAction),
    /// Send a command to the engine.
    Send(EngineCommand),
    /// Show a status-bar note (`warning`: in the warning style).
    Note {
        /// The note's text.
        text: String,
        /// Shown as a warning.
        warning: bool,
    },
    /// Move the keyboard focus to this pane.
    Focus(Focus),
}

/// What a component sees of the `App` when it handles a key, a paste, an event or
/// lays itself out, and where it leaves its [`Effect`]s.
pub(crate) struct Ctx<'a> {
    /// The keymap (a component resolves keys of other contexts with it).
    pub keymap: &'a Keymap,
    /// The theme in use.
    pub theme: &'a Theme,
    /// The agents as last loaded.
    pub registry: &'a Arc<Registry>,
    /// The session tree (a component may reveal or mark sessions).
    pub tree: &'a mut SessionTree,
    /// The open thread (the find bar scrolls it).
    pub thread: &'a mut Option<Thread>,
    /// What running sessions streamed since their last message.
    pub inflight: &'a InflightStreams,
    /// The focused pane.
    pub focus: Focus,
    /// The pane areas of the last frame.
    pub areas: Areas,
    /// The app clock's now.
    pub now: Timestamp,
    pub(super) effects: Vec<Effect>,
}

impl Ctx<'_> {
    /// Asks for `effect` after the call.
    pub fn push(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    /// Takes the asking component off the stack after the call.
    pub fn close(&mut self) {
        self.push(Effect::Close);
    }

    /// Sends `command` to the engine.
    pub fn send(&mut self, command: EngineCommand) {
        self.push(Effect::Send(command));
    }

    /// Shows `text` in the status bar.
    pub fn note(&mut self, text: impl Into<String>, warning: bool) {
        self.push(Effect::Note {
            text: text.into(),
            warning,
        });
    }

    /// Performs a widget request.
    pub fn emit(&mut self, action: UiAction) {
        self.push(Effect::Ui(action));
    }
}

/// What a component reads when it draws (the state as `App::layout` left it).
pub(crate) struct DrawCtx<'a> {
    /// The keymap (key labels in hints).
    pub keymap: &'a Keymap,
    /// The theme in use.
    pub theme: &'a Theme,
    /// The agents as last loaded.
    pub registry: &'a Arc<Registry>,
    /// The session tree.
    pub tree: &'a SessionTree,
    /// The open thread, if any.
    pub thread: Option<&'a Thread>,
    /// The registry's last reload, while its mark shows.
    pub reload_mark: Option<&'a ReloadMark>,
    /// The app clock's now.
    pub now: Timestamp,
}

/// An overlay, prompt or bar: owns its state, handles its keys, draws itself.
///
/// A new one is one file under `app/components/` implementing this trait, plus its
/// row in `components::opener` (the action that opens it) — see `app`'s docs.
pub(crate) trait Component: Any {
    /// Where it sits in the stack.
    fn layer(&self) -> Layer;

    /// The public tag ([`super::App::overlay`]); `Overlay::None` for prompts and bars.
    fn overlay(&self) -> Overlay {
        Overlay::None
    }

    /// The keymap context it answers in while it has the keyboard (`None`: it lets
    /// the panes' context show, as the find bar over the composer does).
    fn context(&self, focus: Focus) -> Option<Context>;

    /// Whether it takes every key but `global.quit` (the walk stops at it) and keeps
    /// the composer from typing.
    fn modal(&self) -> bool {
        true
    }

    /// A key, with `action` resolved in [`Component::context`] (the key's action in
    /// the `Find` context for a bar). `Ignored` passes the key down the stack
    /// (a modal component passes only `global.quit`).
    /// By default (a component driven by its context's actions alone): `global.quit`
    /// and keys without an action pass, every other action goes to
    /// [`Component::act`].
    fn handle_key(
        &mut self,
        _key: &KeyEvent,
        _binding: &KeyBinding,
        action: Option<Action>,
        cx: &mut Ctx<'_>,
    ) -> KeyOutcome {
        match action {
            Some(Action::Quit) | None => KeyOutcome::Ignored,
            Some(a) => {
                self.act(a, cx);
                KeyOutcome::Consumed
            }
        }
    }

    /// What an action of its context does (the default [`Component::handle_key`]
    /// and [`Component::wheel`] call it). Nothing by default.
    fn act(&mut self, _action: Action, _cx: &mut Ctx<'_>) {}

    /// The actions a wheel notch up and down stand for (`None`: it does not scroll
    /// by wheel).
    fn wheel_actions(&self) -> Option<(Action, Action)> {
        None
    }

    /// A paste; returns whether it used the text.
    fn paste(&mut self, _text: &str, _cx: &mut Ctx<'_>) -> bool {
        false
    }

    /// A wheel notch (`up`) at `pos`; returns whether it scrolled (else the pane
    /// under the pointer does).
    fn wheel(&mut self, up: bool, _pos: ratatui::layout::Position, cx: &mut Ctx<'_>) -> bool {
        let Some((on_up, on_down)) = self.wheel_actions() else {
            return false;
        };
        self.act(if up { on_up } else { on_down }, cx);
        true
    }

    /// Asked to open again while open: `true` keeps this one (updated), `false` has
    /// the new one replace it.
    fn reopen(&mut self, _cx: &mut Ctx<'_>) -> bool {
        false
    }

    /// The update step before a frame with these panes (scroll clamping, pages).
    fn layout(&mut self, _panes: &Panes, _cx: &mut Ctx<'_>) {}

    /// Draws itself into its part of `panes`; reads state only.
    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>);
}
