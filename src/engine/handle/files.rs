//! Files the engine writes or lists for a front end: a session's Markdown export
//! (`ExportSession`) and the project's files for `@file` completion
//! (`ListProjectFiles`).
//!
//! Owns: [`write_export`] (a new file, written whole or not at all, never replacing
//! one), and [`project_files`]. Does not own: rendering the
//! export (`session::export`), completing mentions (the TUI).

use std::io::Write;
use std::path::{Path, PathBuf};

pub use crate::engine::outcome::ExportError;

/// At most this many files are listed for completion (a huge tree stays responsive).
pub const MAX_PROJECT_FILES: usize = 20_000;

/// Writes `text` to a new `arbor-export-<first 8 of id>.md` in `dir` (`-2`, `-3`…
/// when the name is taken; an existing file is never replaced), whole or not at all:
/// a temp file in `dir` is persisted under the name only once written and synced.
/// Returns the path written.
pub fn write_export(dir: &Path, session_id: &str, text: &str) -> Result<PathBuf, ExportError> {
    let short: String = session_id.chars().filter(|c| *c != '-').take(8).collect();
    let mut tmp = tempfile::Builder::new()
        .prefix(".arbor-export-")
        .tempfile_in(dir)
        .map_err(|source| ExportError::Dir {
            dir: dir.to_path_buf(),
            source,
        })?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(ExportError::Write)?;
    for n in 1..1000 {
        let name = if n == 1 {
            format!("arbor-export-{short}.md")
        } else {
            format!("arbor-export-{short}-{n}.md")
        };
        let path = dir.join(name);
        match tmp.persist_noclobber(&path) {
            Ok(_) => return Ok(path),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => tmp = e.file,
            Err(e) => {
                return Err(ExportError::Persist {
                    path,
                    source: e.error,
                });
            }
        }
    }
    Err(ExportError::NamesTaken {
        dir: dir.to_path_buf(),
        short,
    })
}

/// The files under `root` (relative, `/`-separated, sorted), `.gitignore` respected
/// (also outside a git repository), hidden files and `.git` skipped, at most
/// [`MAX_PROJECT_FILES`]. Blocks: call it on a blocking thread.
pub fn project_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let walk = ignore::WalkBuilder::new(root).require_git(false).build();
    for entry in walk.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(rel) = entry.path().strip_prefix(root) {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
        if out.len() >= MAX_PROJECT_FILES {
            break;
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_never_replace_a_file_and_leave_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let id = "5f0e1c2a-1111-4222-8333-444455556666";
        let first = write_export(dir.path(), id, "one").unwrap();
        let second = write_export(dir.path(), id, "two").unwrap();
        assert_eq!(first.file_name().unwrap(), "arbor-export-5f0e1c2a.md");
        assert_eq!(second.file_name().unwrap(), "arbor-export-5f0e1c2a-2.md");
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "one");
        assert_eq!(std::fs::read_to_string(&second).unwrap(), "two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        let missing = dir.path().join("nope");
        let error = write_export(&missing, id, "x").unwrap_err();
        assert!(matches!(error, ExportError::Dir { .. }));
        assert!(error.to_string().contains("cannot write in"));
    }

    #[test]
    fn project_files_are_relative_sorted_and_skip_ignored_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/b.rs"), "").unwrap();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        std::fs::write(dir.path().join("skip.log"), "").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        assert_eq!(project_files(dir.path()), ["a.txt", "src/b.rs"]);
    }
}
