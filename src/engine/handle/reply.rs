//! What the [`Engine`](super::Engine) answers: one [`EngineReply`] per result of an
//! [`EngineCommand`](crate::session::EngineCommand), sent to the [`Replies`] sink the
//! command came with.
//!
//! Owns: the reply enum, the earlier part of a session opened tail-first
//! ([`EarlierMessages`]) and the sink type. Does not own: producing replies
//! (`handle`, `open`, `follow`) or turning them into a front end's own events (the
//! TUI's `executor`, `cli::run`).

use std::path::PathBuf;
use std::sync::Arc;

use super::undo::{UndoDone, UndoError};
use crate::engine::{EngineError, TurnOutcome};
use crate::session::ids::SessionId;
use crate::session::{Event, LoadedSession, Message, Metadata};
use crate::tool::filesystem::changes::SessionDiff;
use crate::tool::mcp::McpServerStatus;

/// A typed answer of the engine to a command (or, for a followed session, to what
/// another process wrote). Errors are carried whole ([`EngineError`]); a front end
/// renders them (`to_string`) where it shows them.
#[derive(Debug)]
pub enum EngineReply {
    /// `Submit` without a session id created this root session (its turn now runs),
    /// or `CreateSession` did.
    SessionCreated { session_id: SessionId },
    /// A turn started by `Submit`, `Continue`, `ContinueInterrupted`, `Steer` or
    /// `Queue` ended (completed, failed, cancelled or paused).
    TurnFinished(TurnOutcome),
    /// A command failed before or while running a turn, or an approval could not be
    /// answered; `session_id` is the session it concerned, when known.
    Failed {
        session_id: Option<SessionId>,
        error: EngineError,
    },
    /// `Steer`, `Queue` or `Unqueue` of `session_id` failed: the text it carried
    /// (none for an unqueue) was not sent.
    NotSent {
        session_id: SessionId,
        text: Option<String>,
        error: EngineError,
    },
    /// `LoadTranscript` of `requested` (an id or prefix as sent): the session with its
    /// newest messages. `earlier: None` — they are all of it; `Some(end)` — the rest,
    /// up to byte `end` of the transcript (for a session live here: up to message
    /// `end` of the engine's transcript), follows as [`EngineReply::Earlier`].
    Opened {
        requested: String,
        session: Box<LoadedSession>,
        earlier: Option<u64>,
    },
    /// `LoadTranscript` of `requested`: the compactions its `events.jsonl` records
    /// (each with its RFC 3339 timestamp, oldest first), sent before
    /// [`EngineReply::Opened`] when there are any, so the thread shows a compaction
    /// cell where each happened.
    Compactions {
        requested: String,
        compactions: Vec<(String, crate::session::protocol::ContextCompactionEvent)>,
    },
    /// `LoadTranscript` of `requested` failed (resolving the id, reading the store).
    OpenFailed {
        requested: String,
        error: EngineError,
    },
    /// The earlier part (up to `end`) of `session_id`'s transcript, opened
    /// tail-first, or why it could not be read.
    Earlier {
        session_id: SessionId,
        end: u64,
        result: Result<EarlierMessages, EngineError>,
    },
    /// A message another process appended to the stored session opened last (sent as
    /// the `message:appended` event live sessions publish on the bus).
    Followed(Arc<Event>),
    /// The metadata of the followed stored session, read again because another
    /// process changed it (a turn started or ended there).
    StoredSessionChanged(Box<Metadata>),
    /// `ListSessions` (or the follower after a `task` call): stored session
    /// metadata, newest first, or the store error.
    SessionsListed(Result<Vec<Metadata>, EngineError>),
    /// `ResolveProviderLabel`: `provider/model` of what a new root session uses.
    ProviderLabel(String),
    /// `SetModel`: the `provider/model` now in use by `session_id` (`None`: new root
    /// sessions) or the error; `warning` when the provider does not list the model.
    ModelSwitched {
        session_id: Option<SessionId>,
        result: Result<String, EngineError>,
        warning: Option<String>,
    },
    /// `LoadDiff`: the session's diffs (itself first, then changed descendants).
    DiffLoaded {
        session_id: SessionId,
        subtree: bool,
        result: Result<Vec<SessionDiff>, EngineError>,
    },
    /// `RenameSession`: the title stored, or the error.
    SessionRenamed {
        session_id: SessionId,
        result: Result<String, EngineError>,
    },
    /// `ExportSession`: the Markdown file written, or the error (nothing written).
    Exported {
        session_id: SessionId,
        result: Result<PathBuf, EngineError>,
    },
    /// `ListProjectFiles`: the files under `root`, relative, sorted.
    ProjectFiles {
        root: PathBuf,
        files: Arc<Vec<String>>,
    },
    /// `ListMcpServers`: each MCP server of this process with its state and tools.
    McpServers(Vec<McpServerStatus>),
    /// `ListHooks`: every hook of this process, active or skipped with why.
    Hooks(Vec<crate::hooks::ListedHook>),
    /// `Compact`: what compacting the session did (the compaction itself is published
    /// as `context:compaction`), or why it could not.
    Compacted {
        session_id: SessionId,
        result: Result<crate::engine::compact::Compacted, crate::engine::compact::CompactError>,
    },
    /// `MergeSession`, `DiscardSession`, `RewindSession` or `ForkSession` of
    /// `session_id`: what it did, or why it did nothing (`UndoError::files` names the
    /// files a refusal is about).
    Undone {
        session_id: SessionId,
        result: Result<UndoDone, UndoError>,
    },
}

/// The earlier part of a transcript opened tail-first: its messages (shared with the
/// engine's copy: every text is the same allocation) and the whole transcript's load
/// warnings.
#[derive(Debug, Clone)]
pub struct EarlierMessages {
    shared: Arc<Vec<Message>>,
    len: usize,
    /// The whole transcript's load warnings (empty for a session live here).
    pub warnings: Vec<String>,
}

impl EarlierMessages {
    /// The first `len` messages of `shared` (clamped to its length).
    pub fn new(shared: Arc<Vec<Message>>, len: usize, warnings: Vec<String>) -> Self {
        let len = len.min(shared.len());
        Self {
            shared,
            len,
            warnings,
        }
    }

    /// The earlier messages, oldest first.
    pub fn messages(&self) -> &[Message] {
        self.shared.get(..self.len).unwrap_or_default()
    }
}

/// Where a command's replies go: a function the engine calls once per reply, on
/// whatever task or thread produced it (possibly a blocking thread). It returns
/// `false` once the front end is gone; the engine then stops work that only exists
/// to report (following a transcript). Cheap to clone.
#[derive(Clone)]
pub struct Replies(Arc<dyn Fn(EngineReply) -> bool + Send + Sync>);

impl Replies {
    /// A sink calling `f` for each reply.
    pub fn new(f: impl Fn(EngineReply) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// A sink sending each reply on `tx` (`false` once its receiver is dropped).
    pub fn channel(tx: tokio::sync::mpsc::UnboundedSender<EngineReply>) -> Self {
        Self::new(move |reply| tx.send(reply).is_ok())
    }

    /// Sends `reply`; `false` when the front end is gone (logged at debug level).
    pub fn send(&self, reply: EngineReply) -> bool {
        let delivered = (self.0)(reply);
        if !delivered {
            tracing::debug!("front end gone; dropping an engine reply");
        }
        delivered
    }
}

impl std::fmt::Debug for Replies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Replies")
    }
}
