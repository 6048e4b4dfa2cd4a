//! Project trust (SPEC §12 "Trust"): which projects the person has trusted once.
//!
//! A *project* is a directory holding `.amplifier/agents/`, `.mcp.json`, or a
//! settings file with `hooks` ([`SETTINGS_FILES`]). Until the
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
//!
//! Trust covers what was trusted, not the path (issue 22): each entry records a
//! SHA-256 of every file that grants power ([`power_files`]: `.mcp.json`, the agent
//! files that set `tools`, `providers` or `tool-mcp`, every file under
//! `.amplifier/bundles/`). The agent files are the registry's own listing and are
//! judged with its own parser (`config::agent_files`, issue 34 item 6), so a file
//! the registry loads — `x.MD`, a BOM before `---`, the 2,001st — is covered. When one of them is added, removed or changed — a model
//! that may write files wrote `.mcp.json` — the project is untrusted again until
//! `arbor trust` runs again ([`TrustState::Changed`] names the files). An entry
//! written before hashes were recorded counts as changed.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{agent_files, project_file};
use crate::paths::Paths;

pub mod powers;
pub use powers::PowerFile;

/// The project agents directory, relative to a project root.
pub const AGENTS_DIR: &str = ".amplifier/agents";
/// The MCP server file, relative to a project root.
pub const MCP_FILE: &str = ".mcp.json";
/// The project bundles directory, relative to a project root (bundles found by name,
/// `agent::bundle::locate`).
pub const BUNDLES_DIR: &str = ".amplifier/bundles";

/// The trust store is small; a larger file is refused rather than read.
const MAX_STORE_BYTES: u64 = 1 << 20;

/// Whether `dir` is a project that needs trust: it has `.amplifier/agents/` or
/// `.amplifier/bundles/` (directories) or `.mcp.json` (a file).
pub fn needs_trust(dir: &Path) -> bool {
    // One stat for the three power paths under `.amplifier/` when it is missing (most
    // ancestors of most directories): this runs for every ancestor of every directory
    // a project root is looked up for.
    let amplifier = dir.join(".amplifier").is_dir();
    (amplifier && (dir.join(AGENTS_DIR).is_dir() || dir.join(BUNDLES_DIR).is_dir()))
        || dir.join(MCP_FILE).is_file()
        || has_project_hooks_beside(dir, amplifier)
}

/// The project settings files that may configure hooks (issue 29), relative to a
/// project root: power files, so their hooks run only once the project is trusted.
pub const SETTINGS_FILES: &[&str] = &[".amplifier/settings.yaml", ".claude/settings.json"];

/// Whether one of `dir`'s [`SETTINGS_FILES`] mentions `hooks` — except in the user's
/// home directory, where `~/.claude/settings.json` and `~/.amplifier/settings.yaml`
/// are Claude Code's and Amplifier's own user settings, not a project's.
pub fn has_project_hooks(dir: &Path) -> bool {
    has_project_hooks_beside(dir, true)
}

/// [`has_project_hooks`], skipping `.amplifier/settings.yaml` when the caller found
/// no `.amplifier/` directory (`amplifier: false`).
fn has_project_hooks_beside(dir: &Path, amplifier: bool) -> bool {
    if std::env::var_os("HOME").is_some_and(|home| Path::new(&home) == dir) {
        return false;
    }
    // Read non-blocking and capped (`project_file`): a FIFO here must not hang every
    // arbor started below this directory.
    let mut files = SETTINGS_FILES
        .iter()
        .filter(|file| amplifier || !file.starts_with(".amplifier/"));
    files.any(|file| {
        let path = dir.join(file);
        // A stat first: most directories have neither file, and the read resolves
        // every component of the path (a `readlink` each) before it finds that out —
        // for each ancestor of every directory a project root is looked up for.
        path.exists()
            && project_file::read(
                &path,
                &project_file::Confinement::unconfined(),
                MAX_POWER_BYTES,
            )
            .is_ok_and(|read| read.text().contains("hooks"))
    })
}

/// The project `start` belongs to: `start` or its nearest ancestor that
/// [`needs_trust`]. `None` when no ancestor does (nothing to trust).
pub fn project_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| needs_trust(dir))
        .map(Path::to_path_buf)
}

/// The project of a working directory ([`project_root`]) with its trust state
/// ([`trust_state`]), looked up once for every reader of the project's powers (its
/// hooks and its `.mcp.json` servers, `Powers::read`): each lookup walks from the
/// working directory to the file system's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The project's root directory.
    pub root: PathBuf,
    /// Where it stands with the trust store.
    pub state: TrustState,
}

impl Project {
    /// The project `paths.cwd` belongs to and its trust state; `None` outside any
    /// project (nothing to trust).
    pub fn of(paths: &Paths) -> Option<Self> {
        let root = project_root(&paths.cwd)?;
        let state = trust_state(paths, &root);
        Some(Self { root, state })
    }
}

