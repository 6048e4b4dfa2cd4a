//! One live session: its mount plan, writer, transcript in memory, cancellation and
//! running flag.
//!
//! Owns: persisting and publishing together — every event goes to the bus and (when
//! logged) to `events.jsonl`; every message to `transcript.jsonl`, the in-memory
//! transcript and a `message:appended` event; status changes to `metadata.json` and a
//! `session:status` event. Does not own: what a turn does (`turn`) or the map of live
//! sessions (`runtime`).
//!
//! Locking: every mutex here is a `std::sync::Mutex` held only for a synchronous write,
//! never across an await. Only one turn runs per session at a time (`running`), so the
//! writer's lines come from that turn (plus `cancel:requested` from a canceller).
//! The running flag changes only under the inbox lock (taken before `cancel`): a
//! message offered to the inbox either finds a turn that will take it or learns that
//! none runs — never one that already decided to stop.
//!
//! Inbox (SPEC §13 steer and queue): [`LiveSession::offer`] adds a steer or queued
//! message (`prompt:queued`), [`LiveSession::deliver`] appends one as a user message
//! (`prompt:sent`), [`LiveSession::unqueue`] takes one back (`prompt:unqueued`), and
//! [`LiveSession::next_input`] decides at the end of each turn whether another turn
//! follows or the session stops running.
//!
//! Memory: the in-memory transcript is an `Arc<Vec<Message>>`.
//! [`LiveSession::transcript_snapshot`] shares it (a model request over a
//! 100k-message history copies no message) and [`LiveSession::append`] pushes in
//! place when no snapshot is alive, copying the messages once (copy-on-write) only
//! when one still is; that copy shares every message text (`Text` clones), so it
//! costs the list and the small fields, never the texts. Holders of a snapshot drop
//! it before the next append (the turn loop does; a viewer laying out
//! `Runtime::transcript_snapshot` should too).

use crate::session::ids::SessionId;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::inbox::{Inbox, Pending};
use super::outcome::EngineError;
use crate::config::MountPlan;
use crate::provider::Provider;
use crate::session::message::now_rfc3339;
use crate::session::protocol::{PromptMode, PromptSentEvent, PromptUnqueuedEvent, UnqueueReason};
use crate::session::{
    EngineEvent, Event, EventBus, Message, Metadata, SessionStatus, SessionWriter, StoreError,
};

/// Locks `m`, recovering the data of a poisoned lock (a panicked holder cannot leave
/// these values half-written: every update is a single assignment or push).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A session loaded in this process (created here or resumed from disk).
pub(crate) struct LiveSession {
    pub id: SessionId,
    pub parent_id: Option<SessionId>,
    /// The root of this session's tree (its own id for a root): "always" approvals
    /// hold for the whole tree.
    pub root_id: SessionId,
    pub agent_name: String,
    pub depth: u32,
    /// The merged mount plan, with credentials (never persisted as is: the store redacts).
    pub plan: MountPlan,
    /// The agent's own overlay (`spawn` is read from it when this session delegates).
    pub agent_overlay: Value,
    /// Tools are confined here.
    pub working_dir: PathBuf,
    bus: EventBus,
    writer: Mutex<SessionWriter>,
    transcript: Mutex<Arc<Vec<Message>>>,
    metadata: Mutex<Metadata>,
    cancel: Mutex<CancellationToken>,
    running: AtomicBool,
    /// Steers and queued messages waiting for the running turn; guards `running`.
    inbox: Mutex<Inbox>,
    provider: Mutex<Option<(Arc<dyn Provider>, Value)>>,
    /// The first persistence failure of the running turn.
    persist_error: Mutex<Option<String>>,
    /// Metadata writes held back ([`LiveSession::hold_metadata`]): how many holds are
    /// alive, and whether a write waits for the last of them.
    held: Mutex<(u32, bool)>,
    /// The session's compaction record and latest context use (`compact`).
    pub(crate) context: Mutex<super::compact::ContextState>,
    /// Set by the first turn of this session in this process, which runs its
    /// `SessionStart` / `SubagentStart` hooks (`tool_hooks::session_start`).
    pub(crate) start_hooks_ran: AtomicBool,
    /// The root was started after the person cleared the thread (`/clear`): its
    /// `SessionStart` source is `clear`.
    pub(crate) cleared: AtomicBool,
}

