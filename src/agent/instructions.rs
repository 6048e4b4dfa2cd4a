//! Project instructions (issue 26 item 6): the `AGENTS.md` files Codex, opencode and
//! Amplifier users keep in their projects, added to a root session's system prompt.
//!
//! Owns: finding them — `AGENTS.md` and `.amplifier/AGENTS.md` in every directory from
//! the project root (the nearest ancestor of the working directory holding `.git`,
//! else the working directory itself) down to the working directory, outermost first
//! — and joining them under a size cap, with a note when cut. They are instructions
//! only: they grant no tools and need no trust. Read afresh for every model call, so
//! an edit applies to the next one. Does not own: where the text goes in the prompt
//! (`engine::prompt`) or the cap's config key (`config::context`).

use std::path::{Path, PathBuf};

use serde::Serialize;

/// The file names read in each directory, in this order.
pub const FILES: [&str; 2] = ["AGENTS.md", ".amplifier/AGENTS.md"];

/// The instructions found for one working directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectInstructions {
    /// The files read, outermost first (absolute paths).
    pub files: Vec<PathBuf>,
    /// The block added to the system prompt (headed, each file under its path).
    pub text: String,
    /// Whether the text was cut at the cap.
    pub cut: bool,
}

/// The project root of `cwd`: the nearest ancestor (itself included) holding `.git`,
/// else `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The project instructions for working directory `cwd`, cut to `max_bytes` of file
/// text; `None` when there is no such file (or none can be read: an unreadable file
/// is skipped, not an error).
pub fn load(cwd: &Path, max_bytes: usize) -> Option<ProjectInstructions> {
    let root = project_root(cwd);
    let dirs: Vec<&Path> = {
        let mut d: Vec<&Path> = cwd
            .ancestors()
            .take_while(|a| a.starts_with(&root))
            .collect();
        d.reverse();
        d
    };
    let mut files = Vec::new();
    let mut body = String::new();
    let mut left = max_bytes;
    let mut cut = false;
    for dir in dirs {
        for name in FILES {
            let path = dir.join(name);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if text.trim().is_empty() {
                continue;
            }
            let shown = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            files.push(path);
            if cut {
                continue;
            }
            let text = text.trim();
            let take = if text.len() > left {
                cut = true;
                let mut end = left;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                &text[..end]
            } else {
                text
            };
            left -= take.len();
            body.push_str(&format!("\n\n## {shown}\n\n{take}"));
        }
    }
    if files.is_empty() {
        return None;
    }
    let mut text = String::from(
        "# Project instructions\n\nThe project's AGENTS.md files, from its root down to the \
         working directory (a later file is more specific).",
    );
    text.push_str(&body);
    if cut {
        text.push_str(&format!(
            "\n\n[Project instructions cut at {max_bytes} bytes (config \
             context.project_instructions_max_bytes); read the files for the rest: {}]",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Some(ProjectInstructions { files, text, cut })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_to_cwd_outermost_first_with_a_cap_note() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("a/b/.amplifier")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "Use tabs.").unwrap();
        std::fs::write(root.join("a/b/.amplifier/AGENTS.md"), "Run make check.").unwrap();
        // Above the project root: not read.
        let cwd = root.join("a/b");
        let found = load(&cwd, 10_000).unwrap();
        assert_eq!(found.files.len(), 2);
        let (tabs, make) = (
            found.text.find("Use tabs.").unwrap(),
            found.text.find("Run make check.").unwrap(),
        );
        assert!(tabs < make, "{}", found.text);
        assert!(found.text.contains("## a/b/.amplifier/AGENTS.md"));
        assert!(!found.cut);
        let small = load(&cwd, 12).unwrap();
        assert!(small.cut);
        assert!(small.text.contains("Use tabs."));
        assert!(!small.text.contains("Run make check."));
        assert!(small.text.contains("cut at 12 bytes"), "{}", small.text);
        assert!(load(&root.join("a"), 100).is_some());
        std::fs::remove_file(root.join("AGENTS.md")).unwrap();
        assert!(load(&root.join("a"), 100).is_none());
    }
}
