//! The files and directories hot reload cares about, and what a change to each means.
//!
//! Owns: the target list (user and project agent dirs, bundle file and its agents,
//! config file, themes dir, the project trust store), classifying a changed path into a [`ChangeSet`], and the
//! set of directories to watch. Does not own: the OS watcher (`agent::watcher`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::agent::reload::ChangeSet;
use crate::paths::Paths;

/// What a watched path stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Agents,
    Bundle,
    Config,
    Themes,
}

#[derive(Debug, Clone)]
struct Target {
    path: PathBuf,
    kind: Kind,
    /// A directory of files (agents, themes); else one file.
    dir: bool,
}

/// The files and directories hot reload cares about.
#[derive(Debug, Clone)]
pub struct WatchTargets {
    targets: Vec<Target>,
}

impl WatchTargets {
    /// User agents dir, project agents dir (found, and `<cwd>/.amplifier/agents`), the
    /// bundle file and its `agents/` dir, the config file, the themes dir, and the
    /// project trust store (a change rebuilds the registry, like an agent file's).
    pub fn new(paths: &Paths, bundle_path: Option<&Path>) -> Self {
        let mut targets = vec![Target {
            path: paths.user_agents_dir(),
            kind: Kind::Agents,
            dir: true,
        }];
        let local_project = paths.cwd.join(".amplifier").join("agents");
        for dir in paths
            .project_agents_dir()
            .into_iter()
            .chain([local_project])
        {
            if targets.iter().all(|t| t.path != dir) {
                targets.push(Target {
                    path: dir,
                    kind: Kind::Agents,
                    dir: true,
                });
            }
        }
        if let Some(bundle) = bundle_path {
            let file = if bundle.is_dir() {
                bundle.join("bundle.md")
            } else {
                bundle.to_path_buf()
            };
            let agents = file.parent().unwrap_or(Path::new(".")).join("agents");
            targets.push(Target {
                path: file,
                kind: Kind::Bundle,
                dir: false,
            });
            targets.push(Target {
                path: agents,
                kind: Kind::Bundle,
                dir: true,
            });
        }
        targets.push(Target {
            path: paths.config_file.clone(),
            kind: Kind::Config,
            dir: false,
        });
        // Trusting a project (`arbor trust`, the TUI's prompt) lets its agents add
        // tools: the registry is rebuilt.
        targets.push(Target {
            path: paths.trust_file(),
            kind: Kind::Agents,
            dir: false,
        });
        targets.push(Target {
            path: paths.themes_dir.clone(),
            kind: Kind::Themes,
            dir: true,
        });
        Self { targets }
    }

    /// What a change at `path` touches (empty for unrelated siblings and for non-`.md`
    /// files in agent directories, e.g. editor swap files).
    pub fn classify(&self, path: &Path) -> ChangeSet {
        let mut out = ChangeSet::default();
        for t in &self.targets {
            let inside = t.dir && path.parent() == Some(t.path.as_path());
            let relevant = path == t.path
                || t.path.starts_with(path)
                || (inside && (t.kind == Kind::Themes || is_markdown(path)));
            if !relevant {
                continue;
            }
            match t.kind {
                Kind::Agents => out.agents = true,
                Kind::Bundle => out.bundle = true,
                Kind::Config => out.config = true,
                Kind::Themes => out.themes = true,
            }
        }
        out
    }

    /// Directories to watch (non-recursive): every existing target directory and the
    /// nearest existing ancestor of every target.
    pub fn desired(&self) -> BTreeSet<PathBuf> {
        let mut out = BTreeSet::new();
        for t in &self.targets {
            if t.dir && t.path.is_dir() {
                out.insert(t.path.clone());
            }
            if let Some(ancestor) = t.path.ancestors().skip(1).find(|a| a.is_dir()) {
                out.insert(ancestor.to_path_buf());
            }
        }
        out
    }
}

fn is_markdown(path: &Path) -> bool {
    path.extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("md"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(root: &Path) -> Paths {
        Paths {
            amplifier_home: root.join("home/.amplifier"),
            config_file: root.join("home/.config/arbor/config.yaml"),
            themes_dir: root.join("home/.config/arbor/themes"),
            log_file: root.join("log"),
            cwd: root.join("project"),
            store_home: None,
        }
    }

    #[test]
    fn classifies_paths_by_target() {
        let root = Path::new("/r");
        let t = WatchTargets::new(&paths(root), Some(Path::new("/b/bundle.md")));
        let agents = t.classify(Path::new("/r/home/.amplifier/agents/x.md"));
        assert!(agents.agents && !agents.bundle && !agents.config);
        assert!(
            t.classify(Path::new("/r/home/.amplifier/agents/.x.md.swp"))
                .is_empty()
        );
        assert!(t.classify(Path::new("/r/home/.amplifier/agents")).agents);
        assert!(t.classify(Path::new("/r/project/.amplifier")).agents);
        assert!(
            t.classify(Path::new("/r/project/.amplifier/agents/y.md"))
                .agents
        );
        assert!(t.classify(Path::new("/b/bundle.md")).bundle);
        assert!(t.classify(Path::new("/b/agents/z.md")).bundle);
        assert!(
            t.classify(Path::new("/r/home/.config/arbor/config.yaml"))
                .config
        );
        assert!(
            t.classify(Path::new("/r/home/.config/arbor/themes/dark.yaml"))
                .themes
        );
        assert!(
            t.classify(Path::new("/r/home/.config/arbor/other.txt"))
                .is_empty()
        );
        let trusted = t.classify(Path::new("/r/trusted-projects.json"));
        assert!(trusted.agents && !trusted.config, "{trusted:?}");
        assert!(
            t.classify(Path::new("/r/log")).is_empty(),
            "the log is not watched"
        );
        assert!(
            t.classify(Path::new("/r/home/.amplifier/projects"))
                .is_empty()
        );
    }

    #[test]
    fn watches_nearest_existing_ancestors() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("home/.amplifier/agents")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        let t = WatchTargets::new(&paths(root), None);
        let desired = t.desired();
        assert!(desired.contains(&root.join("home/.amplifier/agents")));
        assert!(desired.contains(&root.join("home/.amplifier")));
        // `.amplifier` does not exist in the project yet: watch the project itself.
        assert!(desired.contains(&root.join("project")));
        // Config dir missing: its nearest existing ancestor is `home`.
        assert!(desired.contains(&root.join("home")));
    }
}