/// Holds a session's metadata writes while alive ([`LiveSession::hold_metadata`]).
pub(crate) struct MetadataHold<'a> {
    live: &'a LiveSession,
}

impl Drop for MetadataHold<'_> {
    fn drop(&mut self) {
        let last = {
            let mut held = lock(&self.live.held);
            held.0 -= 1;
            held.0 == 0
        };
        if last {
            self.live.write_held();
        }
    }
}

impl LiveSession {
    /// A live session from its metadata (which names id, parent, agent, depth,
    /// working dir), the root of its tree, plan, locked writer and transcript.
    pub fn new(
        metadata: Metadata,
        root_id: SessionId,
        plan: MountPlan,
        writer: SessionWriter,
        transcript: Vec<Message>,
        bus: EventBus,
        fallback_dir: PathBuf,
    ) -> Self {
        Self {
            id: metadata.session_id.clone(),
            parent_id: metadata.parent_id.clone(),
            root_id,
            agent_name: metadata.agent_name.clone().unwrap_or_default(),
            depth: metadata.depth,
            plan,
            agent_overlay: metadata.agent_overlay.clone(),
            working_dir: metadata
                .working_dir
                .as_ref()
                .map(PathBuf::from)
                .unwrap_or(fallback_dir),
            bus,
            writer: Mutex::new(writer),
            transcript: Mutex::new(Arc::new(transcript)),
            metadata: Mutex::new(metadata),
            cancel: Mutex::new(CancellationToken::new()),
            running: AtomicBool::new(false),
            inbox: Mutex::new(Inbox::default()),
            provider: Mutex::new(None),
            persist_error: Mutex::new(None),
            held: Mutex::new((0, false)),
            context: Mutex::new(super::compact::ContextState::default()),
            start_hooks_ran: AtomicBool::new(false),
            cleared: AtomicBool::new(false),
        }
    }

    /// The session's directory in the store.
    pub fn dir(&self) -> PathBuf {
        lock(&self.writer).dir().to_path_buf()
    }

    /// Publishes `msg` from this session on the bus and appends it to `events.jsonl`
    /// when logged.
    pub fn emit(&self, msg: EngineEvent) {
        let event = Event::new(&self.id, self.parent_id.as_deref(), msg);
        if event.is_logged()
            && let Err(e) = lock(&self.writer).append_event(&event)
        {
            tracing::warn!(session = %self.id, event = event.msg.name(), "cannot log event: {e}");
        }
        self.bus.publish(event);
    }

    /// Publishes `session:notice` with `message` (a note for people: the thread,
    /// `arbor run`'s stderr, `events.jsonl`) and logs it as a warning.
    pub fn notice(&self, message: String) {
        tracing::warn!(session = %self.id, "{message}");
        self.emit(EngineEvent::SessionNotice(
            crate::session::protocol::SessionNoticeEvent { message },
        ));
    }

    /// Appends `message` to the transcript file and memory, then publishes
    /// `message:appended` with it.
    pub fn append(&self, message: Message) {
        if let Err(e) = lock(&self.writer).append_message(&message) {
            tracing::error!(session = %self.id, "cannot append to the transcript: {e}");
            lock(&self.persist_error)
                .get_or_insert_with(|| format!("cannot save the transcript: {e}"));
        }
        Arc::make_mut(&mut lock(&self.transcript)).push(message.clone());
        self.emit(EngineEvent::appended(message));
    }

