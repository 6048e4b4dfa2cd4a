//! The composer's popup and slash commands (issue 15 item 1): `/` at the start of the
//! composer lists the commands of the one table (`state::palette_commands`) filtered
//! by what follows; `/resume ` lists stored root sessions. Up/Down select, Enter or
//! Tab accepts, Esc closes it until the text changes (SPEC §13 key order: the popup
//! sees keys before the composer). A sent message that is a known command runs it
//! instead of going to the model; an unknown `/name` is a notice and stays in the
//! composer. The same popup serves the history search (`app::history`).
//!
//! Owns: keeping the popup in step with the composer's text, the popup's keys and
//! what each command does. Does not own: the table or parsing (`state::palette_commands`),
//! drawing (`views::palette`), the engine work (`EngineCommand::RenameSession`,
//! `ExportSession`, `SetModel`).

use std::path::PathBuf;

use crossterm::event::KeyEvent;

use super::components::find::FindBar;
use super::{App, Focus};
use crate::session::SessionId;
use crate::tui::app_event::EngineCommand;
use crate::tui::error::UiError;
use crate::tui::keymap::{Action, Context};
use crate::tui::state::palette::{Popup, PopupItem, PopupKind};
use crate::tui::state::palette_commands::{self as slash, Parsed, SLASH_COMMANDS, Slash};
use crate::tui::state::thread::Thread;

/// `/resume ` (with its space): the composer text that lists sessions to resume.
const RESUME_PREFIX: &str = "/resume ";

impl App {
    /// Handles a key while the popup is open (`Context::Palette`); returns whether it
    /// was used. Keys the popup has no binding for edit the composer (and refilter).
    pub(super) fn popup_key(
        &mut self,
        context: Context,
        key: KeyEvent,
        action: Option<Action>,
    ) -> bool {
        if context != Context::Palette || action == Some(Action::Quit) {
            return false;
        }
        match action {
            Some(Action::PaletteUp) => self.move_popup(-1),
            Some(Action::PaletteDown) => self.move_popup(1),
            Some(Action::PaletteClose) => {
                self.prompt.popup_dismissed = Some(self.prompt.composer.text());
                self.prompt.popup = None;
            }
            Some(Action::PaletteAccept) => self.accept_popup(),
            _ if self
                .prompt
                .popup
                .as_ref()
                .is_some_and(|p| p.kind == PopupKind::History) =>
            {
                self.history_search_key(key)
            }
            _ => {
                self.prompt.composer.handle_key(key, None);
                self.refresh_popup();
            }
        }
        true
    }

    fn move_popup(&mut self, delta: isize) {
        if let Some(p) = &mut self.prompt.popup {
            p.move_selection(delta);
        }
    }

    /// Recomputes the popup from the composer's text (after every edit).
    pub(super) fn refresh_popup(&mut self) {
        if self
            .prompt
            .popup
            .as_ref()
            .is_some_and(|p| p.kind == PopupKind::History)
        {
            return;
        }
        let text = self.prompt.composer.text();
        if self.prompt.popup_dismissed.as_deref() == Some(text.as_str()) {
            self.prompt.popup = None;
            return;
        }
        self.prompt.popup_dismissed = None;
        self.want_files();
        let mut fresh = self.popup_for(&text);
        if let (Some(new), Some(old)) = (&mut fresh, &self.prompt.popup) {
            new.keep_selection_from(old);
        }
        self.prompt.popup = fresh;
    }

    fn popup_for(&self, text: &str) -> Option<Popup> {
        if let Some(name) = slash::typed_name(text) {
            let mut rows = slash::rows(name);
            rows.extend(custom_rows(name));
            return (!rows.is_empty()).then(|| Popup::new(PopupKind::Commands, name, rows));
        }
        if let Some(query) = text.strip_prefix(RESUME_PREFIX)
            && !query.contains('\n')
        {
            return Some(Popup::new(
                PopupKind::Sessions,
                query,
                self.session_rows(query.trim()),
            ));
        }
        self.file_popup()
    }

    /// Stored and live root sessions whose title, agent or id contains `query`
    /// (case-insensitive), newest first.
    fn session_rows(&self, query: &str) -> Vec<PopupItem> {
        let q = query.to_lowercase();
        self.tree
            .roots()
            .iter()
            .filter_map(|id| self.tree.get(id))
            .filter(|n| {
                q.is_empty()
                    || n.label().to_lowercase().contains(&q)
                    || n.agent.to_lowercase().contains(&q)
                    || n.id.starts_with(&q)
            })
            .map(|n| {
                let short: String = n.id.chars().take(8).collect();
                let when = n
                    .created
                    .map(|c| format!(" · {}", when_created(c, self.clock.now())))
                    .unwrap_or_default();
                PopupItem {
                    label: n.label().to_string(),
                    detail: format!("#{short} · {} · {}{when}", n.agent, n.status.as_str()),
                    value: n.id.clone(),
                }
            })
            .collect()
    }

