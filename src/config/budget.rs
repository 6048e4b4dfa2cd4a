//! Budgets (issue 14, SPEC §13 "paused"): how much one session may spend before it
//! stops and waits for a person.
//!
//! Owns: [`Budget`] — `budget: {tokens: N, cost_usd: X}` as written in agent
//! frontmatter (an arbor extension, kept in the agent overlay) and in a `task` call's
//! `budget` — its parsing, the tighten-only rule between the two ([`Budget::tighten`]:
//! a call may give a child less, never more), and the session's budget record in
//! metadata `extra.budget` ([`BudgetState`]): the budget, and the spend at the moment
//! the current grant started. A session is over budget once the spend since that
//! moment reached the budget's tokens (input + output) or its cost (USD, counted only
//! from priced calls). Resuming a paused session grants one more budget of the same
//! size: the grant restarts at the spend of that moment ([`BudgetState::regrant`]).
//! Does not own: when the check runs (the engine's turn loop, before each model call)
//! or prices (`routing::prices`).

use serde_json::Value;

use crate::session::Metadata;
pub use crate::session::budget::{Budget, BudgetState, Spent};

/// The key of a session's [`BudgetState`] in `metadata.json` ([`Metadata::budget`]) and
/// of an agent's budget in its overlay.
pub const BUDGET_KEY: &str = "budget";

/// Why a `budget:` value is unusable; each text names the bad key and quotes the bad
/// value (JSON text), as agent validation and the task tool report it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// Not a map.
    #[error("'budget' must be a map like {{tokens: 20000, cost_usd: 0.5}}, got {0}")]
    NotAMap(String),
    /// `tokens` is not a positive integer.
    #[error("'budget.tokens' must be a positive integer, got {0}")]
    Tokens(String),
    /// `cost_usd` is not a positive finite number.
    #[error("'budget.cost_usd' must be a positive number, got {0}")]
    CostUsd(String),
    /// A key other than `tokens` and `cost_usd` (the key's name).
    #[error("unknown key 'budget.{0}' (a budget has tokens and cost_usd)")]
    UnknownKey(String),
    /// Neither key is set.
    #[error("'budget' needs tokens or cost_usd")]
    Empty,
}

impl Spent {
    /// What the session of `metadata` has spent over its whole life.
    pub fn of(metadata: &Metadata) -> Self {
        Self {
            tokens: metadata.usage.input_tokens + metadata.usage.output_tokens,
            cost_usd: metadata.usage.cost,
        }
    }
}

impl Budget {
    /// Parses `{tokens: N, cost_usd: X}` (`null` or absent → `None`). Errors name the
    /// bad key: tokens must be a positive integer, cost_usd a positive number, no
    /// other keys, at least one of the two.
    pub fn parse(value: Option<&Value>) -> Result<Option<Self>, BudgetError> {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let Some(map) = value.as_object() else {
            return Err(BudgetError::NotAMap(value.to_string()));
        };
        let mut budget = Budget::default();
        for (key, v) in map {
            match key.as_str() {
                "tokens" => {
                    budget.tokens = Some(
                        v.as_u64()
                            .filter(|n| *n > 0)
                            .ok_or_else(|| BudgetError::Tokens(v.to_string()))?,
                    );
                }
                "cost_usd" => {
                    budget.cost_usd = Some(
                        v.as_f64()
                            .filter(|x| *x > 0.0 && x.is_finite())
                            .ok_or_else(|| BudgetError::CostUsd(v.to_string()))?,
                    );
                }
                other => return Err(BudgetError::UnknownKey(other.to_string())),
            }
        }
        if budget.tokens.is_none() && budget.cost_usd.is_none() {
            return Err(BudgetError::Empty);
        }
        Ok(Some(budget))
    }

    /// The budget of an agent overlay (its top-level `budget`).
    pub fn of_overlay(overlay: &Value) -> Result<Option<Self>, BudgetError> {
        Self::parse(overlay.get(BUDGET_KEY))
    }

    /// The budget a child gets from its agent's budget and the calling model's: per
    /// field the smaller one (a call may only tighten the agent's budget; where the
    /// agent sets none, the call's applies).
    pub fn tighten(agent: Option<Self>, call: Option<Self>) -> Option<Self> {
        match (agent, call) {
            (None, call) => call,
            (agent, None) => agent,
            (Some(a), Some(c)) => Some(Self {
                tokens: min_some(a.tokens, c.tokens, |x, y| x.min(y)),
                cost_usd: min_some(a.cost_usd, c.cost_usd, f64::min),
            }),
        }
    }

    /// `{tokens: 10}`, `{tokens: 10, cost_usd: 0.5}`: as written in frontmatter.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.tokens {
            parts.push(format!("tokens: {t}"));
        }
        if let Some(c) = self.cost_usd {
            parts.push(format!("cost_usd: {c}"));
        }
        format!("{{{}}}", parts.join(", "))
    }
}

fn min_some<T: Copy>(a: Option<T>, b: Option<T>, min: impl Fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(min(x, y)),
        (x, y) => x.or(y),
    }
}

impl BudgetState {
    /// The record stored in `metadata`, if any (an unreadable one counts as none).
    pub fn of(metadata: &Metadata) -> Option<Self> {
        metadata.arbor.budget
    }

