//! The trust prompt (SPEC §12 "Trust", §13 "Modal prompts"): shown once at start when
//! the current project has `.amplifier/agents/` or `.mcp.json` and is not trusted yet.
//!
//! Owns: what the prompt asks about (the project, which of the two it has, where the
//! trust store is) and mapping its keys to an answer. Does not own: deciding whether to
//! ask or recording trust (`config::trust`), drawing (`views::trust`), or what the
//! answer changes (`app`: the trust store is written, and the watcher reloads the
//! agents).

use std::path::{Path, PathBuf};

use crate::tui::action::{KeyOutcome, UiAction};
use crate::tui::keymap::Action;

/// The question "trust this project?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustPrompt {
    /// The project root (the directory holding `.amplifier/agents/` or `.mcp.json`).
    pub project: PathBuf,
    /// It has `.amplifier/agents/`.
    pub agents: bool,
    /// It has `.mcp.json`.
    pub mcp: bool,
    /// The trust store the answer is written to (`Paths::trust_file`).
    pub store: PathBuf,
    /// The project as shown: `~/…` under the home directory.
    pub shown: String,
}

impl TrustPrompt {
    /// The prompt for `project`, answered into `store`; `home` is shown as `~`.
    pub fn new(project: PathBuf, store: PathBuf, home: Option<&Path>) -> Self {
        let shown = match home.and_then(|h| project.strip_prefix(h).ok()) {
            Some(rest) => format!("~/{}", rest.display()),
            None => project.display().to_string(),
        };
        Self {
            agents: project.join(".amplifier").join("agents").is_dir(),
            mcp: project.join(".mcp.json").is_file(),
            project,
            store,
            shown,
        }
    }

    /// What the project has, for the prompt: `.amplifier/agents/ and .mcp.json`.
    pub fn what(&self) -> &'static str {
        match (self.agents, self.mcp) {
            (true, true) => ".amplifier/agents/ and .mcp.json",
            (false, true) => ".mcp.json",
            _ => ".amplifier/agents/",
        }
    }

    /// The prompt's answer to a key: `trust.yes` trusts, `trust.no` dismisses; any other
    /// key is swallowed (the prompt is modal).
    pub fn handle(&self, action: Option<Action>) -> KeyOutcome {
        match action {
            Some(Action::TrustYes) => KeyOutcome::Emit(UiAction::AnswerTrust { trust: true }),
            Some(Action::TrustNo) => KeyOutcome::Emit(UiAction::AnswerTrust { trust: false }),
            _ => KeyOutcome::Consumed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_the_project_has_and_maps_its_keys() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".amplifier/agents")).unwrap();
        let p = TrustPrompt::new(dir.path().to_path_buf(), dir.path().join("t.json"), None);
        assert_eq!(p.what(), ".amplifier/agents/");
        std::fs::write(dir.path().join(".mcp.json"), "{}").unwrap();
        let p = TrustPrompt::new(dir.path().to_path_buf(), dir.path().join("t.json"), None);
        assert_eq!(p.what(), ".amplifier/agents/ and .mcp.json");
        assert_eq!(
            p.handle(Some(Action::TrustYes)),
            KeyOutcome::Emit(UiAction::AnswerTrust { trust: true })
        );
        assert_eq!(
            p.handle(Some(Action::TrustNo)),
            KeyOutcome::Emit(UiAction::AnswerTrust { trust: false })
        );
        assert_eq!(p.handle(None), KeyOutcome::Consumed);
        assert_eq!(p.shown, dir.path().display().to_string());
        let home = dir.path().parent().unwrap();
        let p = TrustPrompt::new(
            dir.path().to_path_buf(),
            dir.path().join("t.json"),
            Some(home),
        );
        assert!(p.shown.starts_with("~/"), "{}", p.shown);
    }
}
