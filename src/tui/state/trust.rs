//! The trust prompt (SPEC §12 "Trust", §13 "Modal prompts"): shown once at start when
//! the current project needs trust (agents, bundles, `.mcp.json`, hooks in its settings
//! files) and is not trusted yet.
//!
//! Owns: what the prompt asks about (the project, its power files and what each
//! gains — `config::trust::powers` —, where the trust store is) and mapping its keys to an answer. Does not own: deciding whether to
//! ask or recording trust (`config::trust`), drawing (`views::trust`), or what the
//! answer changes (`app`: the trust store is written, and the watcher reloads the
//! agents).

use std::path::{Path, PathBuf};

use crate::config::trust::PowerFile;
use crate::tui::action::{KeyOutcome, UiAction};
use crate::tui::keymap::Action;

/// The question "trust this project?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustPrompt {
    /// The project root (the directory holding its power files).
    pub project: PathBuf,
    /// Its power files, each with what trusting it gains (`config::trust::powers`).
    pub powers: Vec<PowerFile>,
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
            powers: crate::config::trust::powers::describe(&project),
            project,
            store,
            shown,
        }
    }

    /// What the project has, one line per power file: `.mcp.json — MCP servers …`;
    /// a project that needs trust but has no such file yet says so.
    pub fn what(&self) -> Vec<String> {
        if self.powers.is_empty() {
            return vec![
                "no file that grants power yet (an agents or bundles directory)".to_string(),
            ];
        }
        self.powers
            .iter()
            .map(|p| format!("{} — {}", p.path, p.gains))
            .collect()
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
        assert_eq!(p.what().len(), 1);
        assert!(
            p.what()[0].starts_with("no file that grants power"),
            "{:?}",
            p.what()
        );
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"calc": {"command": "c"}}}"#,
        )
        .unwrap();
        let p = TrustPrompt::new(dir.path().to_path_buf(), dir.path().join("t.json"), None);
        assert_eq!(
            p.what(),
            vec![".mcp.json — MCP servers started for every session: calc".to_string()]
        );
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
