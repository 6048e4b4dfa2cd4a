//! Merging a sub-session's worktree into its parent's working tree (issues 25 and
//! 35): three-way, all or nothing — or, asked for, with git-style conflict markers.
//!
//! The parent's side is a snapshot of its working tree as it is (uncommitted changes
//! included), the child's is its branch after committing what it left uncommitted,
//! the base is the commit the worktree was cut from. `git merge-tree --write-tree`
//! merges them without touching any work tree. [`merge`] writes only a clean result,
//! and only the files it changes against the parent's snapshot; [`conflicts`] says
//! what a refused merge would have clashed on (both sides of each hunk, for the
//! parent model); [`merge_with_markers`] writes the result conflicts and all (for a
//! person to resolve). The parent's index and `HEAD` are untouched: the changes show
//! as unstaged edits. Does not own: removing the worktree afterwards (`worktree`),
//! finding the parent (`engine`).

use std::path::{Path, PathBuf};

use super::git::Git;
use super::worktree::WorktreeRecord;
use super::{IsolationError, Repo};

/// What a merge wrote: the files changed in the target, repository relative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The files written or removed in the target, repository relative.
    pub files: Vec<String>,
    /// Those of `files` written with conflict markers ([`merge_with_markers`] only).
    pub conflicted: Vec<String>,
}

/// One file a merge conflicts on, with both sides of each conflicting hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileConflict {
    /// Repository relative.
    pub file: String,
    /// The conflicting hunks of a content conflict; empty when the conflict is about
    /// the file as a whole (changed on one side, deleted on the other; binary).
    pub hunks: Vec<Hunk>,
}

/// Both sides of one conflicting hunk, each as its lines (newline-terminated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The lines in the parent's working tree.
    pub parent: String,
    /// The lines on the child's branch.
    pub child: String,
}

/// A merge computed but not written.
struct Planned {
    repo: Repo,
    git: Git,
    /// The parent's working tree snapshot.
    ours_tree: String,
    /// The merged tree (conflicted files hold markers).
    merged: String,
    /// Conflicted files, repository relative; empty for a clean merge.
    conflicted: Vec<String>,
}

/// Marker labels: what a person sees in `<<<<<<<` / `>>>>>>>` lines.
const OURS_LABEL: &str = "parent";

fn plan(record: &WorktreeRecord, target: &Path) -> Result<Planned, IsolationError> {
    record.commit("changes left uncommitted, before merging")?;
    let repo = Repo::discover(target)?;
    let git = repo.git();
    let theirs = git
        .commit_of(&format!("refs/heads/{}", record.branch))?
        .ok_or_else(|| IsolationError::Git {
            args: format!("rev-parse {}", record.branch),
            dir: repo.top.clone(),
            stderr: format!("the branch {} is gone", record.branch),
        })?;
    let ours_tree = Git::at(&repo.top).snapshot()?;
    let ours = git.commit_tree(&ours_tree, &[&record.base], "arbor: merge target")?;
    let merge_base = format!("--merge-base={}", record.base);
    let args = [
        "merge-tree",
        "--write-tree",
        "-z",
        "--name-only",
        "--no-messages",
        &merge_base,
        &ours,
        &theirs,
    ];
    let out = git.output(&args)?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut fields = text.split('\0');
    let merged = fields.next().unwrap_or_default().trim().to_string();
    let conflicted = match out.status.code() {
        Some(0) => Vec::new(),
        Some(1) => {
            let mut files: Vec<String> = fields
                .take_while(|f| !f.is_empty())
                .map(str::to_string)
                .collect();
            files.dedup();
            files
        }
        _ => return Err(git.failed(&args, &out)),
    };
    // Name the sides in the markers: the parent's checkout and the child's branch
    // (merge-tree labels them with the commit ids).
    let merged = relabel(&git, &merged, &conflicted, (&ours, &theirs), &record.branch)?;
    Ok(Planned {
        repo,
        git,
        ours_tree,
        merged,
        conflicted,
    })
}

