//! Compaction under the context limit (issue 26): a session's request view is kept
//! within its model's context window, while `transcript.jsonl` keeps every message.
//!
//! Owns, one file each: the limit and threshold of a session (`limit`), token
//! estimates and the measured size of a view (`estimate`), the compacted view and its
//! [`Record`] (`view`), the decision — stub old tool results, else summarise the
//! oldest turns (`plan`), the summary model calls (`summary`), and the
//! `context:compaction` event as the record reused on resume (`record`), and the cap
//! on a sub-session's answer to its parent (`answer`); what `/compact` did
//! ([`Compacted`]).
//!
//! Does not own: the live session or the turn loop. `engine::request_view` is the one
//! caller: it reads the live session, runs a plan (with the summary call) and
//! publishes the events. This folder uses nothing of `live`, so `live` can hold a
//! [`ContextState`] without a cycle.

pub mod answer;
pub mod estimate;
pub mod limit;
pub mod plan;
pub mod record;
pub mod summary;
pub mod view;

pub use limit::Settings;
pub use plan::Plan;
pub use view::Record;

use crate::provider::ProviderError;

/// Why a request could not be fitted to the context limit.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// The newest turn alone does not fit (issue 26: "a single turn too large for the
    /// window fails with a clear error, not a loop").
    #[error(
        "the newest turn alone needs about {tokens} tokens, more than this session's context \
         limit of {max_tokens}; shorten the message or tool output, or raise context.max_tokens \
         if the model's window is larger"
    )]
    TurnTooLarge {
        /// Estimated tokens of the newest turn with the summary and system prompt.
        tokens: u64,
        /// The session's limit.
        max_tokens: u64,
    },
    /// The summary call failed.
    #[error("compacting the context failed: the summary call failed: {0}")]
    Summary(#[source] Box<ProviderError>),
    /// The summary call answered no text.
    #[error("compacting the context failed: the summary call returned no text")]
    EmptySummary,
    /// The turn was cancelled during the summary call.
    #[error("compaction cancelled")]
    Cancelled,
    /// `/compact` on a session that cannot be loaded or has no usable provider.
    #[error("cannot compact: {0}")]
    Session(#[source] Box<crate::engine::EngineError>),
}

/// A live session's context bookkeeping: its compaction record (loaded from
/// `events.jsonl` on first use) and the latest context use.
#[derive(Debug, Clone, Default)]
pub struct ContextState {
    /// Whether `record` was read from the session's events yet.
    pub loaded: bool,
    /// The session's compaction, if it has one.
    pub record: Record,
    /// A `/compact` waiting for the next request: its focus.
    pub pending_manual: Option<String>,
    /// The provider refused the last request as too long (its count is above our
    /// estimate): the next request compacts first.
    pub force_overflow: bool,
    /// The transcript length at the last such retry: one retry per length, so a
    /// request that stays too long fails instead of looping.
    pub overflow_at: Option<usize>,
    /// Whether the context settings' warnings (bad `context:` values) were logged
    /// for this session: once, not at every model call.
    pub warned: bool,
}

/// What `/compact` did (`Runtime::compact`; defined here so `request_view` can
/// make it without depending on `runtime`).
#[derive(Debug, Clone, PartialEq)]
pub enum Compacted {
    /// The session compacted now (its `context:compaction` event was published too).
    Now(Box<crate::session::protocol::ContextCompactionEvent>),
    /// A turn is running: the compaction happens before its next model call.
    BeforeNextCall,
    /// Nothing to compact (one turn, its tool results already short).
    Nothing,
    /// The compacted request came out no smaller than the one it would replace (a
    /// summary longer than the turns it covers): nothing was recorded, the context
    /// stays as it was. Token counts are estimates of the whole request.
    NotSmaller {
        /// The request's tokens now.
        tokens: u64,
        /// What the compacted request would have taken.
        compacted: u64,
    },
}
