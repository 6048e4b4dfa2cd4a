//! Merge, discard, rewind and fork of a stored session (issue 25 items 2, 4, 5): the
//! one implementation behind `arbor session merge|discard|rewind|fork` and the TUI's
//! keys, reached only through the engine's commands (`EngineCommand::MergeSession`,
//! `DiscardSession`, `RewindSession`, `ForkSession`, `ForkSessionAs`).
//!
//! - [`merge`]: the sub-session's branch merged three-way into its parent's working
//!   tree; a conflict refuses the whole merge ([`UndoError::Isolation`] with
//!   `IsolationError::Conflict` naming the files, nothing changed); success removes
//!   the worktree and branch and records the worktree `merged`;
//!   [`merge_with_markers`] writes a conflict as git-style markers instead.
//! - [`discard`]: removes the worktree and branch, recorded `discarded`.
//! - [`rewind`]: restores the files changed after turn N (`isolation::checkpoint`);
//!   files changed since by someone else are refused, named, unless `force`.
//! - [`fork`]: `session::fork` at turn N, after (with `rewind`) rewinding the
//!   original's files to that turn — the TUI's "rewind here". A refused rewind forks
//!   nothing.
//!
//! The sub-session's lock is taken while its record changes: a session running in
//! another process is refused; one live in this process (the TUI's) is changed
//! through its live copy, and refused while it runs a turn. Owns: the checks (a root, no worktree, already gone)
//! and the record's new state. Does not own: the git steps (`isolation`), the
//! slicing (`session::fork`), how a front end words the result (`cli::session`,
//! `tui`).

use std::path::PathBuf;

use crate::engine::live::LiveSession;
use crate::isolation::checkpoint::Checkpoints;
use crate::isolation::worktree::State;
use crate::isolation::{IsolationError, WorktreeRecord, merge as git_merge};
use crate::session::fork::{ForkError, Forked};
use crate::session::{Message, Metadata, SessionStore, SessionWriter, StoreError};

/// Why a merge, discard, rewind or fork did nothing.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    /// The session could not be read or locked (another process has it open).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A git step failed or refused (conflict, changed since, turn out of range).
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    /// The fork could not be written (no turns, turn out of range, …).
    #[error(transparent)]
    Fork(#[from] ForkError),
    /// Merge or discard of a root (or a fork, which is a root).
    #[error("session {0} is a root: it has no parent to merge into and no worktree")]
    Root(String),
    /// Merge or discard of a session that worked in its parent's directory.
    #[error("session {0} has no worktree (it worked in its parent's directory): nothing to {1}")]
    NoWorktree(String, &'static str),
    /// Its worktree is already gone (merged, discarded, removed clean).
    #[error("session {id} has nothing to {what}: its worktree was {state}")]
    Gone {
        /// The session.
        id: String,
        /// `merge` or `discard`.
        what: &'static str,
        /// How it went: `already merged`, `already discarded`, `removed with no change`.
        state: &'static str,
    },
    /// The session is running a turn in this process.
    #[error("session {0} is running a turn: wait for it or cancel it first")]
    Running(String),
    /// Another process holds the session's lock: it is running a turn there.
    #[error("session {id} is running a turn in another process (pid {pid}); {what} refused")]
    Busy {
        /// The session.
        id: String,
        /// The lock holder's pid (0 when unknown).
        pid: u32,
        /// `merge`, `discard` or `rewind`.
        what: &'static str,
    },
    /// A bug: `what` panicked with `message` (also in the log).
    #[error("internal error: {what} panicked: {message}")]
    Panicked {
        /// What was being done.
        what: &'static str,
        /// The panic's message.
        message: crate::engine::panics::Panic,
    },
}

impl UndoError {
    /// The files a refusal names: the conflicting files of a refused merge, the files
    /// changed since of a refused rewind; empty otherwise.
    pub fn files(&self) -> &[String] {
        match self {
            Self::Isolation(
                IsolationError::Conflict { files } | IsolationError::ChangedSince { files },
            ) => files,
            _ => &[],
        }
    }
}

/// A merge done: `files` (repository relative) written into `target`, and the
/// worktree and branch removed (`notes`: what was already missing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The merged branch, `arbor/<short id>`.
    pub branch: String,
    /// The parent's working directory merged into.
    pub target: PathBuf,
    /// The files written or removed there.
    pub files: Vec<String>,
    /// Those of `files` written with conflict markers (only [`merge_with_markers`]).
    pub conflicted: Vec<String>,
    /// The worktree directory removed.
    pub worktree: PathBuf,
    /// Notes on what was already gone while removing.
    pub notes: Vec<String>,
}

