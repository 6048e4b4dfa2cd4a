//! One parsed copy of a transcript per process (issue #16 item 3): a viewer hands the
//! transcript it parsed to the engine ([`Runtime::park_transcript`]) so resuming the
//! session for a turn parses nothing again, and a viewer opening a session that is
//! live here lays it out from the engine's own copy
//! ([`Runtime::transcript_snapshot`]). Does not own: the length check that decides
//! whether a parked transcript is still the file's (`session::store`), or resuming
//! (`resume`).

use std::sync::Arc;

use super::Runtime;
use crate::engine::live::lock;
use crate::session::Message;
use crate::session::store::ParsedTranscript;

/// A transcript a viewer parsed, waiting for its session to be resumed.
pub(super) struct Parked {
    pub id: String,
    pub transcript: ParsedTranscript,
}

impl Runtime {
    /// Hands over the whole stored transcript of session `id` as a viewer parsed it
    /// (e.g. the TUI, once its tail-first open has read the earlier part: every
    /// message and the transcript's warnings, as `SessionStore::load` gives them,
    /// and the file length read, `TailLoad::covers`). When `id` is next resumed here,
    /// it takes these messages instead of parsing `transcript.jsonl`, provided the
    /// file's length is still `covers`; otherwise it parses the file as usual, so
    /// nothing is lost or mixed. The metadata is read from disk either way.
    ///
    /// At most one transcript is parked: parking another session's drops the one
    /// before. A session already live here ignores it (the engine has its copy).
    pub fn park_transcript(&self, id: &str, transcript: ParsedTranscript) {
        let live = lock(&self.live);
        let mut parked = lock(&self.parked);
        *parked = None;
        if !live.contains_key(id) {
            *parked = Some(Parked {
                id: id.to_string(),
                transcript,
            });
        }
    }

    /// The id of the session whose transcript is parked, if any (taken when that
    /// session is resumed).
    pub fn parked_transcript(&self) -> Option<String> {
        lock(&self.parked).as_ref().map(|p| p.id.clone())
    }

    /// The in-memory transcript of session `id` when it is live in this process
    /// (created or resumed here), shared: no message is copied and every text is the
    /// engine's own allocation. `None` when it is not live.
    ///
    /// Lay it out and drop it: the session's next append copies the message list
    /// (not the texts: `Text` clones share them) while a snapshot is still alive.
    pub fn transcript_snapshot(&self, id: &str) -> Option<Arc<Vec<Message>>> {
        Some(self.live(id)?.transcript_snapshot())
    }

    /// Takes the parked transcript when it is `id`'s (and leaves another's parked).
    pub(super) fn take_parked(&self, id: &str) -> Option<ParsedTranscript> {
        let mut parked = lock(&self.parked);
        if parked.as_ref().is_some_and(|p| p.id == id) {
            return parked.take().map(|p| p.transcript);
        }
        None
    }
}
