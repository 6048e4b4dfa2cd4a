//! How full a session's context is, as the TUI keeps it (issue 26 item 4).
//!
//! Owns: [`ContextMeter`] — tokens of the latest request view, the limit and the
//! compaction threshold — updated from `metadata.json` `context` and the
//! `context:usage` / `context:compaction` events. Does not own: drawing it
//! (`views::context`) or deciding anything about compaction (`engine::compact`).

use crate::config::context::DEFAULT_COMPACT_THRESHOLD;
use crate::engine::compact::Compacted;
use crate::session::metadata::ContextUse;
use crate::session::protocol::{ContextCompactionEvent, ContextUsageEvent};

/// One session's context use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextMeter {
    /// Tokens of the latest request view.
    pub tokens: u64,
    /// The session's context limit.
    pub max_tokens: u64,
    /// The share of the limit at which the session compacts (0.0–1.0).
    pub threshold: f64,
}

impl ContextMeter {
    /// The meter of stored metadata (the threshold is not stored: the default).
    pub fn from_stored(context: &ContextUse) -> Self {
        Self {
            tokens: context.tokens,
            max_tokens: context.max_tokens,
            threshold: DEFAULT_COMPACT_THRESHOLD,
        }
    }

    /// The meter a `context:usage` event reports.
    pub fn from_usage(usage: &ContextUsageEvent) -> Self {
        Self {
            tokens: usage.tokens,
            max_tokens: usage.max_tokens,
            threshold: usage.compact_threshold,
        }
    }

    /// `meter` after a compaction: the view's tokens are the compaction's `after`.
    pub fn compacted(meter: Option<Self>, event: &ContextCompactionEvent) -> Self {
        Self {
            tokens: event.after_tokens,
            max_tokens: event.budget,
            threshold: meter.map_or(DEFAULT_COMPACT_THRESHOLD, |m| m.threshold),
        }
    }

    /// Used share of the limit (0.0 when the limit is unknown).
    pub fn share(&self) -> f64 {
        if self.max_tokens == 0 {
            0.0
        } else {
            self.tokens as f64 / self.max_tokens as f64
        }
    }

    /// Whether the use has reached the compaction threshold (shown amber).
    pub fn at_threshold(&self) -> bool {
        self.max_tokens > 0 && self.share() >= self.threshold
    }
}

/// The status-bar note for what `/compact` did.
pub fn compacted_note(done: &Compacted) -> String {
    match done {
        Compacted::Now(event) => event.note(),
        Compacted::BeforeNextCall => "the context is compacted before the next model call".into(),
        Compacted::Nothing => "nothing to compact yet: one turn, already short".into(),
        Compacted::NotSmaller { tokens, compacted } => format!(
            "nothing saved by compacting: compacted it would take ~{} tokens, it takes ~{} now; \
             kept as it was",
            crate::tui::clock::format_tokens(*compacted),
            crate::tui::clock::format_tokens(*tokens)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amber_from_the_threshold_on() {
        let mut m = ContextMeter {
            tokens: 3100,
            max_tokens: 4000,
            threshold: 0.8,
        };
        assert!(!m.at_threshold());
        m.tokens = 3200;
        assert!(m.at_threshold());
        m.max_tokens = 0;
        assert!(!m.at_threshold());
    }

    #[test]
    fn a_compaction_that_saved_nothing_says_so() {
        let note = compacted_note(&Compacted::NotSmaller {
            tokens: 1200,
            compacted: 5400,
        });
        assert!(note.starts_with("nothing saved by compacting"), "{note}");
        assert!(note.contains("~5.4k") && note.contains("~1.2k"), "{note}");
    }
}