/// Where a project stands with the trust store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// The directory has nothing that needs trust.
    NotNeeded,
    /// Trusted, and its power files are the ones trusted.
    Trusted,
    /// Never trusted (or revoked, or the store cannot be read).
    Untrusted,
    /// Trusted once, but these power files (relative paths) were added, removed or
    /// changed since — or the entry predates hashes (`["(no record)"]`).
    Changed(Vec<String>),
}

impl TrustState {
    /// Whether the project's agents and MCP servers may use what it grants.
    pub fn is_trusted(&self) -> bool {
        matches!(self, Self::NotNeeded | Self::Trusted)
    }

    /// For [`TrustState::Changed`]: "the project's .mcp.json changed since you
    /// trusted it; run `arbor trust` again" (the files named, at most three).
    pub fn changed_message(&self, root: &Path) -> Option<String> {
        let Self::Changed(files) = self else {
            return None;
        };
        let what = if files.iter().any(|f| f == NO_RECORD) {
            "the files that grant it tools were not recorded when".to_string()
        } else {
            let mut shown: Vec<&str> = files.iter().take(3).map(String::as_str).collect();
            if files.len() > 3 {
                shown.push("…");
            }
            format!("{} changed since", shown.join(", "))
        };
        Some(format!(
            "the project {}: {what} you trusted it; run `arbor trust` again",
            root.display()
        ))
    }
}

/// What [`TrustState::Changed`] names for an entry written before hashes.
const NO_RECORD: &str = "(no record)";

/// Where the project at `root` stands, per the store at `paths.trust_file()` and
/// its power files now. A store that cannot be read trusts nothing (logged).
pub fn trust_state(paths: &Paths, root: &Path) -> TrustState {
    if !needs_trust(root) {
        return TrustState::NotNeeded;
    }
    match TrustStore::load(&paths.trust_file()) {
        Ok(store) => store.state(root),
        Err(e) => {
            tracing::warn!("{e}; treating {} as untrusted", root.display());
            TrustState::Untrusted
        }
    }
}

/// Whether the project at `root` is trusted ([`trust_state`]): a directory that does
/// not need trust is; one whose power files changed since it was trusted is not
/// (logged with the files).
pub fn is_trusted(paths: &Paths, root: &Path) -> bool {
    let state = trust_state(paths, root);
    if let Some(message) = state.changed_message(root) {
        tracing::warn!("{message}");
    }
    state.is_trusted()
}

/// Bundle files hashed at most for one project; a project with more under
/// `.amplifier/bundles/` is never trusted (its hash is fresh on every check).
const MAX_BUNDLE_FILES: usize = 2_000;
/// Bytes of one power file hashed at most (a larger file hashes its first bytes and
/// its length). The registry reads no agent file larger than this.
const MAX_POWER_BYTES: u64 = 4 << 20;

/// The files under `root` that grant power, relative path (`/`-separated) → SHA-256
/// (hex) of their bytes: `.mcp.json`, the [`SETTINGS_FILES`]; every agent file the
/// registry loads from `.amplifier/agents/` (`agent_files::list`: any case, capped
/// as the registry is) whose frontmatter grants power (`agent_files::grants_power`,
/// the registry's own parser: BOMs, CRLF, `meta:`); every file under
/// `.amplifier/bundles/` (symlinks not followed; more than [`MAX_BUNDLE_FILES`] makes
/// an entry that never matches). Unreadable files hash as `unreadable`.
pub fn power_files(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mcp = root.join(MCP_FILE);
    if mcp.is_file() {
        out.insert(MCP_FILE.to_string(), hash_file(&mcp));
    }
    for file in SETTINGS_FILES {
        let path = root.join(file);
        if path.is_file() {
            out.insert((*file).to_string(), hash_file(&path));
        }
    }
    let within = project_file::Confinement {
        root: Some(root.to_path_buf()),
        private: Vec::new(),
    };
    for path in agent_files::list(&root.join(AGENTS_DIR)).files {
        // Read as the registry reads it; a file it refuses loads as an invalid agent
        // (no power), but counts here when it cannot be told apart.
        match project_file::read(&path, &within, MAX_POWER_BYTES) {
            Ok(read) => {
                if read.cut || agent_files::grants_power(&read.text()) {
                    out.insert(relative(root, &path), hex(&Sha256::digest(&read.bytes)));
                }
            }
            Err(e) if e.is_not_found() => {}
            Err(_) => {
                out.insert(relative(root, &path), "unreadable".into());
            }
        }
    }
    let mut bundle_files = 0;
    let mut stack = vec![root.join(BUNDLES_DIR)];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
        entries.sort_by_key(std::fs::DirEntry::path);
        for entry in entries {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            bundle_files += 1;
            if bundle_files > MAX_BUNDLE_FILES {
                // Not covered, so never trusted: a fresh value on every check.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                out.insert(
                    format!("{BUNDLES_DIR} (more than {MAX_BUNDLE_FILES} files)"),
                    format!("uncovered-{now}"),
                );
                return out;
            }
            out.insert(relative(root, &path), hash_file(&path));
        }
    }
    out
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The hash of a power file: SHA-256 over its first [`MAX_POWER_BYTES`] and its
/// length. Read non-blocking, regular files only (`project_file`); `unreadable`
/// otherwise.
fn hash_file(path: &Path) -> String {
    match project_file::read(
        path,
        &project_file::Confinement::unconfined(),
        MAX_POWER_BYTES,
    ) {
        Ok(read) => hash_bytes(&read.bytes, read.metadata.len()),
        Err(_) => "unreadable".into(),
    }
}

