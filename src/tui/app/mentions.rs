//! `@file` mentions in the composer (issue 15 item 2): `@` + a partial path opens the
//! popup with the project's files (listed off the UI thread by
//! [`EngineCommand::ListProjectFiles`], kept for [`FILES_FRESH_MS`], so typing never
//! waits on a walk); Enter/Tab completes the path. A submitted message (a new turn)
//! gets its mentioned files attached (`state::mentions::attach`) and the status bar
//! says which; steers and queued messages go as typed.
//!
//! Owns: when the list is asked for and kept, completing, attaching on submit. Does
//! not own: listing, matching or reading files (`state::mentions`).

use std::path::PathBuf;
use std::sync::Arc;

use super::App;
use crate::tui::app_event::EngineCommand;
use crate::tui::state::mentions;
use crate::tui::state::palette::{Popup, PopupKind};

/// How long a file list is used before the next `@` asks for a fresh one.
pub const FILES_FRESH_MS: i64 = 30_000;

/// The project's file list as last answered.
#[derive(Debug, Clone, Default)]
pub(super) struct ProjectFiles {
    /// The project directory (`None`: no `@` completion or attachment).
    pub root: Option<PathBuf>,
    pub files: Option<Arc<Vec<String>>>,
    /// When `files` was asked for (ms on the app clock).
    pub asked_at: Option<i64>,
    pub pending: bool,
}

impl App {
    /// `@` completes and attaches files under `root` (`tui::run` passes the working
    /// directory).
    pub fn set_project_root(&mut self, root: PathBuf) {
        self.prompt.files = ProjectFiles {
            root: Some(root),
            ..ProjectFiles::default()
        };
    }

    /// "Always and save" answers write their rule into `path` (the user's config
    /// file; `tui::run` passes it).
    pub fn set_config_file(&mut self, path: PathBuf) {
        self.config_file = Some(path);
    }

    /// The files popup for the `@partial` before the cursor, when the list is known.
    pub(super) fn file_popup(&self) -> Option<Popup> {
        let before = self.prompt.composer.text_before_cursor();
        let partial = mentions::partial_at_end(&before)?;
        let files = self.prompt.files.files.as_ref()?;
        let rows = mentions::rows(files, partial);
        (!rows.is_empty()).then(|| Popup::new(PopupKind::Files, partial, rows))
    }

    /// Asks for the file list when an `@partial` is being typed and the list is
    /// missing or stale.
    pub(super) fn want_files(&mut self) {
        let Some(root) = self.prompt.files.root.clone() else {
            return;
        };
        if self.prompt.files.pending
            || mentions::partial_at_end(&self.prompt.composer.text_before_cursor()).is_none()
        {
            return;
        }
        let now = self.clock.now().as_millisecond();
        let fresh = self
            .prompt
            .files
            .asked_at
            .is_some_and(|t| now - t < FILES_FRESH_MS);
        if self.prompt.files.files.is_some() && fresh {
            return;
        }
        self.prompt.files.pending = true;
        self.prompt.files.asked_at = Some(now);
        self.send(EngineCommand::ListProjectFiles { root });
    }

    /// The answer to [`EngineCommand::ListProjectFiles`].
    pub(super) fn on_project_files(&mut self, root: PathBuf, files: Arc<Vec<String>>) {
        if self.prompt.files.root.as_ref() != Some(&root) {
            return;
        }
        self.prompt.files.files = Some(files);
        self.prompt.files.pending = false;
        self.refresh_popup();
    }

    /// Enter/Tab on a file row: `@partial` becomes `@path `.
    pub(super) fn accept_file(&mut self, partial: &str, path: &str) {
        self.prompt
            .composer
            .replace_before_cursor(partial.chars().count(), &format!("{path} "));
        self.refresh_popup();
    }

    /// `text` with its mentioned project files attached; the status bar names them.
    pub(super) fn attach_mentions(&mut self, text: &str) -> String {
        let Some(root) = self.prompt.files.root.clone() else {
            return text.to_string();
        };
        let paths = crate::paths::Paths::from_env();
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let private = crate::config::private::private_paths(&paths, home.as_deref());
        let out = mentions::attach(text, &root, &private);
        if !out.files.is_empty() || !out.notes.is_empty() {
            let mut note = format!("attached {}", out.files.join(", "));
            if !out.notes.is_empty() {
                note = format!("{note} · {}", out.notes.join(" · "));
            }
            self.set_note(note, !out.notes.is_empty());
        }
        out.prompt
    }
}