    /// Enter/Tab on the selected row.
    fn accept_popup(&mut self) {
        let Some(popup) = self.prompt.popup.take() else {
            return;
        };
        let Some(item) = popup.current().cloned() else {
            // Nothing matches: the text is sent as it is (`/resume PREFIX` still
            // resolves a prefix of an id).
            let text = self.prompt.composer.text();
            self.apply(crate::tui::app_event::UiAction::Submit(text));
            return;
        };
        match popup.kind {
            PopupKind::Commands => {
                let Some(spec) = SLASH_COMMANDS.iter().find(|s| s.name == item.value) else {
                    // A command file's: complete `/name ` for its arguments.
                    self.prompt.composer.set_text(&format!("/{} ", item.value));
                    self.prompt.popup_dismissed = Some(self.prompt.composer.text());
                    return;
                };
                if spec.needs_arg {
                    self.prompt.composer.set_text(&format!("/{} ", spec.name));
                    self.refresh_popup();
                } else {
                    self.prompt.composer.clear();
                    self.remember(&format!("/{}", spec.name));
                    self.run_slash(spec.command, "");
                }
            }
            PopupKind::Sessions => {
                self.prompt.composer.clear();
                self.resume(&item.value);
            }
            PopupKind::History => self.accept_history(&item.value),
            // A path typed out in full: Enter sends rather than adding a space.
            PopupKind::Files if popup.query == item.value => {
                let text = self.prompt.composer.text();
                self.prompt.popup_dismissed = Some(text.clone());
                self.apply(crate::tui::app_event::UiAction::Submit(text));
            }
            PopupKind::Files => self.accept_file(&popup.query, &item.value),
        }
    }

    /// `text` with a command file's `/name args` expanded into its prompt (issue 29),
    /// read from the files now (an edited file counts at once); the built-in commands
    /// win over a file of the same name. The status bar names the file.
    pub(super) fn expand_custom(&mut self, text: String) -> String {
        if !matches!(slash::parse(text.trim_end()), Parsed::Unknown(_)) {
            return text;
        }
        let paths = crate::paths::Paths::from_env();
        match crate::agent::commands::expand_message(&paths, &text) {
            Some((command, prompt)) => {
                self.set_note(
                    format!("/{} from {}", command.name, command.source()),
                    false,
                );
                prompt
            }
            None => text,
        }
    }

    /// A message about to be sent: runs it when it is a slash command (returns true),
    /// says so when it is an unknown one (true: not sent, kept in the composer), else
    /// false (send it).
    pub(super) fn slash_submitted(&mut self, text: &str) -> bool {
        match slash::parse(text.trim_end()) {
            Parsed::Text => false,
            Parsed::Unknown(name) => {
                self.set_note(
                    format!("unknown command /{name}: type / to list the commands (not sent)"),
                    true,
                );
                true
            }
            Parsed::Command(spec, arg) => {
                let arg = arg.to_string();
                self.prompt.composer.clear();
                self.prompt.popup = None;
                self.run_slash(spec.command, &arg);
                true
            }
        }
    }

    /// What each slash command does.
    fn run_slash(&mut self, command: Slash, arg: &str) {
        let open = self.thread.as_ref().and_then(|t| t.session_id.clone());
        match command {
            Slash::Agents => self.act(Action::Agents),
            Slash::Help => self.act(Action::Help),
            Slash::Mcp => self.act(Action::Mcp),
            Slash::Hooks => self.act(Action::Hooks),
            Slash::Wall => self.act(Action::ChatWall),
            Slash::Diff => self.act(Action::ChatDiff),
            Slash::Model => {
                // A refused choice stays in the composer to fix.
                if !self.switch_model_to(arg) && !arg.trim().is_empty() {
                    self.prompt.composer.set_text(&format!("/model {arg}"));
                }
            }
            Slash::New | Slash::Clear => self.new_session(command == Slash::Clear, arg, open),
            Slash::Resume if arg.is_empty() => {
                self.prompt.composer.set_text(RESUME_PREFIX);
                self.refresh_popup();
            }
            Slash::Resume => self.resume(arg),
            Slash::Rename => match (open, arg.is_empty()) {
                (_, true) => self.set_note("usage: /rename TITLE", true),
                (None, _) => self.set_note(
                    "nothing to rename: the session starts with its first message",
                    true,
                ),
                (Some(session_id), _) => self.send(EngineCommand::RenameSession {
                    session_id,
                    title: arg.to_string(),
                }),
            },
            Slash::Compact => match open {
                None => self.set_note("nothing to compact: the session has not started", true),
                Some(session_id) => {
                    self.set_note("compacting…", false);
                    self.send(EngineCommand::Compact {
                        session_id,
                        focus: arg.trim().to_string(),
                    });
                }
            },
            Slash::Export => match open {
                None => self.set_note(
                    "nothing to export: the session starts with its first message",
                    true,
                ),
                Some(session_id) => {
                    self.set_note("exporting…", false);
                    self.send(EngineCommand::ExportSession { session_id });
                }
            },
        }
    }

