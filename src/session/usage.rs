//! Token counts of model calls: the value type providers report and sessions record.
//!
//! Owns: [`Usage`] (input, output and prompt-cache token counts) and adding them up.
//! Lives in `session` because `metadata.json` stores it and every layer above reads it;
//! the wire clients that decode it from API responses are in `provider`. Does not own:
//! what a call costs (`routing::prices`).

use serde::{Deserialize, Serialize};

/// Token counts of one model call (both APIs; cache fields 0 when not reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_creation_tokens: u64,
}

impl Usage {
    /// Adds `other` into `self` field by field.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_creation_tokens += other.cache_creation_tokens;
    }

    /// input + output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}
