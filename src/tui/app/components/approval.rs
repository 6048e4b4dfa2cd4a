//! The approval prompt as a component (issue 23 item 8), pinned in the stack: while a
//! prompt waits and is not docked it sits above everything and takes every key but
//! `global.quit`; `approval.thread` (Ctrl+g, `t`) opens the asking session's thread
//! and docks the prompt below the panes, so the person can read what the session did
//! before answering. Docked, it sits below the overlays and the panes take the keys
//! again except the answer keys (`y`, `a`, `n` outside the composer, where they would
//! be typed), a deny reason being typed, and `approval.thread` or Esc, which bring the
//! prompt back over everything (never a cancel; after Esc the prompt's answer grace
//! starts again, so an Esc pressed twice brings it back without denying).
//!
//! Owns: the queue (`state::approvals`, fed by every engine event), routing keys to
//! it, docking and undocking. Does not own: sending the answers and saving rules (the
//! `App`, from the [`UiAction`]s it emits) or the look (`views::approval`).

use crossterm::event::KeyEvent;
use ratatui::Frame;

use crate::tui::action::{KeyOutcome, UiAction};
use crate::tui::app::Focus;
use crate::tui::app::component::{Component, Ctx, DrawCtx, Effect, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::keymap::{Action, Context, KeyBinding};
use crate::tui::state::approvals::ApprovalQueue;
use crate::tui::views::approval::ApprovalView;

/// The approval prompts waiting; the front one is shown.
#[derive(Debug, Default)]
pub(crate) struct ApprovalPrompt {
    /// The prompts waiting, oldest first.
    pub(crate) queue: ApprovalQueue,
}

impl ApprovalPrompt {
    /// Opens the front prompt's session's thread and docks the prompt.
    fn dock(&mut self, cx: &mut Ctx<'_>) {
        let Some(id) = self.queue.front().map(|p| p.session_id.clone()) else {
            return;
        };
        self.queue.set_docked(true);
        cx.emit(UiAction::OpenThread(id.to_string()));
        cx.tree.reveal(&id);
        if cx.focus == Focus::Composer {
            cx.push(Effect::Focus(Focus::Chat));
        }
        cx.push(Effect::CloseOverlays);
    }

    /// A docked prompt's keys: returns whether the key was its.
    fn docked_key(&mut self, key: &KeyEvent, binding: &KeyBinding, cx: &mut Ctx<'_>) -> KeyOutcome {
        if self.queue.reason().is_some() {
            return self.answer(key, None, cx);
        }
        // The composer takes typed text.
        let typing = cx.focus == Focus::Composer;
        let own = cx.keymap.action(Context::Approval, binding);
        match own {
            Some(Action::ApprovalThread) if !(binding.is_text() && typing) => {
                self.queue.set_docked(false);
                KeyOutcome::Consumed
            }
            // The diff is read in the full prompt: brought back, the diff unfolded.
            Some(Action::ApprovalDiff) if !(binding.is_text() && typing) => {
                self.queue.undock(cx.now);
                if self.queue.diff_folded() {
                    self.answer(key, own, cx)
                } else {
                    KeyOutcome::Consumed
                }
            }
            // Esc brings the prompt back: never a cancel of the open thread, and (the
            // prompt's grace starts again) a second Esc at once does not deny.
            Some(Action::ApprovalDenyNow) => {
                self.queue.undock(cx.now);
                KeyOutcome::Consumed
            }
            Some(Action::ApprovalAllow | Action::ApprovalAlways | Action::ApprovalDeny)
                if !(binding.is_text() && typing) =>
            {
                self.answer(key, own, cx)
            }
            _ => KeyOutcome::Ignored,
        }
    }

    fn answer(&mut self, key: &KeyEvent, action: Option<Action>, cx: &Ctx<'_>) -> KeyOutcome {
        match self.queue.handle_key(key, action, cx.now) {
            KeyOutcome::Ignored => KeyOutcome::Consumed,
            other => other,
        }
    }
}

impl Component for ApprovalPrompt {
    fn layer(&self) -> Layer {
        Layer::Prompt
    }

    fn context(&self, _: Focus) -> Option<Context> {
        self.modal().then_some(Context::Approval)
    }

    fn modal(&self) -> bool {
        !self.queue.is_empty() && !self.queue.docked()
    }

    fn handle_key(
        &mut self,
        key: &KeyEvent,
        binding: &KeyBinding,
        action: Option<Action>,
        cx: &mut Ctx<'_>,
    ) -> KeyOutcome {
        if self.queue.docked() {
            return self.docked_key(key, binding, cx);
        }
        if self.queue.is_empty() {
            return KeyOutcome::Ignored;
        }
        match action {
            Some(Action::Quit) => KeyOutcome::Ignored,
            Some(Action::ApprovalThread) => {
                self.dock(cx);
                KeyOutcome::Consumed
            }
            _ => self.answer(key, action, cx),
        }
    }

    fn paste(&mut self, text: &str, _: &mut Ctx<'_>) -> bool {
        self.queue.paste(text)
    }

    fn layout(&mut self, panes: &Panes, cx: &mut Ctx<'_>) {
        if self.queue.docked() {
            return;
        }
        let prompt = ApprovalView {
            queue: &self.queue,
            keymap: cx.keymap,
            theme: cx.theme,
        }
        .layout(panes.main);
        if let Some(p) = prompt {
            self.queue.clamp_scroll(p.body_rows, p.body_visible);
        }
    }

    /// Over everything (docked: below the panes).
    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let prompt = ApprovalView {
            queue: &self.queue,
            keymap: cx.keymap,
            theme: cx.theme,
        };
        let area = if self.queue.docked() {
            panes.dock
        } else {
            panes.main
        };
        frame.render_widget(&prompt, area);
    }
}
