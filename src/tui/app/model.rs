//! Switching a model from the TUI (issue 15 item 5): the `global.model` key reads the
//! composer's text as the choice (`MODEL` or `PROVIDER/MODEL`) and asks the engine to
//! switch the open session — or, before the open thread's root session exists, new
//! root sessions — to it ([`EngineCommand::SetModel`]); the answer is a status-bar
//! note, never a modal. The `/model NAME` slash command sends the same command.
//!
//! A choice with whitespace is refused (the composer keeps it: it was a message), and
//! a model its provider's list lacks is switched to with a warning note.
//!
//! Owns: reading the choice from the composer and showing the result. Does not own:
//! resolving or recording the choice (`Runtime::set_model`).

use super::App;
use crate::session::ids::SessionId;
use crate::tui::app_event::EngineCommand;
use crate::tui::error::UiError;
use crate::tui::keymap::Action;
use crate::tui::views::status::display_label;

impl App {
    /// The `global.model` key: the composer's one-line text is the model choice, sent
    /// for the open thread's session (new root sessions while it has none); an empty
    /// composer only says how, and which model is in use now.
    pub(super) fn switch_model(&mut self) {
        let text = self.prompt.composer.text();
        if self.switch_model_to(&text) {
            self.prompt.composer.clear();
        }
    }

    /// Switches to `choice` (trimmed; `/model NAME` and the `global.model` key):
    /// sends [`EngineCommand::SetModel`] and returns true, or — for an empty choice —
    /// only says how, and which model is in use now. A choice with whitespace inside
    /// is no model name (a message typed before the key): refused with a note, and the
    /// composer keeps it.
    pub(super) fn switch_model_to(&mut self, choice: &str) -> bool {
        let model = choice.trim();
        if model.contains(char::is_whitespace) {
            let key = self.keymap.label(Action::SwitchModel);
            let shown: String = model.chars().take(30).collect();
            let cut = if shown.len() < model.len() { "…" } else { "" };
            self.set_note(
                format!(
                    "not a model name (it has spaces): \"{shown}{cut}\" stays in the composer; {key} takes MODEL or PROVIDER/MODEL"
                ),
                true,
            );
            return false;
        }
        if model.is_empty() {
            let now = match &self.status.provider_label {
                Ok(label) => display_label(label),
                Err(_) => "no provider".to_string(),
            };
            let key = self.keymap.label(Action::SwitchModel);
            self.set_note(
                format!("model: {now} · type MODEL or PROVIDER/MODEL in the composer, then {key}"),
                false,
            );
            return false;
        }
        let session_id = self.thread.as_ref().and_then(|t| t.session_id.clone());
        let model = model.to_string();
        self.set_note(format!("switching the model to {model}…"), false);
        self.send(EngineCommand::SetModel { session_id, model });
        true
    }

    /// The engine's answer: once switched, the status bar (when it concerns the open
    /// thread) and the session's tree node show the label, and a note says what it
    /// applies to; a refused choice is a warning note.
    pub(super) fn on_model_switched(
        &mut self,
        session_id: Option<SessionId>,
        result: Result<String, UiError>,
        warning: Option<String>,
    ) {
        let label = match result {
            Ok(label) => label,
            Err(e) => {
                self.set_note(format!("model not switched: {e}"), true);
                return;
            }
        };
        let scope = match &session_id {
            Some(id) => {
                self.tree.set_model(id, &label);
                "this session's next turns"
            }
            None => "new sessions",
        };
        let open = self.thread.as_ref().and_then(|t| t.session_id.as_deref());
        if session_id.as_deref() == open {
            self.status.provider_label = Ok(label.clone());
        }
        match warning {
            Some(w) => self.set_note(format!("model {label} for {scope} · {w}"), true),
            None => self.set_note(format!("model {label} for {scope}"), false),
        }
    }
}
