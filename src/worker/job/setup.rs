//! Getting a job ready to run on this worker: its files (the worktree of the job's
//! commit cut from the worker's clone), where it starts (first run, a redelivery
//! resumed from the root's store, or one already answered), its work in progress, the
//! session's metadata in the scratch store (and that of the stored sub-sessions the
//! job carries, `Job::subtree`), and the engine command that runs it.
//!
//! Owns: those steps. Does not own: the run itself, the lease and the answer
//! (`job`), the scratch store's shapes (`scratch`), the wip store (`wip`).

use std::path::{Path, PathBuf};

use super::*;
use crate::remote::wire::{CarriedSession, TaskCalls};
use crate::session::SessionId;

/// A job's files on this worker: the worktree of the job's commit (`None` outside a
/// repository), the directory the session works in, and the git paths it may write.
pub(super) struct JobFilesHere {
    pub(super) tree: Option<JobTree>,
    pub(super) work_dir: PathBuf,
    pub(super) git_paths: Vec<PathBuf>,
}

/// Cuts the job's worktree under `dir` (`work/`) from the worker's clone, or makes an
/// empty working directory for a job outside a repository.
pub(super) async fn cut_files(ctx: &Ctx, job: &Job, dir: &Path) -> Result<JobFilesHere, JobError> {
    let work = dir.join("work");
    let tree = match &job.files {
        Some(files) => {
            let (repo, base, name) = (
                ctx.repo.clone(),
                files.base_commit.clone(),
                files.repo_name.clone(),
            );
            let dest = work.clone();
            Some(blocking(move || JobTree::cut(&repo, &base, &dest, &name)).await??)
        }
        None => {
            std::fs::create_dir_all(&work)?;
            None
        }
    };
    let work_dir = match (&tree, &job.files) {
        (Some(tree), Some(files)) => tree.working_dir(&files.relative_dir)?,
        _ => std::fs::canonicalize(&work)?,
    };
    let git_paths = match &tree {
        Some(tree) => {
            let top = tree.top.clone();
            blocking(move || scratch::git_write_paths(&top)).await?
        }
        None => Vec::new(),
    };
    Ok(JobFilesHere {
        tree,
        work_dir,
        git_paths,
    })
}

/// Where a job starts.
pub(super) enum Start {
    /// A redelivered run the previous worker had finished: its answer, nothing to run.
    Answered(WorkerMsg),
    /// Run it from `from`; `resume`: continue the interrupted run with the engine's
    /// crash repair instead of submitting the instruction.
    Run { from: Box<Starting>, resume: bool },
}

/// The session a job starts from: the job's own on a first attempt; on a redelivery,
/// the root's as stored now (asked on `arbor.sync`) — or the stored answer, when the
/// previous worker finished but its `Done` never reached the root (a writing run's
/// changes are then its saved work in progress).
pub(super) async fn start(
    ctx: &Ctx,
    job: &Job,
    attempt: u32,
    out: &Out,
    files: &JobFilesHere,
) -> Result<Start, JobError> {
    let before = job.transcript.clone().unpack(&ctx.payloads).await?;
    if attempt <= 1 {
        let from = Starting {
            metadata: job.metadata.clone(),
            transcript: before,
            carried: None,
            task_calls: Vec::new(),
        };
        return Ok(Start::Run {
            from: Box::new(from),
            resume: false,
        });
    }
    let session = job.session_id.to_string();
    let synced = sync(ctx, &session, out).await?;
    let Some(response) = scratch::answered(before.len(), &synced.transcript) else {
        let resume = scratch::resumes(before.len(), &synced.transcript);
        return Ok(Start::Run {
            from: Box::new(synced),
            resume,
        });
    };
    let metadata = synced.metadata;
    let changes = match (&files.tree, writes(job)) {
        (Some(tree), true) => {
            let name = wip::wip_name(&session, job.run)?;
            let patch = wip::fetch(&ctx.payloads, &name).await?.unwrap_or_default();
            Some(pack_changes(ctx, (&session, job.run), &tree.base, patch).await?)
        }
        _ => None,
    };
    Ok(Start::Answered(WorkerMsg::Done {
        run: job.run,
        status: SessionStatus::Completed,
        response,
        turn_count: u64::from(metadata.turn_count),
        error: None,
        metadata: Box::new(scratch::for_root(&metadata, &metadata, &ctx.ran_on)),
        changes,
    }))
}

/// A writing run's work in progress (saved before each tool result; `None` for a
/// read-only run or one outside a repository); a resumed run first applies its
/// predecessor's (the files its answered tool calls wrote). `dir` is the job's
/// scratch directory.
pub(super) async fn work_in_progress(
    ctx: &Ctx,
    job: &Job,
    (files, dir): (&JobFilesHere, &Path),
    resume: bool,
    out: &Out,
) -> Result<Option<Wip>, JobError> {
    let (Some(tree), true) = (&files.tree, writes(job)) else {
        return Ok(None);
    };
    let session = job.session_id.to_string();
    let name = wip::wip_name(&session, job.run)?;
    let applied = if resume {
        restore(ctx, tree, &name).await?
    } else {
        String::new()
    };
    let place = (tree.top.clone(), tree.base.clone(), dir.join("wip.index"));
    let holder = wip::Holder {
        leases: ctx.leases.clone(),
        session,
        epoch: out.epoch(),
    };
    Ok(Some(Wip::new(
        (ctx.payloads.clone(), holder),
        name,
        place,
        &applied,
    )))
}

