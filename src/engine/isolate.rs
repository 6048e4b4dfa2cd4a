//! Where a spawned sub-session works (issue 25 item 1): its own git worktree when
//! its agent can write and isolation is `worktree`, else its parent's directory.
//!
//! Owns: choosing ([`prepare`]), confining the child's plan to its worktree
//! (`allowed_write_paths`, plus the main repository's `.git` entries git needs),
//! committing its changes when its turn ends and removing a clean worktree
//! ([`after_turn`], [`release_if_clean`]), and bringing a missing worktree back
//! before a turn ([`before_turn`]). Does not own: the git steps (`isolation`), spawning
//! (`spawn`), bringing the work home when the task call returns (`homecoming`).

use std::path::PathBuf;

use serde_json::Value;

use super::live::LiveSession;
use crate::config::MountPlan;
use crate::config::isolation::{Isolation, IsolationSetting, MergePolicy};
use crate::isolation::worktree::State;
use crate::isolation::{IsolationError, WorktreeRecord};
use crate::paths::Paths;
use crate::session::SessionId;

/// The tool modules that can change files.
const WRITING: &[&str] = &["tool-filesystem", "tool-bash"];

/// Where the child works and under which plan, with a line for the parent's thread.
pub(crate) struct Prepared {
    pub plan: MountPlan,
    pub working_dir: PathBuf,
    pub record: Option<WorktreeRecord>,
    /// What happens to the worktree's branch when the task call returns (issue 35).
    pub merge: MergePolicy,
    /// Said in the task result: why there is no worktree (once per parent).
    pub note: Option<String>,
}

/// Whether a session with `plan` can write (`write_file`, `edit_file` or `bash`).
pub(crate) fn may_write(plan: &MountPlan) -> bool {
    plan.tools().iter().any(|e| {
        WRITING.contains(&e.module.as_str())
            && !(e.module == "tool-filesystem"
                && e.config.get("read_only").and_then(Value::as_bool) == Some(true))
    })
}

/// Decides and sets up where child `child` of `parent` works. `call` is the task
/// call's `isolation`, `overlay` the agent's frontmatter.
///
/// Errors: a worktree was due but git failed (the spawn is refused rather than let
/// the child write into its parent's checkout).
pub(crate) async fn prepare(
    paths: &Paths,
    config: Option<IsolationSetting>,
    parent: &LiveSession,
    child: &SessionId,
    (call, overlay): (Option<IsolationSetting>, &Value),
    mut plan: MountPlan,
) -> Result<Prepared, IsolationError> {
    let (mode, merge) = IsolationSetting::choose(call, overlay, config);
    let shared = |plan, note| Prepared {
        plan,
        working_dir: parent.working_dir.clone(),
        record: None,
        merge,
        note,
    };
    if mode == Isolation::None || !may_write(&plan) {
        return Ok(shared(plan, None));
    }
    let (dir, short, root) = (
        parent.working_dir.clone(),
        child.short(),
        paths.worktrees_dir(),
    );
    let created = blocking(move || WorktreeRecord::create(&dir, &short, &root)).await;
    match created {
        Ok(record) => {
            let session_dir = paths.sessions_dir().join(child.as_str());
            if let Err(e) = crate::isolation::leftover::claim(&record.path, &session_dir) {
                tracing::warn!(session = %child, "worktree marker: {e}");
            }
            let extra = record.git_write_paths();
            confine(&mut plan, &record, &extra);
            Ok(Prepared {
                plan,
                working_dir: record.working_dir(),
                record: Some(record),
                merge,
                note: None,
            })
        }
        Err(IsolationError::NotARepo { dir }) => {
            // Checked and set under the metadata lock: parallel spawns say it once.
            let mut first = false;
            if !parent.metadata().arbor.isolation_noted {
                parent.update_metadata(|m| {
                    first = !std::mem::replace(&mut m.arbor.isolation_noted, true);
                });
            }
            let note = first.then(|| {
                format!(
                    "isolation: none — {} is not in a git repository, so sub-sessions write in it directly",
                    dir.display()
                )
            });
            Ok(shared(plan, note))
        }
        Err(e) => Err(e),
    }
}

/// Points the plan's `allowed_write_paths` at the worktree: relative entries stay
/// (they resolve against the new working directory), absolute ones inside the
/// repository move into the worktree, and `extra` (the main `.git` entries) is added.
fn confine(plan: &mut MountPlan, record: &WorktreeRecord, extra: &[PathBuf]) {
    plan.edit_write_paths(|current| {
        let mut paths: Vec<String> = current
            .into_iter()
            .map(
                |p| match std::path::Path::new(&p).strip_prefix(&record.repo) {
                    Ok(rel) => record.path.join(rel).display().to_string(),
                    Err(_) => p,
                },
            )
            .collect();
        paths.extend(extra.iter().map(|p| p.display().to_string()));
        paths
    });
}

