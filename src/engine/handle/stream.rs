//! One ordered stream per front end (issue 36 item 1; codex-rs's `submit` /
//! `next_event`): [`Engine::connect`](super::Engine::connect) gives a front end an
//! [`EngineClient`] to submit commands through and the [`EngineStream`] it reads, in
//! which every bus event and every reply of its commands arrive in the order they
//! happened, each command's replies closed by [`EngineOutput::Answered`].
//!
//! Ordering: bus events and replies are sent into one channel on the thread that
//! produced them (the bus calls its subscribers while publishing), so a turn's events
//! come before its `TurnFinished`, and a new root's `session:start` before its
//! `SessionCreated`.
//!
//! Owns: command ids, the stream's item type and the channel. Does not own: executing
//! commands (`handle`), what a front end makes of the items (each front end's one
//! dispatcher).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::Engine;
use super::reply::{EngineReply, Replies};
use crate::session::{EngineCommand, Event};

/// The id [`EngineClient::submit`] gives a command: its replies carry it. Unique per
/// client, counting from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommandId(pub u64);

/// One item of a front end's [`EngineStream`].
#[derive(Debug)]
pub enum EngineOutput {
    /// An event some session of this process published (the bus).
    Event(Arc<Event>),
    /// A reply to the command `command` (see [`EngineReply`] for which replies each
    /// command gets).
    Reply {
        command: CommandId,
        reply: EngineReply,
    },
    /// The command `command` is answered in full: no reply of it follows. (For
    /// `LoadTranscript`, when the next session is opened; for `ContinueInterrupted`,
    /// after its last turn.)
    Answered { command: CommandId },
}

/// Submits a front end's commands; their replies arrive on the [`EngineStream`]
/// made with it. Cheap to clone (every clone numbers from the same counter).
#[derive(Clone)]
pub struct EngineClient {
    engine: Engine,
    tx: UnboundedSender<EngineOutput>,
    next: Arc<AtomicU64>,
}

/// What a front end reads: every event and every reply of its client's commands, in
/// the order they happened. Ends (`None`) once the client and its clones are dropped
/// and everything sent is read… which a live bus never allows: a front end stops
/// reading when it is done.
pub struct EngineStream {
    rx: UnboundedReceiver<EngineOutput>,
}

impl Engine {
    /// A front end's connection: its client and its stream, subscribed to the bus now
    /// (so a command submitted after this sees all of its events).
    pub fn connect(&self) -> (EngineClient, EngineStream) {
        let (tx, rx) = mpsc::unbounded_channel();
        let events = tx.clone();
        self.runtime
            .bus()
            .subscribe_with(move |event| events.send(EngineOutput::Event(event)).is_ok());
        let client = EngineClient {
            engine: self.clone(),
            tx,
            next: Arc::new(AtomicU64::new(1)),
        };
        (client, EngineStream { rx })
    }
}

/// Sends `Answered` when the last clone of a command's reply sink is dropped.
struct AnsweredOnDrop {
    command: CommandId,
    tx: UnboundedSender<EngineOutput>,
}

impl Drop for AnsweredOnDrop {
    fn drop(&mut self) {
        let _ = self.tx.send(EngineOutput::Answered {
            command: self.command,
        });
    }
}

impl EngineClient {
    /// Runs `command` on the engine (it returns at once: the work runs in a task of
    /// the current tokio runtime, so call it inside one); its replies, then
    /// `Answered`, arrive on this client's stream under the returned id.
    pub fn submit(&self, command: EngineCommand) -> CommandId {
        let id = CommandId(self.next.fetch_add(1, Ordering::Relaxed));
        let answered = AnsweredOnDrop {
            command: id,
            tx: self.tx.clone(),
        };
        let replies = Replies::new(move |reply| {
            answered
                .tx
                .send(EngineOutput::Reply { command: id, reply })
                .is_ok()
        });
        self.engine.execute(command, replies);
        id
    }

    /// The engine this client drives (for `shutdown` / `close`).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}

impl EngineStream {
    /// The next item, waiting for it; `None` once every sender is gone.
    pub async fn next(&mut self) -> Option<EngineOutput> {
        self.rx.recv().await
    }

    /// The next item if one is queued now.
    pub fn try_next(&mut self) -> Option<EngineOutput> {
        self.rx.try_recv().ok()
    }
}
