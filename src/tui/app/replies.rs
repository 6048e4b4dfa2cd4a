//! The engine's replies to the TUI's commands → state: the one `match` over
//! [`EngineReply`] (issue 36), each reply taken whole (errors typed, as [`UiError`])
//! by the handler of the state that cares.
//!
//! Owns: that dispatch and the reactions of the `App`'s own state (the thread waiting
//! for a new root, opening a transcript, a turn's end, failures). Does not own: the
//! replies (`engine::handle`), the order they come in (the engine's stream, read by
//! `runloop`), or laying out an earlier part (the run loop's blocking task).

use crate::session::ids::SessionId;

use super::App;
use super::components::{DiffOverlay, HooksOverlay, McpOverlay};
use crate::engine::{EarlierMessages, EngineError, EngineReply, TurnOutcome};
use crate::session::{LoadedSession, Message, Metadata, SessionStatus};
use crate::tui::error::UiError;
use crate::tui::state::cells::CellKind;
use crate::tui::state::context::compacted_note;
use crate::tui::state::thread_earlier::{EarlierCells, EarlierLayout};
use crate::tui::state::tree::agent_from_id;
use crate::tui::views::status::model_part;

impl App {
    /// One reply of the engine: the only `match` over [`EngineReply`] in the TUI.
    pub(super) fn on_reply(&mut self, reply: EngineReply) {
        match reply {
            EngineReply::SessionCreated { session_id } => self.on_session_created(&session_id),
            EngineReply::TurnFinished(outcome) => self.on_turn_finished(outcome),
            EngineReply::Failed { session_id, error } => {
                self.on_command_failed(session_id, &error.into());
            }
            EngineReply::NotSent {
                session_id: _,
                text,
                error,
            } => self.on_not_sent(text, &error.into()),
            EngineReply::Opened {
                requested,
                session,
                earlier,
            } => self.on_transcript(&requested, Ok(session), earlier),
            EngineReply::Compactions {
                requested,
                compactions,
            } => self.on_compactions(&requested, &compactions),
            EngineReply::OpenFailed { requested, error } => {
                self.on_transcript(&requested, Err(error.into()), None);
            }
            EngineReply::Earlier {
                session_id,
                end,
                result,
            } => self.on_earlier_part(session_id, end, result),
            EngineReply::Followed(event) => {
                self.on_engine_event(&event);
            }
            EngineReply::StoredSessionChanged(metadata) => self.tree.refresh_stored(&metadata),
            EngineReply::SessionsListed(result) => {
                self.on_sessions_listed(result.map_err(Into::into))
            }
            EngineReply::ProviderLabel(label) => self.on_provider_label(label),
            EngineReply::ModelSwitched {
                session_id,
                result,
                warning,
            } => self.on_model_switched(session_id, result.map_err(Into::into), warning),
            EngineReply::DiffLoaded {
                session_id,
                subtree,
                result,
            } => {
                if let Some(diff) = self.stack.find_mut::<DiffOverlay>() {
                    diff.state
                        .load(&session_id, subtree, result.map_err(Into::into));
                }
            }
            EngineReply::SessionRenamed { session_id, result } => {
                self.on_renamed(&session_id, result.map_err(Into::into));
            }
            EngineReply::Exported {
                session_id: _,
                result,
            } => self.on_exported(result.map_err(Into::into)),
            EngineReply::ProjectFiles { root, files } => self.on_project_files(root, files),
            EngineReply::Hooks(hooks) => {
                if let Some(view) = self.stack.find_mut::<HooksOverlay>() {
                    view.listed(hooks);
                }
            }
            EngineReply::McpServers(servers) => {
                if let Some(mcp) = self.stack.find_mut::<McpOverlay>() {
                    mcp.listed(servers);
                }
            }
            EngineReply::Compacted { session_id, result } => match result {
                Ok(done) => self.set_note(compacted_note(&done), false),
                Err(e) => self.on_command_failed(Some(session_id), &e.into()),
            },
            EngineReply::Undone { session_id, result } => {
                self.on_undone(&session_id, result.map_err(Into::into));
            }
        }
    }

