//! A job's session on the worker: the root's metadata and transcript written into a
//! scratch store the worker's engine resumes from, and the metadata sent back.
//!
//! Owns: the metadata the worker runs the session with ([`for_worker`]: its working
//! directory moved into the job's directory, the root's worktree record dropped, the
//! plan's write paths moved with it — [`remap_write_paths`] — then narrowed to the
//! worker's own directories for the job (`roots`), and the status a
//! redelivered run continues from), writing it into the scratch store
//! ([`materialise`]), the metadata sent back in `Done` ([`for_root`]: the root's own
//! paths and worktree record put back), whether a redelivered run resumes or starts
//! ([`resumes`]), and removing the store's project directory ([`StoreGuard`]). Does not
//! own: the worktree (`files`), running the engine (`job`).
//!
//! Where the store is: `$AMPLIFIER_HOME/projects/<slug of the job's working
//! directory>/sessions` — the worker's real Amplifier home (so the sandbox keeps
//! hiding its key files) under a project directory that only this job uses, removed
//! after the job.

use std::path::{Path, PathBuf};

use super::roots::{self, Dropped};
use crate::config::MountPlan;
use crate::isolation::{Repo, WorktreeRecord};
use crate::remote::wire::RanOn;
use crate::session::message::Meta;
use crate::session::protocol::{EngineEvent, Event, ToolPreEvent};
use crate::session::{Message, Metadata, SessionStatus, SessionStore, StoreError};

/// Where a job runs on the worker and where it may write: its working directory, its
/// worktree's top (`None` without a repository), the bases its write paths are
/// narrowed to (`roots::narrow`: the worktree, or the working directory, and the
/// job's scratch directory; canonical), and the worker repository's entries git needs
/// for a commit in the worktree (added by the worker after narrowing).
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub work_dir: &'a Path,
    pub work_top: Option<&'a Path>,
    pub bases: &'a [PathBuf],
    pub git_paths: &'a [PathBuf],
}

/// The metadata the worker's engine runs the job's session with: the root's `metadata`
/// with `working_dir` set to `place.work_dir`, the root's worktree record removed (its
/// paths are the root's; the worker's worktree is its own), `config` taken from `plan`
/// when the root's metadata has none, its tools' write paths moved from the root's
/// worktree to `place.work_top` (see [`remap_write_paths`]), then narrowed to
/// `place.bases` (`roots::narrow`: a job never widens where the worker lets it
/// write) with `place.git_paths` added, and the status `Interrupted` for a
/// redelivered run (`resume`), else `Idle`. Also returns the write paths dropped.
pub fn for_worker(
    metadata: &Metadata,
    plan: &MountPlan,
    place: &Place<'_>,
    resume: bool,
) -> (Metadata, Vec<Dropped>) {
    let mut out = metadata.clone();
    let record = out.arbor.worktree.take();
    out.working_dir = Some(place.work_dir.display().to_string());
    let mut config = out
        .config
        .take()
        .map_or_else(|| plan.clone(), MountPlan::from_value);
    if let Some(top) = place.work_top {
        remap_write_paths(&mut config, record.as_ref(), top);
    }
    distrust_endpoints(&mut config);
    let dropped = roots::narrow(&mut config, place.work_dir, place.bases);
    add_write_paths(&mut config, place.git_paths);
    out.config = Some(config.to_value());
    out.status = if resume {
        SessionStatus::Interrupted
    } else {
        SessionStatus::Idle
    };
    (out, dropped)
}

/// Moves the `allowed_write_paths` of every `tool-filesystem` entry of `plan` from the
/// root's worktree to the worker's: an absolute path inside the
/// root's worktree (`record.path`) moves to the same place under `work_top`; one inside
/// the root's repository (`record.repo`, its `.git` entries) is dropped — the worker's
/// repository has its own, added by [`add_write_paths`]. Relative paths and other
/// absolute ones are kept here (`roots::narrow` then decides). With no `record` (the
/// root ran it without a worktree) nothing moves. An entry without the key gets
/// `["."]`, as `engine::isolate` confines a child's plan.
pub fn remap_write_paths(plan: &mut MountPlan, record: Option<&WorktreeRecord>, work_top: &Path) {
    plan.edit_write_paths(|current| {
        current
            .into_iter()
            .filter_map(|p| {
                let path = Path::new(&p);
                let Some(record) = record else {
                    return Some(p);
                };
                if let Ok(rel) = path.strip_prefix(&record.path) {
                    let moved = if rel.as_os_str().is_empty() {
                        work_top.to_path_buf()
                    } else {
                        work_top.join(rel)
                    };
                    return Some(moved.display().to_string());
                }
                if path.starts_with(&record.repo) {
                    return None;
                }
                Some(p)
            })
            .collect()
    });
}

