//! Reading the file behind an ACP `resource_link` (issue 34 item 9): every check
//! comes before the file is read, and opening it can neither block nor follow a
//! link swapped in after the checks.
//!
//! The reading is arbor's one reader of files it did not choose,
//! `config::project_file::read` (the one `AGENTS.md`, commands, agent files and
//! `@mentions` go through), confined to the session's working directory: the path,
//! symlinks resolved, lies inside it and is not private (`config::private`: `/proc`,
//! `/dev`, `/sys`, arbor's and Amplifier's key files, the home directory's credential
//! stores); it is opened without blocking or following a final link, only a regular
//! file is read, its handle's own path is checked again, and no more than
//! [`MAX_ATTACHED`] bytes are read. On top of that the path *as written* must not be
//! private (so `~/.ssh` is refused even when the working directory is home), and the
//! file must be UTF-8 text.
//!
//! Owns: [`read_link`] and why a link is refused ([`Refused`]). Does not own: the
//! reader (`config::project_file`), the private list (`config::private`), turning a
//! prompt into text (`prompt`).

use std::path::{Path, PathBuf};

use crate::config::private::is_private;
use crate::config::project_file::{self, Confinement, ProjectFileError};

/// Largest file read for a resource link, in bytes (bigger ones are named, not
/// attached).
pub const MAX_ATTACHED: u64 = 256 * 1024;

/// Why the file behind a resource link was not attached. Its text is what the model
/// is told after the link's name (`@path (not attached: …)`).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The resolved path is outside the session's working directory.
    #[error("outside the session's working directory")]
    Outside,
    /// A private path (`config::private`) or under one.
    #[error("a private path")]
    Private,
    /// Not a regular file (a directory, FIFO, socket or device), or it changed while
    /// it was being opened.
    #[error("not a regular file")]
    NotAFile,
    /// Larger than [`MAX_ATTACHED`] (the size in bytes).
    #[error("{0} bytes, over the {MAX_ATTACHED}-byte limit")]
    TooLarge(u64),
    /// Not UTF-8 text.
    #[error("binary")]
    Binary,
    /// Missing, unreadable, or the working directory itself is.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl From<ProjectFileError> for Refused {
    fn from(error: ProjectFileError) -> Self {
        match error {
            ProjectFileError::Outside { .. } => Self::Outside,
            ProjectFileError::Private { .. } => Self::Private,
            ProjectFileError::NotRegular { .. } | ProjectFileError::Moved { .. } => Self::NotAFile,
            ProjectFileError::Io { source, .. } => Self::Io(source),
        }
    }
}

/// The text of the file at `path` (absolute, or relative to `cwd`) for a session
/// working in `cwd`, under the rules of the module doc; `private` is
/// `config::private::private_paths`. Errors: why it was refused ([`Refused`]);
/// nothing was read then.
pub fn read_link(path: &Path, cwd: &Path, private: &[PathBuf]) -> Result<String, Refused> {
    let written = cwd.join(path);
    if is_private(&written, private) {
        return Err(Refused::Private);
    }
    let within = Confinement {
        root: Some(cwd.canonicalize()?),
        private: private.to_vec(),
    };
    let file = project_file::read(&written, &within, MAX_ATTACHED)?;
    if file.cut || file.metadata.len() > MAX_ATTACHED {
        return Err(Refused::TooLarge(file.metadata.len()));
    }
    String::from_utf8(file.bytes).map_err(|_| Refused::Binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_come_before_the_read() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().canonicalize().unwrap();
        std::fs::write(cwd.join("a.txt"), "alpha").unwrap();
        std::fs::create_dir(cwd.join(".ssh")).unwrap();
        std::fs::write(cwd.join(".ssh/id_rsa"), "KEY").unwrap();
        std::fs::write(cwd.join("big"), vec![b'x'; MAX_ATTACHED as usize + 1]).unwrap();
        std::fs::write(cwd.join("bin"), [0xff, 0xfe]).unwrap();
        std::os::unix::fs::symlink("/dev/zero", cwd.join("zero")).unwrap();
        std::os::unix::fs::symlink(cwd.join(".ssh/id_rsa"), cwd.join("k")).unwrap();
        let fifo = cwd.join("pipe");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let private = vec![PathBuf::from("/dev"), cwd.join(".ssh")];
        let read = |p: &str| read_link(Path::new(p), &cwd, &private);
        assert_eq!(read("a.txt").unwrap(), "alpha");
        assert!(matches!(read(".ssh/id_rsa"), Err(Refused::Private)));
        assert!(matches!(read("k"), Err(Refused::Private)));
        assert!(matches!(read("zero"), Err(Refused::Outside)));
        assert!(matches!(read("/dev/zero"), Err(Refused::Private)));
        assert!(matches!(read("pipe"), Err(Refused::NotAFile)));
        assert!(matches!(read("."), Err(Refused::NotAFile)));
        assert!(matches!(read("big"), Err(Refused::TooLarge(_))));
        assert!(matches!(read("bin"), Err(Refused::Binary)));
        assert!(matches!(read("missing"), Err(Refused::Io(_))));
        // With `/` as the working directory, `/dev/zero` is inside but private.
        let root = read_link(Path::new("/dev/zero"), Path::new("/"), &private);
        assert!(matches!(root, Err(Refused::Private)));
    }
}
