//! Reading a file a project supplies (issue 34 item 4): the one reader for every file
//! arbor reads from a working tree on its own and puts into a model request —
//! `AGENTS.md` (`agent::instructions`), custom slash commands (`agent::commands`),
//! agent files (`agent::registry`) — and for the project files trust hashes
//! (`config::trust`). A cloned repository decides what these paths are, so each is
//! read as `@mentions` are (`agent::mentions`, SPEC §12 "Trust"):
//!
//! - the path is canonicalized (every symlink resolved) and must lie inside the
//!   [`Confinement`]'s root, and must not be private (`config::private`: `/proc`,
//!   `/dev`, `~/.ssh`, arbor's config, …);
//! - the file is opened with `O_NONBLOCK` and `O_NOFOLLOW` (a FIFO does not wait for
//!   a writer, a link swapped in after the check is not followed), and the opened
//!   handle is `fstat`ed: only a regular file is read (not a FIFO, socket, device or
//!   directory); where `/proc/self/fd` exists, the handle's own path is checked again;
//! - at most `max_bytes` are kept (one byte more is read to tell a longer file), so
//!   `/dev/zero` or a huge file costs nothing.
//!
//! Never blocks on a special file and never panics. Owns: [`Confinement`], [`read`],
//! [`ProjectFile`], [`ProjectFileError`]. Does not own: which files a module reads
//! (its callers), the private list (`config::private`), `@mentions`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::paths::Paths;

use super::private::{is_private, private_paths};

/// Where a read may lead: inside `root` (when set) and never under `private`.
#[derive(Debug, Clone, Default)]
pub struct Confinement {
    /// The canonical directory every file must resolve inside; `None`: anywhere (the
    /// person's own directories, e.g. `~/.amplifier/agents`).
    pub root: Option<PathBuf>,
    /// Paths never read, nor anything under them (`config::private::private_paths`).
    pub private: Vec<PathBuf>,
}

impl Confinement {
    /// Files of the project at `root` (canonicalized here; as given when it cannot
    /// be), never one of the private paths of `paths` and the home directory `home`.
    pub fn project(root: &Path, paths: &Paths, home: Option<&Path>) -> Self {
        Self {
            root: Some(std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())),
            private: private_paths(paths, home),
        }
    }

    /// [`Confinement::project`] with the home directory from the process's `HOME`.
    pub fn project_from_env(root: &Path, paths: &Paths) -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::project(root, paths, home.as_deref())
    }

    /// Files of the person's own directories: anywhere, still only regular files,
    /// non-blocking and capped.
    pub fn unconfined() -> Self {
        Self::default()
    }

    /// Why `canonical` may not be read, if it may not.
    fn refuse(&self, canonical: &Path, asked: &Path) -> Option<ProjectFileError> {
        if let Some(root) = &self.root
            && !canonical.starts_with(root)
        {
            return Some(ProjectFileError::Outside {
                path: asked.to_path_buf(),
                target: canonical.to_path_buf(),
                root: root.clone(),
            });
        }
        if is_private(canonical, &self.private) {
            return Some(ProjectFileError::Private {
                path: asked.to_path_buf(),
                target: canonical.to_path_buf(),
            });
        }
        None
    }
}

/// A file read by [`read`].
#[derive(Debug)]
pub struct ProjectFile {
    /// The file read: the path asked for, every link resolved.
    pub canonical: PathBuf,
    /// Its first bytes, at most the `max_bytes` asked for.
    pub bytes: Vec<u8>,
    /// Whether the file is longer than `max_bytes` (the rest was not read).
    pub cut: bool,
    /// The metadata of the opened file (`fstat` on the handle).
    pub metadata: std::fs::Metadata,
}

impl ProjectFile {
    /// The bytes as text (invalid UTF-8, e.g. a character cut at the cap, replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Why a project file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ProjectFileError {
    /// The path leads (through a symlink or `..`) outside the confinement's root.
    #[error("{path} leads outside the project {root} (to {target}); not read")]
    Outside {
        path: PathBuf,
        target: PathBuf,
        root: PathBuf,
    },
    /// The path leads to a private path (`config::private`).
    #[error("{path} leads to {target}, a private path (system, config or key files); not read")]
    Private { path: PathBuf, target: PathBuf },
    /// The file is not a regular file.
    #[error("{path} is not a regular file (a {kind}); not read")]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The file moved while it was being opened (the handle is not the path checked).
    #[error("{path} changed while it was being read; not read")]
    Moved { path: PathBuf },
    /// It cannot be resolved, opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ProjectFileError {
    /// Whether the file does not exist (callers that probe for optional files skip
    /// it silently).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// What kind of file `meta` describes, for messages.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_symlink() {
        "symlink"
    } else {
        "special file"
    }
}

