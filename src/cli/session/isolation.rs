//! `arbor session merge|discard|rewind ID` and the worktree parts of `session show`,
//! `list` and `tree` (issue 25 items 2–4, 6).
//!
//! - `merge ID`: the sub-session's branch merged three-way into its parent's working
//!   tree; a conflict refuses the whole merge (exit 1, the files named, nothing
//!   changed); success removes the worktree and branch. `--markers` writes a
//!   conflict as git-style markers instead (named on stderr).
//! - `discard ID`: removes the worktree and branch.
//! - `rewind ID --to-turn N [--force]`: restores the files changed after turn N
//!   (`isolation::checkpoint`); files changed since by someone else are refused,
//!   named, unless `--force`.
//!
//! Owns: the commands' wording and exit codes. Does not own: the checks and steps,
//! shared with the TUI's keys (the engine's `MergeSession`, `DiscardSession`,
//! `RewindSession`: `engine::handle::undo`), or the git plumbing (`isolation`).

use color_eyre::Result;
use serde_json::{Value, json};

use super::{fail, resolve};
use crate::cli::call::{reply, unexpected};
use crate::engine::handle::undo::UndoDone;
use crate::engine::{Engine, EngineReply};
use crate::isolation::Standing;
use crate::isolation::worktree::State;
use crate::outln;
use crate::session::{EngineCommand, Metadata, SessionId};

/// `session merge ID [--markers]`: `MergeSession`. Exit 0 merged, 1 refused.
pub async fn merge(engine: &Engine, id: &str, markers: bool) -> Result<i32> {
    let command = |session_id| EngineCommand::MergeSession {
        session_id,
        markers,
    };
    let merged = match undone(engine, id, command).await {
        Some(UndoDone::Merged(merged)) => merged,
        Some(other) => return fail(&unexpected(other)),
        None => return Ok(1),
    };
    let n = merged.files.len();
    outln!(
        "merged {} ({n} file{}) into {}{}",
        merged.branch,
        if n == 1 { "" } else { "s" },
        merged.target.display(),
        if n == 0 {
            String::new()
        } else {
            format!(": {}", merged.files.join(", "))
        }
    )?;
    outln!(
        "removed the worktree {} and the branch {}",
        merged.worktree.display(),
        merged.branch
    )?;
    if !merged.conflicted.is_empty() {
        crate::cli::out::warning(format!(
            "conflict markers written in {}: resolve them by hand",
            merged.conflicted.join(", ")
        ));
    }
    for note in merged.notes {
        crate::cli::out::warning(note);
    }
    Ok(0)
}

/// `session discard ID`: `DiscardSession`. Exit 0 removed, 1 refused.
pub async fn discard(engine: &Engine, id: &str) -> Result<i32> {
    let command = |session_id| EngineCommand::DiscardSession { session_id };
    let discarded = match undone(engine, id, command).await {
        Some(UndoDone::Discarded(discarded)) => discarded,
        Some(other) => return fail(&unexpected(other)),
        None => return Ok(1),
    };
    outln!(
        "discarded the worktree {} and the branch {}",
        discarded.worktree.display(),
        discarded.branch
    )?;
    for note in discarded.notes {
        crate::cli::out::warning(note);
    }
    Ok(0)
}

/// `session rewind ID --to-turn N [--force]`: `RewindSession`. Exit 0 restored (or
/// nothing to restore), 1 refused.
pub async fn rewind(engine: &Engine, id: &str, to_turn: u64, force: bool) -> Result<i32> {
    let command = |session_id| EngineCommand::RewindSession {
        session_id,
        to_turn,
        force,
    };
    let (id, done) = match undone_of(engine, id, command).await {
        Some((id, UndoDone::Rewound(done))) => (id, done),
        Some((_, other)) => return fail(&unexpected(other)),
        None => return Ok(1),
    };
    let files = &done.files;
    if files.is_empty() {
        outln!("nothing to rewind: session {id} changed no file after turn {to_turn}")?;
    } else {
        outln!(
            "restored {} file{} in {} to before turn {}: {}",
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            done.dir.display(),
            to_turn + 1,
            files.join(", ")
        )?;
    }
    if !done.forced.is_empty() {
        crate::cli::out::warning(format!(
            "--force overwrote changes made since by someone else: {}",
            done.forced.join(", ")
        ));
    }
    Ok(0)
}

/// Resolves `id`, sends `command` for it (a merge, discard, rewind or fork) and waits
/// for its `Undone`: what it did, or — said on stderr — why not (`None`: exit 1).
pub(super) async fn undone(
    engine: &Engine,
    id: &str,
    command: impl FnOnce(SessionId) -> EngineCommand,
) -> Option<UndoDone> {
    undone_of(engine, id, command).await.map(|(_, done)| done)
}

/// [`undone`], with the session's full id.
async fn undone_of(
    engine: &Engine,
    id: &str,
    command: impl FnOnce(SessionId) -> EngineCommand,
) -> Option<(SessionId, UndoDone)> {
    let id = resolve(engine, id)
        .await
        .inspect_err(|e| crate::cli::out::error(e))
        .ok()?;
    let result = match reply(engine, command(id.clone())).await {
        Ok(EngineReply::Undone { result, .. }) => result.map_err(|e| e.to_string()),
        Ok(other) => Err(unexpected(other).to_string()),
        Err(e) => Err(e.to_string()),
    };
    result
        .inspect_err(|e| crate::cli::out::error(e))
        .ok()
        .map(|done| (id, done))
}

