//! "Needs you" in the `App` (SPEC §13): keeping the open thread's session marked as
//! seen, noticing sessions that start needing the person (a notification when one is
//! not the open thread: config `notify:`), and the jump key.
//!
//! Seeing a failed or interrupted session is kept across restarts (`state::seen`).
//!
//! Owns: when to notify and what the notification says, and the jump. Does not own:
//! the rule itself (`state::tree::needs_you`) or the bytes (`notify`).

use std::collections::HashSet;

use super::App;
use crate::config::Notify;
use crate::session::{Metadata, SessionId, SessionStatus};
use crate::tui::app_event::{AppEvent, EngineReply};
use crate::tui::clock::parse_ts;
use crate::tui::notify::Notification;
use crate::tui::state::seen::SeenStore;
use crate::tui::views::WAITING_GLYPH;

/// Which sessions need the person, and how to tell them.
#[derive(Default)]
pub(super) struct Attention {
    /// How to tell the person a session started needing them (config `notify:`).
    pub notify: Notify,
    /// The sessions that needed the person after the last event (to notice new ones).
    pub needs_you: HashSet<String>,
    /// Failed / interrupted sessions the person has seen, kept across restarts.
    pub seen: SeenStore,
}

impl App {
    /// How the person is told a session started needing them (config `notify:`;
    /// [`Notify::Bell`] until set).
    pub fn set_notify(&mut self, notify: Notify) {
        self.attention.notify = notify;
    }

    /// Uses `seen` (loaded by `tui::run` from `Paths::seen_file`) from now on: stored
    /// sessions the person already saw fail or stop do not count again.
    pub fn set_seen_store(&mut self, seen: SeenStore) {
        self.attention.seen = seen;
    }

    /// After a listing: marks seen the listed sessions whose acknowledgement still
    /// holds (same status, not updated since; `state::seen`).
    pub(super) fn apply_seen(&mut self, listed: &[Metadata]) {
        for m in listed {
            let now = self.tree.get(&m.session_id).map(|n| n.status);
            let holds = self.attention.seen.acknowledged(
                &m.session_id,
                m.status,
                parse_ts(&m.last_updated),
            );
            if now == Some(m.status) && holds {
                self.tree.mark_seen(&m.session_id);
            } else if !holds && let Err(e) = self.attention.seen.forget(&m.session_id) {
                tracing::warn!("needs-you acknowledgements not saved: {e}");
            }
        }
    }

    /// Keeps the acknowledgements in step with the tree: the open failed or interrupted
    /// session is recorded as seen; one whose status changed since is forgotten.
    fn persist_seen(&mut self, open: Option<&str>) {
        let now = self.clock.now();
        let mut errors = Vec::new();
        if let Some(node) = open.and_then(|id| self.tree.get(id))
            && node.seen
            && matches!(
                node.status,
                SessionStatus::Failed | SessionStatus::Interrupted
            )
            && self.attention.seen.status_of(&node.id) != Some(node.status)
        {
            let (id, status) = (node.id.clone(), node.status);
            errors.extend(self.attention.seen.record(&id, status, now).err());
        }
        let moved: Vec<String> = self
            .attention
            .seen
            .ids()
            .filter(|id| {
                self.tree
                    .get(id)
                    .is_some_and(|n| Some(n.status) != self.attention.seen.status_of(id))
            })
            .map(str::to_string)
            .collect();
        for id in moved {
            errors.extend(self.attention.seen.forget(&id).err());
        }
        if let Some(e) = errors.first() {
            tracing::warn!("needs-you acknowledgements not saved: {e}");
        }
    }

    /// Takes the notification due, if any (the run loop writes it to the terminal).
    pub fn take_notification(&mut self) -> Option<Notification> {
        self.outbox.notification.take()
    }

    /// How many sessions need the person now (the status bar's count).
    pub fn needs_you_count(&self) -> usize {
        self.tree.needs_you_count()
    }

    /// How [`App::sync_needs_you`] follows `event`: `None` when it cannot change who
    /// needs the person (ticks; a streamed delta, as the dispatcher says:
    /// `App::on_engine_event`); `Some(quiet)` otherwise, `quiet` for a listing of
    /// stored sessions (they did not just start needing anyone).
    pub(super) fn needs_you_sync(event: &AppEvent) -> Option<bool> {
        match event {
            AppEvent::Tick => None,
            AppEvent::Reply(EngineReply::SessionsListed(_)) => Some(true),
            _ => Some(false),
        }
    }

    /// After an event was applied: the open thread's session counts as seen, and a
    /// session that newly needs the person while another thread is open makes a
    /// notification (several at once make one) unless `quiet`.
    pub(super) fn sync_needs_you(&mut self, quiet: bool) {
        let open = self.open_session_id();
        if let Some(id) = &open {
            self.tree.mark_seen(id);
        }
        self.persist_seen(open.as_deref());
        let now: HashSet<String> = self
            .tree
            .needs_you_ids()
            .into_iter()
            .map(str::to_string)
            .collect();
        if !quiet && self.attention.notify != Notify::Off {
            let fresh: Vec<&String> = now
                .iter()
                .filter(|id| {
                    !self.attention.needs_you.contains(*id) && open.as_deref() != Some(id.as_str())
                })
                .collect();
            if let Some(first) = fresh.first() {
                let text = self.needs_you_text(first, fresh.len());
                self.outbox.notification = Some(Notification {
                    mode: self.attention.notify,
                    text,
                });
            }
        }
        self.attention.needs_you = now;
    }

    /// `arbor: explorer needs you (failed)`, `… and 2 more` when several started at once.
    fn needs_you_text(&self, id: &str, count: usize) -> String {
        let (label, why) = self.why_needs_you(id);
        let more = match count {
            0 | 1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        format!("arbor: {label} needs you ({why}){more}")
    }

    /// The session's title or agent, and why it needs the person.
    fn why_needs_you(&self, id: &str) -> (String, &'static str) {
        let Some(node) = self.tree.get(id) else {
            return (id.to_string(), "waiting");
        };
        let why = if self.tree.is_waiting(id) {
            "waiting for approval"
        } else {
            match node.status {
                SessionStatus::Paused => "paused",
                SessionStatus::Failed => "failed",
                SessionStatus::Interrupted => "interrupted",
                _ => "waiting",
            }
        };
        (node.label().to_string(), why)
    }

    /// The jump key: opens the thread of the next session that needs the person after
    /// the selected one (tree order, wrapping around) and selects it; says so when none
    /// does.
    pub(super) fn jump_to_needs_you(&mut self) {
        let after = self
            .tree
            .selected
            .clone()
            .or_else(|| self.open_session_id().map(String::from));
        let Some(id) = self
            .tree
            .next_needs_you(after.as_deref())
            .map(str::to_string)
        else {
            self.set_note("nothing needs you", false);
            return;
        };
        let (label, why) = self.why_needs_you(&id);
        self.tree.reveal(&id);
        self.open_thread(&id);
        self.set_note(format!("{WAITING_GLYPH} {label}: {why}"), false);
    }

    fn open_session_id(&self) -> Option<SessionId> {
        self.thread.as_ref().and_then(|t| t.session_id.clone())
    }
}
