//! Which hooks a process has now (issue 39): the user's `config.yaml` `hooks:`, then
//! those of the project of the working directory — active when the project is
//! trusted, else listed as skipped with why — so `arbor doctor` and the TUI's
//! `/hooks` show every hook and the engine runs exactly the active ones.
//!
//! Owns: reading both sources into [`ProcessHooks`] and the listing's rows
//! ([`ListedHook`]). Does not own: parsing one section (`hooks::config`), running
//! hooks (`hooks::run`), or the trust store (`config::trust`).

use std::path::Path;

use serde::Serialize;

use super::config::{HookSource, Hooks, PROJECT_SETTINGS, read_settings_hooks};
use crate::config::ArborConfig;
use crate::config::trust::{self, Project, TrustState};

/// One configured hook as listings show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListedHook {
    /// The event (`PreToolUse`).
    pub event: String,
    /// The matcher as written (`*`: every tool).
    pub matcher: String,
    /// The command.
    pub command: String,
    /// Where it is configured: `config.yaml`, or the project settings file's path.
    pub source: String,
    /// Why it does not run (`None`: it is active), e.g. the project is not trusted.
    pub skipped: Option<String>,
}

/// Every hook of a process: the ones that run, and the listing of all of them.
#[derive(Debug, Clone, Default)]
pub struct ProcessHooks {
    /// The hooks that run: the user's, then a trusted project's.
    pub active: Hooks,
    /// Every hook, active or skipped, in that order.
    pub listing: Vec<ListedHook>,
    /// Sections that cannot be used (each adds no hooks), one line each.
    pub problems: Vec<String>,
}

/// The hooks of `config` (the user's, unconfined) and of the project of the working
/// directory (`project`: its root and trust state as the caller looked them up,
/// [`trust::Project::of`]; `None` when there is none) from its settings files: active
/// when it is trusted, else listed as skipped with the reason.
pub fn load(config: &ArborConfig, project: Option<&Project>) -> ProcessHooks {
    let mut out = ProcessHooks::default();
    if let Some(value) = config.extra.get("hooks") {
        match Hooks::parse(value, &HookSource::User, "config.yaml") {
            Ok(hooks) => {
                push_rows(&mut out.listing, &hooks, "config.yaml", None);
                out.active.extend(hooks);
            }
            Err(e) => out.problems.push(e.to_string()),
        }
    }
    let Some(Project { root, state }) = project else {
        return out;
    };
    if !trust::has_project_hooks(root) {
        return out;
    }
    let skipped = skip_reason(state, root);
    for file in PROJECT_SETTINGS {
        let path = root.join(file);
        let source = HookSource::Project(path.clone());
        let parsed = read_settings_hooks(&path)
            .and_then(|v| Ok(Hooks::parse(&v, &source, &path.to_string_lossy())?));
        match parsed {
            Ok(hooks) => {
                push_rows(
                    &mut out.listing,
                    &hooks,
                    &path.display().to_string(),
                    skipped.clone(),
                );
                if skipped.is_none() {
                    out.active.extend(hooks);
                }
            }
            Err(e) => out.problems.push(e.to_string()),
        }
    }
    out
}

/// Why a project's hooks do not run in `state` (`None`: they do).
fn skip_reason(state: &TrustState, root: &Path) -> Option<String> {
    match state {
        TrustState::NotNeeded | TrustState::Trusted => None,
        TrustState::Untrusted => Some("the project is not trusted (`arbor trust`)".to_string()),
        TrustState::Changed(_) => Some(
            state
                .changed_message(root)
                .unwrap_or_else(|| "the project changed since it was trusted".into()),
        ),
    }
}

fn push_rows(rows: &mut Vec<ListedHook>, hooks: &Hooks, source: &str, skipped: Option<String>) {
    for (event, matcher, hook) in hooks.listed() {
        rows.push(ListedHook {
            event: event.as_str().to_string(),
            matcher,
            command: hook.command,
            source: source.to_string(),
            skipped: skipped.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Paths;

    #[test]
    fn an_untrusted_projects_hooks_are_listed_as_skipped_and_do_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::write(
            project.join(".claude/settings.json"),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2"}]}]}}"#,
        )
        .unwrap();
        let lookup = |k: &str| match k {
            "HOME" => Some(dir.path().join("home").display().to_string()),
            "XDG_STATE_HOME" => Some(dir.path().join("state").display().to_string()),
            _ => None,
        };
        let paths = Paths::from_env_map(&lookup, project.clone());
        let config = ArborConfig::default();
        // Looked up as a caller does: the project of the working directory, never trusted.
        let found = Project::of(&paths).unwrap();
        assert_eq!(found.root, project);
        assert_eq!(found.state, TrustState::Untrusted);
        let untrusted = load(&config, Some(&found));
        assert!(untrusted.active.is_empty());
        assert_eq!(untrusted.listing.len(), 1);
        let row = &untrusted.listing[0];
        assert_eq!(
            (row.event.as_str(), row.matcher.as_str()),
            ("PreToolUse", "Bash")
        );
        assert!(row.skipped.as_deref().unwrap().contains("not trusted"));
        let trusted = load(
            &config,
            Some(&Project {
                state: TrustState::Trusted,
                ..found
            }),
        );
        assert!(!trusted.active.is_empty());
        assert_eq!(trusted.listing[0].skipped, None);
        // No project: the user's hooks only.
        assert!(load(&config, None).listing.is_empty());
    }
}