fn hash_bytes(bytes: &[u8], len: u64) -> String {
    let mut hasher = Sha256::new();
    hasher.update(bytes);
    hasher.update(len.to_le_bytes());
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One hash over a [`power_files`] map (each `path NUL hash LF`, in path order).
fn combined(files: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (path, hash) in files {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(hash.as_bytes());
        hasher.update([b'\n']);
    }
    hex(&hasher.finalize())
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
    /// SHA-256 over [`TrustedProject::files`]; absent in entries written before
    /// hashes were recorded (such an entry counts as changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The power files trusted ([`power_files`]): relative path → SHA-256.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

impl TrustedProject {
    /// What changed in `now` (the project's [`power_files`] today) against this
    /// entry: the paths added, removed or changed, in order; empty when nothing did.
    pub fn changes(&self, now: &BTreeMap<String, String>) -> Vec<String> {
        if self.hash.is_none() {
            return vec![NO_RECORD.to_string()];
        }
        if self.hash.as_deref() == Some(combined(now).as_str()) {
            return Vec::new();
        }
        let mut changed: Vec<String> = now
            .iter()
            .filter(|(p, h)| self.files.get(*p) != Some(*h))
            .map(|(p, _)| p.clone())
            .chain(self.files.keys().filter(|p| !now.contains_key(*p)).cloned())
            .collect();
        changed.sort();
        if changed.is_empty() {
            changed.push(NO_RECORD.to_string());
        }
        changed
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    projects: Vec<TrustedProject>,
}

/// The trust store file: `{"version": 1, "projects": [{path, trusted_at, hash,
/// files}]}` (`hash` and `files` absent in entries of older arbors).
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

    /// Whether `root` (canonicalized when possible) is trusted with its power files
    /// as they are now ([`TrustStore::state`]).
    pub fn is_trusted(&self, root: &Path) -> bool {
        self.state(root) == TrustState::Trusted
    }

    /// Where `root` (canonicalized when possible) stands: [`TrustState::Trusted`]
    /// when an entry exists and its power files hash as recorded,
    /// [`TrustState::Changed`] when they do not, else [`TrustState::Untrusted`].
    pub fn state(&self, root: &Path) -> TrustState {
        let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let Some(entry) = self.projects.iter().find(|p| p.path == canonical) else {
            return TrustState::Untrusted;
        };
        let changes = entry.changes(&power_files(&canonical));
        if changes.is_empty() {
            TrustState::Trusted
        } else {
            TrustState::Changed(changes)
        }
    }

    /// Records `root` as trusted (by its canonical path; it must exist) with the
    /// hashes of its power files now, and saves. Returns the canonical path and
    /// whether anything was recorded (false: already trusted with these files).
    pub fn trust(&mut self, root: &Path) -> Result<(PathBuf, bool), TrustError> {
        let canonical = std::fs::canonicalize(root).map_err(|source| TrustError::Path {
            path: root.to_path_buf(),
            source,
        })?;
        let files = power_files(&canonical);
        let hash = combined(&files);
        let entry = TrustedProject {
            path: canonical.clone(),
            trusted_at: jiff::Timestamp::now().to_string(),
            hash: Some(hash.clone()),
            files,
        };
        match self.projects.iter_mut().find(|p| p.path == canonical) {
            Some(old) if old.hash.as_deref() == Some(hash.as_str()) => {
                return Ok((canonical, false));
            }
            Some(old) => *old = entry,
            None => self.projects.push(entry),
        }
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
        // Each power path by itself, under `.amplifier/` or not.
        for (path, dir, text) in [
            (BUNDLES_DIR, true, ""),
            (".amplifier/settings.yaml", false, "hooks: {}\n"),
            (".claude/settings.json", false, "{\"hooks\": {}}"),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let one = project(tmp.path(), "none");
            let at = one.join(path);
            std::fs::create_dir_all(if dir { &at } else { at.parent().unwrap() }).unwrap();
            if !dir {
                std::fs::write(&at, text).unwrap();
            }
            assert!(needs_trust(&one), "{path}");
            assert_eq!(project_root(&one.join("x")), Some(one.clone()), "{path}");
        }
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
