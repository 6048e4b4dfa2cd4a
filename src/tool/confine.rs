//! Confining tool paths: reads to the session's working directory, writes to
//! `allowed_write_paths`.
//!
//! Owns: turning a path a model passed (relative or absolute) into a canonical path
//! inside the working directory ([`resolve`]) or inside one of the write roots
//! ([`resolve_for_write`], which also handles files and directories that do not exist
//! yet), refusing `..` escapes and symlinks that lead out, and the small helpers the
//! file tools share (binary sniffing, display paths). Does not own: reading, writing
//! or walking files (`filesystem`, `search`).

use std::path::{Component, Path, PathBuf};

use super::error::ToolError;

/// Bytes sniffed for a NUL to call a file binary.
const SNIFF_BYTES: usize = 8192;

/// The canonical working directory, or [`ToolError::WorkingDir`].
pub fn root(working_dir: &Path) -> Result<PathBuf, ToolError> {
    std::fs::canonicalize(working_dir).map_err(|source| ToolError::WorkingDir {
        dir: working_dir.to_path_buf(),
        source,
    })
}

/// Resolves `requested` (relative to `root`, or absolute) to an existing canonical path
/// inside `root` (which must already be canonical, see [`root`]). An empty request is
/// `root` itself.
///
/// Errors ([`ToolError`], text for the model): the path leaves the working directory — lexically via
/// `..` or an absolute path elsewhere (checked before touching the disk, so nothing
/// outside is probed), or through a symlink (checked after canonicalizing); the path
/// does not exist or cannot be read.
pub fn resolve(root: &Path, requested: &str) -> Result<PathBuf, ToolError> {
    let requested = requested.trim();
    if requested.contains('\0') {
        return Err(ToolError::NulInPath);
    }
    let candidate = if requested.is_empty() || requested == "." {
        root.to_path_buf()
    } else {
        let p = Path::new(requested);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            root.join(p)
        }
    };
    let outside = || ToolError::OutsideWorkingDir {
        requested: requested.to_string(),
        root: root.to_path_buf(),
    };
    match normalize(&candidate) {
        Some(lexical) if lexical.starts_with(root) => {}
        _ => return Err(outside()),
    }
    let canonical = std::fs::canonicalize(&candidate).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ToolError::NotFound(requested.to_string())
        } else {
            ToolError::io("access", requested, e)
        }
    })?;
    if !canonical.starts_with(root) {
        return Err(outside());
    }
    Ok(canonical)
}

/// The config key naming the write roots (Amplifier's `tool-filesystem` key).
pub const ALLOWED_WRITE_PATHS: &str = "allowed_write_paths";

/// Where a write may land, resolved: the canonical existing directory the path starts
/// in plus the components still to be created, and the write root it falls under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteTarget {
    /// The file to write: every existing part canonical (symlinks resolved), so a
    /// symlink to a file inside the roots is written through to that file.
    pub path: PathBuf,
    /// Whether the file exists now (as a regular file).
    pub exists: bool,
    /// The canonical write root (`allowed_write_paths` entry) `path` is inside.
    pub root: PathBuf,
    /// `path` below `root` (at least the file name, never `..`): what the write opens
    /// relative to a handle on `root` (`filesystem::write`), so a directory swapped
    /// for a symlink after this check fails instead of leading out.
    pub relative: PathBuf,
}

/// Resolves `requested` (relative to `working_dir`, or absolute) to a file that
/// `write_file` / `edit_file` may write: inside one of `allowed` (`allowed_write_paths`
/// entries: relative ones are taken from `working_dir`, `~/` is the home directory;
/// entries that do not exist are skipped). Parents that do not exist yet are allowed
/// when the deepest existing one is inside a root.
///
/// Symlinks are resolved before the check: every existing component of the path,
/// including the file itself and a not-yet-existing file's parent, is canonicalized,
/// so neither `../` nor a symlink (to a file or a directory) leads out. A dangling
/// symlink is refused rather than replaced.
///
/// Errors ([`ToolError`], text for the model): outside every root — `Access denied: …` naming
/// `allowed_write_paths`, the requested path and the roots; an empty path or a NUL; a
/// directory; a parent that is a file; an unreadable path.
pub fn resolve_for_write(
    working_dir: &Path,
    allowed: &[String],
    requested: &str,
    home: Option<&Path>,
) -> Result<WriteTarget, ToolError> {
    let requested = requested.trim();
    if requested.is_empty() {
        return Err(ToolError::EmptyPath);
    }
    if requested.contains('\0') {
        return Err(ToolError::NulInPath);
    }
    let cwd = root(working_dir)?;
    let roots = write_roots(&cwd, allowed, home);
    let denied = |resolved: Option<&Path>| outside_roots(requested, resolved, &roots);
    let p = Path::new(requested);
    let candidate = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let Some(lexical) = normalize(&candidate) else {
        return Err(denied(None));
    };
    let (existing, missing) = deepest_existing(&lexical, requested)?;
    let canonical = std::fs::canonicalize(&existing).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ToolError::Unsuitable(format!(
                "'{}' is a symlink whose target does not exist; refusing to write through it",
                existing.display()
            ))
        } else {
            ToolError::io("access", requested, e)
        }
    })?;
    let is_dir = canonical.is_dir();
    let path = missing
        .iter()
        .rev()
        .fold(canonical.clone(), |acc, name| acc.join(name));
    let Some((root, relative)) = roots.iter().find_map(|r| {
        let rel = path.strip_prefix(r).ok()?;
        (!rel.as_os_str().is_empty()).then(|| (r.clone(), rel.to_path_buf()))
    }) else {
        return Err(denied((path != lexical).then_some(path.as_path())));
    };
    if missing.is_empty() && is_dir {
        return Err(ToolError::Unsuitable(format!(
            "'{requested}' is a directory, not a file"
        )));
    }
    if !missing.is_empty() && !is_dir {
        return Err(ToolError::Unsuitable(format!(
            "cannot create '{requested}': {} is not a directory",
            canonical.display()
        )));
    }
    if in_git_dir(&path) {
        return Err(ToolError::Denied(format!(
            "Access denied: '{requested}' is inside a git directory (.git); write_file and \
             edit_file never change a repository's config, hooks, refs or objects"
        )));
    }
    Ok(WriteTarget {
        path,
        exists: missing.is_empty(),
        root,
        relative,
    })
}

