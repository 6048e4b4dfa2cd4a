//! Steer and queue in the open thread (SPEC §13): Enter while its turn runs steers,
//! Tab with text queues; the waiting messages can be taken back to edit or removed
//! until sent; a message the engine returns (its turn was cancelled or failed, or the
//! command failed) goes back to the composer; quitting while messages wait asks first.
//!
//! Owns: those decisions of the `App`. Does not own: the waiting list itself
//! (`state::pending`, fed by bus events), key dispatch (`input`), the inbox (engine).

use super::App;
use crate::session::ids::SessionId;
use crate::session::protocol::{PromptMode, UnqueueReason};
use crate::tui::app_event::EngineCommand;
use crate::tui::error::UiError;
use crate::tui::keymap::Action;
use crate::tui::state::pending::Unqueued;

/// A waiting message asked back for editing: its text goes to the composer when the
/// engine confirms (`prompt:unqueued`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EditRequest {
    session_id: SessionId,
    id: u64,
    /// Its place among the queued messages (`None`: a steer).
    position: Option<usize>,
}

/// A waiting message being edited in the composer: a queue key puts it back in its
/// place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Editing {
    session_id: SessionId,
    position: Option<usize>,
}

impl App {
    /// The open thread's session, when its turn runs and its id is known.
    fn running_session(&self) -> Option<SessionId> {
        if !self.thread_running() {
            return None;
        }
        self.thread.as_ref()?.session_id.clone()
    }

    /// Enter while the open thread's turn runs: `text` steers session `id`.
    pub(super) fn steer(&mut self, id: SessionId, text: String) {
        self.prompt.editing = None;
        self.prompt.composer.clear();
        self.send(EngineCommand::Steer {
            session_id: id,
            text,
        });
        self.set_note("steering: the model sees it at its next call", false);
    }

    /// Tab in the composer: queues its text as the next turn of the open thread when
    /// there is text and the thread's turn runs (a message being edited goes back to
    /// its place). Returns whether it queued; otherwise Tab keeps its other meaning.
    pub(super) fn queue_composer(&mut self) -> bool {
        if self.prompt.composer.is_empty() || self.prompt.composer.text().trim().is_empty() {
            return false;
        }
        let Some(id) = self.running_session() else {
            return false;
        };
        let position = self
            .prompt
            .editing
            .take()
            .filter(|e| e.session_id == id)
            .and_then(|e| e.position);
        let text = self.prompt.composer.text();
        self.prompt.composer.clear();
        self.send(EngineCommand::Queue {
            session_id: id,
            text,
            position,
        });
        true
    }

    /// The newest waiting message of the open thread, with its queue position.
    fn newest_waiting(&self) -> Option<(SessionId, u64, Option<usize>)> {
        let id = self.thread.as_ref()?.session_id.clone()?;
        let newest = self.pending.of(&id).last().map(|p| (p.id, p.mode))?;
        let position = match newest.1 {
            PromptMode::Steer => None,
            PromptMode::Queue => self.pending.queue_position(&id, newest.0),
        };
        Some((id, newest.0, position))
    }

    /// `composer.edit_queued`: asks the engine for the newest waiting message back; its
    /// text lands in the (empty) composer once the engine gives it up.
    pub(super) fn edit_queued(&mut self) {
        let Some((session_id, id, position)) = self.newest_waiting() else {
            self.set_note("no waiting message in this thread", true);
            return;
        };
        if !self.prompt.composer.is_empty() {
            self.set_note(
                "the composer has text: send or clear it before editing a waiting message",
                true,
            );
            return;
        }
        self.prompt.edit_request = Some(EditRequest {
            session_id: session_id.clone(),
            id,
            position,
        });
        self.send(EngineCommand::Unqueue { session_id, id });
    }

    /// `composer.remove_queued`: removes the newest waiting message (unsent).
    pub(super) fn remove_queued(&mut self) {
        match self.newest_waiting() {
            Some((session_id, id, _)) => self.send(EngineCommand::Unqueue { session_id, id }),
            None => self.set_note("no waiting message in this thread", true),
        }
    }

    /// A `prompt:unqueued`: an asked-for edit goes to the composer, a removal is
    /// noted, and a returned message (its turn cancelled or failed) goes back to the
    /// composer so nothing typed is lost.
    pub(super) fn on_unqueued(&mut self, u: Unqueued) {
        let request = self
            .prompt
            .edit_request
            .take_if(|r| r.session_id == u.session_id && r.id == u.prompt.id);
        match (u.reason, request) {
            (UnqueueReason::Removed, Some(r)) => {
                self.give_back(&u.prompt.text);
                self.prompt.editing = Some(Editing {
                    session_id: r.session_id,
                    position: r.position,
                });
                let again = match r.position {
                    Some(_) => self.keymap.label(Action::FocusNext),
                    None => self.keymap.label(Action::Submit),
                };
                self.set_note(format!("editing: {again} puts it back"), false);
            }
            (UnqueueReason::Removed, None) => {
                self.set_note(format!("removed: {}", first_line(&u.prompt.text)), false);
            }
            (UnqueueReason::Returned, _) => {
                self.give_back(&u.prompt.text);
                self.set_note(
                    "not sent (the turn stopped): the message is back in the composer",
                    true,
                );
            }
        }
    }

    /// A steer, queue or unqueue command failed: its text goes back to the composer.
    pub(super) fn on_not_sent(&mut self, text: Option<String>, error: &UiError) {
        self.prompt.edit_request = None;
        match text {
            Some(text) => {
                self.give_back(&text);
                self.set_note(format!("not sent: {error}"), true);
            }
            None => self.set_note(error.to_string(), true),
        }
    }

    /// Puts `text` into the composer (after what it holds, on a new line).
    fn give_back(&mut self, text: &str) {
        if self.prompt.composer.is_empty() {
            self.prompt.composer.paste(text);
        } else {
            self.prompt.composer.paste(&format!("\n{text}"));
        }
    }

    /// The second Ctrl+C: when messages still wait and the person was not told yet,
    /// says what quitting drops and asks for one more Ctrl+C (returns `true`: do not
    /// quit yet).
    pub(super) fn quit_needs_confirmation(&mut self) -> bool {
        let waiting = self.pending.count();
        if waiting == 0 || self.interrupt.quit_warned {
            return false;
        }
        self.interrupt.quit_warned = true;
        let plural = if waiting == 1 { "" } else { "s" };
        let key = self.keymap.label(Action::Quit);
        let now = self.clock.now();
        self.interrupt.last_ctrl_c = Some(now);
        self.status.note = Some(crate::tui::state::note::Note {
            text: format!(
                "{waiting} waiting message{plural} not sent yet — {key} again quits without them"
            ),
            warning: true,
            until: now + jiff::SignedDuration::from_millis(super::QUIT_WINDOW_MS),
        });
        true
    }
}

/// The first line of `text`, for a note.
fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}
