//! What of a repository's git directory a sandboxed command may not change (issue 34
//! items 1 and 3), though Landlock lets it write the work tree the `.git` lies in.
//!
//! Landlock only grants: a writable project directory makes its `.git` writable too.
//! arbor's own git runs nothing the repository configures (`isolation::hermetic`), but
//! what a command writes there outlives the session: a `core.fsmonitor` or a hook runs
//! the next time the *person* runs git, a rewritten `.git` file or `commondir` points
//! a worktree at another repository. So in the command's private mount namespace
//! ([`guard`]):
//!
//! - **pinned** (bound onto itself, read-write): each writable root's `.git`
//!   directory, so it cannot be renamed or replaced by another (`mv .git x` and
//!   `rmdir` fail with `EBUSY`);
//! - **read-only** (bound onto itself, then remounted read-only): that `.git`'s
//!   `config`, `config.worktree`, `hooks`, `info` (attributes, excludes),
//!   `modules` (submodules' git directories and their configs) and `refs/arbor`; a
//!   `.git` *file* (a worktree's or a submodule's pointer); and in a writable root
//!   inside a git directory (a worktree child's own entry, `.git/worktrees/<name>`),
//!   its `commondir`, `gitdir` and `config.worktree`. A missing `hooks` directory is
//!   created empty first, so a command cannot add one.
//!
//! Commits, branches, the index and objects stay writable: `git commit` in the project
//! works. Needs user namespaces (as the key-file masks do); without them nothing is
//! guarded and the probe says so.
//!
//! Owns: choosing those paths. Does not own: mounting them (`helper`), the write roots
//! (`Sandbox::decide`).

use std::path::{Path, PathBuf};

/// The paths of `.git` (a directory) made read-only for sandboxed commands.
pub const GIT_DIR_READ_ONLY: [&str; 6] = [
    "config",
    "config.worktree",
    "hooks",
    "info",
    "modules",
    "refs/arbor",
];

/// The files of a linked worktree's own git directory (`.git/worktrees/<name>`) made
/// read-only: where it says its repository and work tree are, and its own config.
pub const ENTRY_READ_ONLY: [&str; 3] = ["commondir", "gitdir", "config.worktree"];

/// The git guard for the writable roots `roots` (canonical): `(pinned, read_only)`,
/// existing paths only.
pub fn guard(roots: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut pinned, mut read_only) = (Vec::new(), Vec::new());
    for root in roots {
        let dot_git = root.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => {
                let hooks = dot_git.join("hooks");
                if !hooks.exists() {
                    let _ = std::fs::create_dir(&hooks);
                }
                pinned.push(dot_git.clone());
                read_only.extend(existing(&dot_git, &GIT_DIR_READ_ONLY));
            }
            Ok(m) if m.is_file() => read_only.push(dot_git),
            _ => {}
        }
        if in_git_dir(root) {
            read_only.extend(existing(root, &ENTRY_READ_ONLY));
        }
    }
    pinned.sort();
    pinned.dedup();
    read_only.sort();
    read_only.dedup();
    (pinned, read_only)
}

fn existing(dir: &Path, names: &[&str]) -> Vec<PathBuf> {
    names
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_symlink()))
        .collect()
}

/// Whether `path` has a component named `.git`.
fn in_git_dir(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == ".git")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_config_hooks_and_pointers_not_the_work_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("p");
        std::fs::create_dir_all(project.join(".git/refs/arbor")).unwrap();
        std::fs::write(project.join(".git/config"), "").unwrap();
        std::fs::write(project.join("config"), "a project file").unwrap();
        let child = tmp.path().join("child");
        std::fs::create_dir_all(&child).unwrap();
        std::fs::write(child.join(".git"), "gitdir: x").unwrap();
        let entry = project.join(".git/worktrees/c");
        std::fs::create_dir_all(&entry).unwrap();
        std::fs::write(entry.join("commondir"), "../..").unwrap();
        let (pinned, ro) = guard(&[project.clone(), child.clone(), entry.clone()]);
        assert_eq!(pinned, vec![project.join(".git")]);
        assert!(project.join(".git/hooks").is_dir(), "hooks made");
        for p in [
            project.join(".git/config"),
            project.join(".git/hooks"),
            project.join(".git/refs/arbor"),
            child.join(".git"),
            entry.join("commondir"),
        ] {
            assert!(ro.contains(&p), "{} not guarded: {ro:?}", p.display());
        }
        assert!(!ro.contains(&project.join("config")));
    }
}