    /// The earlier part of a transcript opened tail-first: laid out off the UI thread
    /// when the open thread is still that session's (the run loop takes it:
    /// [`App::take_layouts`]; the cells come back as `AppEvent::EarlierLoaded`), its
    /// error shown at once.
    fn on_earlier_part(
        &mut self,
        session_id: SessionId,
        end: u64,
        result: Result<EarlierMessages, EngineError>,
    ) {
        match result {
            Ok(part) => {
                let open = self.thread.as_ref().and_then(|t| t.session_id.as_ref());
                if open == Some(&session_id) {
                    let compactions = self
                        .thread
                        .as_ref()
                        .map(|t| t.stored_compactions.clone())
                        .unwrap_or_default();
                    self.outbox.layouts.push(EarlierLayout {
                        session_id,
                        end,
                        part,
                        compactions,
                    });
                }
            }
            Err(e) => self.on_earlier(&session_id, end, Err(e.into())),
        }
    }

    /// The earlier parts waiting to be laid out off the UI thread (the run loop runs
    /// each on a blocking thread: `AppEvent::laid_out`).
    pub fn take_layouts(&mut self) -> Vec<EarlierLayout> {
        std::mem::take(&mut self.outbox.layouts)
    }

    /// The engine's label of a new root session (`EngineReply::ProviderLabel`): taken
    /// only while the current label names no model and the new one does.
    fn on_provider_label(&mut self, label: String) {
        if let Ok(current) = &mut self.status.provider_label
            && model_part(current).is_none()
            && model_part(&label).is_some()
        {
            *current = label;
        }
    }

    fn on_sessions_listed(&mut self, result: Result<Vec<Metadata>, UiError>) {
        match result {
            Ok(list) => {
                self.tree.refresh_marks(&list);
                self.tree.load(&list);
                self.list_for_placement();
                self.apply_seen(&list);
                if std::mem::take(&mut self.launch.continue_last) {
                    match self.tree.latest_root().map(str::to_string) {
                        Some(id) => self.open_thread(&id),
                        None => self.set_note("no session to continue in this project", true),
                    }
                }
            }
            Err(e) => self.set_note(format!("cannot list sessions: {e}"), true),
        }
    }

    /// The stored compactions of the session being opened, kept on its loading
    /// thread to be placed among its messages (`state::thread_compactions`).
    fn on_compactions(
        &mut self,
        requested: &str,
        compactions: &[(String, crate::session::protocol::ContextCompactionEvent)],
    ) {
        if let Some(t) = self
            .thread
            .as_mut()
            .filter(|t| t.loading && t.requested.as_deref() == Some(requested))
        {
            t.stored_compactions = crate::tui::state::thread_compactions::stored(compactions);
        }
    }

    fn on_transcript(
        &mut self,
        requested: &str,
        result: Result<Box<LoadedSession>, UiError>,
        earlier: Option<u64>,
    ) {
        let Some(thread) = &mut self.thread else {
            return;
        };
        if !thread.loading || thread.requested.as_deref() != Some(requested) {
            return;
        }
        match result {
            Ok(loaded) => {
                let m = &loaded.metadata;
                self.tree.ensure(
                    &m.session_id,
                    m.parent_id.as_deref(),
                    m.agent_name.as_deref(),
                );
                self.tree.reveal(&m.session_id);
                if std::mem::take(&mut self.launch.expand_on_load) {
                    self.tree.expand(&m.session_id);
                }
                let id = m.session_id.clone();
                let first = loaded
                    .transcript
                    .iter()
                    .find(|m| matches!(m, Message::User(_)))
                    .map(Message::text);
                match earlier {
                    Some(end) => thread.load_tail(*loaded, end),
                    None => thread.load(*loaded),
                }
                // Sub-sessions are told apart by their tasks (the tree shows them).
                if let Some(text) = first {
                    self.tree.set_task(&id, &text);
                }
                for cell in &thread.cells {
                    if let CellKind::Task(card) = &cell.kind
                        && let Some(child) = &card.child
                    {
                        self.tree.set_task(child, &card.instruction);
                    }
                }
                self.tree.set_thread_order(&id, &thread.task_children());
                if let Some(f) = self.inflight.get(&id) {
                    thread.seed_stream(&f.text, &f.thinking, &self.theme);
                }
            }
            Err(message) => {
                self.launch.expand_on_load = false;
                thread.loading = false;
                thread.session_id = None;
                thread.push_error(&message.to_string());
            }
        }
    }