/// The `worktree` of `session show --json`: `{path, branch, state, unmerged, merge,
/// conflict}` (`unmerged`: files changed against the base while active; `merge`: the
/// standing's word — `merged`, `discarded`, `unmerged`, `conflict` —; `conflict`: the
/// files of a refused merge); `None` without one.
pub fn show_json(metadata: &Metadata) -> Option<Value> {
    let record = metadata.worktree()?;
    let unmerged = (record.state == State::Active)
        .then(|| record.changed_files().map(|f| f.len()).ok())
        .flatten();
    let standing = Standing::of(metadata);
    let conflict = match &standing {
        Some(Standing::Conflict(files)) => json!(files),
        _ => Value::Null,
    };
    Some(json!({
        "path": record.working_dir(),
        "branch": record.branch,
        "state": record.state,
        "unmerged": unmerged,
        "merge": standing.as_ref().map(Standing::word),
        "conflict": conflict,
    }))
}

/// The `worktree` line of `session show`: `arbor/1a2b3c4d unmerged ✎3 (in /path)`,
/// `arbor/1a2b3c4d conflict in app.py`, `merged`, `discarded`; `None` without a
/// worktree that changed something. The count is taken now from git when it can be.
pub fn show_line(metadata: &Metadata) -> Option<String> {
    let record = metadata.worktree()?;
    let standing = match Standing::of(metadata)? {
        Standing::Unmerged(stored) => {
            Standing::Unmerged(record.changed_files().map(|f| f.len()).ok().or(stored))
        }
        other => other,
    };
    Some(match &standing {
        Standing::Unmerged(_) => format!(
            "{} {standing} (in {})",
            record.branch,
            record.working_dir().display()
        ),
        Standing::Conflict(files) => {
            format!("{} conflict in {}", record.branch, files.join(", "))
        }
        Standing::Merged | Standing::Discarded => standing.to_string(),
    })
}

/// The `WORK` cell of `session list`: the standing of a worktree child
/// (`unmerged ✎3`, `conflict`, `merged`, `discarded`), `-` otherwise.
pub fn list_cell(metadata: &Metadata) -> String {
    Standing::of(metadata).map_or_else(|| "-".to_string(), |s| s.to_string())
}

/// What `session tree` adds to a session's line: `  (fork @3)` for a fork,
/// `  ⎇ arbor/1a2b3c4d unmerged ✎3` or `  ⎇ arbor/1a2b3c4d conflict` for an active
/// worktree, `  merged` or `  discarded` for one whose work came home or was dropped;
/// empty otherwise.
pub fn tree_mark(metadata: &Metadata) -> String {
    let mut mark = String::new();
    if let Some(turn) = metadata.forked_from_turn() {
        mark.push_str(&format!("  (fork @{turn})"));
    }
    match (Standing::of(metadata), metadata.worktree()) {
        (Some(standing), Some(record)) if standing.is_pending() => {
            mark.push_str(&format!("  ⎇ {} {standing}", record.branch));
        }
        (Some(standing), _) => mark.push_str(&format!("  {standing}")),
        _ => {}
    }
    mark
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata with the keys of `extra`, read as `metadata.json` is.
    fn with(mut extra: Value) -> Metadata {
        extra["session_id"] = json!("");
        serde_json::from_value(extra).unwrap()
    }

    fn worktree(state: &str, changed: Option<usize>) -> Value {
        let mut v = json!({"path": "/nonexistent/w", "branch": "arbor/1a2b3c4d", "base": "0", "repo": "/nonexistent/r", "state": state});
        if let Some(n) = changed {
            v["changed"] = json!(n);
        }
        v
    }

    #[test]
    fn tree_list_and_show_say_where_the_work_stands() {
        let unmerged = with(json!({"worktree": worktree("active", Some(3))}));
        assert_eq!(tree_mark(&unmerged), "  ⎇ arbor/1a2b3c4d unmerged ✎3");
        assert_eq!(list_cell(&unmerged), "unmerged ✎3");
        assert_eq!(
            show_line(&unmerged).as_deref(),
            Some("arbor/1a2b3c4d unmerged ✎3 (in /nonexistent/w)")
        );
        let conflict =
            with(json!({"worktree": worktree("active", Some(1)), "merge_conflict": ["app.py"]}));
        assert_eq!(tree_mark(&conflict), "  ⎇ arbor/1a2b3c4d conflict");
        assert_eq!(list_cell(&conflict), "conflict");
        assert_eq!(
            show_line(&conflict).as_deref(),
            Some("arbor/1a2b3c4d conflict in app.py")
        );
        assert_eq!(show_json(&conflict).unwrap()["conflict"], json!(["app.py"]));
        for state in ["merged", "discarded"] {
            let m = with(json!({"worktree": worktree(state, Some(2))}));
            assert_eq!(tree_mark(&m), format!("  {state}"));
            assert_eq!(list_cell(&m), state);
            assert_eq!(show_line(&m).as_deref(), Some(state));
            assert_eq!(show_json(&m).unwrap()["merge"], state);
        }
        let clean = with(json!({"worktree": worktree("clean", None)}));
        assert_eq!(tree_mark(&clean), "");
        assert_eq!(list_cell(&clean), "-");
        assert_eq!(show_line(&clean), None);
    }
}