/// The session's metadata in the worker's scratch store (`scratch::for_worker`) and
/// the notes of what it dropped: it may write beneath its worktree (or working
/// directory) and `scratch_dir` (made here), whatever its plan asks.
///
/// The stored sub-sessions the job carries (`carried`, `Job::subtree`) get the same
/// working directory and write paths, and keep the status the root stored.
pub(super) fn worker_metadata(
    job: &Job,
    root_meta: &Metadata,
    (files, scratch_dir): (&JobFilesHere, &Path),
    resume: bool,
    carried: Vec<CarriedSession>,
) -> Result<WorkerSessions, JobError> {
    std::fs::create_dir_all(scratch_dir)?;
    let work_top = files.tree.as_ref().map(|t| t.top.as_path());
    let bases = [
        std::fs::canonicalize(work_top.unwrap_or(files.work_dir.as_path()))?,
        std::fs::canonicalize(scratch_dir)?,
    ];
    let place = scratch::Place {
        work_dir: &files.work_dir,
        work_top,
        bases: &bases,
        git_paths: &files.git_paths,
    };
    let (metadata, dropped) = scratch::for_worker(root_meta, &job.plan, &place, resume);
    let carried = carried
        .into_iter()
        .map(|c| {
            let (mut metadata, _) = scratch::for_worker(&c.metadata, &job.plan, &place, false);
            metadata.status = c.metadata.status;
            CarriedSession {
                metadata,
                transcript: c.transcript,
                task_calls: c.task_calls,
            }
        })
        .collect();
    Ok(WorkerSessions {
        metadata,
        carried,
        dropped,
    })
}

/// Puts the job's session (`metadata`, `transcript`, its delegation calls
/// `task_calls`) and the stored sub-sessions it carries into the scratch store
/// `sessions_dir`; the carried ones' ids.
///
/// Errors: a session cannot be written (`Store`), the blocking task failed (`Io`).
pub(super) async fn into_scratch(
    sessions_dir: &Path,
    sessions: WorkerSessions,
    (transcript, task_calls): (Vec<Message>, TaskCalls),
) -> Result<Vec<SessionId>, JobError> {
    let ids = sessions
        .carried
        .iter()
        .map(|c| c.metadata.session_id.clone())
        .collect();
    let (dir, metadata, carried) = (
        sessions_dir.to_path_buf(),
        sessions.metadata,
        sessions.carried,
    );
    blocking(move || {
        let store = SessionStore::new(dir);
        scratch::materialise(&store, &metadata, &transcript, &task_calls)?;
        carried.iter().try_for_each(|c| {
            scratch::materialise(&store, &c.metadata, &c.transcript, &c.task_calls)
        })
    })
    .await??;
    Ok(ids)
}

/// The metadata the worker runs a job with ([`worker_metadata`]).
pub(super) struct WorkerSessions {
    /// The job's session's.
    pub(super) metadata: Metadata,
    /// The stored sub-sessions the job carries, ready for the scratch store.
    pub(super) carried: Vec<CarriedSession>,
    /// The write paths the session's plan asked for and does not get.
    pub(super) dropped: Vec<crate::worker::roots::Dropped>,
}

/// The engine command that runs the job: continue an interrupted run, continue the
/// session (a person's continue), or submit the instruction.
pub(super) fn command_for(job: &Job, resume: bool) -> EngineCommand {
    let session_id = job.session_id.clone();
    if resume {
        EngineCommand::ContinueInterrupted { session_id }
    } else if job.continues {
        EngineCommand::Continue { session_id }
    } else {
        EngineCommand::Submit {
            session_id: Some(session_id),
            agent: None,
            prompt: job.instruction.clone(),
            cleared: false,
        }
    }
}

/// The engine of `job` (the worker's config with the root's `approvals:` rules, its
/// paths `paths`) and, when the root counts the job's own sub-sessions
/// (`Job::limits_at_root`), the room asking it through `out`.
///
/// Errors: `Approvals` when the job's rules do not parse; `Setup` when the factory
/// cannot build the engine.
pub(super) fn engine_for(
    ctx: &Ctx,
    job: &Job,
    paths: Paths,
    out: &Arc<Out>,
) -> Result<(Engine, Option<RootRoom>), JobError> {
    let approvals = Rules::from_value(&job.approvals).map_err(|issues| {
        JobError::Approvals(
            issues
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    let room = job.limits_at_root.then(|| RootRoom::new(out.clone()));
    let tree_room = room
        .clone()
        .map(|room| Arc::new(room) as Arc<dyn crate::engine::TreeRoom>);
    let engine = (ctx.factory)(JobSetup {
        paths,
        approvals,
        tree_room,
    })
    .map_err(|e| JobError::Setup(e.to_string()))?;
    Ok((engine, room))
}
