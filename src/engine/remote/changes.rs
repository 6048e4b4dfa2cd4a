//! The files side of a remote sub-session at the root (issue 27 item 5): which commit
//! the worker starts from ([`job_files`]) and applying the patch it returns into the
//! child's root-side worktree ([`apply`]: `git apply --index` then a commit on the
//! child's branch), so `arbor session merge` / `discard` work unchanged.
//!
//! Owns: those two steps, through the `git` CLI (`isolation::git`), and
//! [`Lookups`]: children dispatched at once from one working directory share one
//! look-up of its repository (one `git` run, not one per child). Does not own:
//! making or removing worktrees (`isolation::worktree`, `engine::isolate`), the
//! worker's side (`worker`).
//!
//! The worker has a clone of the repository, not the root's working tree, so the job
//! names a commit it can have: the `HEAD` the child's worktree was cut from (its base
//! commit's parent). Uncommitted changes of the parent's working tree are not seen by
//! the worker (a warning says so); its patch is made against that `HEAD`, and applies
//! to the worktree as long as it touches other lines (`--3way` is tried second).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::config::MountPlan;
use crate::engine::live::lock;
use crate::isolation::git::Git;
use crate::isolation::{IsolationError, Repo};
use crate::session::Metadata;

/// What a job says about the repository (`remote::wire::JobFiles`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Files {
    /// The commit the worker checks out (hex).
    pub base_commit: String,
    /// The basename of the root's repository (a hint for the worker's errors).
    pub repo_name: String,
    /// The child's working directory relative to the repository's top (`""`: the top).
    pub relative_dir: String,
    /// Whether the child may write (then the worker returns a patch).
    pub writes: bool,
    /// Said to the person when the worker cannot see part of the parent's files: the
    /// parent's working tree had uncommitted changes when the child's worktree was cut.
    pub unseen: Option<String>,
}

/// The repository facts of a child with `metadata` and `plan`: from its worktree
/// record when it has an active one, else from the repository its working directory
/// is in; `None` outside git (or in a repository with no commit yet).
pub(crate) fn job_files(metadata: &Metadata, plan: &MountPlan) -> Option<Files> {
    if let Some(record) = metadata.active_worktree() {
        let git = Git::at(&record.repo);
        let head = git.commit_of(&format!("{}^", record.base)).ok().flatten()?;
        let unseen = unseen_changes(&git, &record.base, &head);
        return Some(Files {
            unseen,
            base_commit: head,
            repo_name: basename(&record.repo),
            relative_dir: record.subdir.clone(),
            writes: true,
        });
    }
    let dir = PathBuf::from(metadata.working_dir.as_deref()?);
    dir_facts(dir).map(|facts| facts.files(plan))
}

/// What a job says about the repository a working directory is in (no worktree of
/// the child's own): the same for every child working there at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DirFacts {
    base_commit: String,
    repo_name: String,
    relative_dir: String,
}

impl DirFacts {
    /// The job's files of a child with `plan` working there.
    fn files(self, plan: &MountPlan) -> Files {
        Files {
            base_commit: self.base_commit,
            repo_name: self.repo_name,
            relative_dir: self.relative_dir,
            writes: super::super::isolate::may_write(plan),
            unseen: None,
        }
    }
}

/// The repository `dir` is in, its `HEAD` and `dir` relative to its top; `None`
/// outside git (or in a repository with no commit yet). Runs `git`.
fn dir_facts(dir: PathBuf) -> Option<DirFacts> {
    let repo = Repo::discover(&dir).ok()?;
    let head = repo.git().commit_of("HEAD").ok().flatten()?;
    let canonical = std::fs::canonicalize(&dir).unwrap_or(dir);
    let relative_dir = canonical
        .strip_prefix(&repo.top)
        .map(|p| p.to_string_lossy().to_string())
        .unwrap_or_default();
    Some(DirFacts {
        base_commit: head,
        repo_name: basename(&repo.top),
        relative_dir,
    })
}

/// The last look-up of one working directory: when it started, and what it found.
type LastLookup = Arc<tokio::sync::Mutex<Option<(Instant, Option<DirFacts>)>>>;

/// Repository look-ups of the runtime's remote children (issue 38 item 8): a child
/// working in a directory (no worktree of its own) takes the answer of a look-up of
/// that directory that started after the child asked — so as fresh as one of its
/// own — and the children dispatched at once share one instead of running `git` each.
#[derive(Default)]
pub(crate) struct Lookups {
    by_dir: Mutex<HashMap<PathBuf, LastLookup>>,
    /// Look-ups run so far (a test hook).
    #[cfg(test)]
    looked: std::sync::atomic::AtomicUsize,
}