/// A discard done: the worktree and branch removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discarded {
    /// The removed branch, `arbor/<short id>`.
    pub branch: String,
    /// The removed worktree directory.
    pub worktree: PathBuf,
    /// Notes on what was already gone.
    pub notes: Vec<String>,
}

/// A rewind done: `files` in `dir` restored to their state after turn `to_turn`
/// (empty: nothing changed after it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewound {
    /// The session's working directory.
    pub dir: PathBuf,
    /// The turn kept (1-based; 0 = before the first).
    pub to_turn: u64,
    /// Every file restored or removed, repository relative.
    pub files: Vec<String>,
    /// Those of `files` someone else had changed since (overwritten under `force`).
    pub forced: Vec<String>,
}

/// The active worktree of `metadata`, or why there is none.
fn active(metadata: &Metadata, what: &'static str) -> Result<WorktreeRecord, UndoError> {
    let id = metadata.session_id.to_string();
    if metadata.parent_id.is_none() || metadata.forked_from_turn().is_some() {
        return Err(UndoError::Root(id));
    }
    let record = metadata
        .worktree()
        .cloned()
        .ok_or(UndoError::NoWorktree(id.clone(), what))?;
    if record.state != State::Active {
        return Err(UndoError::Gone {
            id,
            what,
            state: state_word(record.state),
        });
    }
    Ok(record)
}

fn state_word(state: State) -> &'static str {
    match state {
        State::Active => "active",
        State::Clean => "removed with no change",
        State::Merged => "already merged",
        State::Discarded => "already discarded",
    }
}

/// Where a session's record is read and changed: the store, under the session's
/// lock, or the live session of this process (which holds that lock and would
/// otherwise write its own copy back over the change).
enum Record<'a> {
    Stored(Box<SessionWriter>),
    Live(&'a LiveSession),
}

impl<'a> Record<'a> {
    /// `live` when the session is live in this process (refused while it runs a
    /// turn), else the store's record, locked.
    /// A lock held by another process is `Busy` naming `what` (`merge`, …).
    fn open(
        store: &SessionStore,
        id: &str,
        live: Option<&'a LiveSession>,
        what: &'static str,
    ) -> Result<Self, UndoError> {
        match live {
            Some(l) if l.is_running() => Err(UndoError::Running(id.to_string())),
            Some(l) => Ok(Self::Live(l)),
            None => match store.open(id) {
                Ok(writer) => Ok(Self::Stored(Box::new(writer))),
                Err(StoreError::Locked { id, pid }) => Err(UndoError::Busy { id, pid, what }),
                Err(e) => Err(e.into()),
            },
        }
    }

    fn metadata(&self) -> Metadata {
        match self {
            Self::Stored(w) => w.metadata().clone(),
            Self::Live(l) => l.metadata(),
        }
    }

    /// Records `record` as `state` (metadata `worktree`).
    fn set_state(&mut self, record: &WorktreeRecord, state: State) -> Result<(), UndoError> {
        let record = record.with_state(state);
        match self {
            Self::Stored(writer) => {
                let mut metadata = writer.metadata().clone();
                metadata.arbor.worktree = Some(record);
                writer.write_metadata(&metadata)?;
            }
            Self::Live(live) => {
                live.update_metadata(|m| m.arbor.worktree = Some(record));
                live.sync();
            }
        }
        Ok(())
    }
}

/// Merges session `id`'s (a full id or resolved prefix) worktree branch into its
/// parent's working directory (the parent's recorded `working_dir`, else the
/// directory the worktree was cut from), then removes the worktree and branch.
/// `live`: the session when it is live in this process.
///
/// Errors: `Root`, `NoWorktree`, `Gone`; the store's (unknown, locked by another
/// process); `Isolation(Conflict { files })` — nothing changed.
pub(crate) fn merge(
    store: &SessionStore,
    id: &str,
    live: Option<&LiveSession>,
) -> Result<Merged, UndoError> {
    merge_as(store, id, live, false)
}

/// [`merge`], but a conflict does not refuse: the conflicting hunks are written into
/// the target as git-style markers (`<<<<<<< parent` … `>>>>>>> arbor/<id>`), named
/// in [`Merged::conflicted`], for a person to resolve (issue 35 item 2); the worktree
/// and branch are removed and the record says `merged` as for a clean merge.
///
/// Errors: as [`merge`], less the conflict.
pub(crate) fn merge_with_markers(
    store: &SessionStore,
    id: &str,
    live: Option<&LiveSession>,
) -> Result<Merged, UndoError> {
    merge_as(store, id, live, true)
}