/// The refusal of `requested` (resolving to `resolved` through a symlink, when it
/// does) outside every write root of `roots`, naming them.
fn outside_roots(requested: &str, resolved: Option<&Path>, roots: &[PathBuf]) -> ToolError {
    let shown = if roots.is_empty() {
        "none: the list is empty or names no existing directory".to_string()
    } else {
        roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let via = resolved
        .map(|p| format!(" (it resolves to {})", p.display()))
        .unwrap_or_default();
    ToolError::Denied(format!(
        "Access denied: '{requested}'{via} is not within allowed_write_paths \
         ({shown}); write_file and edit_file only write inside those directories"
    ))
}

/// The deepest part of `lexical` that exists (as a name: a dangling symlink counts),
/// and the names below it that do not, deepest first.
///
/// Errors: a component cannot be looked at (other than not existing).
fn deepest_existing(
    lexical: &Path,
    requested: &str,
) -> Result<(PathBuf, Vec<std::ffi::OsString>), ToolError> {
    let mut existing = lexical.to_path_buf();
    let mut missing = Vec::new();
    loop {
        match std::fs::symlink_metadata(&existing) {
            Ok(_) => return Ok((existing, missing)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let Some(name) = existing.file_name().map(ToOwned::to_owned) else {
                    return Err(ToolError::io("access", requested, e));
                };
                missing.push(name);
                if !existing.pop() {
                    return Err(ToolError::io("access", requested, e));
                }
            }
            Err(e) => return Err(ToolError::io("access", requested, e)),
        }
    }
}

/// Whether `path` (canonical) lies in a git directory: a component named `.git` (any
/// case). arbor runs git on the repository outside the sandbox, so its config, hooks
/// and refs are not the file tools' to write (issue 34: a `write_file .git/config`
/// set `core.fsmonitor`).
pub fn in_git_dir(path: &Path) -> bool {
    path.components()
        .any(|c| c.as_os_str().to_string_lossy().eq_ignore_ascii_case(".git"))
}

/// The canonical write roots: each `allowed` entry (`~/` expanded with `home`,
/// relative ones joined to `cwd`) that exists.
fn write_roots(cwd: &Path, allowed: &[String], home: Option<&Path>) -> Vec<PathBuf> {
    allowed
        .iter()
        .filter_map(|entry| {
            let entry = entry.trim();
            let path = match (entry.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ if entry == "~" => home?.to_path_buf(),
                _ => cwd.join(entry),
            };
            std::fs::canonicalize(path).ok()
        })
        .collect()
}

/// Lexical normalization: drops `.`, resolves `..` against earlier components; `None`
/// when `..` climbs above the filesystem root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

/// `path` relative to `root` with `/` separators (`.` for the root itself).
pub fn display(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => path.display().to_string(),
    }
}

/// Whether `bytes` (a file's start) look binary: a NUL in the first 8 KB.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(SNIFF_BYTES).any(|b| *b == 0)
}

/// Cuts `text` to at most `max` bytes on a char boundary.
pub fn truncate_chars(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_absolute_and_escaping_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = root(dir.path()).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "a").unwrap();
        assert_eq!(resolve(&root, "sub/a.txt").unwrap(), root.join("sub/a.txt"));
        assert_eq!(resolve(&root, "").unwrap(), root);
        assert_eq!(
            resolve(&root, "sub/../sub/a.txt").unwrap(),
            root.join("sub/a.txt")
        );
        let abs = root.join("sub/a.txt");
        assert_eq!(resolve(&root, abs.to_str().unwrap()).unwrap(), abs);
        assert!(
            resolve(&root, "../x")
                .unwrap_err()
                .to_string()
                .contains("outside the working directory")
        );
        assert!(
            resolve(&root, "/etc/passwd")
                .unwrap_err()
                .to_string()
                .contains("outside")
        );
        assert!(
            resolve(&root, "nope.txt")
                .unwrap_err()
                .to_string()
                .contains("not found")
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlink_leading_out_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = root(dir.path()).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("dirlink")).unwrap();
        assert!(
            resolve(&root, "link")
                .unwrap_err()
                .to_string()
                .contains("outside")
        );
        assert!(
            resolve(&root, "dirlink/secret")
                .unwrap_err()
                .to_string()
                .contains("outside")
        );
    }

    #[test]
    fn helpers() {
        assert!(looks_binary(b"ab\0c"));
        assert!(!looks_binary("héllo".as_bytes()));
        assert_eq!(truncate_chars("héllo", 2), "h");
        assert_eq!(display(Path::new("/r"), Path::new("/r/a/b")), "a/b");
        assert_eq!(display(Path::new("/r"), Path::new("/r")), ".");
    }
}
