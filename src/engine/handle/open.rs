//! Opening a session for a front end, tail-first (SPEC §16), with one parsed copy of
//! its transcript per process (issue #16 item 3).
//!
//! Owns: [`open`] — resolving the id, laying out a session live in this process from
//! the engine's own transcript (`Runtime::transcript_snapshot`: the file is not read),
//! reading a stored one from its transcript's end (`SessionStore::load_tail_covering`)
//! and then its earlier part, parking the whole parse in the engine
//! (`Runtime::park_transcript`) so a turn over it parses nothing again, and starting
//! to follow a stored session for what another process appends (`follow`). Does not
//! own: laying messages out as cells (the front end), the store's reading.

use std::sync::Arc;

use super::follow::{FollowSpec, TranscriptFollow};
use super::guarded;
use super::reply::{EarlierMessages, EngineReply, Replies};
use crate::engine::{EngineError, Runtime};
use crate::session::ids::SessionId;
use crate::session::store::{ParsedTranscript, TailLoad};
use crate::session::{LoadedSession, Message, Metadata};

/// Messages read first when a session opens: the newest screenful with a wide margin
/// (a 45-row pane shows at most 45 of them).
pub const TAIL_MESSAGES: usize = 256;

/// Opens `requested` (an id or unambiguous prefix) tail-first: replies
/// [`EngineReply::Opened`] with its newest messages (all of them when the transcript
/// is short), then, when there is more, [`EngineReply::Earlier`] with the rest; or
/// [`EngineReply::OpenFailed`]. Blocks (store reads): call it on a blocking thread.
///
/// A stored session is followed afterwards (its appended messages and metadata
/// changes come as [`EngineReply::Followed`] / [`EngineReply::StoredSessionChanged`]
/// on `replies`); opening a live one stops any following.
pub(crate) fn open(
    runtime: &Arc<Runtime>,
    follow: &TranscriptFollow,
    requested: String,
    replies: &Replies,
) {
    let store = runtime.store();
    let opened = guarded("loading a session", || {
        let id = store.resolve(&requested)?;
        match runtime.transcript_snapshot(&id) {
            Some(live) => {
                let (metadata, warnings) = store.load_metadata(&id)?;
                Ok(Opened::Live(id, live, Box::new(metadata), warnings))
            }
            None => Ok(Opened::Stored(
                id.clone(),
                Box::new(store.load_tail_covering(&id, TAIL_MESSAGES)?),
            )),
        }
    });
    if let Ok(Opened::Stored(id, _) | Opened::Live(id, ..)) = &opened
        && let Ok(dir) = store.session_dir(id)
    {
        let compactions = crate::engine::compact::record::all(&dir);
        if !compactions.is_empty() {
            replies.send(EngineReply::Compactions {
                requested: requested.clone(),
                compactions,
            });
        }
    }
    match opened {
        Ok(Opened::Stored(id, load)) => {
            // What another process appends from here on is shown as it comes.
            let spec = store.session_dir(&id).ok().map(|dir| FollowSpec {
                session_id: id.clone(),
                parent_id: load.session.metadata.parent_id.clone(),
                dir,
                from: load.covers,
                is_live: {
                    let runtime = Arc::clone(runtime);
                    Arc::new(move |id: &str| runtime.transcript_snapshot(id).is_some())
                },
                store: Some(store.clone()),
            });
            open_stored(runtime, requested, id, *load, replies);
            match spec {
                Some(spec) => follow.follow(spec, replies.clone()),
                None => follow.stop(),
            }
        }
        Ok(Opened::Live(id, live, metadata, warnings)) => {
            follow.stop();
            open_live(requested, id, live, *metadata, warnings, replies);
        }
        Err(error) => {
            replies.send(EngineReply::OpenFailed { requested, error });
        }
    }
}

/// A session being opened: live in this process (its transcript shared with the
/// engine, the stored metadata and its warnings), or stored (read tail-first).
enum Opened {
    Live(SessionId, Arc<Vec<Message>>, Box<Metadata>, Vec<String>),
    Stored(SessionId, Box<TailLoad>),
}

/// [`open`] of a stored session: the tail, then the earlier part read; the whole
/// parse is parked in the engine before the earlier part is replied (the reply's
/// messages are clones sharing every text with the parked ones).
fn open_stored(
    runtime: &Runtime,
    requested: String,
    id: SessionId,
    load: TailLoad,
    replies: &Replies,
) {
    let TailLoad {
        session,
        earlier,
        covers,
        transcript_warnings,
    } = load;
    let Some(part) = earlier else {
        let parsed = ParsedTranscript {
            messages: session.transcript.clone(),
            warnings: transcript_warnings,
            covers,
        };
        runtime.park_transcript(&id, parsed);
        replies.send(newest(requested, session, None));
        return;
    };
    let end = part.end();
    let tail = session.transcript.clone();
    replies.send(newest(requested, session, Some(end)));
    let result = guarded("loading earlier messages", || {
        let read = part.read()?;
        let shown = EarlierMessages::new(
            Arc::new(read.messages.clone()),
            read.messages.len(),
            read.warnings.clone(),
        );
        let mut messages = read.messages;
        // The read list is already trimmed: exactly the room for the tail.
        messages.reserve_exact(tail.len());
        messages.extend(tail);
        let parsed = ParsedTranscript {
            messages,
            warnings: read.warnings,
            covers,
        };
        runtime.park_transcript(&id, parsed);
        Ok::<_, EngineError>(shown)
    });
    replies.send(EngineReply::Earlier {
        session_id: id,
        end,
        result,
    });
}

/// [`open`] of a session live in this process: its newest messages, then the rest,
/// all from the engine's transcript `live` (the earlier part's "end" is then its
/// message count). The front end drops the snapshot once laid out (while it lives,
/// the session's next append copies the message list).
fn open_live(
    requested: String,
    id: SessionId,
    live: Arc<Vec<Message>>,
    metadata: Metadata,
    warnings: Vec<String>,
    replies: &Replies,
) {
    let split = live.len().saturating_sub(TAIL_MESSAGES);
    let session = LoadedSession {
        metadata,
        transcript: live.get(split..).unwrap_or_default().to_vec(),
        warnings,
    };
    if split == 0 {
        replies.send(newest(requested, session, None));
        return;
    }
    let end = split as u64;
    replies.send(newest(requested, session, Some(end)));
    replies.send(EngineReply::Earlier {
        session_id: id,
        end,
        result: Ok(EarlierMessages::new(live, split, Vec::new())),
    });
}

/// The reply with a session's newest messages (`earlier`: where the rest ends).
fn newest(requested: String, session: LoadedSession, earlier: Option<u64>) -> EngineReply {
    EngineReply::Opened {
        requested,
        session: Box::new(session),
        earlier,
    }
}
