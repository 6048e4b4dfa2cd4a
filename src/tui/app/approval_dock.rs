//! The approval prompt's keys in the `App` (issue 23 item 8): the modal prompt takes
//! every key but `global.quit`; `approval.thread` (Ctrl+g, `t`) opens the asking
//! session's thread and docks the prompt below the panes, so the person can read what
//! the session did before answering. Docked, the panes take the keys again except the
//! answer keys (`y`, `a`, `n` outside the composer, where they would be typed), a deny
//! reason being typed, and `approval.thread` or Esc, which bring the prompt back over
//! everything (never a cancel; after Esc the prompt's answer grace starts again, so
//! an Esc pressed twice brings it back without denying).
//!
//! Owns: routing keys to the prompt, docking and undocking. Does not own: the queue and
//! its answers (`state::approvals`) or how the docked prompt looks (`views::approval`).

use crossterm::event::KeyEvent;

use super::{App, Focus};
use crate::tui::app_event::KeyOutcome;
use crate::tui::keymap::{Action, Context, KeyBinding};

impl App {
    /// Gives `key` to the approval prompt when it is the prompt's: every key of the
    /// modal prompt (`context` is `Approval`) but `global.quit`, and the keys above of a
    /// docked one. Returns whether the key was used.
    pub(super) fn approval_key(
        &mut self,
        context: Context,
        key: &KeyEvent,
        binding: &KeyBinding,
        action: Option<Action>,
    ) -> bool {
        if context == Context::Approval {
            if action == Some(Action::Quit) {
                return false;
            }
            if action == Some(Action::ApprovalThread) {
                self.dock_approval();
                return true;
            }
            self.answer_key(key, action);
            return true;
        }
        if !self.approvals.docked() || self.overlay != super::Overlay::None {
            return false;
        }
        if self.approvals.reason().is_some() {
            self.answer_key(key, None);
            return true;
        }
        let own = self.keymap.action(Context::Approval, binding);
        match own {
            Some(Action::ApprovalThread) if !(binding.is_text() && self.typing()) => {
                self.approvals.set_docked(false);
                true
            }
            // Esc brings the prompt back: never a cancel of the open thread, and (the
            // prompt's grace starts again) a second Esc at once does not deny.
            Some(Action::ApprovalDenyNow) => {
                self.approvals.undock(self.clock.now());
                true
            }
            Some(Action::ApprovalAllow | Action::ApprovalAlways | Action::ApprovalDeny)
                if !(binding.is_text() && self.typing()) =>
            {
                self.answer_key(key, own);
                true
            }
            _ => false,
        }
    }

    /// Opens the front prompt's session's thread and docks the prompt.
    fn dock_approval(&mut self) {
        let Some(id) = self.approvals.front().map(|p| p.session_id.clone()) else {
            return;
        };
        self.approvals.set_docked(true);
        self.open_thread(&id);
        self.tree.reveal(&id);
        if self.focus == Focus::Composer {
            self.focus = Focus::Chat;
        }
        self.overlay = super::Overlay::None;
    }

    /// The composer takes typed text (focused, nothing over it).
    fn typing(&self) -> bool {
        self.focus == Focus::Composer && self.overlay == super::Overlay::None
    }

    fn answer_key(&mut self, key: &KeyEvent, action: Option<Action>) {
        let now = self.clock.now();
        if let KeyOutcome::Emit(a) = self.approvals.handle_key(key, action, now) {
            self.apply(a);
        }
    }
}
