//! Where a job may write on the worker (issue 34 item 7, "the wire"): the worker's
//! own directories decide, a job only narrows them.
//!
//! Owns: [`narrow`] — every `allowed_write_paths` entry of a job's plan resolved on
//! this machine and kept only when it lies beneath one of the worker's bases for the
//! job (its worktree, its scratch directory), each entry dropped otherwise with a
//! [`Dropped`] note saying why. Does not own: moving the root's worktree paths to the
//! worker's (`scratch::remap_write_paths`, which runs first), the repository entries
//! git needs (the worker adds those itself after narrowing), the sandbox's mode and
//! network (the worker's own config: the job carries none of them), or enforcing the
//! roots (`tool::confine`, `sandbox`).
//!
//! The rule: a job is a message anyone allowed to publish on `arbor.jobs.*` can write,
//! so nothing in it may widen what the worker's config allows. Before this, a forged
//! job's `allowed_write_paths: ["/"]` let its bash write the worker's `~/.bashrc`.
//! An entry is resolved as the sandbox resolves it (relative to the job's working
//! directory; `~`, `~/…` name the home directory and are dropped), made canonical
//! (symlinks followed: a link in the checkout pointing outside is outside; an entry
//! that does not exist is dropped, since it cannot be checked), and kept as that
//! canonical absolute path. An entry beneath another kept entry is dropped too: it
//! adds nothing, and a nested root could be swapped for a symlink by a command that
//! may write its parent.

use std::path::{Path, PathBuf};

use crate::config::MountPlan;

/// One `allowed_write_paths` entry a job asked for and the worker dropped: the entry
/// as written and why (named in the worker's log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The entry as the job wrote it.
    pub entry: String,
    /// Why it was dropped: "names the home directory", "does not exist on the
    /// worker", "is outside the job's worktree and scratch directory", "lies inside
    /// another write root".
    pub reason: &'static str,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "write path '{}' of the job dropped: it {}",
            self.entry, self.reason
        )
    }
}

/// Narrows the `allowed_write_paths` of every `tool-filesystem` entry of `plan` to
/// the worker's `bases` (canonical directories: the job's
/// worktree — or its working directory when it has none — and its scratch directory),
/// resolving relative entries against `work_dir`. An entry without the key is read as
/// `["."]`, as the tool reads it. Returns what was dropped, in order (see the module
/// doc for the rule); never fails: an entry that cannot be checked is dropped.
pub fn narrow(plan: &mut MountPlan, work_dir: &Path, bases: &[PathBuf]) -> Vec<Dropped> {
    let mut dropped = Vec::new();
    plan.edit_write_paths(|current| {
        let mut kept: Vec<(String, PathBuf)> = Vec::new();
        for raw in current {
            match resolve(&raw, work_dir, bases) {
                Ok(path) => kept.push((raw, path)),
                Err(reason) => dropped.push(Dropped { entry: raw, reason }),
            }
        }
        let mut out: Vec<String> = Vec::new();
        for (i, (raw, path)) in kept.iter().enumerate() {
            let nested = kept
                .iter()
                .enumerate()
                .any(|(j, (_, other))| j != i && path != other && path.starts_with(other));
            let shown = path.display().to_string();
            if nested {
                dropped.push(Dropped {
                    entry: raw.clone(),
                    reason: "lies inside another write root",
                });
            } else if !out.contains(&shown) {
                out.push(shown);
            }
        }
        out
    });
    dropped
}

/// `raw` resolved on this machine and checked against `bases`: its canonical path, or
/// why it is dropped.
fn resolve(raw: &str, work_dir: &Path, bases: &[PathBuf]) -> Result<PathBuf, &'static str> {
    if raw == "~" || raw.starts_with("~/") {
        return Err("names the home directory");
    }
    let path = Path::new(raw);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        work_dir.join(path)
    };
    let canonical = std::fs::canonicalize(&joined).map_err(|_| "does not exist on the worker")?;
    if bases.iter().any(|base| canonical.starts_with(base)) {
        Ok(canonical)
    } else {
        Err("is outside the job's worktree and scratch directory")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(plan: &MountPlan, i: usize) -> Vec<String> {
        plan.to_value()["tools"][i]["config"]["allowed_write_paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn only_entries_beneath_the_workers_bases_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let work = root.join("work");
        let scratch = root.join("scratch");
        let outside = root.join("outside");
        for d in [&work.join("sub"), &scratch, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(&outside, work.join("link")).unwrap();
        let mut plan = MountPlan::from_value(json!({"tools": [
            {"module": "tool-filesystem", "config": {"allowed_write_paths": [
                "/", "~", "~/.config", "..", "link", "missing",
                outside.display().to_string(), scratch.display().to_string(), "sub"
            ]}},
            {"module": "tool-bash", "config": {}},
            {"module": "tool-filesystem"}
        ]}));
        let bases = vec![work.clone(), scratch.clone()];
        let dropped = narrow(&mut plan, &work, &bases);
        assert_eq!(
            paths(&plan, 0),
            [
                scratch.display().to_string(),
                work.join("sub").display().to_string()
            ]
        );
        assert_eq!(paths(&plan, 2), [work.display().to_string()]);
        assert_eq!(
            plan.to_value()["tools"][1]["config"],
            json!({}),
            "bash left alone"
        );
        let reasons: Vec<(&str, &str)> = dropped
            .iter()
            .map(|d| (d.entry.as_str(), d.reason))
            .collect();
        let outside_text = outside.display().to_string();
        assert_eq!(
            reasons,
            [
                ("/", "is outside the job's worktree and scratch directory"),
                ("~", "names the home directory"),
                ("~/.config", "names the home directory"),
                ("..", "is outside the job's worktree and scratch directory"),
                (
                    "link",
                    "is outside the job's worktree and scratch directory"
                ),
                ("missing", "does not exist on the worker"),
                (
                    outside_text.as_str(),
                    "is outside the job's worktree and scratch directory"
                ),
            ]
        );
        assert_eq!(
            dropped[0].to_string(),
            "write path '/' of the job dropped: it is outside the job's worktree and scratch directory"
        );
    }

    #[test]
    fn a_root_inside_another_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let work = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(work.join("a/b")).unwrap();
        let mut plan =
            MountPlan::from_value(json!({"tools": [{"module": "tool-filesystem", "config": {
            "allowed_write_paths": ["a/b", ".", "a", "."]}}]}));
        let dropped = narrow(&mut plan, &work, std::slice::from_ref(&work));
        assert_eq!(paths(&plan, 0), [work.display().to_string()]);
        assert_eq!(
            dropped.iter().map(|d| d.entry.as_str()).collect::<Vec<_>>(),
            ["a/b", "a"]
        );
    }
}