    /// The earlier part of the open thread's transcript (opened tail-first) arrived:
    /// its cells go in front of the newest ones, or an error replaces the loading line.
    /// Ignored when the thread is another one or was reopened meanwhile.
    pub(super) fn on_earlier(
        &mut self,
        session_id: &str,
        end: u64,
        result: Result<Box<EarlierCells>, UiError>,
    ) {
        let Some(thread) = &mut self.thread else {
            return;
        };
        if thread.session_id.as_deref() != Some(session_id) {
            return;
        }
        match result {
            Ok(cells) => thread.earlier_loaded(*cells),
            Err(message) => thread.earlier_failed(end, &message.to_string()),
        };
    }

    /// A new root session of this TUI (`SessionCreated`; its `session:start` came
    /// before it): the thread waiting for one adopts it.
    fn on_session_created(&mut self, id: &str) {
        self.tree.ensure(id, None, None);
        if let Some(thread) = &mut self.thread
            && ((thread.awaiting_root && thread.session_id.is_none())
                || thread.session_id.as_deref() == Some(id))
        {
            thread.session_id = Some(id.into());
            thread.awaiting_root = false;
            match &thread.agent {
                Some(agent) => {
                    self.tree.ensure(id, None, Some(agent));
                }
                // Its `session:start` may have come first: the tree knows the agent.
                None => {
                    thread.agent = self
                        .tree
                        .get(id)
                        .map(|n| n.agent.clone())
                        .filter(|a| *a != agent_from_id(id));
                }
            }
            self.tree.reveal(id);
        }
    }

    fn on_turn_finished(&mut self, outcome: TurnOutcome) {
        self.tree
            .set_status(&outcome.session_id, outcome.status, self.clock.now());
        // Its sub-sessions' worktrees are recorded now: list again for their marks.
        if self
            .tree
            .get(&outcome.session_id)
            .is_some_and(|n| !n.children.is_empty())
        {
            self.send(crate::session::EngineCommand::ListSessions);
        }
        let Some(thread) = &mut self.thread else {
            return;
        };
        if thread.session_id.as_deref() != Some(outcome.session_id.as_str()) {
            return;
        }
        thread.turn_in_flight = false;
        match outcome.status {
            SessionStatus::Failed => {
                let error = outcome.error.as_ref().map(ToString::to_string);
                thread.push_error(error.as_deref().unwrap_or("the turn failed"));
            }
            SessionStatus::Cancelled => thread.push_notice("turn cancelled"),
            _ => thread.finalize_stream(),
        }
    }

    /// A command failed (`Failed`): in the thread it concerned, else a note.
    fn on_command_failed(&mut self, session_id: Option<SessionId>, error: &UiError) {
        let message = error.to_string();
        let Some(thread) = &mut self.thread else {
            self.set_note(message, true);
            return;
        };
        let ours = match &session_id {
            Some(id) => thread.session_id.as_deref() == Some(id.as_str()),
            None => thread.awaiting_root || thread.session_id.is_none(),
        };
        if ours {
            thread.awaiting_root = false;
            thread.turn_in_flight = false;
            thread.push_error(&message);
        } else {
            self.set_note(message, true);
        }
    }
}
