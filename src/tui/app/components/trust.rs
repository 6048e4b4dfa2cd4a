//! The start-up trust prompt as a component (SPEC §12 "Trust"): modal above the
//! overlays, below an approval prompt; `trust.yes` records the project in the trust
//! store (the file watcher then reloads the agents, so the project's agents get their
//! tools, and the engine reads the project's hooks and MCP servers again at the next
//! turn: `engine::project_powers`), `trust.no` dismisses it; either way it closes with a note.
//!
//! Owns: the answer. Does not own: what the prompt asks (`state::trust`), the trust
//! store (`config::trust`) or the look (`views::trust`).

use crossterm::event::KeyEvent;
use ratatui::Frame;

use crate::config::trust::TrustStore;
use crate::tui::action::{KeyOutcome, UiAction};
use crate::tui::app::Focus;
use crate::tui::app::component::{Component, Ctx, DrawCtx, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::keymap::{Action, Context, KeyBinding};
use crate::tui::state::trust::TrustPrompt;
use crate::tui::views::trust::TrustView;

/// The trust prompt, until answered.
#[derive(Debug)]
pub(crate) struct TrustLayer {
    /// What it asks.
    pub(crate) prompt: TrustPrompt,
}

impl TrustLayer {
    /// Answers the prompt; `trust` writes the trust store.
    fn answer(&self, trust: bool, cx: &mut Ctx<'_>) {
        let shown = self.prompt.project.display().to_string();
        if !trust {
            cx.note(
                format!(
                    "{shown} not trusted: its hooks do not run and its agents add no tools \
                     (`arbor trust` trusts it; /hooks lists them)"
                ),
                false,
            );
            return;
        }
        let stored =
            TrustStore::load(&self.prompt.store).and_then(|mut s| s.trust(&self.prompt.project));
        match stored {
            Ok(_) => cx.note(
                format!(
                    "trusted {shown}: its hooks, MCP servers and agents' tools apply from the \
                     next turn; approvals still apply"
                ),
                false,
            ),
            Err(e) => cx.note(format!("not trusted: {e}"), true),
        }
    }
}

impl Component for TrustLayer {
    fn layer(&self) -> Layer {
        Layer::Prompt
    }

    fn context(&self, _: Focus) -> Option<Context> {
        Some(Context::Trust)
    }

    fn handle_key(
        &mut self,
        _: &KeyEvent,
        _: &KeyBinding,
        action: Option<Action>,
        cx: &mut Ctx<'_>,
    ) -> KeyOutcome {
        if action == Some(Action::Quit) {
            return KeyOutcome::Ignored;
        }
        match self.prompt.handle(action) {
            KeyOutcome::Emit(UiAction::AnswerTrust { trust }) => {
                cx.close();
                self.answer(trust, cx);
                KeyOutcome::Consumed
            }
            other => other,
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let view = TrustView {
            prompt: &self.prompt,
            keymap: cx.keymap,
            theme: cx.theme,
        };
        frame.render_widget(&view, panes.main);
    }
}
