//! Terminal input → state changes: key dispatch through the keymap, mouse, paste, and
//! the [`UiAction`]s widgets emit.

use crossterm::event::{Event, KeyEvent};

use super::{App, Focus, QUIT_WINDOW_MS};
use crate::session::SessionStatus;
use crate::session::protocol::{AllowScope, ApprovalDecision};
use crate::tui::app_event::{EngineCommand, KeyOutcome, UiAction};
use crate::tui::keymap::{Action, Context, KeyBinding};
use crate::tui::state::note::Note;
use crate::tui::state::thread::Thread;

impl App {
    pub(super) fn on_input(&mut self, event: Event) {
        match event {
            Event::Key(key) => self.on_key(key),
            Event::Paste(text) => self.on_paste(&text),
            Event::Mouse(m) => self.on_mouse(m),
            _ => {}
        }
    }

    fn on_key(&mut self, key: KeyEvent) {
        let Some(binding) = KeyBinding::from_event(&key) else {
            return;
        };
        let context = self.key_context();
        // The cancel question takes the key, unless a prompt is up (it answers first).
        if !matches!(
            context,
            Context::Approval | Context::Trust | Context::Confirm
        ) && self.confirm_cancel_key(&key)
        {
            return;
        }
        // An Esc that closes something never counts toward a cancel (`cancel`).
        if key.code == crossterm::event::KeyCode::Esc
            && !matches!(context, Context::Chat | Context::Tree | Context::Composer)
        {
            self.esc_closed(self.clock.now());
        }
        // The overlays, prompts and bars first (`stack`), then the focused pane.
        if self.stack_key(&key, &binding) {
            return;
        }
        let context = self.pane_context();
        let action = self.keymap.resolve(context, &binding);
        if self.popup_key(context, key, action) || self.history_key(context, key, action) {
            return;
        }
        // Tab queues the composer's text while the open thread's turn runs (SPEC §13).
        if context == Context::Composer
            && action == Some(Action::FocusNext)
            && self.queue_composer()
        {
            return;
        }
        if context == Context::Composer
            && matches!(action, None | Some(Action::Submit | Action::Newline))
        {
            if let KeyOutcome::Emit(a) = self.prompt.composer.handle_key(key, action) {
                self.apply(a);
            }
            self.refresh_popup();
            return;
        }
        match action {
            Some(action) => self.act(action),
            None if matches!(context, Context::Chat | Context::Tree) && binding.is_text() => {
                // Typing while reading goes to the composer.
                self.focus = Focus::Composer;
                self.prompt.composer.handle_key(key, None);
                self.refresh_popup();
            }
            None => {}
        }
    }

    /// A pane or global action. An action that opens a component is in
    /// `components::opener`; the overlays' own actions reach their components
    /// through the stack.
    pub(super) fn act(&mut self, action: Action) {
        if self.open_component(action) {
            return;
        }
        match action {
            Action::Quit => self.ctrl_c(),
            Action::FocusNext => self.cycle_focus(true),
            Action::FocusPrev => self.cycle_focus(false),
            Action::CancelTurn => self.cancel_open_thread(),
            Action::NextNeedsYou => self.jump_to_needs_you(),
            Action::NewSession => self.new_root_thread(),
            Action::SwitchModel => self.switch_model(),
            Action::PageUp | Action::PageDown => self.page(action == Action::PageUp),
            Action::TreeUp => self.tree.move_selection(-1),
            Action::TreeDown => self.tree.move_selection(1),
            Action::TreeTop | Action::TreeBottom => {
                self.tree.select_end(action == Action::TreeBottom)
            }
            Action::TreeCollapse => self.tree.set_collapsed(true),
            Action::TreeExpand => self.tree.set_collapsed(false),
            Action::TreeOpen => self.open_selected(),
            Action::TreeCancel => self.cancel_selected(),
            Action::TreeContinue => self.continue_selected(),
            Action::TreeContinueInterrupted => self.continue_interrupted(),
            Action::ChatUp | Action::ChatDown => self.step_cell(action == Action::ChatUp),
            Action::ChatActivate | Action::ChatToggle => {
                self.activate_cell(action == Action::ChatToggle);
            }
            Action::ChatTop => self.scroll_to_top(),
            Action::ChatBottom => self.scroll_to_bottom(),
            Action::EditQueued => self.edit_queued(),
            Action::RemoveQueued => self.remove_queued(),
            Action::PrevMessage | Action::NextMessage => {
                self.step_message(action == Action::PrevMessage)
            }
            Action::Copy | Action::CopyCode => self.copy(action == Action::CopyCode),
            Action::Mouse => self.toggle_mouse(),
            // The composer's, its popup's and the history's keys were handled before
            // (`on_key`); every other action belongs to an overlay, prompt or bar and
            // reaches its component through the stack.
            _ => {}
        }
    }

