//! Engine-side inputs → state: bus events (through the TUI's one dispatcher,
//! `state::dispatch`), registry reloads, watcher events, the editor returning. (The
//! engine's replies: `replies`.)

use std::path::Path;
use std::sync::Arc;

use super::{App, ThemeSource};
use crate::agent::Registry;
use crate::agent::reload::{RegistryDiff, ReloadEvent};
use crate::session::Event;
use crate::tui::error::UiError;
use crate::tui::state::browser::{RELOAD_MARK_MS, ReloadMark, reload_summary};
use crate::tui::state::dispatch::{Listeners, OpenThread, dispatch};
use crate::tui::theme::Theme;
use crate::tui::views::status::model_part;

impl App {
    /// One engine event: the TUI's dispatcher (`state::dispatch`, the one `match`
    /// over events) hands it to the states that care — the tree, the in-flight
    /// streams, the waiting messages, the open thread, the approval prompts and the
    /// open wall; then the `App` does what it heard (a message given back, a model
    /// learned, a listing for a remote child's place). Returns whether the event may
    /// change who needs the person (a streamed delta cannot).
    pub(super) fn on_engine_event(&mut self, event: &Event) -> bool {
        let (approvals, wall) = self.stack.listeners();
        let listeners = Listeners {
            tree: &mut self.tree,
            inflight: Some(&mut self.inflight),
            pending: Some(&mut self.pending),
            thread: self.thread.as_mut().map(|thread| OpenThread {
                thread,
                theme: &self.theme,
            }),
            approvals: Some((approvals, self.clock.now())),
            wall,
        };
        let heard = dispatch(event, listeners);
        self.list_for_placement();
        if let Some(unqueued) = heard.unqueued {
            self.on_unqueued(unqueued);
        }
        if let Some((provider, model)) = heard.model {
            self.learn_model(&provider, &model);
        }
        !heard.streamed
    }

    /// Updates the status-bar label from a `provider:response`'s provider id and model
    /// (`provider/model` or a bare model name). A response without a model keeps the
    /// label; a no-provider warning stays.
    fn learn_model(&mut self, provider: &str, model: &str) {
        let (provider, model) = (provider.trim(), model.trim());
        if model.is_empty() {
            return;
        }
        let provider = Some(provider).filter(|p| !p.is_empty());
        if provider.is_some_and(|p| model == p || model == format!("{p}/")) {
            return;
        }
        let label = crate::tui::state::tree::model_label(provider, model);
        if model_part(&label).is_none() {
            return;
        }
        if let Ok(current) = &mut self.status.provider_label {
            *current = label;
        }
    }

    /// Lists the sessions when the tree asks to learn a sub-session's `ran_on` (a
    /// remote sub-session started on a worker; issue 27).
    pub(super) fn list_for_placement(&mut self) {
        if self.tree.take_listing_request() {
            self.send(crate::session::EngineCommand::ListSessions);
        }
    }

    pub(super) fn on_registry(&mut self, registry: Arc<Registry>) {
        let diff = RegistryDiff::between(&self.registry, &registry);
        self.registry = registry;
        if !diff.is_empty() {
            let until = self.clock.now() + jiff::SignedDuration::from_millis(RELOAD_MARK_MS);
            self.status.reload_mark = Some(ReloadMark { diff, until });
        }
    }

    /// A watcher event other than the registry itself (which arrives on the registry
    /// channel as `AppEvent::RegistryReloaded`).
    pub(super) fn on_reload_event(&mut self, event: ReloadEvent) {
        match event {
            // The registry channel already carried the new registry; its diff is ours.
            ReloadEvent::Agents(_) => {}
            ReloadEvent::BundleChanged { warnings } => {
                let extra = warnings
                    .first()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default();
                self.set_note(format!("↻ bundle reloaded{extra}"), !warnings.is_empty());
            }
            ReloadEvent::BundleInvalid { message } => {
                self.set_note(format!("bundle not reloaded: {message}"), true);
            }
            // The rule "always and save" wrote applies already: no restart to ask for.
            ReloadEvent::ConfigChanged if std::mem::take(&mut self.own_config_write) => {}
            ReloadEvent::ConfigChanged => {
                self.set_note(
                    "config changed; restart arbor to apply keymap and providers",
                    false,
                );
            }
            ReloadEvent::ThemeChanged => self.reload_theme(),
        }
    }

    fn reload_theme(&mut self) {
        let Some(ThemeSource {
            name,
            dir,
            no_color,
        }) = self.theme_source.clone()
        else {
            return;
        };
        match Theme::load(name.as_deref(), &dir, no_color) {
            Ok(theme) => {
                self.theme = theme;
                if let Some(t) = &mut self.thread {
                    t.cells.iter_mut().for_each(|c| c.invalidate());
                }
                self.refresh_placeholder();
                self.set_note("↻ theme reloaded", false);
            }
            Err(e) => self.set_note(e.to_string(), true),
        }
    }

    pub(super) fn on_editor_finished(&mut self, path: &Path, result: Result<(), UiError>) {
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        match result {
            Ok(()) => self.set_note(format!("edited {file}; waiting for reload"), false),
            Err(e) => self.set_note(format!("editor failed: {e}"), true),
        }
    }

    /// The reload summary line, while the mark is visible.
    pub fn reload_text(&self) -> Option<String> {
        self.status
            .reload_mark
            .as_ref()
            .map(|m| reload_summary(&m.diff))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::agent::Registry;
    use crate::tui::app::{App, AppOptions};
    use crate::tui::app_event::{AppEvent, EngineReply};
    use crate::tui::clock::Clock;
    use crate::tui::keymap::Keymap;
    use crate::tui::theme::Theme;

    fn app(label: Result<String, crate::tui::error::NoProvider>) -> App {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        App::new(
            AppOptions {
                theme: Theme::builtin_dark(true),
                theme_source: None,
                keymap: Keymap::defaults(),
                clock: Clock::manual("2025-03-01T12:00:00Z".parse().unwrap()),
                provider_label: label,
                registry: Arc::new(Registry::default()),
                agent: None,
                open_session: None,
                continue_last: false,
            },
            tx,
        )
    }

    fn resolved(app: &mut App, label: &str) {
        app.handle(AppEvent::Reply(EngineReply::ProviderLabel(label.into())));
    }

    #[test]
    fn a_resolved_label_only_fills_in_a_missing_model() {
        let mut bare = app(Ok("openai".into()));
        assert!(bare.wants_provider_label());
        // A server that did not answer: still no model, label unchanged.
        resolved(&mut bare, "openai");
        assert_eq!(bare.provider_label(), &Ok("openai".to_string()));
        resolved(&mut bare, "openai/qwen2.5-coder");
        assert_eq!(
            bare.provider_label(),
            &Ok("openai/qwen2.5-coder".to_string())
        );
        assert!(!bare.wants_provider_label());

        // A model already named (configured or from a reply) stays.
        let mut named = app(Ok("openai/gpt-4o".into()));
        assert!(!named.wants_provider_label());
        resolved(&mut named, "openai/other");
        assert_eq!(named.provider_label(), &Ok("openai/gpt-4o".to_string()));

        // The no-provider warning stays.
        let mut none = app(Err("No model provider is configured.".into()));
        assert!(!none.wants_provider_label());
        resolved(&mut none, "openai/x");
        assert!(none.provider_label().is_err());
    }
}
