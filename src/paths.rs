//! Where arbor reads and writes on disk (SPEC §2).
//!
//! Owns: resolving the Amplifier home, arbor's config file, the log file, the trust
//! store, the prompt history, the project slug and the sessions directory from the environment. Does not own: reading any of
//! those files.

use std::path::{Path, PathBuf};

/// All filesystem locations arbor uses, resolved once at startup from the environment.
///
/// Tests build this with [`Paths::from_env_map`] (or set `AMPLIFIER_HOME`, `ARBOR_CONFIG`
/// and `HOME` to temp dirs) so no test touches the real home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// `$AMPLIFIER_HOME`, else `~/.amplifier`.
    pub amplifier_home: PathBuf,
    /// `$ARBOR_CONFIG`, else `<config dir>/arbor/config.yaml`.
    pub config_file: PathBuf,
    /// `<config dir>/arbor/themes`.
    pub themes_dir: PathBuf,
    /// `<state or data-local dir>/arbor/arbor.log`.
    pub log_file: PathBuf,
    /// The working directory sessions are recorded against (canonicalized when possible).
    pub cwd: PathBuf,
    /// Where the session store's `projects/` is when not in `amplifier_home`: a
    /// worker's scratch stores, kept in memory-backed storage (its directory under
    /// `worker::leftover::memory_root`). `None` everywhere else.
    pub store_home: Option<PathBuf>,
}

impl Paths {
    /// Resolves every path from the process environment and current directory.
    ///
    /// The config and log directories come from the `directories` crate
    /// (`ProjectDirs` for `arbor`: `~/.config/arbor` and `~/.local/state/arbor` on
    /// Linux, `~/Library/Application Support/arbor` on macOS, `%APPDATA%` on Windows),
    /// which honours `HOME` and the XDG variables; `ARBOR_CONFIG` and
    /// `AMPLIFIER_HOME` override as in [`Paths::from_env_map`].
    pub fn from_env() -> Self {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let mut paths = Self::from_env_map(&|k| std::env::var(k).ok(), cwd);
        if let Some(dirs) = directories::ProjectDirs::from("", "", "arbor") {
            let config_dir = dirs.config_dir().to_path_buf();
            let state_dir = dirs
                .state_dir()
                .unwrap_or_else(|| dirs.data_local_dir())
                .to_path_buf();
            if std::env::var_os("ARBOR_CONFIG").is_none_or(|v| v.is_empty()) {
                paths.config_file = config_dir.join("config.yaml");
            }
            paths.themes_dir = config_dir.join("themes");
            paths.log_file = state_dir.join("arbor.log");
        }
        paths
    }

