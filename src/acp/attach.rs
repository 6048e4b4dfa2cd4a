//! Reading the file behind an ACP `resource_link` (issue 34 item 9): every check
//! comes before the file is read, and opening it can neither block nor follow a
//! link swapped in after the checks.
//!
//! The rules are the ones arbor's `@mentions` follow (`tui::state::mentions`,
//! `agent::mentions`): the path, symlinks resolved, lies inside the session's
//! working directory; it is not private (`config::private`: `/proc`, `/dev`, `/sys`,
//! arbor's and Amplifier's key files, the home directory's credential stores —
//! checked on the path as written and as resolved, so `~/.ssh` is refused even when
//! the working directory is home); it is opened `O_NONBLOCK | O_NOFOLLOW | O_NOCTTY`
//! (a FIFO or device returns at once instead of waiting for a writer); `fstat` of
//! the opened file says it is a regular file of at most [`MAX_ATTACHED`] bytes, and
//! no more than that is read; on Linux the opened file's own path
//! (`/proc/self/fd/N`) is checked again, so a directory swapped for a link between
//! the checks and the open is caught.
//!
//! Owns: [`read_link`] and why a link is refused ([`Refused`]). Does not own: the
//! private list (`config::private`), turning a prompt into text (`prompt`).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::config::private::is_private;

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
    /// Not a regular file (a directory, FIFO, socket or device).
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

/// The text of the file at `path` (absolute, or relative to `cwd`) for a session
/// working in `cwd`, under the rules of the module doc; `private` is
/// `config::private::private_paths`. Errors: why it was refused ([`Refused`]);
/// nothing was read then.
pub fn read_link(path: &Path, cwd: &Path, private: &[PathBuf]) -> Result<String, Refused> {
    let written = cwd.join(path);
    if is_private(&written, private) {
        return Err(Refused::Private);
    }
    let cwd = cwd.canonicalize()?;
    // `canonicalize` resolves links with `lstat`/`readlink` only: it opens nothing.
    let resolved = written.canonicalize()?;
    check_place(&resolved, &cwd, private)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(&resolved)?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
        check_place(&opened, &cwd, private)?;
    }
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Refused::NotAFile);
    }
    if meta.len() > MAX_ATTACHED {
        return Err(Refused::TooLarge(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_ATTACHED + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_ATTACHED {
        return Err(Refused::TooLarge(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| Refused::Binary)
}

/// Whether resolved path `path` may be read for a session in canonical `cwd`.
fn check_place(path: &Path, cwd: &Path, private: &[PathBuf]) -> Result<(), Refused> {
    if !path.starts_with(cwd) {
        return Err(Refused::Outside);
    }
    if is_private(path, private) {
        return Err(Refused::Private);
    }
    Ok(())
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
