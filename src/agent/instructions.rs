//! Project instructions (issue 26 item 6, issue 39 item 2): the `AGENTS.md` files Codex,
//! opencode and Amplifier users keep in their projects and Claude Code's `CLAUDE.md`,
//! added to every session's system prompt (a sub-session's from its own working
//! directory).
//!
//! Owns: finding them — [`FILES`] (`AGENTS.md`, `.amplifier/AGENTS.md`, `CLAUDE.md`,
//! `.claude/CLAUDE.md`, in that order) in every directory from
//! the project root (the nearest ancestor of the working directory holding `.git`,
//! else the working directory itself) down to the working directory, outermost first
//! — and joining them under a size cap, with a note when cut. They are instructions
//! only: they grant no tools and need no trust. Read afresh for every model call, so
//! an edit applies to the next one. A cloned repository decides what these paths are,
//! so each is read through `config::project_file` (issue 34): a link leading outside
//! the project or to a private path, a FIFO, a device, is skipped with a warning, and
//! no file is read past the cap. Does not own: where the text goes in the prompt
//! (`engine::prompt`) or the cap's config key (`config::context`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::project_file::{self, Confinement};

/// The file names read in each directory, in this order.
pub const FILES: [&str; 4] = [
    "AGENTS.md",
    ".amplifier/AGENTS.md",
    "CLAUDE.md",
    ".claude/CLAUDE.md",
];

/// The instructions found for one working directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectInstructions {
    /// The files read, outermost first (absolute paths).
    pub files: Vec<PathBuf>,
    /// The block added to the system prompt (headed, each file under its path).
    pub text: String,
    /// Whether the text was cut at the cap.
    pub cut: bool,
    /// Files found but not read, each with the reason (a link out of the project, a
    /// private path, not a regular file, unreadable).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
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
/// text; `None` when there is no such file and none was skipped. Each file is read
/// through `config::project_file`, confined to the project root and never one of
/// `private` (`config::private::private_paths`); a file that cannot or may not be
/// read is skipped (named in [`ProjectInstructions::skipped`]), not an error.
pub fn load(cwd: &Path, max_bytes: usize, private: &[PathBuf]) -> Option<ProjectInstructions> {
    let root = project_root(cwd);
    let within = Confinement {
        root: Some(std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone())),
        private: private.to_vec(),
    };
    let mut dirs: Vec<&Path> = cwd
        .ancestors()
        .take_while(|a| a.starts_with(&root))
        .collect();
    dirs.reverse();
    let mut gathered = Gathered {
        left: max_bytes,
        ..Gathered::default()
    };
    let cap = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    for dir in dirs {
        for name in FILES {
            let path = dir.join(name);
            match project_file::read(&path, &within, cap) {
                Ok(file) => {
                    let shown = path
                        .strip_prefix(&root)
                        .unwrap_or(&path)
                        .display()
                        .to_string();
                    gathered.add(path.clone(), &shown, &file.text(), file.cut);
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => gathered.skipped.push(e.to_string()),
            }
        }
    }
    gathered.finish(max_bytes)
}

/// What [`load`] has read so far, outermost file first.
#[derive(Default)]
struct Gathered {
    /// The files with text (also those past the cap).
    files: Vec<PathBuf>,
    /// Each file's text under its heading, as much as the cap left.
    body: String,
    /// Bytes of file text the cap still allows.
    left: usize,
    /// Whether the text was cut.
    cut: bool,
    /// Files not read, each with the reason.
    skipped: Vec<String>,
}

impl Gathered {
    /// Adds file `path` (headed `shown`) with `text`, as much as the cap leaves
    /// (`file_cut`: reading it already stopped at the cap); a file of blanks is left
    /// out.
    fn add(&mut self, path: PathBuf, shown: &str, text: &str, file_cut: bool) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.files.push(path);
        if self.cut {
            return;
        }
        let take = if text.len() > self.left {
            self.cut = true;
            let mut end = self.left;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            &text[..end]
        } else {
            text
        };
        self.left -= take.len();
        self.body.push_str(&format!("\n\n## {shown}\n\n{take}"));
        self.cut |= file_cut;
    }

    /// The instructions: the block under its heading, with a note naming the files
    /// when cut at `max_bytes`; `None` when no file was read nor skipped.
    fn finish(self, max_bytes: usize) -> Option<ProjectInstructions> {
        if self.files.is_empty() {
            return (!self.skipped.is_empty()).then(|| ProjectInstructions {
                files: self.files,
                text: String::new(),
                cut: false,
                skipped: self.skipped,
            });
        }
        let mut text = String::from(
            "# Project instructions\n\nThe project's AGENTS.md and CLAUDE.md files, from its root \
             down to the working directory (a later file is more specific).",
        );
        text.push_str(&self.body);
        if self.cut {
            text.push_str(&format!(
                "\n\n[Project instructions cut at {max_bytes} bytes (config \
                 context.project_instructions_max_bytes); read the files for the rest: {}]",
                self.files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Some(ProjectInstructions {
            files: self.files,
            text,
            cut: self.cut,
            skipped: self.skipped,
        })
    }
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
        let found = load(&cwd, 10_000, &[]).unwrap();
        assert_eq!(found.files.len(), 2);
        let (tabs, make) = (
            found.text.find("Use tabs.").unwrap(),
            found.text.find("Run make check.").unwrap(),
        );
        assert!(tabs < make, "{}", found.text);
        assert!(found.text.contains("## a/b/.amplifier/AGENTS.md"));
        assert!(!found.cut);
        let small = load(&cwd, 12, &[]).unwrap();
        assert!(small.cut);
        assert!(small.text.contains("Use tabs."));
        assert!(!small.text.contains("Run make check."));
        assert!(small.text.contains("cut at 12 bytes"), "{}", small.text);
        assert!(load(&root.join("a"), 100, &[]).is_some());
        std::fs::remove_file(root.join("AGENTS.md")).unwrap();
        assert!(load(&root.join("a"), 100, &[]).is_none());
    }
}