    /// Resolves every path from `env` (a variable lookup) and `cwd`, with the XDG
    /// layout for config and state (what `directories` gives on Linux).
    ///
    /// `HOME` from `env` is honoured for the `~/.amplifier` default and for the
    /// config/state fallbacks, so a test that sets `HOME` gets paths inside it.
    pub fn from_env_map(env: &dyn Fn(&str) -> Option<String>, cwd: PathBuf) -> Self {
        let home = env("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        let amplifier_home = env("AMPLIFIER_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".amplifier"));
        let config_dir = env("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"))
            .join("arbor");
        let state_dir = env("XDG_STATE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".local").join("state"))
            .join("arbor");
        let config_file = env("ARBOR_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| config_dir.join("config.yaml"));
        let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
        Self {
            amplifier_home,
            config_file,
            themes_dir: config_dir.join("themes"),
            log_file: state_dir.join("arbor.log"),
            cwd,
            store_home: None,
        }
    }

    /// `$AMPLIFIER_HOME/agents`.
    pub fn user_agents_dir(&self) -> PathBuf {
        self.amplifier_home.join("agents")
    }

    /// The trust store (`config::trust`): `trusted-projects.json` in arbor's state
    /// directory, beside the log file (on Linux `~/.local/state/arbor/`). Trust is a
    /// decision about this machine's directories, so it lives with state, not config.
    pub fn trust_file(&self) -> PathBuf {
        self.log_file.with_file_name("trusted-projects.json")
    }

    /// Bundles arbor writes for other tools to load: `bundles/` in arbor's state
    /// directory, beside the log file (on Linux `~/.local/state/arbor/bundles`). The
    /// built-in bundle is published there so a root's `metadata.bundle` can name it
    /// as a `file://` URI that Amplifier's resume loads.
    pub fn bundles_dir(&self) -> PathBuf {
        self.log_file.with_file_name("bundles")
    }

    /// Sub-sessions' git worktrees (`isolation::worktree`): `worktrees/` in arbor's
    /// state directory, beside the log file (on Linux `~/.local/state/arbor/worktrees`),
    /// never inside the project.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.log_file.with_file_name("worktrees")
    }

    /// The "needs you" acknowledgements of the project in `cwd` (`tui::state::seen`):
    /// `seen/<project slug>.json` in arbor's state directory, beside the log file.
    pub fn seen_file(&self) -> PathBuf {
        self.log_file
            .with_file_name("seen")
            .join(format!("{}.json", project_slug(&self.cwd)))
    }

    /// The composer's prompt history of the project in `cwd` (`tui::state::history`):
    /// `history/<project slug>.jsonl` in arbor's state directory, beside the log file
    /// (on Linux `~/.local/state/arbor/history/`).
    pub fn history_file(&self) -> PathBuf {
        self.log_file
            .with_file_name("history")
            .join(format!("{}.jsonl", project_slug(&self.cwd)))
    }

    /// `$AMPLIFIER_HOME/routing`.
    pub fn routing_dir(&self) -> PathBuf {
        self.amplifier_home.join("routing")
    }

    /// `.amplifier/agents` in `cwd` or the nearest ancestor that has one.
    pub fn project_agents_dir(&self) -> Option<PathBuf> {
        self.cwd
            .ancestors()
            .map(|dir| dir.join(".amplifier").join("agents"))
            .find(|dir| dir.is_dir())
    }

    /// `$AMPLIFIER_HOME/projects/<slug>/sessions` for the current directory.
    pub fn sessions_dir(&self) -> PathBuf {
        self.sessions_dir_for(&self.cwd)
    }

    /// `$AMPLIFIER_HOME/projects/<slug>/sessions` for `dir` (under `store_home`
    /// instead when set).
    pub fn sessions_dir_for(&self, dir: &Path) -> PathBuf {
        self.projects_dir().join(project_slug(dir)).join("sessions")
    }

    /// `$AMPLIFIER_HOME/projects` (or `<store_home>/projects`), the parent of every
    /// project's sessions.
    pub fn projects_dir(&self) -> PathBuf {
        self.store_home
            .as_deref()
            .unwrap_or(&self.amplifier_home)
            .join("projects")
    }
}

/// Amplifier's project slug (SPEC §2): every `/` and `\` becomes `-`, `:` is removed,
/// and a leading `-` is added if missing. `/home/u/app` → `-home-u-app`.
pub fn project_slug(dir: &Path) -> String {
    let raw = dir.to_string_lossy();
    let mut slug: String = raw
        .chars()
        .filter(|c| *c != ':')
        .map(|c| if c == '/' || c == '\\' { '-' } else { c })
        .collect();
    if !slug.starts_with('-') {
        slug.insert(0, '-');
    }
    slug
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_matches_amplifier() {
        assert_eq!(project_slug(Path::new("/home/u/app")), "-home-u-app");
        assert_eq!(project_slug(Path::new("C:\\Users\\u")), "-C-Users-u");
    }

    #[test]
    fn env_overrides_win() {
        let env = |k: &str| match k {
            "AMPLIFIER_HOME" => Some("/tmp/amp".to_string()),
            "ARBOR_CONFIG" => Some("/tmp/cfg.yaml".to_string()),
            "HOME" => Some("/tmp/home".to_string()),
            _ => None,
        };
        let p = Paths::from_env_map(&env, PathBuf::from("/nonexistent/x"));
        assert_eq!(p.amplifier_home, PathBuf::from("/tmp/amp"));
        assert_eq!(p.config_file, PathBuf::from("/tmp/cfg.yaml"));
        assert_eq!(
            p.log_file,
            PathBuf::from("/tmp/home/.local/state/arbor/arbor.log")
        );
        assert_eq!(
            p.sessions_dir(),
            PathBuf::from("/tmp/amp/projects/-nonexistent-x/sessions")
        );
        assert_eq!(
            p.trust_file(),
            PathBuf::from("/tmp/home/.local/state/arbor/trusted-projects.json")
        );
    }
}