/// Opens `canonical` for reading without blocking and without following a final
/// symlink.
fn open(canonical: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
        .open(canonical)
}

/// Reads the project file `path` under `within` (see the module docs): its first
/// `max_bytes` bytes and whether there was more.
///
/// Errors: [`ProjectFileError::Outside`] / [`ProjectFileError::Private`] when the
/// canonical path is outside the root or private; [`ProjectFileError::NotRegular`]
/// for a FIFO, socket, device or directory; [`ProjectFileError::Moved`] when the
/// opened file is not the one checked; [`ProjectFileError::Io`] when it does not
/// exist or cannot be read.
pub fn read(
    path: &Path,
    within: &Confinement,
    max_bytes: u64,
) -> Result<ProjectFile, ProjectFileError> {
    let io = |source| ProjectFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let canonical = std::fs::canonicalize(path).map_err(io)?;
    if let Some(refused) = within.refuse(&canonical, path) {
        return Err(refused);
    }
    let file = open(&canonical).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        return Err(ProjectFileError::NotRegular {
            path: path.to_path_buf(),
            kind: kind(&metadata),
        });
    }
    if let Some(held) = handle_path(&file)
        && held != canonical
    {
        return Err(ProjectFileError::Moved {
            path: path.to_path_buf(),
        });
    }
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let cut = u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_bytes;
    if cut {
        bytes.truncate(usize::try_from(max_bytes).unwrap_or(usize::MAX));
    }
    Ok(ProjectFile {
        canonical,
        bytes,
        cut,
        metadata,
    })
}

/// The path the kernel holds for `file` (`/proc/self/fd/N`); `None` without `/proc`.
fn handle_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_private_paths_and_special_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("project");
        let secret = base.join("home/.ssh/id_rsa");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
        std::fs::write(&secret, "KEY").unwrap();
        std::fs::write(base.join("outside.md"), "OUT").unwrap();
        std::fs::write(root.join("docs/in.md"), "hello world").unwrap();
        let link = |name: &str, to: &Path| std::os::unix::fs::symlink(to, root.join(name)).unwrap();
        link("out.md", &base.join("outside.md"));
        link("key.md", &secret);
        link("environ.md", Path::new("/proc/self/environ"));
        link("zero.md", Path::new("/dev/zero"));
        link("in.md", &root.join("docs/in.md"));
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("fifo.md"))
            .status()
            .unwrap();
        assert!(made.success());

        let within = Confinement {
            root: Some(root.clone()),
            private: vec![
                PathBuf::from("/proc"),
                PathBuf::from("/dev"),
                base.join("home/.ssh"),
            ],
        };
        let err = |name: &str| read(&root.join(name), &within, 100).unwrap_err();
        assert!(matches!(err("out.md"), ProjectFileError::Outside { .. }));
        assert!(matches!(err("key.md"), ProjectFileError::Outside { .. }));
        assert!(matches!(
            err("environ.md"),
            ProjectFileError::Outside { .. }
        ));
        assert!(matches!(
            err("fifo.md"),
            ProjectFileError::NotRegular { kind: "FIFO", .. }
        ));
        assert!(err("missing.md").is_not_found());
        let got = read(&root.join("in.md"), &within, 5).unwrap();
        assert_eq!((got.text().as_str(), got.cut), ("hello", true));
        assert_eq!(got.canonical, root.join("docs/in.md"));
        let whole = read(&root.join("in.md"), &within, 11).unwrap();
        assert_eq!((whole.text().as_str(), whole.cut), ("hello world", false));

        // Unconfined: anywhere, but still private paths refused and no special file.
        let open = Confinement {
            root: None,
            private: within.private.clone(),
        };
        assert!(matches!(
            read(&root.join("key.md"), &open, 100).unwrap_err(),
            ProjectFileError::Private { .. }
        ));
        assert_eq!(
            read(&root.join("out.md"), &open, 100).unwrap().text(),
            "OUT"
        );
        let any = Confinement::unconfined();
        assert!(matches!(
            read(&root.join("zero.md"), &any, 100).unwrap_err(),
            ProjectFileError::NotRegular {
                kind: "character device",
                ..
            }
        ));
        assert!(matches!(
            read(&root.join("fifo.md"), &any, 100).unwrap_err(),
            ProjectFileError::NotRegular { .. }
        ));
    }
}