    /// A new root thread with the default agent, the composer focused to write its
    /// first prompt.
    fn new_root_thread(&mut self) {
        self.thread = Some(Thread::new_root(self.default_agent.clone()));
        self.focus = Focus::Composer;
    }

    /// Opens the tree's selected session in the chat, focused.
    fn open_selected(&mut self) {
        if let Some(id) = self.tree.selected.clone() {
            self.open_thread(&id);
            self.focus = Focus::Chat;
        }
    }

    /// Cancels the tree's selected session's turn (and its subtree's).
    fn cancel_selected(&mut self) {
        if let Some(id) = self.tree.selected.clone() {
            self.apply(UiAction::Cancel(id.into()));
        }
    }

    /// `r` on the selected node: continues it when it is stopped (interrupted, failed,
    /// cancelled, paused); says why not otherwise.
    fn continue_selected(&mut self) {
        let Some(node) = self
            .tree
            .selected
            .as_deref()
            .and_then(|id| self.tree.get(id))
        else {
            return;
        };
        let (id, name, status) = (node.id.clone(), node.label().to_string(), node.status);
        if !matches!(
            status,
            SessionStatus::Interrupted
                | SessionStatus::Failed
                | SessionStatus::Cancelled
                | SessionStatus::Paused
        ) {
            let why = format!(
                "{name} is {}: {} continues a stopped session (interrupted, failed, cancelled, paused)",
                status.as_str(),
                self.keymap.label(Action::TreeContinue)
            );
            self.set_note(why, true);
            return;
        }
        if let Some(t) = &mut self.thread
            && t.session_id.as_deref() == Some(id.as_str())
        {
            t.turn_in_flight = true;
        }
        self.send(EngineCommand::Continue {
            session_id: id.into(),
        });
        self.set_note(format!("continuing {name}…"), false);
    }

    /// `R`: resumes every interrupted session of the selected node's tree, children
    /// first (the engine orders them).
    fn continue_interrupted(&mut self) {
        let Some(root) = self
            .tree
            .selected
            .as_deref()
            .and_then(|id| self.tree.root_of(id))
            .map(str::to_string)
        else {
            return;
        };
        let count = self.tree.interrupted_below(&root);
        if count == 0 {
            self.set_note("no interrupted session in this tree", true);
            return;
        }
        self.send(EngineCommand::ContinueInterrupted {
            session_id: root.into(),
        });
        let plural = if count == 1 { "" } else { "s" };
        self.set_note(
            format!("resuming {count} interrupted session{plural}…"),
            false,
        );
    }

    fn ctrl_c(&mut self) {
        let now = self.clock.now();
        let within = self
            .interrupt
            .last_ctrl_c
            .is_some_and(|t| now.as_millisecond() - t.as_millisecond() <= QUIT_WINDOW_MS);
        if within {
            if !self.quit_needs_confirmation() {
                self.interrupt.quit = true;
            }
        } else {
            self.interrupt.quit_warned = false;
            self.interrupt.last_ctrl_c = Some(now);
            let until = now + jiff::SignedDuration::from_millis(QUIT_WINDOW_MS);
            self.status.note = Some(Note {
                text: "press Ctrl+C again to quit".into(),
                warning: true,
                until,
            });
        }
    }

    fn cycle_focus(&mut self, forward: bool) {
        const ORDER: [Focus; 3] = [Focus::Tree, Focus::Chat, Focus::Composer];
        let i = ORDER.iter().position(|f| *f == self.focus).unwrap_or(2);
        let next = if forward { (i + 1) % 3 } else { (i + 2) % 3 };
        self.focus = ORDER[next];
    }

    fn on_paste(&mut self, text: &str) {
        if self.stack_paste(text) {
            return;
        }
        self.stack.close_overlays();
        self.focus = Focus::Composer;
        // A pasted (dragged) file of the project attaches as `@path` does.
        let mentions = self
            .prompt
            .files
            .root
            .as_deref()
            .and_then(|root| crate::tui::state::mentions::pasted_paths(text, root));
        match mentions {
            Some(mentions) => self.prompt.composer.paste(&mentions),
            None => self.prompt.composer.paste(text),
        }
        self.refresh_popup();
    }