    /// Stores this record in `metadata`.
    pub fn store(&self, metadata: &mut Metadata) {
        metadata.arbor.budget = Some(*self);
    }

    /// The spend of the current grant: the session's spend minus [`Self::since`].
    pub fn spent(&self, metadata: &Metadata) -> Spent {
        let now = Spent::of(metadata);
        Spent {
            tokens: now.tokens.saturating_sub(self.since.tokens),
            cost_usd: match (now.cost_usd, self.since.cost_usd) {
                (Some(n), Some(s)) => Some((n - s).max(0.0)),
                (n, _) => n,
            },
        }
    }

    /// Whether the current grant is used up: its tokens or cost reached the budget.
    pub fn exhausted(&self, metadata: &Metadata) -> bool {
        let spent = self.spent(metadata);
        self.budget.tokens.is_some_and(|t| spent.tokens >= t)
            || matches!((self.budget.cost_usd, spent.cost_usd), (Some(b), Some(s)) if s >= b)
    }

    /// One more budget of the same size, starting from the session's spend now.
    pub fn regrant(&mut self, metadata: &Metadata) {
        self.since = Spent::of(metadata);
    }

    /// `35/10 tok`, `35/10 tok $0.02/$0.50`: the current grant's spend against the
    /// budget, as the tree and task results show it.
    pub fn progress(&self, metadata: &Metadata) -> String {
        let spent = self.spent(metadata);
        let mut parts = Vec::new();
        if let Some(t) = self.budget.tokens {
            parts.push(format!("{}/{t} tokens", spent.tokens));
        }
        if let Some(c) = self.budget.cost_usd {
            parts.push(format!("${:.4}/${c}", spent.cost_usd.unwrap_or(0.0)));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(input: u64, output: u64, cost: Option<f64>) -> Metadata {
        let mut m = Metadata::default();
        m.usage.input_tokens = input;
        m.usage.output_tokens = output;
        m.usage.cost = cost;
        m
    }

    #[test]
    fn parses_budgets_and_names_bad_keys() {
        assert_eq!(Budget::parse(None).unwrap(), None);
        assert_eq!(
            Budget::parse(Some(&json!({"tokens": 10}))).unwrap(),
            Some(Budget {
                tokens: Some(10),
                cost_usd: None
            })
        );
        assert_eq!(
            Budget::parse(Some(&json!({"cost_usd": 0.5})))
                .unwrap()
                .unwrap()
                .cost_usd,
            Some(0.5)
        );
        for (bad, says) in [
            (json!(3), "must be a map"),
            (json!({"tokens": -1}), "budget.tokens"),
            (json!({"tokens": 0}), "budget.tokens"),
            (json!({"cost_usd": "x"}), "budget.cost_usd"),
            (json!({"dollars": 1}), "budget.dollars"),
            (json!({}), "needs tokens or cost_usd"),
        ] {
            let e = Budget::parse(Some(&bad)).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_call_only_tightens_the_agents_budget() {
        let b = |t: Option<u64>, c: Option<f64>| {
            Some(Budget {
                tokens: t,
                cost_usd: c,
            })
        };
        assert_eq!(
            Budget::tighten(b(Some(100), None), b(Some(500), Some(1.0))),
            b(Some(100), Some(1.0))
        );
        assert_eq!(
            Budget::tighten(b(Some(100), Some(0.2)), b(Some(50), Some(0.9))),
            b(Some(50), Some(0.2))
        );
        assert_eq!(Budget::tighten(None, b(Some(5), None)), b(Some(5), None));
        assert_eq!(Budget::tighten(b(Some(5), None), None), b(Some(5), None));
    }

    #[test]
    fn a_grant_is_used_up_by_tokens_or_cost_and_regrant_adds_one_more() {
        let mut state = BudgetState {
            budget: Budget {
                tokens: Some(10),
                cost_usd: Some(0.5),
            },
            since: Spent::default(),
        };
        assert!(!state.exhausted(&meta(4, 5, Some(0.1))));
        assert!(state.exhausted(&meta(4, 6, None)));
        assert!(state.exhausted(&meta(1, 1, Some(0.5))));
        let used = meta(30, 5, Some(0.1));
        assert_eq!(state.progress(&used), "35/10 tokens, $0.1000/$0.5");
        state.regrant(&used);
        assert!(!state.exhausted(&used));
        assert!(!state.exhausted(&meta(30, 14, Some(0.2))));
        assert!(state.exhausted(&meta(30, 15, Some(0.2))));
        let mut m = Metadata::default();
        state.store(&mut m);
        assert_eq!(BudgetState::of(&m), Some(state));
        // On disk under `budget`, the same JSON as when it lived in `extra`.
        let written = serde_json::to_value(&m).unwrap();
        assert_eq!(
            written[BUDGET_KEY],
            json!({"tokens": 10, "cost_usd": 0.5, "since": {"tokens": 35, "cost_usd": 0.1}})
        );
        assert!(m.extra.is_empty());
        let back: Metadata = serde_json::from_value(written).unwrap();
        assert_eq!(back.arbor.budget, Some(state));
        // A value other tools wrote in another form reads as no budget.
        let odd: Metadata =
            serde_json::from_value(json!({"session_id": "s", "budget": "lots"})).unwrap();
        assert_eq!(odd.arbor.budget, None);
    }
}