    /// `/new [AGENT]` keeps the open thread's agent (or takes AGENT, when there is
    /// one of that name); `/clear` (`clear`) goes back to the default agent and closes
    /// the find bar. Either opens a fresh root thread, the `open` session staying in
    /// the tree, and says so.
    fn new_session(&mut self, clear: bool, arg: &str, open: Option<SessionId>) {
        let agent = if clear {
            self.stack.close::<FindBar>();
            self.default_agent.clone()
        } else if !arg.trim().is_empty() {
            let name = arg.trim();
            if self.registry.get(name).is_none() {
                self.set_note(format!("no agent {name}: /agents lists them (F2)"), true);
                self.prompt.composer.set_text(&format!("/new {arg}"));
                return;
            }
            Some(name.to_string())
        } else {
            self.thread
                .as_ref()
                .and_then(|t| t.agent.clone())
                .filter(|a| self.registry.get(a).is_some())
                .or_else(|| self.default_agent.clone())
        };
        let who = agent.clone().unwrap_or_else(|| "the default agent".into());
        let mut thread = Thread::new_root(agent);
        thread.cleared = clear;
        self.thread = Some(thread);
        self.stack.close_overlays();
        self.focus = Focus::Composer;
        let kept = open
            .map(|id| format!(" · #{} stays in the tree", short(&id)))
            .unwrap_or_default();
        let note = if clear {
            format!("fresh session{kept}")
        } else {
            format!("new session with {who}: the next message starts it{kept}")
        };
        self.set_note(note, false);
    }

    /// Opens stored session `id` (or unique prefix) in the chat.
    fn resume(&mut self, id: &str) {
        self.open_thread(id);
        self.focus = Focus::Chat;
    }

    /// The answer to `/rename`.
    pub(super) fn on_renamed(&mut self, session_id: &str, result: Result<String, UiError>) {
        match result {
            Ok(title) => {
                self.tree.set_title(session_id, &title);
                self.set_note(
                    format!("renamed #{} to “{title}”", short(session_id)),
                    false,
                );
            }
            Err(e) => self.set_note(format!("not renamed: {e}"), true),
        }
    }

    /// The answer to `/export`.
    pub(super) fn on_exported(&mut self, result: Result<PathBuf, UiError>) {
        match result {
            Ok(path) => self.set_note(format!("exported to {}", path.display()), false),
            Err(e) => self.set_note(format!("not exported: {e}"), true),
        }
    }

    /// The popup, while it is open.
    pub fn popup(&self) -> Option<&Popup> {
        self.prompt.popup.as_ref()
    }
}

fn short(id: &str) -> String {
    id.chars().take(8).collect()
}

/// When a session was created (or a prompt sent), for the `/resume` and Ctrl+R
/// lists: its age within a day (`5m ago`), else its date (`2025-03-01`, UTC).
pub(super) fn when_created(created: jiff::Timestamp, now: jiff::Timestamp) -> String {
    let age = crate::tui::clock::millis_between(created, now);
    if age < 86_400_000 {
        crate::tui::views::tree::format_age(age)
    } else {
        created.strftime("%Y-%m-%d").to_string()
    }
}

/// Palette rows of the command files (read now) whose name starts with or contains
/// `query`, after the built-in ones: `/name [hint]`, its description and source.
fn custom_rows(query: &str) -> Vec<PopupItem> {
    let q = query.to_lowercase();
    let mut commands = crate::agent::commands::discover(&crate::paths::Paths::from_env());
    commands.retain(|c| c.name.to_lowercase().contains(&q));
    commands.sort_by_key(|c| !c.name.to_lowercase().starts_with(&q));
    commands
        .into_iter()
        .filter(|c| !SLASH_COMMANDS.iter().any(|s| s.name == c.name))
        .map(|c| PopupItem {
            label: match &c.argument_hint {
                Some(hint) => format!("/{} {hint}", c.name),
                None => format!("/{}", c.name),
            },
            detail: format!("{} ({})", c.description, c.source()),
            value: c.name,
        })
        .collect()
}