    /// The in-memory transcript as it is now, shared (no message is copied). Drop it
    /// before the session's next append: while it is alive, that append copies the
    /// whole transcript once (copy-on-write).
    pub fn transcript_snapshot(&self) -> Arc<Vec<Message>> {
        Arc::clone(&lock(&self.transcript))
    }

    /// A copy of the current metadata.
    pub fn metadata(&self) -> Metadata {
        lock(&self.metadata).clone()
    }

    /// Applies `change` to the metadata in memory only: the next
    /// [`LiveSession::update_metadata`] writes it (the context use recorded before
    /// each model call rides on the write after its response, sparing a file write
    /// per request).
    pub fn stage_metadata(&self, change: impl FnOnce(&mut Metadata)) {
        change(&mut lock(&self.metadata));
    }

    /// Applies `change` to the metadata, stamps `last_updated` and writes it.
    /// While a [`LiveSession::hold_metadata`] is alive, the write waits for it.
    pub fn update_metadata(&self, change: impl FnOnce(&mut Metadata)) {
        {
            let mut metadata = lock(&self.metadata);
            change(&mut metadata);
            metadata.last_updated = now_rfc3339();
        }
        {
            let mut held = lock(&self.held);
            if held.0 > 0 {
                held.1 = true;
                return;
            }
        }
        self.write_metadata();
    }

