//! Delegated work comes home (issue 35 items 1 and 2): when a worktree child's `task`
//! call returns, its branch is merged three-way into its parent's working tree
//! *before* the task result goes to the parent model, so the parent's next tool call
//! sees the child's work.
//!
//! Under `merge: auto` (the default) a clean merge writes the child's changes into the
//! parent's checkout, removes the worktree and branch and records the worktree
//! `merged`; a conflicting one changes nothing, keeps the branch and hands the parent
//! model both sides of each conflicting hunk. Parallel children of one parent merge
//! one at a time (a lock per target repository), in the order they finish, each
//! against the tree as the earlier merges left it. `review` asks the person first
//! (`review`: yes merges the same way, no leaves the branch); `manual` leaves the
//! branch and says how to merge or discard it. A child that changed nothing says
//! nothing.
//!
//! Owns: the policy stored with the child (metadata `merge_policy`), the files of a
//! refused merge (`merge_conflict`), the lock, the task result's words. Does not own: the git steps (`isolation::merge`), cutting and committing
//! worktrees (`isolate`), the `session merge` command (`handle::undo`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use super::env::TurnEnv;
use super::isolate::blocking;
use super::live::LiveSession;
use super::review;
use crate::config::isolation::MergePolicy;
use crate::isolation::merge::{self, FileConflict};
use crate::isolation::worktree::State;
use crate::isolation::{IsolationError, WorktreeRecord};
use crate::session::SessionStatus;

/// At most this many characters of each side of a hunk go to the parent model.
const SIDE_MAX: usize = 4000;

/// How a child's worktree ended when its task call returned.
enum Home {
    /// Merged: the files written in the parent's checkout.
    Merged(Vec<String>),
    /// Refused: what clashed (nothing written).
    Conflict(Vec<FileConflict>),
}

/// Brings `child`'s work home into `parent`'s working directory after its turn ended
/// with `status`, by its stored policy; the text for the task result's `isolation`,
/// `None` when the child has no active worktree (none, or it changed nothing).
pub(crate) async fn bring_home(
    env: &TurnEnv,
    parent: &LiveSession,
    child: &LiveSession,
    status: SessionStatus,
    token: &CancellationToken,
) -> Option<String> {
    let metadata = child.metadata();
    let record = metadata.active_worktree()?.clone();
    let id = child.id.short();
    let policy = metadata.merge_policy();
    if policy == MergePolicy::Manual {
        return Some(left(&record, &id, "merge: manual"));
    }
    if status == SessionStatus::Cancelled {
        return Some(format!(
            "isolation: not merged because the sub-session was cancelled; its work stays on branch {} (merge: arbor session merge {id}; discard: arbor session discard {id})",
            record.branch
        ));
    }
    if policy == MergePolicy::Review
        && let review::Answer::Leave(why) = review::ask(env, child, &record, token).await
    {
        return Some(left(&record, &id, &why));
    }
    let target = parent.working_dir.clone();
    let attempt = record.clone();
    let done = blocking(move || merge_locked(&attempt, &target)).await;
    match done {
        Ok(Home::Merged(files)) => {
            let merged = record.with_state(State::Merged);
            child.update_metadata(|m| m.arbor.worktree = Some(merged));
            child.sync();
            Some(merged_note(&files))
        }
        Ok(Home::Conflict(conflicts)) => {
            let files: Vec<String> = conflicts.iter().map(|c| c.file.clone()).collect();
            child.update_metadata(|m| m.arbor.merge_conflict = Some(files));
            child.sync();
            Some(conflict_note(&record, &id, &conflicts))
        }
        Err(e) => {
            tracing::warn!(session = %child.id, "merging the worktree: {e}");
            Some(format!(
                "isolation: merging the sub-session's work failed ({e}); it stays on branch {} (merge: arbor session merge {id}; discard: arbor session discard {id})",
                record.branch
            ))
        }
    }
}

/// Merges under the lock of the target's repository: a clean merge is written and
/// the worktree and branch removed; a conflict writes nothing.
fn merge_locked(record: &WorktreeRecord, target: &Path) -> Result<Home, IsolationError> {
    let lock = repo_lock(&record.repo);
    let _one_at_a_time = lock.lock().unwrap_or_else(PoisonError::into_inner);
    match merge::merge(record, target) {
        Ok(merged) => {
            let notes = record.remove()?;
            for note in notes {
                tracing::info!("after merging {}: {note}", record.branch);
            }
            crate::isolation::leftover::release(&record.path)?;
            Ok(Home::Merged(merged.files))
        }
        Err(IsolationError::Conflict { .. }) => {
            Ok(Home::Conflict(merge::conflicts(record, target)?))
        }
        Err(e) => Err(e),
    }
}

