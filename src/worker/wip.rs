//! A writing job's work in progress (issue 27 item 4: "a redelivered job resumes from
//! the store with arbor's crash repair, never re-running an answered tool call"): the
//! worktree's changes so far, kept in the object store so that a worker taking over a
//! redelivered job starts from the files its predecessor's answered tool calls wrote.
//!
//! Owns: the object's name ([`wip_name`]: `wip-<session token>-r<run>`), saving the
//! worktree's patch (`git diff --binary --cached <base>`, new files included, as the
//! final `Changes` are made by `files::patch_at`, but staged in a private index
//! ([`patch_aside`]) so the session's own `git status` / `git diff` see their worktree
//! as they left it) before a tool's result is forwarded
//! to the root — only when it changed since the last save ([`Saved`], a SHA-256 of the
//! last patch) — fetching it back ([`fetch`]), applying it in a fresh worktree
//! ([`apply_at`]: `git apply --index`, a binary hunk's closing blank line restored as
//! `engine::remote::changes` does) and deleting it once the run's answer is acked
//! ([`delete`], best effort). Does not own: when a job saves or resumes (`job`), the
//! worktree itself (`files`), the object store's connection (`remote`).
//!
//! The order that makes it safe: the worker forwards the session's events one at a
//! time, and a tool's `tool:post` / `tool:error` comes before the `message:appended` of
//! its result; the save happens before that `tool:post` is forwarded, so every tool
//! result the root holds has its file effects stored first. A save is stored only
//! while the run's lease is still its own (read from `arbor_leases` just before): a
//! frozen worker that wakes after a takeover does not overwrite its successor's.

use std::path::{Path, PathBuf};

use async_nats::jetstream::kv;
use async_nats::jetstream::object_store::{GetErrorKind, ObjectStore};
use sha2::{Digest, Sha256};

use super::files::FilesError;
use crate::isolation::IsolationError;
use crate::isolation::git::Git;
use crate::remote::RemoteError;
use crate::remote::lease;
use crate::remote::payload::{OBJECT_MAX, read_within};
use crate::remote::wire::token;
use crate::session::{EngineEvent, Event};

/// The object holding run `run` of `session`'s work in progress:
/// `wip-<token(session)>-r<run>`.
///
/// Errors: [`RemoteError::Token`] for a session id that is not a subject token.
pub fn wip_name(session: &str, run: u64) -> Result<String, RemoteError> {
    Ok(format!("wip-{}-r{run}", token(session)?))
}

/// Whether `event` is a tool's result (`tool:post` or `tool:error`): the worktree is
/// saved before it is forwarded.
pub fn is_tool_result(event: &Event) -> bool {
    matches!(
        &event.msg,
        EngineEvent::ToolPost(_) | EngineEvent::ToolError(_)
    )
}

/// The last patch saved (its SHA-256): a patch equal to it is not stored again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    last: Vec<u8>,
}

impl Saved {
    /// Nothing changed yet: `patch` (empty for a fresh worktree, or the patch a
    /// redelivered job applied) counts as saved.
    pub fn from(patch: &str) -> Self {
        Self {
            last: digest(patch),
        }
    }

    /// Whether `patch` differs from the last one saved.
    pub fn changed(&self, patch: &str) -> bool {
        self.last != digest(patch)
    }

    /// Records `patch` as saved.
    pub fn mark(&mut self, patch: &str) {
        self.last = digest(patch);
    }
}

fn digest(patch: &str) -> Vec<u8> {
    Sha256::digest(patch.as_bytes()).to_vec()
}

/// Who may store a run's work in progress: the holder of `session`'s lease at
/// `epoch` (checked in `leases` before each store).
pub struct Holder {
    /// The leases bucket.
    pub leases: kv::Store,
    /// The session id.
    pub session: String,
    /// The epoch the job holds.
    pub epoch: u64,
}

/// One writing run's work in progress: its worktree, base commit and object.
pub struct Wip {
    store: ObjectStore,
    holder: Holder,
    /// The object's name ([`wip_name`]).
    pub name: String,
    top: PathBuf,
    base: String,
    /// The private index the saves stage into.
    index: PathBuf,
    saved: Saved,
}

impl Wip {
    /// The work in progress of the worktree at `top` (cut at `base`) under `name`,
    /// stored by `holder`, staged in the private index file `index` (in the job's
    /// scratch directory); `applied` is the patch it starts from (empty, or the one
    /// restored).
    pub fn new(
        (store, holder): (ObjectStore, Holder),
        name: String,
        (top, base, index): (PathBuf, String, PathBuf),
        applied: &str,
    ) -> Self {
        Self {
            store,
            holder,
            name,
            top,
            base,
            index,
            saved: Saved::from(applied),
        }
    }