    /// Holds this session's metadata writes until the returned guard drops, then makes
    /// one write of what changed meanwhile (a worker's message of packed events that
    /// moves the status twice costs one file write, not two). A
    /// [`LiveSession::sync`] meanwhile writes first. Events go out at once as always.
    pub fn hold_metadata(&self) -> MetadataHold<'_> {
        lock(&self.held).0 += 1;
        MetadataHold { live: self }
    }

    /// Writes the metadata held back, if any.
    fn write_held(&self) {
        let waiting = std::mem::take(&mut lock(&self.held).1);
        if waiting {
            self.write_metadata();
        }
    }

    /// Writes the metadata as it is in memory.
    fn write_metadata(&self) {
        let snapshot = lock(&self.metadata).clone();
        if let Err(e) = lock(&self.writer).write_metadata(&snapshot) {
            tracing::error!(session = %self.id, "cannot write metadata: {e}");
            lock(&self.persist_error).get_or_insert_with(|| format!("cannot save metadata: {e}"));
        }
    }

    /// Sets and persists the status, then publishes `session:status`.
    pub fn set_status(&self, status: SessionStatus) {
        self.update_metadata(|m| m.status = status);
        self.emit(EngineEvent::status(status));
    }

    /// Makes the session's files durable (end of a turn; see `SessionWriter::sync`).
    pub fn sync(&self) {
        self.write_held();
        if let Err(e) = lock(&self.writer).sync() {
            tracing::error!(session = %self.id, "cannot sync session files: {e}");
            lock(&self.persist_error)
                .get_or_insert_with(|| format!("cannot save the session: {e}"));
        }
    }

    /// How many fsyncs the session's writer has made (tests: a turn syncs once).
    #[cfg(test)]
    pub fn fsyncs(&self) -> u64 {
        lock(&self.writer).fsyncs()
    }

    /// Takes the persistence error recorded during the turn, if any.
    pub fn take_persist_error(&self) -> Option<String> {
        lock(&self.persist_error).take()
    }

    /// Marks a turn as started: the session's lock taken again if it was released
    /// when the last turn ended ([`LiveSession::retake_lock`]), a fresh token (a child
    /// of `parent` when given), the running flag set.
    ///
    /// Errors: `Busy` when a turn is already running; the store's `Locked` (another
    /// process runs a turn in it) or `ChangedElsewhere` — nothing written.
    pub fn begin_turn(
        self: &Arc<Self>,
        parent: Option<&CancellationToken>,
    ) -> Result<TurnGuard, EngineError> {
        let _inbox = lock(&self.inbox);
        let mut cancel = lock(&self.cancel);
        if self
            .running
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(EngineError::Busy {
                session_id: self.id.clone(),
            });
        }
        if let Err(e) = self.retake_lock() {
            self.running.store(false, Ordering::Release);
            return Err(e.into());
        }
        *cancel = parent.map_or_else(CancellationToken::new, CancellationToken::child_token);
        Ok(TurnGuard {
            session: self.clone(),
            token: cancel.clone(),
            released: false,
        })
    }

    /// Takes the session's lock again after a turn released it, and takes the
    /// worktree record from disk (a shell may have merged or discarded the worktree
    /// while the session sat idle here). Nothing to do while held.
    fn retake_lock(&self) -> Result<(), StoreError> {
        let Some(disk) = lock(&self.writer).retake_lock()? else {
            return Ok(());
        };
        lock(&self.metadata).arbor.worktree = disk.arbor.worktree;
        Ok(())
    }

    /// Releases the session's lock once no turn runs in it (issue 35 item 4): an idle
    /// session can then be resumed, merged, discarded or rewound by another process.
    fn release_lock(&self) {
        lock(&self.writer).release_lock();
    }

    /// Releases the session's lock when no turn runs in it (a session just loaded):
    /// [`LiveSession::begin_turn`] takes it again, and a write meanwhile takes it for
    /// that write alone.
    pub(crate) fn release_if_idle(&self) {
        let _inbox = lock(&self.inbox);
        if !self.running.load(Ordering::Acquire) {
            self.release_lock();
        }
    }

    /// Adds `text` to the inbox as a steer or a queued message (at `position` among
    /// the queued ones) and publishes `prompt:queued`. Returns whether a turn runs:
    /// then that turn takes it; otherwise the caller starts one (`turn::run_inbox`).
    pub fn offer(&self, mode: PromptMode, text: String, position: Option<usize>) -> bool {
        let (queued, running) = {
            let mut inbox = lock(&self.inbox);
            let queued = inbox.push(mode, text, position);
            (queued, self.running.load(Ordering::Acquire))
        };
        self.emit(EngineEvent::PromptQueued(queued));
        running
    }

    /// Takes the steers waiting for the running turn's next model call.
    pub fn take_steers(&self) -> Vec<Pending> {
        lock(&self.inbox).take_steers()
    }

    /// Appends a waiting message as a plain user message and publishes `prompt:sent`.
    pub fn deliver(&self, pending: Pending) {
        self.append(Message::user(pending.text.clone()));
        self.emit(EngineEvent::PromptSent(PromptSentEvent {
            id: pending.id,
            mode: pending.mode,
            prompt: pending.text,
        }));
    }

    /// Takes the waiting message `id` back unsent (`prompt:unqueued`, `removed`);
    /// `None` when it no longer waits (sent, removed, returned, never offered).
    pub fn unqueue(&self, id: u64) -> Option<Pending> {
        let pending = lock(&self.inbox).remove(id)?;
        self.emit(unqueued(&pending, UnqueueReason::Removed));
        Some(pending)
    }

    /// At the end of a turn of `guard`'s run: after a `completed` turn, what starts
    /// the next one (the steers the turn ended before, else the first queued message);
    /// otherwise, or when nothing waits, the session stops running (`guard` released
    /// under the inbox lock) and `None` is returned. A turn that did not complete
    /// returns everything waiting unsent (`prompt:unqueued`, `returned`): nothing is
    /// sent on its own after a cancel or a failure.
    pub fn next_input(&self, guard: &mut TurnGuard, completed: bool) -> Option<Vec<Pending>> {
        let returned = {
            let mut inbox = lock(&self.inbox);
            if completed {
                let next = inbox.take_next();
                if !next.is_empty() {
                    return Some(next);
                }
            }
            let returned = inbox.take_all();
            guard.released = true;
            self.release_lock();
            self.running.store(false, Ordering::Release);
            returned
        };
        for pending in &returned {
            self.emit(unqueued(pending, UnqueueReason::Returned));
        }
        None
    }

    /// The current turn's token.
    pub fn cancel_token(&self) -> CancellationToken {
        lock(&self.cancel).clone()
    }

    /// Whether a turn is running.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// The cached provider and its entry config.
    pub fn provider(&self) -> Option<(Arc<dyn Provider>, Value)> {
        lock(&self.provider).clone()
    }

    /// Caches the provider built for this session, with its entry config.
    pub fn set_provider(&self, provider: Arc<dyn Provider>, config: Value) {
        *lock(&self.provider) = Some((provider, config));
    }
}

