//! Project trust (SPEC §12 "Trust"): which projects the person has trusted once.
//!
//! A *project* is a directory holding `.amplifier/agents/` or `.mcp.json`. Until the
//! person trusts it (`arbor trust`, later a TUI prompt) its agents load but add no
//! tools (`agent::registry` withholds them) and its MCP servers do not start. A
//! directory with neither never needs trust. Trust never lets an agent file loosen
//! approvals (`approvals::policy`).
//!
//! Owns: finding a project's root, whether it needs trust, and the trust store — a
//! small JSON file ([`Paths::trust_file`]) listing trusted projects by canonical path,
//! written atomically (temp file, fsync, rename). Does not own: what trust unlocks
//! (the registry and, later, MCP), the prompt, or the CLI (`cli::trust`).
//!
//! The store fails closed: a store that cannot be read trusts nothing, and is never
//! overwritten (`arbor trust` reports it instead).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::paths::Paths;

/// The project agents directory, relative to a project root.
pub const AGENTS_DIR: &str = ".amplifier/agents";
/// The MCP server file, relative to a project root.
pub const MCP_FILE: &str = ".mcp.json";

/// The trust store is small; a larger file is refused rather than read.
const MAX_STORE_BYTES: u64 = 1 << 20;

/// Whether `dir` is a project that needs trust: it has `.amplifier/agents/` (a
/// directory) or `.mcp.json` (a file).
pub fn needs_trust(dir: &Path) -> bool {
    dir.join(AGENTS_DIR).is_dir() || dir.join(MCP_FILE).is_file()
}

/// The project `start` belongs to: `start` or its nearest ancestor that
/// [`needs_trust`]. `None` when no ancestor does (nothing to trust).
pub fn project_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| needs_trust(dir))
        .map(Path::to_path_buf)
}

/// Whether the project at `root` is trusted, per the store at `paths.trust_file()`.
/// A directory that does not need trust is trusted; a store that cannot be read
/// trusts nothing (logged).
pub fn is_trusted(paths: &Paths, root: &Path) -> bool {
    if !needs_trust(root) {
        return true;
    }
    match TrustStore::load(&paths.trust_file()) {
        Ok(store) => store.is_trusted(root),
        Err(e) => {
            tracing::warn!("{e}; treating {} as untrusted", root.display());
            false
        }
    }
}

/// The project of the current directory (`paths.cwd`) when it needs trust and is not
/// trusted: what a trust prompt asks about. `None` when there is no project or it is
/// trusted.
pub fn untrusted_project(paths: &Paths) -> Option<PathBuf> {
    project_root(&paths.cwd).filter(|root| !is_trusted(paths, root))
}

/// The trust store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read the trust store {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the trust store {path} is unreadable ({reason}); fix or remove it")]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot write the trust store {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot trust {path}: {source}")]
    Path {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One trusted project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedProject {
    /// Canonical path of the project root.
    pub path: PathBuf,
    /// When it was trusted (RFC 3339, UTC).
    pub trusted_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    projects: Vec<TrustedProject>,
}

/// The trust store file: `{"version": 1, "projects": [{path, trusted_at}]}`.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    projects: Vec<TrustedProject>,
}