impl Lookups {
    /// [`job_files`] of a child with `metadata` and `plan`, shared as the type's doc
    /// says (a child with an active worktree looks its own up).
    pub(crate) async fn job_files(&self, metadata: &Metadata, plan: &MountPlan) -> Option<Files> {
        use super::super::isolate::blocking;
        if metadata.active_worktree().is_some() {
            return blocking(|| job_files(metadata, plan)).await;
        }
        let dir = PathBuf::from(metadata.working_dir.as_deref()?);
        let asked = Instant::now();
        let slot = lock(&self.by_dir).entry(dir.clone()).or_default().clone();
        let mut last = slot.lock().await;
        let facts = match &*last {
            Some((started, facts)) if *started >= asked => facts.clone(),
            _ => {
                let started = Instant::now();
                #[cfg(test)]
                self.looked
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let facts = blocking(|| dir_facts(dir)).await;
                *last = Some((started, facts.clone()));
                facts
            }
        };
        facts.map(|facts| facts.files(plan))
    }
}

/// The note when the worktree's base (the parent's working tree at spawn, committed)
/// differs from `head`: the worker will not see those uncommitted changes.
fn unseen_changes(git: &Git, base: &str, head: &str) -> Option<String> {
    let tree = |rev: &str| git.run(&["rev-parse", &format!("{rev}^{{tree}}")]).ok();
    let short = head.get(..8).unwrap_or(head);
    (tree(base) != tree(head)).then(|| {
        format!(
            "the parent's uncommitted changes are not seen by this remote sub-session: \
             its worker starts from commit {short}; commit them first"
        )
    })
}

fn basename(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
}

/// Why a worker's patch did not apply.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApplyError {
    /// The temp file for the patch could not be made or written.
    #[error("{what}: {source}")]
    Patch {
        what: &'static str,
        source: std::io::Error,
    },
    /// git refused it (the patch does not apply) or found no repository.
    #[error(transparent)]
    Git(#[from] IsolationError),
}

/// What applying a worker's patch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The patch was empty.
    Nothing,
    /// Applied and committed on the child's branch (`arbor/<short>`).
    Committed { branch: String },
    /// Applied to the working tree of the child's directory (no worktree of its own:
    /// `isolation: none`); nothing committed.
    InPlace { dir: PathBuf },
}

