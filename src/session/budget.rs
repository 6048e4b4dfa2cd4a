//! The budget records `metadata.json` carries ([`BudgetState`] under `budget`), as
//! data: their shapes live here, below `config`, so [`crate::session::Metadata`] can
//! name them.
//!
//! Owns: the types [`Budget`], [`Spent`] and [`BudgetState`] and their JSON form. Does
//! not own: parsing a `budget:` value, the tighten-only rule or deciding when a
//! session is over budget (`config::budget`, which implements those on these types).

use serde::{Deserialize, Serialize};

/// A spending limit: tokens (input + output) and/or cost in USD. A field that is
/// `None` is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Tokens (input + output) the session may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Cost in USD the session may spend (counted from priced calls only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// Tokens (input + output) and cost in USD (`None` while no call was priced).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// Tokens (input + output).
    #[serde(default)]
    pub tokens: u64,
    /// Cost in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// A session's budget record (metadata `budget`):
/// `{tokens?, cost_usd?, since: {tokens, cost_usd?}}` — the budget and the spend when
/// the current grant started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetState {
    /// The budget of each grant.
    #[serde(flatten)]
    pub budget: Budget,
    /// The session's spend when the current grant started.
    #[serde(default)]
    pub since: Spent,
}