/// Adds `extra` (the worker's own: its repository's entries git needs) to the
/// `allowed_write_paths` of every `tool-filesystem` entry of `plan`, once each.
pub fn add_write_paths(plan: &mut MountPlan, extra: &[PathBuf]) {
    if extra.is_empty() {
        return;
    }
    plan.edit_write_paths(|mut paths| {
        for path in extra {
            let path = path.display().to_string();
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        paths
    });
}

/// The directories git must write for a commit in the worktree at `top` (its own
/// entry in the main `.git`, and the shared `objects` and `logs`); empty outside
/// git. No refs: a job's worktree has a detached `HEAD` (kept in its own entry), so
/// its commands move no branch of the worker's clone (issue 34).
pub fn git_write_paths(top: &Path) -> Vec<PathBuf> {
    let Ok(repo) = Repo::discover(top) else {
        return Vec::new();
    };
    let mut out = vec![repo.git_dir.clone()];
    for sub in ["objects", "logs"] {
        out.push(repo.common_dir.join(sub));
    }
    out
}

/// Strips every provider entry of `plan` (a job's mount plan) of its
/// `config.endpoint_from` mark (`config::endpoint`): a job comes off the bus, and a
/// forged `trusted: true` mark would let its `base_url` take the worker's own key
/// elsewhere. Unmarked, `routing::setup` refuses an endpoint other than the one the
/// worker's config or environment names whenever it would carry the worker's key or
/// headers (issue 34); a keyless provider still goes where the job says.
pub fn distrust_endpoints(plan: &mut MountPlan) {
    crate::config::endpoint::remove_marks(plan);
}

/// The metadata sent back in `Done`: the worker's `after` (turns, usage, status,
/// files changed, …) with the root's `working_dir` and worktree record from `root`
/// put back, and `ran_on` recorded.
pub fn for_root(after: &Metadata, root: &Metadata, ran_on: &RanOn) -> Metadata {
    let mut out = after.clone();
    out.session_id = root.session_id.clone();
    out.parent_id = root.parent_id.clone();
    out.working_dir = root.working_dir.clone();
    out.config = root.config.clone().or(out.config);
    out.arbor.worktree.clone_from(&root.arbor.worktree);
    out.arbor.ran_on = Some(ran_on.clone());
    out
}

/// Whether a redelivered run resumes rather than starts: the root's transcript as it
/// is now (`synced`) holds a user message after the `before` messages the job carried
/// (the run's instruction was appended before the previous worker stopped). Then the
/// engine's crash repair continues it; otherwise the instruction is submitted.
pub fn resumes(before: usize, synced: &[Message]) -> bool {
    synced
        .get(before..)
        .is_some_and(|run| run.iter().any(|m| matches!(m, Message::User(_))))
}

/// The answer of a redelivered run that had already ended when its worker stopped:
/// the run resumes (see [`resumes`]) and the root's transcript ends with an assistant
/// message that calls no tool and is not a kept partial (`metadata.partial`). Then the
/// worker reports that answer instead of continuing the session, which would send
/// `Continue.` and run a turn the root never asked for.
pub fn answered(before: usize, synced: &[Message]) -> Option<String> {
    if !resumes(before, synced) {
        return None;
    }
    match synced.last() {
        Some(Message::Assistant(m))
            if m.tool_calls.is_empty() && !m.metadata.as_ref().is_some_and(Meta::is_partial) =>
        {
            Some(m.text())
        }
        _ => None,
    }
}

/// Writes the session `metadata` with `transcript` and its delegation calls
/// `task_calls` (as `tool:pre` lines of its `events.jsonl`, `wire::TaskCalls`) into
/// `store` (created, every message appended, synced, its lock released), ready for the
/// engine to resume.
///
/// Errors: the store cannot be written (`StoreError`).
pub fn materialise(
    store: &SessionStore,
    metadata: &Metadata,
    transcript: &[Message],
    task_calls: &[ToolPreEvent],
) -> Result<(), StoreError> {
    let mut writer = store.create(metadata)?;
    for message in transcript {
        writer.append_message(message)?;
    }
    let (id, parent) = (metadata.session_id.as_str(), metadata.parent_id.as_deref());
    for call in task_calls {
        writer.append_event(&Event::new(id, parent, EngineEvent::ToolPre(call.clone())))?;
    }
    writer.sync()?;
    Ok(())
}

/// Removes a job's project directory of the worker's Amplifier home
/// (`projects/<slug>`, the parent of its scratch store) when dropped.
#[derive(Debug)]
pub struct StoreGuard {
    project_dir: PathBuf,
    /// The store is a copy the root holds durably: never fsynced.
    _volatile: crate::session::store::volatile::Volatile,
}

impl StoreGuard {
    /// Guards the project directory holding `sessions_dir`, whose sessions are
    /// not fsynced meanwhile (`session::store::volatile`).
    pub fn new(sessions_dir: &Path) -> Self {
        Self {
            project_dir: sessions_dir
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| sessions_dir.to_path_buf()),
            _volatile: crate::session::store::volatile::mark(sessions_dir),
        }
    }
}