/// Applies `patch` (a worker's `git diff --binary <base>`) where the child with
/// `metadata` works: its active worktree (`git apply --index`, else `--3way`, then a
/// commit "arbor: <id> remote run <run>") or, without one, the repository of its
/// working directory (`git apply`, working tree only).
///
/// Errors: [`ApplyError`]: git's refusal (the patch does not apply, no repository) or
/// the temp file's.
pub(crate) fn apply(metadata: &Metadata, patch: &str, run: u64) -> Result<Applied, ApplyError> {
    if patch.trim().is_empty() {
        return Ok(Applied::Nothing);
    }
    // A binary hunk must end with a blank line: without it `git apply` skips the
    // file and still succeeds. Extra blank lines at the end are harmless.
    let mut patch = patch.to_string();
    while !patch.ends_with("\n\n") {
        patch.push('\n');
    }
    let mut file = tempfile::NamedTempFile::new().map_err(|source| ApplyError::Patch {
        what: "a temp file",
        source,
    })?;
    std::io::Write::write_all(&mut file, patch.as_bytes()).map_err(|source| ApplyError::Patch {
        what: "writing the patch",
        source,
    })?;
    let shown = file.path().display().to_string();
    if let Some(record) = metadata.active_worktree() {
        let git = Git::at(&record.path);
        let first = ["apply", "--index", "--whitespace=nowarn", shown.as_str()];
        if git.run(&first).is_err() {
            let second = ["apply", "--3way", "--whitespace=nowarn", shown.as_str()];
            git.run(&second)?;
        }
        let message = format!("{} remote run {run}", metadata.session_id);
        record.commit(&message)?;
        return Ok(Applied::Committed {
            branch: record.branch.clone(),
        });
    }
    let dir = PathBuf::from(metadata.working_dir.as_deref().unwrap_or("."));
    let repo = Repo::discover(&dir)?;
    repo.git()
        .run(&["apply", "--whitespace=nowarn", shown.as_str()])?;
    Ok(Applied::InPlace { dir: repo.top })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolation::WorktreeRecord;
    use serde_json::json;

    fn git(dir: &Path, args: &[&str]) -> String {
        Git::at(dir).run(args).unwrap()
    }

    /// A repository with one commit (`a.txt`) and a worktree record cut from it.
    fn repo_with_worktree() -> (tempfile::TempDir, WorktreeRecord) {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("proj");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "--quiet", "-b", "main"]);
        std::fs::write(repo.join("a.txt"), "one\n").unwrap();
        git(&repo, &["add", "a.txt"]);
        git(&repo, &["commit", "--quiet", "-m", "first"]);
        let record = WorktreeRecord::create(&repo, "abcd1234", &tmp.path().join("wt")).unwrap();
        (tmp, record)
    }

    fn metadata_with(record: &WorktreeRecord) -> Metadata {
        let mut m = Metadata {
            session_id: "abcd1234-0000-0000-0000-000000000000_builder".into(),
            working_dir: Some(record.working_dir().display().to_string()),
            ..Default::default()
        };
        m.arbor.worktree = Some(record.clone());
        m
    }

    #[test]
    fn the_job_names_the_head_the_worktree_was_cut_from() {
        let (_tmp, record) = repo_with_worktree();
        let head = git(&record.repo, &["rev-parse", "HEAD"]);
        let plan = MountPlan::from_value(json!({"tools": [{"module": "tool-bash"}]}));
        let files = job_files(&metadata_with(&record), &plan).unwrap();
        assert_eq!(files.base_commit, head);
        assert_eq!(files.repo_name, "proj");
        assert_eq!(files.relative_dir, "");
        assert!(files.writes);
        // Outside git: no files.
        let outside = tempfile::tempdir().unwrap();
        let m = Metadata {
            working_dir: Some(outside.path().display().to_string()),
            ..Default::default()
        };
        assert_eq!(job_files(&m, &plan), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn children_in_one_directory_share_a_look_up_started_after_they_asked() {
        let (_tmp, record) = repo_with_worktree();
        let sub = record.repo.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        let head = git(&record.repo, &["rev-parse", "HEAD"]);
        let m = Metadata {
            working_dir: Some(sub.display().to_string()),
            ..Default::default()
        };
        let plan = MountPlan::from_value(json!({}));
        let lookups = Arc::new(Lookups::default());
        // Eight children ask while a look-up of their directory is under way (its
        // slot held here): one look-up that starts after all of them asked serves all.
        let slot = lock(&lookups.by_dir)
            .entry(sub.clone())
            .or_default()
            .clone();
        let held = slot.lock().await;
        let asking: Vec<_> = (0..8)
            .map(|_| {
                let (lookups, m, plan) = (lookups.clone(), m.clone(), plan.clone());
                tokio::spawn(async move { lookups.job_files(&m, &plan).await })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        drop(held);
        for asked in asking {
            let files = asked.await.unwrap().expect("a repository");
            assert_eq!(files.base_commit, head);
            assert_eq!(files.repo_name, "proj");
            assert_eq!(files.relative_dir, "sub");
            assert!(!files.writes);
        }
        assert_eq!(lookups.looked.load(std::sync::atomic::Ordering::SeqCst), 1);
        // A child asking after a commit sees it: an earlier look-up never serves.
        std::fs::write(record.repo.join("b.txt"), "two\n").unwrap();
        git(&record.repo, &["add", "b.txt"]);
        git(&record.repo, &["commit", "--quiet", "-m", "second"]);
        let second = git(&record.repo, &["rev-parse", "HEAD"]);
        assert_ne!(second, head);
        let files = lookups.job_files(&m, &plan).await.unwrap();
        assert_eq!(files.base_commit, second);
        assert_eq!(lookups.looked.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Outside git: no files.
        let outside = tempfile::tempdir().unwrap();
        let m = Metadata {
            working_dir: Some(outside.path().display().to_string()),
            ..Default::default()
        };
        assert_eq!(lookups.job_files(&m, &plan).await, None);
    }

    #[test]
    fn a_workers_patch_is_committed_on_the_childs_branch() {
        let (_tmp, record) = repo_with_worktree();
        let head = git(&record.repo, &["rev-parse", "HEAD"]);
        // What a worker sends: its clone at HEAD, changed, diffed against HEAD (its
        // closing blank line trimmed on the way: the root puts it back).
        let clone = tempfile::tempdir().unwrap();
        git(
            clone.path(),
            &["clone", "--quiet", &record.repo.display().to_string(), "c"],
        );
        let c = clone.path().join("c");
        std::fs::write(c.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(c.join("new.bin"), [0u8, 159, 146, 150]).unwrap();
        git(&c, &["add", "--all"]);
        let patch = git(&c, &["diff", "--binary", "--cached", &head]) + "\n";
        let applied = apply(&metadata_with(&record), &patch, 1).unwrap();
        assert_eq!(
            applied,
            Applied::Committed {
                branch: record.branch.clone()
            }
        );
        assert_eq!(
            std::fs::read_to_string(record.path.join("a.txt")).unwrap(),
            "one\ntwo\n"
        );
        assert_eq!(
            std::fs::read(record.path.join("new.bin")).unwrap(),
            [0u8, 159, 146, 150]
        );
        let log = git(&record.repo, &["log", "--format=%s", "-1", &record.branch]);
        assert!(log.contains("remote run 1"), "{log}");
        assert!(record.is_clean().is_ok_and(|clean| !clean));
        assert!(matches!(
            apply(&metadata_with(&record), "", 2),
            Ok(Applied::Nothing)
        ));
        let bad = apply(&metadata_with(&record), "diff --git a/x b/x\nnonsense\n", 3);
        assert!(bad.is_err());
    }
}