    /// Diffs the worktree against its base and stores the patch when it changed since
    /// the last save. A failure is logged and the job goes on (the save is a safety
    /// net for a takeover, not part of the answer).
    pub async fn save(&mut self) {
        let (top, base, index) = (self.top.clone(), self.base.clone(), self.index.clone());
        let patch = match tokio::task::spawn_blocking(move || patch_aside(&top, &base, &index))
            .await
        {
            Ok(Ok(patch)) => patch,
            Ok(Err(e)) => {
                tracing::warn!(object = %self.name, "worker: diffing the work in progress: {e}");
                return;
            }
            Err(e) => {
                tracing::warn!(object = %self.name, "worker: diffing the work in progress: {e}");
                return;
            }
        };
        if !self.saved.changed(&patch) {
            return;
        }
        let holder = &self.holder;
        match lease::current(&holder.leases, &holder.session).await {
            Ok(Some(now)) if now.epoch == holder.epoch => {}
            Ok(_) => {
                tracing::warn!(object = %self.name, epoch = holder.epoch, "worker: the lease moved on; work in progress not stored");
                return;
            }
            Err(e) => {
                tracing::warn!(object = %self.name, "worker: work in progress not stored: {e}");
                return;
            }
        }
        let mut reader = patch.as_bytes();
        match self.store.put(self.name.as_str(), &mut reader).await {
            Ok(_) => self.saved.mark(&patch),
            Err(e) => {
                tracing::warn!(object = %self.name, "worker: storing the work in progress: {e}");
            }
        }
    }
}