fn merge_as(
    store: &SessionStore,
    id: &str,
    live: Option<&LiveSession>,
    markers: bool,
) -> Result<Merged, UndoError> {
    let mut rec = Record::open(store, id, live, "merge")?;
    let metadata = rec.metadata();
    let record = active(&metadata, "merge")?;
    let target = metadata
        .parent_id
        .as_deref()
        .and_then(|p| store.load_metadata(p).ok())
        .and_then(|(m, _)| m.working_dir)
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(|| record.parent_dir());
    let merged = if markers {
        git_merge::merge_with_markers(&record, &target)?
    } else {
        git_merge::merge(&record, &target)?
    };
    let notes = record.remove()?;
    rec.set_state(&record, State::Merged)?;
    Ok(Merged {
        branch: record.branch.clone(),
        target,
        files: merged.files,
        conflicted: merged.conflicted,
        worktree: record.path.clone(),
        notes,
    })
}

/// Removes session `id`'s worktree and branch, changes and all (`live`: the session
/// when it is live in this process).
///
/// Errors: `Root`, `NoWorktree`, `Gone`; the store's; git's.
pub(crate) fn discard(
    store: &SessionStore,
    id: &str,
    live: Option<&LiveSession>,
) -> Result<Discarded, UndoError> {
    let mut rec = Record::open(store, id, live, "discard")?;
    let record = active(&rec.metadata(), "discard")?;
    let notes = record.remove()?;
    rec.set_state(&record, State::Discarded)?;
    Ok(Discarded {
        branch: record.branch.clone(),
        worktree: record.path.clone(),
        notes,
    })
}

/// Restores the files session `id` changed after turn `to_turn` (1-based; 0 = all of
/// them) to their state then, from its checkpoints (`isolation::checkpoint`).
///
/// The session's lock is held while the files are restored: a session running a turn
/// in another process is refused (`Busy`). `live`: the session when it is live in
/// this process (refused while it runs a turn; its lock is this process's already).
///
/// Errors: `Busy`; `Isolation(TurnOutOfRange)` naming the valid range;
/// `Isolation(ChangedSince { files })` when someone else changed them since and not
/// `force` — nothing written; the store's.
pub(crate) fn rewind(
    store: &SessionStore,
    id: &str,
    to_turn: u64,
    force: bool,
    live: Option<&LiveSession>,
) -> Result<Rewound, UndoError> {
    let _held = Record::open(store, id, live, "rewind")?;
    let loaded = store.load(id)?;
    let turns = loaded
        .transcript
        .iter()
        .filter(|m| matches!(m, Message::User(_)))
        .count() as u64;
    let dir = loaded
        .metadata
        .working_dir
        .map(PathBuf::from)
        .unwrap_or_default();
    let private = store.session_dir(id)?.join("checkpoints.git");
    let checkpoints = Checkpoints::open(&dir, id, &private)?;
    let done = checkpoints.rewind(to_turn, turns, force)?;
    Ok(Rewound {
        dir,
        to_turn,
        files: done.files,
        forced: done.forced,
    })
}

/// Forks session `id` at turn `at_turn` (`None`: the latest) as a new session titled
/// `title` (`session::fork`). With `rewind_files`, first restores the files `id`
/// changed after that turn ([`rewind`], not forced): the fork then starts from the
/// files as they were — "rewind here". A refused rewind forks nothing. `live`: the
/// session when it is live in this process.
///
/// Errors: [`rewind`]'s; `Fork` (no turns, turn out of range).
pub(crate) fn fork(
    store: &SessionStore,
    id: &str,
    at_turn: Option<u64>,
    title: Option<&str>,
    rewind_files: bool,
    live: Option<&LiveSession>,
) -> Result<(Forked, Option<Rewound>), UndoError> {
    let rewound = match (rewind_files, at_turn) {
        (true, Some(turn)) => Some(rewind(store, id, turn, false, live)?),
        _ => None,
    };
    let forked = crate::session::fork::fork(store, id, at_turn, title)?;
    Ok((forked, rewound))
}

/// What a merge, discard, rewind or fork command did (`EngineReply::Undone`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoDone {
    /// `MergeSession`.
    Merged(Merged),
    /// `DiscardSession`.
    Discarded(Discarded),
    /// `RewindSession`.
    Rewound(Rewound),
    /// `ForkSession`: the new session, and the original's rewind when asked for.
    Forked {
        /// The fork (`session_id`, `parent_id`, `forked_from_turn`).
        forked: Forked,
        /// The files restored before forking ("rewind here"); `None` when not asked.
        rewound: Option<Rewound>,
    },
}