/// `prompt:unqueued` for `pending`.
fn unqueued(pending: &Pending, reason: UnqueueReason) -> EngineEvent {
    EngineEvent::PromptUnqueued(PromptUnqueuedEvent {
        id: pending.id,
        mode: pending.mode,
        prompt: pending.text.clone(),
        reason,
    })
}

/// A running turn (or run of turns: queued ones follow under the same guard).
/// Dropping it cancels the turn's token (so no tool call or child turn outlives it)
/// and, unless [`LiveSession::next_input`] released it, clears the running flag; a
/// turn whose future was dropped mid-way (status still `running`, `queued` or
/// `waiting`) is recorded as `cancelled` so the session stays resumable, or as
/// `failed` when the drop is the unwinding of a panic.
pub(crate) struct TurnGuard {
    session: Arc<LiveSession>,
    /// This turn's cancellation token.
    pub token: CancellationToken,
    /// The running flag was cleared already (a later turn may have set it again).
    released: bool,
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.token.cancel();
        if self.released {
            return;
        }
        let _inbox = lock(&self.session.inbox);
        if matches!(
            self.session.metadata().status,
            SessionStatus::Running | SessionStatus::Queued | SessionStatus::Waiting
        ) {
            self.session.set_status(if std::thread::panicking() {
                SessionStatus::Failed
            } else {
                SessionStatus::Cancelled
            });
            self.session.sync();
        }
        self.session.release_lock();
        self.session.running.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionStore;

    /// `metadata.json` is read from disk (status, and inode: every write outside a
    /// volatile store makes a new file).
    #[cfg(unix)]
    #[test]
    fn held_metadata_writes_become_one_write_when_the_hold_ends_or_at_a_sync() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let metadata = Metadata {
            session_id: "child".into(),
            created: "2025-01-01T00:00:00Z".into(),
            ..Default::default()
        };
        let writer = store.create(&metadata).unwrap();
        let live = LiveSession::new(
            metadata,
            "child".into(),
            MountPlan::default(),
            writer,
            Vec::new(),
            EventBus::new(),
            dir.path().to_path_buf(),
        );
        let file = dir.path().join("child").join("metadata.json");
        let on_disk = || {
            let text = std::fs::read(&file).unwrap();
            let m: Metadata = serde_json::from_slice(&text).unwrap();
            (m.status, std::fs::metadata(&file).unwrap().ino())
        };
        let (_, before) = on_disk();
        {
            let _hold = live.hold_metadata();
            live.set_status(SessionStatus::Running);
            live.set_status(SessionStatus::Completed);
            assert_eq!(
                live.metadata().status,
                SessionStatus::Completed,
                "in memory"
            );
            assert_eq!(on_disk().1, before, "nothing written while held");
        }
        let (status, after) = on_disk();
        assert_eq!(
            status,
            SessionStatus::Completed,
            "one write when the hold ends"
        );
        assert_ne!(after, before);
        // A sync under a hold writes first, so what it makes durable is current.
        let _hold = live.hold_metadata();
        live.set_status(SessionStatus::Failed);
        live.sync();
        assert_eq!(on_disk().0, SessionStatus::Failed);
    }
}