impl Drop for StoreGuard {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.project_dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(
                "worker: cannot remove the job's store {}: {e}",
                self.project_dir.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolation::worktree::State;
    use serde_json::{Value, json};

    fn record() -> WorktreeRecord {
        WorktreeRecord {
            path: "/root/state/worktrees/proj/abcd".into(),
            branch: "arbor/abcd".into(),
            base: "c0ffee".into(),
            repo: "/root/proj".into(),
            subdir: "sub".into(),
            state: State::Active,
            git_dir: None,
            common_dir: None,
            changed: None,
        }
    }

    #[test]
    fn write_paths_move_into_the_workers_worktree_and_root_git_entries_are_replaced() {
        let mut typed = MountPlan::from_value(json!({"tools": [
            {"module": "tool-filesystem", "config": {"allowed_write_paths": [
                "/root/state/worktrees/proj/abcd/sub",
                "/root/proj/.git/worktrees/abcd",
                "/root/proj/.git/objects",
                "notes",
                "/elsewhere"
            ]}},
            {"module": "tool-bash", "config": {}},
            {"module": "tool-filesystem"}
        ]}));
        remap_write_paths(&mut typed, Some(&record()), Path::new("/w/job/work"));
        add_write_paths(&mut typed, &[PathBuf::from("/w/repo/.git/worktrees/job")]);
        let plan = typed.to_value();
        assert_eq!(
            plan["tools"][0]["config"]["allowed_write_paths"],
            json!([
                "/w/job/work/sub",
                "notes",
                "/elsewhere",
                "/w/repo/.git/worktrees/job"
            ])
        );
        assert_eq!(plan["tools"][1]["config"], json!({}), "bash left alone");
        assert_eq!(
            plan["tools"][2]["config"]["allowed_write_paths"],
            json!([".", "/w/repo/.git/worktrees/job"])
        );
    }

    #[test]
    fn the_worker_runs_in_its_own_directory_and_the_root_gets_its_own_back() {
        let mut root = Metadata {
            session_id: "p-c_explorer".into(),
            working_dir: Some("/root/state/worktrees/proj/abcd/sub".into()),
            status: SessionStatus::Running,
            config: Some(json!({"tools": [{"module": "tool-filesystem", "config": {
                "allowed_write_paths": ["/root/state/worktrees/proj/abcd"]}}]})),
            ..Default::default()
        };
        root.arbor.worktree = Some(record());
        let dir = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(dir.path()).unwrap().join("work");
        std::fs::create_dir_all(top.join("sub")).unwrap();
        let git = vec![PathBuf::from("/w/repo/.git/worktrees/job")];
        let place = Place {
            work_dir: &top.join("sub"),
            work_top: Some(&top),
            bases: std::slice::from_ref(&top),
            git_paths: &git,
        };
        let (worker, dropped) = for_worker(&root, &MountPlan::new(), &place, false);
        assert!(dropped.is_empty(), "{dropped:?}");
        assert_eq!(
            worker.working_dir.as_deref(),
            Some(top.join("sub").display().to_string().as_str())
        );
        assert!(worker.arbor.worktree.is_none());
        assert_eq!(worker.status, SessionStatus::Idle);
        assert_eq!(
            worker.config.as_ref().unwrap()["tools"][0]["config"]["allowed_write_paths"],
            json!([top.display().to_string(), "/w/repo/.git/worktrees/job"])
        );
        let (resumed, _) = for_worker(&root, &MountPlan::new(), &place, true);
        assert_eq!(resumed.status, SessionStatus::Interrupted);

        let mut after = worker.clone();
        after.turn_count = 1;
        after.status = SessionStatus::Completed;
        let ran_on = RanOn {
            worker: "w-00000001".into(),
            host: "h".into(),
            pid: 9,
        };
        let back = for_root(&after, &root, &ran_on);
        assert_eq!(back.working_dir, root.working_dir);
        assert_eq!(back.arbor.worktree, Some(record()));
        assert_eq!(back.config, root.config);
        assert_eq!(back.turn_count, 1);
        assert_eq!(back.status, SessionStatus::Completed);
        assert_eq!(back.arbor.ran_on, Some(ran_on));
    }

    #[test]
    fn a_plan_is_the_config_when_the_roots_metadata_has_none() {
        let plan = json!({"tools": []});
        let place = Place {
            work_dir: Path::new("/w"),
            work_top: None,
            bases: &[],
            git_paths: &[],
        };
        let (m, _) = for_worker(
            &Metadata::default(),
            &MountPlan::from_value(plan.clone()),
            &place,
            false,
        );
        assert_eq!(m.config, Some(plan));
    }

    #[test]
    fn a_redelivered_run_resumes_only_when_its_instruction_reached_the_store() {
        let before = vec![Message::user("first run")];
        assert!(!resumes(1, &before), "nothing of this run yet");
        let mut synced = before.clone();
        synced.push(Message::user("this run"));
        assert!(resumes(1, &synced));
        assert!(
            !resumes(5, &synced),
            "a shorter store than the job never resumes"
        );
    }

    #[test]
    fn a_redelivered_run_that_had_answered_reports_that_answer() {
        let answer = |text: &str, meta: Option<Value>| {
            let mut v = json!({"role": "assistant", "content": text});
            if let Some(meta) = meta {
                v["metadata"] = meta;
            }
            serde_json::from_value::<Message>(v).unwrap()
        };
        let run = vec![Message::user("do it"), answer("done", None)];
        assert_eq!(answered(0, &run).as_deref(), Some("done"));
        let partial = vec![
            Message::user("do it"),
            answer("half", Some(json!({"partial": true}))),
        ];
        assert_eq!(answered(0, &partial), None, "a kept partial is no answer");
        assert_eq!(answered(0, &run[..1]), None, "no answer yet");
        assert_eq!(answered(2, &run), None, "not this run's");
    }

    #[test]
    fn materialised_sessions_load_back_with_their_task_links_and_the_guard_removes_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("projects").join("slug").join("sessions");
        let store = SessionStore::new(&sessions);
        let metadata = Metadata {
            session_id: "0123456789abcdef-fedcba9876543210_explorer".into(),
            parent_id: Some("0123456789abcdef".into()),
            config: Some(json!({})),
            ..Default::default()
        };
        let transcript = vec![Message::user("hello")];
        let call = ToolPreEvent {
            tool_name: "task".into(),
            tool_call_id: "call_7".into(),
            tool_input: serde_json::Value::Null,
            task: Some(crate::session::protocol::TaskCallFields {
                sub_session_id: "fedcba9876543210-1111111111111111_scout".into(),
                parent_session_id: metadata.session_id.clone(),
                depth: 2,
            }),
        };
        materialise(&store, &metadata, &transcript, &[call]).unwrap();
        let loaded = store.load(&metadata.session_id).unwrap();
        assert_eq!(loaded.transcript.len(), 1);
        assert_eq!(loaded.transcript[0].text(), "hello");
        // The repair before a turn links the call to its sub-session by these.
        let links = store.task_links(&metadata.session_id).unwrap();
        assert_eq!(
            links.get("call_7").map(String::as_str),
            Some("fedcba9876543210-1111111111111111_scout")
        );
        drop(StoreGuard::new(&sessions));
        assert!(!dir.path().join("projects").join("slug").exists());
        assert!(dir.path().join("projects").exists());
    }
}
