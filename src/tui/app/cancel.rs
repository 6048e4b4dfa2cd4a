//! Esc as "cancel the open thread's turn" (issue 23 item 2: Esc must not wipe a
//! running tree by accident).
//!
//! Owns: the rules around the `global.cancel` key — an Esc that closed something (an
//! overlay, the palette, the find bar, a prompt) and a cancel Esc right after it
//! ([`ESC_AFTER_CLOSE_MS`]) do not add up to a cancel; a turn with running
//! sub-sessions is cancelled only after the person answers `y` to "cancel this turn
//! and its N running sub-sessions? y/n" (any other key keeps it running); the question
//! leaves by itself when the turn ends first. Does not
//! own: the key dispatch (`input`), sending the cancel (`UiAction::Cancel`), the tree's
//! `x` (an explicit key: cancels at once).

use crate::session::ids::SessionId;
use crossterm::event::{KeyCode, KeyEvent};
use jiff::Timestamp;

use super::App;
use crate::tui::app_event::UiAction;
use crate::tui::state::note::Note;

/// How long after an Esc that closed something a cancel Esc is taken as part of the
/// closing (a double tap), not as a cancel: milliseconds.
pub const ESC_AFTER_CLOSE_MS: i64 = 1_000;

/// How long the question stays up unanswered (it stays until a key answers it; this
/// only bounds the note's time): milliseconds.
const QUESTION_MS: i64 = 3_600_000;

/// Quitting and cancelling by key: the Ctrl+C window, the cancel question and the
/// Esc that just closed something.
#[derive(Debug, Default)]
pub(super) struct Interrupts {
    /// The first Ctrl+C of the quit window.
    pub last_ctrl_c: Option<Timestamp>,
    /// When an Esc last closed something (a cancel Esc right after it is not a
    /// cancel).
    pub esc_closed_at: Option<Timestamp>,
    /// The question "cancel this turn and its N running sub-sessions? y/n", while up.
    pub confirm_cancel: Option<ConfirmCancel>,
    /// Quitting was asked about waiting messages (reset by a fresh Ctrl+C).
    pub quit_warned: bool,
    /// The person asked to quit (or a shutdown arrived).
    pub quit: bool,
}

/// A cancel waiting for the person's `y`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ConfirmCancel {
    /// The session whose turn (and running sub-sessions) `y` cancels.
    session_id: SessionId,
    /// The question as the status bar shows it.
    pub(super) note: Note,
}

impl App {
    /// Notes that Esc just closed something (`now`), so a cancel Esc right after it
    /// is not taken as a cancel.
    pub(super) fn esc_closed(&mut self, now: Timestamp) {
        self.interrupt.esc_closed_at = Some(now);
    }

    /// Esc's cancel: nothing when no turn runs; swallowed (with a note) right after an
    /// Esc that closed something; a question when the turn has running sub-sessions;
    /// else the cancel.
    pub(super) fn cancel_open_thread(&mut self) {
        if !self.thread_running() {
            if let Some(t) = &mut self.thread {
                t.selected = None;
            }
            return;
        }
        let now = self.clock.now();
        if let Some(closed) = self.interrupt.esc_closed_at.take()
            && now.as_millisecond() - closed.as_millisecond() <= ESC_AFTER_CLOSE_MS
        {
            self.set_note(
                "Esc closed a view; the turn keeps running (press Esc again to cancel it)",
                false,
            );
            return;
        }
        let Some(id) = self.thread.as_ref().and_then(|t| t.session_id.clone()) else {
            self.set_note(
                "the session is still starting; press Esc again in a moment",
                true,
            );
            return;
        };
        let running = self
            .tree
            .subtree(&id)
            .iter()
            .filter(|n| n.id != id && n.status.turn_in_progress())
            .count();
        if running == 0 {
            self.apply(UiAction::Cancel(id));
            return;
        }
        let plural = if running == 1 { "" } else { "s" };
        self.interrupt.confirm_cancel = Some(ConfirmCancel {
            session_id: id,
            note: Note {
                text: format!(
                    "cancel this turn and its {running} running sub-session{plural}? y/n"
                ),
                warning: true,
                until: now + jiff::SignedDuration::from_millis(QUESTION_MS),
            },
        });
    }

    /// Takes the cancel question down once its turn is over by itself (completed,
    /// failed, cancelled elsewhere): it would otherwise stay in the status bar, asking
    /// about nothing, until the next key. Called after every event.
    pub(super) fn drop_stale_cancel_question(&mut self) {
        let Some(confirm) = &self.interrupt.confirm_cancel else {
            return;
        };
        let id = confirm.session_id.as_str();
        let in_flight = self
            .thread
            .as_ref()
            .is_some_and(|t| t.turn_in_flight && t.session_id.as_deref() == Some(id));
        let running = in_flight
            || self
                .tree
                .get(id)
                .is_some_and(|n| n.status.turn_in_progress());
        if !running {
            self.interrupt.confirm_cancel = None;
            self.set_note("the turn ended by itself; nothing to cancel", false);
            self.dirty = true;
        }
    }

    /// While the cancel question is up, every key answers it: `y` cancels, any other
    /// key keeps the turn running. Returns whether the key was used that way.
    pub(super) fn confirm_cancel_key(&mut self, key: &KeyEvent) -> bool {
        let Some(confirm) = self.interrupt.confirm_cancel.take() else {
            return false;
        };
        if matches!(key.code, KeyCode::Char('y' | 'Y')) {
            self.apply(UiAction::Cancel(confirm.session_id));
        } else {
            self.set_note("not cancelled: the turn keeps running", false);
        }
        true
    }
}