/// `merged` with the conflict markers of `files` labelled `parent` and `branch`
/// instead of the commit ids `(ours, theirs)`; unchanged when nothing conflicts.
fn relabel(
    git: &Git,
    merged: &str,
    files: &[String],
    (ours, theirs): (&str, &str),
    branch: &str,
) -> Result<String, IsolationError> {
    if files.is_empty() {
        return Ok(merged.to_string());
    }
    let entries = git.entries(merged)?;
    let temp = tempfile::tempdir().map_err(|source| IsolationError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let index = temp.path().join("index");
    let private = git.with_index(&index);
    private.run(&["read-tree", merged])?;
    for file in files {
        let Some(entry) = entries.get(file) else {
            continue;
        };
        let Some(text) = blob_text(git, &entry.oid)? else {
            continue;
        };
        let text = text
            .replace(&format!("<<<<<<< {ours}"), &format!("<<<<<<< {OURS_LABEL}"))
            .replace(&format!(">>>>>>> {theirs}"), &format!(">>>>>>> {branch}"));
        let oid = write_blob(git, temp.path(), text.as_bytes())?;
        let info = format!("{},{},{}", entry.mode, oid, file);
        private.run(&["update-index", "--cacheinfo", &info])?;
    }
    private.run(&["write-tree"])
}

/// A blob's content as text, `None` when it is not UTF-8 (binary).
fn blob_text(git: &Git, oid: &str) -> Result<Option<String>, IsolationError> {
    let out = git.output(&["cat-file", "blob", oid])?;
    if !out.status.success() {
        return Err(git.failed(&["cat-file", "blob", oid], &out));
    }
    Ok(String::from_utf8(out.stdout).ok())
}

/// Stores `bytes` as a blob (through a file in `dir`: the hermetic runner gives git
/// no stdin) and returns its id.
fn write_blob(git: &Git, dir: &Path, bytes: &[u8]) -> Result<String, IsolationError> {
    let file: PathBuf = dir.join("blob");
    std::fs::write(&file, bytes).map_err(|source| IsolationError::Io {
        path: file.clone(),
        source,
    })?;
    let shown = file.display().to_string();
    git.run(&["hash-object", "-w", "--no-filters", &shown])
}

/// Merges `record`'s branch into the working tree at `target` (the parent's working
/// directory). Errors: `Conflict` naming the conflicting files (nothing written),
/// `NotARepo` when `target` is not in the worktree's repository, `Git`/`Io`.
pub fn merge(record: &WorktreeRecord, target: &Path) -> Result<Merged, IsolationError> {
    let planned = plan(record, target)?;
    if !planned.conflicted.is_empty() {
        return Err(IsolationError::Conflict {
            files: planned.conflicted,
        });
    }
    write(planned)
}

/// Merges like [`merge`], but a conflict is written too: each conflicting hunk as
/// git-style markers (`<<<<<<< parent` … `=======` … `>>>>>>> arbor/<id>`), named in
/// [`Merged::conflicted`], for a person to resolve.
pub fn merge_with_markers(
    record: &WorktreeRecord,
    target: &Path,
) -> Result<Merged, IsolationError> {
    write(plan(record, target)?)
}

fn write(planned: Planned) -> Result<Merged, IsolationError> {
    let files = planned.git.changed(&planned.ours_tree, &planned.merged)?;
    planned
        .git
        .restore(&planned.merged, &planned.repo.top, &files)?;
    Ok(Merged {
        files,
        conflicted: planned.conflicted,
    })
}

/// What merging `record`'s branch into `target` would conflict on, with both sides
/// of each hunk; empty when it would merge cleanly. Writes nothing in `target`.
pub fn conflicts(
    record: &WorktreeRecord,
    target: &Path,
) -> Result<Vec<FileConflict>, IsolationError> {
    let planned = plan(record, target)?;
    let entries = planned.git.entries(&planned.merged)?;
    let mut out = Vec::new();
    for file in &planned.conflicted {
        let text = match entries.get(file) {
            Some(entry) => blob_text(&planned.git, &entry.oid)?,
            None => None,
        };
        out.push(FileConflict {
            file: file.clone(),
            hunks: text.map(|t| hunks_of(&t)).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// The conflicting hunks in `text` (a file with git's markers): the lines between
/// `<<<<<<<` and `=======` (a `|||||||` base section skipped) and between `=======`
/// and `>>>>>>>`.
pub fn hunks_of(text: &str) -> Vec<Hunk> {
    enum At {
        Outside,
        Ours,
        Base,
        Theirs,
    }
    let mut at = At::Outside;
    let mut hunks = Vec::new();
    let (mut ours, mut theirs) = (String::new(), String::new());
    for line in text.split_inclusive('\n') {
        let marker = |m: &str| line.starts_with(m);
        match at {
            At::Outside if marker("<<<<<<<") => at = At::Ours,
            At::Outside => {}
            At::Ours | At::Base if marker("=======") => at = At::Theirs,
            At::Ours if marker("|||||||") => at = At::Base,
            At::Ours => ours.push_str(line),
            At::Base => {}
            At::Theirs if marker(">>>>>>>") => {
                hunks.push(Hunk {
                    parent: std::mem::take(&mut ours),
                    child: std::mem::take(&mut theirs),
                });
                at = At::Outside;
            }
            At::Theirs => theirs.push_str(line),
        }
    }
    hunks
}