impl TrustStore {
    /// Reads the store at `path`; a missing file is an empty store.
    pub fn load(path: &Path) -> Result<Self, TrustError> {
        let read_err = |source| TrustError::Read {
            path: path.to_path_buf(),
            source,
        };
        let corrupt = |reason: String| TrustError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    path: path.to_path_buf(),
                    projects: Vec::new(),
                });
            }
            Err(e) => return Err(read_err(e)),
        };
        if !meta.is_file() {
            return Err(corrupt("not a regular file".into()));
        }
        if meta.len() > MAX_STORE_BYTES {
            return Err(corrupt(format!(
                "{} bytes, more than {MAX_STORE_BYTES}",
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(read_err)?;
        let file: StoreFile = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
        Ok(Self {
            path: path.to_path_buf(),
            projects: file.projects,
        })
    }

    /// Trusted projects, in the order they were trusted.
    pub fn projects(&self) -> &[TrustedProject] {
        &self.projects
    }

    /// Whether `root` (canonicalized when possible) is trusted.
    pub fn is_trusted(&self, root: &Path) -> bool {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        self.projects.iter().any(|p| p.path == root)
    }

    /// Records `root` as trusted (by its canonical path; it must exist) and saves.
    /// Returns the canonical path and whether it was newly added.
    pub fn trust(&mut self, root: &Path) -> Result<(PathBuf, bool), TrustError> {
        let canonical = std::fs::canonicalize(root).map_err(|source| TrustError::Path {
            path: root.to_path_buf(),
            source,
        })?;
        if self.projects.iter().any(|p| p.path == canonical) {
            return Ok((canonical, false));
        }
        self.projects.push(TrustedProject {
            path: canonical.clone(),
            trusted_at: jiff::Timestamp::now().to_string(),
        });
        self.save()?;
        Ok((canonical, true))
    }

    /// Removes `root` (its canonical path, or the path as given when it no longer
    /// exists) and saves. Returns whether it was trusted.
    pub fn revoke(&mut self, root: &Path) -> Result<bool, TrustError> {
        let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let before = self.projects.len();
        self.projects.retain(|p| p.path != canonical);
        if self.projects.len() == before {
            return Ok(false);
        }
        self.save()?;
        Ok(true)
    }

    /// Writes the store: a temp file beside it, fsync, rename over it, so a crash
    /// leaves the old or the new store whole.
    fn save(&self) -> Result<(), TrustError> {
        let write_err = |source| TrustError::Write {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(write_err)?;
        }
        let file = StoreFile {
            version: 1,
            projects: self.projects.clone(),
        };
        let mut text =
            serde_json::to_vec_pretty(&file).map_err(|e| write_err(std::io::Error::other(e)))?;
        text.push(b'\n');
        let temp = self.path.with_extension("json.tmp");
        let result = std::fs::File::create(&temp)
            .and_then(|mut f| f.write_all(&text).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&temp, &self.path));
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        result.map_err(write_err)?;
        if let Some(dir) = self.path.parent()
            && let Ok(d) = std::fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(root: &Path, with: &str) -> PathBuf {
        let dir = root.join("project");
        std::fs::create_dir_all(&dir).unwrap();
        match with {
            "agents" => std::fs::create_dir_all(dir.join(AGENTS_DIR)).unwrap(),
            "mcp" => std::fs::write(dir.join(MCP_FILE), "{}").unwrap(),
            _ => {}
        }
        std::fs::canonicalize(dir).unwrap()
    }

    fn paths(root: &Path, cwd: &Path) -> Paths {
        let home = root.join("home").display().to_string();
        Paths::from_env_map(
            &move |k| (k == "HOME").then(|| home.clone()),
            cwd.to_path_buf(),
        )
    }

    #[test]
    fn projects_are_dirs_with_agents_or_mcp_and_found_from_below() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = project(tmp.path(), "none");
        assert!(!needs_trust(&plain));
        assert_eq!(project_root(&plain.join("x")), None);
        std::fs::create_dir_all(plain.join(".amplifier")).unwrap();
        assert!(!needs_trust(&plain), "an empty .amplifier is not a project");
        std::fs::write(plain.join(MCP_FILE), "{}").unwrap();
        assert!(needs_trust(&plain));
        let deep = plain.join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(project_root(&deep), Some(plain.clone()));

        let tmp = tempfile::tempdir().unwrap();
        let agents = project(tmp.path(), "agents");
        assert!(needs_trust(&agents));
        // A directory named .mcp.json is not the MCP file.
        let tmp = tempfile::tempdir().unwrap();
        let odd = project(tmp.path(), "none");
        std::fs::create_dir_all(odd.join(MCP_FILE)).unwrap();
        assert!(!needs_trust(&odd));
    }

    #[test]
    fn trust_is_recorded_by_canonical_path_and_revoked() {
        let tmp = tempfile::tempdir().unwrap();
        let root = project(tmp.path(), "agents");
        let paths = paths(tmp.path(), &root);
        assert!(!is_trusted(&paths, &root));
        let mut store = TrustStore::load(&paths.trust_file()).unwrap();
        // A non-canonical spelling of the same directory.
        let spelled = root.join("..").join("project");
        let (canonical, added) = store.trust(&spelled).unwrap();
        assert_eq!((canonical.as_path(), added), (root.as_path(), true));
        assert!(!store.trust(&root).unwrap().1, "already trusted");
        assert!(is_trusted(&paths, &root));
        let reloaded = TrustStore::load(&paths.trust_file()).unwrap();
        assert_eq!(reloaded.projects().len(), 1);
        assert!(reloaded.projects()[0].trusted_at.ends_with('Z'));
        assert!(!paths.trust_file().with_extension("json.tmp").exists());
        let mut store = reloaded;
        assert!(store.revoke(&spelled).unwrap());
        assert!(!store.revoke(&root).unwrap());
        assert!(!is_trusted(&paths, &root));
        // Trusting a missing directory is an error naming it.
        let err = store.trust(&tmp.path().join("gone")).unwrap_err();
        assert!(err.to_string().contains("gone"), "{err}");
    }

    #[test]
    fn a_dir_that_needs_no_trust_is_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = project(tmp.path(), "none");
        let paths = paths(tmp.path(), &plain);
        assert!(is_trusted(&paths, &plain));
        assert_eq!(untrusted_project(&paths), None);
    }

    #[test]
    fn the_untrusted_project_is_the_one_a_prompt_asks_about() {
        let tmp = tempfile::tempdir().unwrap();
        let root = project(tmp.path(), "agents");
        let deep = root.join("src");
        std::fs::create_dir_all(&deep).unwrap();
        let paths = paths(tmp.path(), &deep);
        assert_eq!(untrusted_project(&paths), Some(root.clone()));
        TrustStore::load(&paths.trust_file())
            .unwrap()
            .trust(&root)
            .unwrap();
        assert_eq!(untrusted_project(&paths), None);
    }

    #[test]
    fn an_unreadable_store_trusts_nothing_and_is_not_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let root = project(tmp.path(), "mcp");
        let paths = paths(tmp.path(), &root);
        let file = paths.trust_file();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let garbage = format!(
            "{{\"version\":1,\"projects\":[{{\"path\":\"{}\"",
            root.display()
        );
        std::fs::write(&file, &garbage).unwrap();
        assert!(!is_trusted(&paths, &root));
        let err = TrustStore::load(&file).unwrap_err();
        assert!(matches!(err, TrustError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("fix or remove it"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), garbage);
    }
}
