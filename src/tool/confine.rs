//! Confining tool paths to the session's working directory.
//!
//! Owns: turning a path a model passed (relative or absolute) into a canonical path
//! inside the working directory, refusing `..` escapes and symlinks that lead out, and
//! the small helpers the read-only tools share (binary sniffing, display paths). Does
//! not own: reading or walking files (`filesystem`, `search`).

use std::path::{Component, Path, PathBuf};

/// Bytes sniffed for a NUL to call a file binary.
const SNIFF_BYTES: usize = 8192;

/// The canonical working directory, or an error text for the model.
pub fn root(working_dir: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(working_dir).map_err(|e| {
        format!(
            "the working directory {} is not accessible: {e}",
            working_dir.display()
        )
    })
}

/// Resolves `requested` (relative to `root`, or absolute) to an existing canonical path
/// inside `root` (which must already be canonical, see [`root`]). An empty request is
/// `root` itself.
///
/// Errors (text for the model): the path leaves the working directory — lexically via
/// `..` or an absolute path elsewhere (checked before touching the disk, so nothing
/// outside is probed), or through a symlink (checked after canonicalizing); the path
/// does not exist or cannot be read.
pub fn resolve(root: &Path, requested: &str) -> Result<PathBuf, String> {
    let requested = requested.trim();
    if requested.contains('\0') {
        return Err("the path contains a NUL byte".to_string());
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
    let outside = || {
        format!(
            "path '{requested}' is outside the working directory {}; only files under it can be read",
            root.display()
        )
    };
    match normalize(&candidate) {
        Some(lexical) if lexical.starts_with(root) => {}
        _ => return Err(outside()),
    }
    let canonical = std::fs::canonicalize(&candidate).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("path not found: '{requested}'")
        } else {
            format!("cannot access '{requested}': {e}")
        }
    })?;
    if !canonical.starts_with(root) {
        return Err(outside());
    }
    Ok(canonical)
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
                .contains("outside the working directory")
        );
        assert!(
            resolve(&root, "/etc/passwd")
                .unwrap_err()
                .contains("outside")
        );
        assert!(
            resolve(&root, "nope.txt")
                .unwrap_err()
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
        assert!(resolve(&root, "link").unwrap_err().contains("outside"));
        assert!(
            resolve(&root, "dirlink/secret")
                .unwrap_err()
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
