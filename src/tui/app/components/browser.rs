//! The agent browser as a component: the agents of the registry, a filter typed after
//! `browser.filter`, starting a session with the selected agent or opening its file
//! in `$EDITOR`; drawn by `views::browser` with the reload mark.
//!
//! Owns: the selection and the filter. Does not own: the registry (the `App` hands
//! the current one in) or the reload mark (the `App`'s status).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Position;

use crate::tui::action::{KeyOutcome, UiAction};
use crate::tui::app::component::{Component, Ctx, DrawCtx, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::app::{Focus, Overlay};
use crate::tui::keymap::{Action, Context, KeyBinding};
use crate::tui::state::browser::BrowserState;
use crate::tui::views::browser::BrowserView;

/// The agent browser overlay.
#[derive(Debug, Default)]
pub(crate) struct BrowserOverlay {
    state: BrowserState,
}

impl BrowserOverlay {
    /// Opens on the first agent, unfiltered.
    pub(super) fn open(_: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        Some(Box::new(Self::default()))
    }

    /// Filter editing; returns whether the key was used.
    fn filter_key(&mut self, key: &KeyEvent, binding: &KeyBinding) -> bool {
        match key.code {
            KeyCode::Char(c) if binding.is_text() => self.state.filter.push(c),
            KeyCode::Backspace => {
                self.state.filter.pop();
            }
            KeyCode::Enter | KeyCode::Down | KeyCode::Tab => self.state.filtering = false,
            KeyCode::Esc => {
                self.state.filter.clear();
                self.state.filtering = false;
            }
            _ => return false,
        }
        true
    }

    fn act(&mut self, action: Action, cx: &mut Ctx<'_>) {
        match action {
            Action::BrowserUp => self.state.move_selection(cx.registry, -1),
            Action::BrowserDown => self.state.move_selection(cx.registry, 1),
            Action::BrowserFilter => self.state.filtering = true,
            Action::BrowserClose => cx.close(),
            Action::BrowserStart => {
                if let Some(a) = self.state.current(cx.registry) {
                    cx.emit(if a.is_valid() {
                        UiAction::StartWithAgent(a.name.clone())
                    } else {
                        UiAction::Note(format!(
                            "agent '{}' is invalid; fix it first (e edits)",
                            a.name
                        ))
                    });
                }
            }
            Action::BrowserEdit => {
                if let Some(a) = self.state.current(cx.registry) {
                    cx.emit(match &a.path {
                        Some(p) => UiAction::EditFile(p.clone()),
                        None => UiAction::Note(format!(
                            "'{}' is built into arbor and has no file",
                            a.name
                        )),
                    });
                }
            }
            _ => {}
        }
    }
}

impl Component for BrowserOverlay {
    fn layer(&self) -> Layer {
        Layer::Overlay
    }

    fn overlay(&self) -> Overlay {
        Overlay::Browser
    }

    fn context(&self, _: Focus) -> Option<Context> {
        Some(Context::Browser)
    }

    fn handle_key(
        &mut self,
        key: &KeyEvent,
        binding: &KeyBinding,
        action: Option<Action>,
        cx: &mut Ctx<'_>,
    ) -> KeyOutcome {
        if self.state.filtering && self.filter_key(key, binding) {
            return KeyOutcome::Consumed;
        }
        match action {
            Some(Action::Quit) | None => KeyOutcome::Ignored,
            Some(a) => {
                self.act(a, cx);
                KeyOutcome::Consumed
            }
        }
    }

    fn paste(&mut self, text: &str, _: &mut Ctx<'_>) -> bool {
        if self.state.filtering {
            self.state.filter.push_str(text.trim());
        }
        self.state.filtering
    }

    fn wheel(&mut self, up: bool, _: Position, cx: &mut Ctx<'_>) -> bool {
        self.act(
            if up {
                Action::BrowserUp
            } else {
                Action::BrowserDown
            },
            cx,
        );
        true
    }

    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let view = BrowserView {
            registry: cx.registry,
            state: &self.state,
            mark: cx.reload_mark,
            theme: cx.theme,
        };
        frame.render_widget(&view, panes.main);
    }
}