    /// Performs a widget's request.
    pub(super) fn apply(&mut self, action: UiAction) {
        match action {
            UiAction::Submit(text) => self.submit(text),
            UiAction::OpenThread(id) => self.open_thread(&id),
            UiAction::Cancel(id) => {
                let agent = self
                    .tree
                    .get(&id)
                    .map(|n| n.agent.clone())
                    .unwrap_or_else(|| id.to_string());
                self.send(EngineCommand::Cancel { session_id: id });
                self.set_note(format!("cancelling {agent}…"), false);
            }
            UiAction::StartWithAgent(name) => {
                self.thread = Some(Thread::new_root(Some(name)));
                self.stack.close_overlays();
                self.focus = Focus::Composer;
            }
            UiAction::EditFile(path) => self.outbox.editor_request = Some(path),
            UiAction::Note(text) => self.set_note(text, true),
            UiAction::ResolveApproval {
                session_id,
                tool_call_id,
                decision,
            } => {
                self.tree
                    .set_waiting(self.stack.approval.queue.waiting_sessions());
                self.set_note(answer_note(&decision), false);
                self.send(EngineCommand::ResolveApproval {
                    session_id,
                    tool_call_id,
                    decision,
                });
            }
            UiAction::ResolveAndSave {
                session_id,
                tool_call_id,
                decision,
                rule,
            } => {
                self.tree
                    .set_waiting(self.stack.approval.queue.waiting_sessions());
                let note = self.save_rule(&rule);
                let failed = note.starts_with("not saved");
                self.own_config_write = !failed;
                self.set_note(format!("{}; {note}", answer_note(&decision)), failed);
                self.send(EngineCommand::ResolveApproval {
                    session_id,
                    tool_call_id,
                    decision,
                });
            }
            // The trust prompt's component answers it (`components::trust`).
            UiAction::AnswerTrust { .. } => {}
        }
    }

    fn submit(&mut self, text: String) {
        self.remember(&text);
        let text = self.expand_custom(text);
        if self.slash_submitted(&text) {
            return;
        }
        let running = self.thread_running();
        let thread = self
            .thread
            .get_or_insert_with(|| Thread::new_root(self.default_agent.clone()));
        if thread.loading {
            self.set_note(
                "the thread is still loading; your message stays in the composer",
                true,
            );
            return;
        }
        if running
            && !thread.awaiting_root
            && let Some(id) = thread.session_id.clone()
        {
            self.steer(id, text);
            return;
        }
        if running || thread.awaiting_root {
            self.set_note(
                "the session is still starting; your message stays in the composer",
                true,
            );
            return;
        }
        // The model gets the mentioned files; the thread shows what it got.
        let prompt = self.attach_mentions(&text);
        let Some(thread) = self.thread.as_mut() else {
            return;
        };
        let command = match &thread.session_id {
            Some(id) => EngineCommand::Submit {
                session_id: Some(id.clone()),
                agent: None,
                prompt: prompt.clone(),
                cleared: false,
            },
            None => {
                thread.awaiting_root = true;
                EngineCommand::Submit {
                    session_id: None,
                    agent: thread.agent.clone(),
                    prompt: prompt.clone(),
                    cleared: thread.cleared,
                }
            }
        };
        thread.turn_in_flight = true;
        thread.push_user_echo(&prompt);
        thread.selected = None;
        self.prompt.composer.clear();
        self.prompt.editing = None;
        self.send(command);
    }

    /// Opens `id`'s thread (loading its transcript), unless it is already open.
    pub(super) fn open_thread(&mut self, id: &str) {
        if self.thread.as_ref().and_then(|t| t.session_id.as_deref()) == Some(id) {
            return;
        }
        let agent = self.tree.get(id).map(|n| n.agent.clone());
        self.thread = Some(Thread::loading(id, agent));
        self.tree.reveal(id);
        self.send(EngineCommand::LoadTranscript {
            session_id: id.into(),
        });
    }
}

impl App {
    /// Saves `rule` as `allow` in the user's config file; returns the note to show.
    fn save_rule(&self, rule: &str) -> String {
        use crate::config::approvals::{Decision, save};
        let Some(path) = &self.config_file else {
            return "not saved: no config file".to_string();
        };
        match save::save_rule(path, rule, Decision::Allow) {
            Ok(save::Saved::Added) => format!("saved \"{rule}\": allow to {}", path.display()),
            Ok(save::Saved::AlreadyThere) => {
                format!("\"{rule}\" was already in {}", path.display())
            }
            Err(e) => format!("not saved: {e}"),
        }
    }
}

/// The status-bar note after answering an approval.
fn answer_note(decision: &ApprovalDecision) -> String {
    match decision {
        ApprovalDecision::Allow {
            scope: AllowScope::Once,
        } => "allowed once".to_string(),
        ApprovalDecision::Allow {
            scope: AllowScope::AlwaysTool,
        } => "allowed always for this tool in this tree".to_string(),
        ApprovalDecision::Allow {
            scope: AllowScope::AlwaysPrefix(prefix),
        } => format!("allowed always in this tree: bash({prefix}*)"),
        ApprovalDecision::Deny { reason: None } => "denied".to_string(),
        ApprovalDecision::Deny {
            reason: Some(reason),
        } => format!("denied: {reason}"),
    }
}