/// After a turn of `live`: commits what it changed in its worktree to its branch and
/// records how many files that is against the base (`changed`, the `✎3` of
/// `unmerged ✎3`). Failures are logged.
pub(crate) async fn after_turn(live: &LiveSession) {
    let metadata = live.metadata();
    let Some(record) = metadata.active_worktree().cloned() else {
        return;
    };
    let message = format!("{} turn {}", live.id, metadata.turn_count);
    let done = blocking(move || -> Result<WorktreeRecord, IsolationError> {
        record.commit(&message)?;
        let changed = record.changed_files()?.len();
        Ok(WorktreeRecord {
            changed: Some(changed),
            ..record
        })
    })
    .await;
    match done {
        Ok(counted) => {
            live.update_metadata(|m| m.arbor.worktree = Some(counted));
            live.sync();
        }
        Err(e) => tracing::warn!(session = %live.id, "worktree after the turn: {e}"),
    }
}

/// When a sub-session's task call ends: a worktree left with no change against its
/// base is removed with its branch (state `clean`). Failures are logged.
pub(crate) async fn release_if_clean(live: &LiveSession) {
    let Some(record) = live.metadata().active_worktree().cloned() else {
        return;
    };
    let result = blocking(move || -> Result<Option<WorktreeRecord>, IsolationError> {
        if !record.is_clean()? {
            return Ok(None);
        }
        record.remove()?;
        Ok(Some(WorktreeRecord {
            state: State::Clean,
            ..record
        }))
    })
    .await;
    match result {
        Ok(Some(cleaned)) => live.update_metadata(|m| m.arbor.worktree = Some(cleaned)),
        Ok(None) => {}
        Err(e) => tracing::warn!(session = %live.id, "removing a clean worktree: {e}"),
    }
}

/// Before a turn of `live`: an active worktree whose directory was deleted by hand
/// is checked out again from its branch; one removed (clean, merged, discarded) is
/// cut again, at the same place, from its parent's directory as it is now. Failures
/// are logged (the turn's tools then report the missing directory).
pub(crate) async fn before_turn(live: &LiveSession) {
    let Some(record) = live.metadata().arbor.worktree else {
        return;
    };
    if record.state == State::Active && record.path.exists() {
        return;
    }
    let short = live.id.short();
    let done = blocking(
        move || -> Result<(Option<WorktreeRecord>, String), IsolationError> {
            if record.state == State::Active {
                let note = record.repair()?.unwrap_or_default();
                return Ok((None, note));
            }
            let root = record
                .path
                .parent()
                .and_then(|p| p.parent())
                .map(PathBuf::from)
                .unwrap_or_default();
            let fresh = WorktreeRecord::create(&record.parent_dir(), &short, &root)?;
            let note = format!("worktree cut again from the parent on {}", fresh.branch);
            Ok((Some(fresh), note))
        },
    )
    .await;
    match done {
        Ok((fresh, note)) => {
            tracing::info!(session = %live.id, "{note}");
            if let Some(fresh) = fresh {
                live.update_metadata(|m| m.arbor.worktree = Some(fresh));
            }
        }
        Err(e) => tracing::warn!(session = %live.id, "worktree before the turn: {e}"),
    }
}

/// Runs git work (tens of milliseconds) in place: on a multi-thread runtime through
/// `block_in_place`, so the worker's other tasks move elsewhere meanwhile; on a
/// current-thread runtime (tests with paused time) inline, so no blocking-pool thread
/// makes the turn wait while the test's clock stands still. Async so call sites stay
/// in their `async fn`s.
pub(crate) async fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_plans_with_writing_tools_may_write() {
        let plan = |tools: Value| MountPlan::from_value(json!({ "tools": tools }));
        assert!(may_write(&plan(json!([{"module": "tool-bash"}]))));
        assert!(may_write(&plan(json!([{"module": "tool-filesystem"}]))));
        assert!(!may_write(&plan(
            json!([{"module": "tool-filesystem", "config": {"read_only": true}}, {"module": "tool-search"}])
        )));
    }

    #[test]
    fn write_paths_move_into_the_worktree() {
        let record = WorktreeRecord {
            path: PathBuf::from("/state/wt/abcd1234"),
            branch: "arbor/abcd1234".into(),
            base: "0".repeat(40),
            repo: PathBuf::from("/repo"),
            subdir: String::new(),
            state: State::Active,
            git_dir: None,
            common_dir: None,
            changed: None,
        };
        let mut plan = MountPlan::from_value(
            json!({"tools": [{"module": "tool-filesystem", "config": {"allowed_write_paths": [".", "/repo/docs", "/tmp/x"]}}]}),
        );
        confine(&mut plan, &record, &[PathBuf::from("/repo/.git/objects")]);
        assert_eq!(
            plan.to_value()["tools"][0]["config"]["allowed_write_paths"],
            json!([
                ".",
                "/state/wt/abcd1234/docs",
                "/tmp/x",
                "/repo/.git/objects"
            ])
        );
    }
}