/// The worktree at `top`'s changes against `base` as `files::patch_at` makes them
/// (every file staged, `git diff --binary --cached <base>`), but staged in the private
/// index file `index` (a copy of the worktree's own the first time, so unchanged
/// files are not hashed again): the worktree's index — what the session's `git status`
/// and `git diff` show — is left alone.
///
/// Errors: a git step failed.
pub fn patch_aside(top: &Path, base: &str, index: &Path) -> Result<String, FilesError> {
    if !index.exists() {
        let own = Git::at(top).run(&["rev-parse", "--git-path", "index"])?;
        let own = top.join(own);
        if std::fs::copy(&own, index).is_err() {
            // No index yet: git starts an empty one.
            let _ = std::fs::remove_file(index);
        }
    }
    // arbor's hermetic git (`isolation::hermetic`): nothing the job's repository
    // configures runs on the worker.
    let git = Git::at(top).with_index(index);
    let run = |args: &[&str]| -> Result<Vec<u8>, FilesError> {
        let out = git.output(args)?;
        if !out.status.success() {
            return Err(FilesError::Git(git.failed(args, &out)));
        }
        Ok(out.stdout)
    };
    run(&["add", "-A"])?;
    let out = run(&["diff", "--binary", "--cached", "--no-color", base])?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The patch stored under `name`, `None` when there is none (the previous worker
/// answered no tool call that changed a file).
///
/// Errors: [`RemoteError::Nats`] when the object store cannot be read,
/// [`RemoteError::Payload`] when the object is over `payload::OBJECT_MAX`.
pub async fn fetch(store: &ObjectStore, name: &str) -> Result<Option<String>, RemoteError> {
    let object = match store.get(name).await {
        Ok(object) => object,
        Err(e) if e.kind() == GetErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(RemoteError::nats(
                format!("cannot fetch the work in progress {name}"),
                e,
            ));
        }
    };
    let bytes = read_within(object, name, OBJECT_MAX).await?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Deletes the object `name` (the run's answer was acked). Best effort: a failure is
/// logged.
pub async fn delete(store: &ObjectStore, name: &str) {
    if let Err(e) = store.delete(name).await {
        tracing::debug!(object = name, "worker: deleting the work in progress: {e}");
    }
}

/// Applies `patch` (a previous worker's work in progress) to the worktree at `top`
/// with `git apply --index`; an empty patch does nothing.
///
/// Errors: [`FilesError::Git`] with git's refusal (the patch does not apply to the
/// base: the job must fail rather than run on the wrong files), or the temporary
/// file's I/O error.
pub fn apply_at(top: &Path, patch: &str) -> Result<(), FilesError> {
    if patch.trim().is_empty() {
        return Ok(());
    }
    // A binary hunk must end with a blank line: without it `git apply` skips the file
    // and still succeeds. Extra blank lines at the end are harmless.
    let mut patch = patch.to_string();
    while !patch.ends_with("\n\n") {
        patch.push('\n');
    }
    let io = |source| IsolationError::Io {
        path: std::env::temp_dir(),
        source,
    };
    let mut file = tempfile::NamedTempFile::new().map_err(io)?;
    std::io::Write::write_all(&mut file, patch.as_bytes()).map_err(io)?;
    let shown = file.path().display().to_string();
    Git::at(top).run(&["apply", "--index", "--whitespace=nowarn", &shown])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::files;

    #[test]
    fn a_patch_is_saved_only_when_it_changed_since_the_last_save() {
        let mut saved = Saved::from("");
        assert!(!saved.changed(""), "a fresh worktree has nothing to save");
        let one = "diff --git a/a b/a\n+one\n";
        assert!(saved.changed(one));
        saved.mark(one);
        assert!(!saved.changed(one), "the same patch is not stored twice");
        let two = "diff --git a/a b/a\n+one\n+two\n";
        assert!(saved.changed(two));
        saved.mark(two);
        assert!(saved.changed(""), "a change undone is saved too");
        // A redelivered job starts from the patch it applied.
        assert!(!Saved::from(two).changed(two));
    }

    #[test]
    fn a_save_stages_aside_and_leaves_the_sessions_own_index_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("w");
        std::fs::create_dir_all(&top).unwrap();
        let git = Git::at(&top);
        git.run(&["init", "--quiet"]).unwrap();
        std::fs::write(top.join("a.txt"), "one\n").unwrap();
        git.run(&["add", "-A"]).unwrap();
        git.run(&["commit", "--quiet", "-m", "base"]).unwrap();
        let base = git.commit_of("HEAD").unwrap().unwrap();
        std::fs::write(top.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(top.join("new.txt"), "fresh\n").unwrap();
        let index = tmp.path().join("wip.index");
        let aside = patch_aside(&top, &base, &index).unwrap();
        assert!(
            aside.contains("+two") && aside.contains("+++ b/new.txt"),
            "{aside}"
        );
        // The session still sees its change unstaged and its new file untracked.
        assert!(git.run(&["diff"]).unwrap().contains("+two"));
        let status = git.run(&["status", "--porcelain"]).unwrap();
        assert!(
            status.contains(" M a.txt") && status.contains("?? new.txt"),
            "{status}"
        );
        // The same patch as the final `Changes`; an unchanged worktree, the same again.
        assert_eq!(aside, patch_aside(&top, &base, &index).unwrap());
        assert_eq!(aside, files::patch_at(&top, &base).unwrap());
    }

    #[test]
    fn the_objects_name_is_the_sessions_token_and_run() {
        assert_eq!(wip_name("a-b_c", 3).unwrap(), "wip-a-b_c-r3");
        assert!(wip_name("", 1).is_err());
    }

    #[test]
    fn a_saved_patch_with_a_binary_file_applies_to_a_fresh_worktree_and_a_bad_one_fails() {
        let tmp = tempfile::tempdir().unwrap();
        let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
        for dir in [&one, &two] {
            std::fs::create_dir_all(dir).unwrap();
            let git = Git::at(dir);
            git.run(&["init", "--quiet"]).unwrap();
            std::fs::write(dir.join("a.txt"), "one\n").unwrap();
            git.run(&["add", "-A"]).unwrap();
            git.run(&["commit", "--quiet", "-m", "base"]).unwrap();
        }
        let base = Git::at(&one).commit_of("HEAD").unwrap().unwrap();
        std::fs::write(one.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(one.join("new.bin"), [0u8, 159, 146, 150]).unwrap();
        // Trimmed as a stored string may be: the closing blank line is put back.
        let patch = files::patch_at(&one, &base).unwrap().trim_end().to_string();
        apply_at(&two, &patch).unwrap();
        assert_eq!(
            std::fs::read_to_string(two.join("a.txt")).unwrap(),
            "one\ntwo\n"
        );
        assert_eq!(
            std::fs::read(two.join("new.bin")).unwrap(),
            [0u8, 159, 146, 150]
        );
        let two_base = Git::at(&two).commit_of("HEAD").unwrap().unwrap();
        assert_eq!(files::patch_at(&two, &two_base).unwrap().trim_end(), patch);
        apply_at(&two, "").unwrap();
        // Applied twice, it no longer fits: an error, never a silent run.
        let e = apply_at(&two, &patch).unwrap_err();
        assert!(e.to_string().contains("apply"), "{e}");
    }
}