/// The lock of merges into the work tree at `repo` (one per repository top level).
fn repo_lock(repo: &Path) -> Arc<Mutex<()>> {
    static LOCKS: Mutex<BTreeMap<PathBuf, Arc<Mutex<()>>>> = Mutex::new(BTreeMap::new());
    let mut locks = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
    locks.entry(repo.to_path_buf()).or_default().clone()
}

/// `merged 2 files into the parent's checkout: calc.py, strutil.py`.
fn merged_note(files: &[String]) -> String {
    let n = files.len();
    format!(
        "merged {n} file{} into the parent's checkout: {}",
        if n == 1 { "" } else { "s" },
        files.join(", ")
    )
}

/// The words of a branch left unmerged, `why` (`merge: manual`, the review's answer).
fn left(record: &WorktreeRecord, id: &str, why: &str) -> String {
    format!(
        "isolation: not merged ({why}); the work is in worktree {} on branch {} (merge: arbor session merge {id}; discard: arbor session discard {id})",
        record.working_dir().display(),
        record.branch
    )
}

/// The conflict as the parent model reads it: the files, and both sides of each hunk.
fn conflict_note(record: &WorktreeRecord, id: &str, conflicts: &[FileConflict]) -> String {
    let files: Vec<&str> = conflicts.iter().map(|c| c.file.as_str()).collect();
    let n = files.len();
    let mut out = format!(
        "isolation: NOT merged — the sub-session's changes conflict with your checkout in {n} file{} ({}). Nothing was changed in your checkout; the sub-session's work stays on branch {}. Finish the job yourself: for each conflicting hunk, the lines in your checkout and the sub-session's lines:\n",
        if n == 1 { "" } else { "s" },
        files.join(", "),
        record.branch
    );
    for conflict in conflicts {
        if conflict.hunks.is_empty() {
            out.push_str(&format!(
                "\n{}: the whole file conflicts (changed on one side and deleted or made binary on the other)\n",
                conflict.file
            ));
        }
        for (i, hunk) in conflict.hunks.iter().enumerate() {
            out.push_str(&format!(
                "\n{} (conflict {} of {}):\n--- your checkout:\n{}--- sub-session ({}):\n{}",
                conflict.file,
                i + 1,
                conflict.hunks.len(),
                side(&hunk.parent),
                record.branch,
                side(&hunk.child)
            ));
        }
    }
    out.push_str(&format!(
        "\nThe branch is left for a person: arbor session merge {id} --markers writes conflict markers into the checkout; arbor session discard {id} drops it."
    ));
    out
}

/// One side of a hunk, capped at [`SIDE_MAX`] characters, ending in a newline.
fn side(text: &str) -> String {
    let mut shown: String = text.chars().take(SIDE_MAX).collect();
    if shown.len() < text.len() {
        shown.push_str("\n… (cut)");
    }
    if !shown.ends_with('\n') {
        shown.push('\n');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolation::merge::Hunk;

    #[test]
    fn a_merge_note_names_the_files() {
        assert_eq!(
            merged_note(&["calc.py".into(), "strutil.py".into()]),
            "merged 2 files into the parent's checkout: calc.py, strutil.py"
        );
        assert_eq!(
            merged_note(&["a.py".into()]),
            "merged 1 file into the parent's checkout: a.py"
        );
    }

    #[test]
    fn a_conflict_note_shows_both_sides() {
        let record = WorktreeRecord {
            path: PathBuf::from("/wt/abcd1234"),
            branch: "arbor/abcd1234".into(),
            base: "0".repeat(40),
            repo: PathBuf::from("/repo"),
            subdir: String::new(),
            state: State::Active,
            git_dir: None,
            common_dir: None,
            changed: None,
        };
        let note = conflict_note(
            &record,
            "abcd1234",
            &[FileConflict {
                file: "app.py".into(),
                hunks: vec![Hunk {
                    parent: "VALUE = 'A'\n".into(),
                    child: "VALUE = 'B'".into(),
                }],
            }],
        );
        assert!(
            note.contains(
                "app.py (conflict 1 of 1):\n--- your checkout:\nVALUE = 'A'\n--- sub-session (arbor/abcd1234):\nVALUE = 'B'\n"
            ),
            "{note}"
        );
        assert!(note.contains("in 1 file (app.py)"), "{note}");
        assert!(note.contains("arbor session merge abcd1234 --markers"));
    }
}
