//! The price table of `config.yaml`: what a model call costs, where the user says so.
//!
//! Shape (USD per **million** tokens; `cache_read` and `cache_write` default to
//! `input` when left out):
//!
//! ```yaml
//! prices:
//!   anthropic/claude-sonnet-4*: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}
//!   anthropic/claude-opus-4*:   {input: 15, output: 75, cache_read: 1.5, cache_write: 18.75}
//!   openai/gpt-4o*:             {input: 2.5, output: 10, cache_read: 1.25}
//!   openai/gpt-4o-mini*:        {input: 0.15, output: 0.6, cache_read: 0.075}
//!   ollama/*:                   {input: 0, output: 0}
//!   "*/qwen*":                  {input: 0, output: 0}
//! ```
//!
//! A key is `<provider>/<model-glob>`: the provider part is the provider's id in the
//! mount plan (`openai`, `anthropic`, `ollama`, an entry's `id`) or its module without
//! `provider-`; the model part is matched against the model the API reported for the
//! call, else the requested one. Both parts take `*`, `?` and `[…]` globs (the same
//! fnmatch rules as `provider_preferences`) and match case-insensitively; a key without
//! `/` is a model glob for any provider. When several keys match, the most specific
//! wins: the most literal (non-wildcard) characters, then the fewest `*`, then the
//! first in the file. There is no built-in table: a model without a matching key has
//! no cost (tokens are still counted).
//!
//! Owns: parsing that table (bad entries are skipped with a warning, never an error),
//! lookup, and the cost of one call's [`Usage`]. Does not own: where costs are recorded
//! (`engine::turn`) or shown (`tui`).

use serde_json::Value;

use super::glob::glob_matches;
use crate::config::ArborConfig;
use crate::session::Usage;

/// The config key of the table.
pub const PRICES_KEY: &str = "prices";

/// Prices of one model, in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens (reasoning included, as the APIs count them).
    pub output: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read: f64,
    /// Input tokens written to the prompt cache.
    pub cache_write: f64,
}

/// How an API's `input_tokens` relate to its cache counts: each provider module's is
/// in its `config::modules` row (`CacheAccounting::for_module`).
pub use crate::config::modules::CacheAccounting;

impl Price {
    /// USD for `usage`: uncached input × `input` + cache reads × `cache_read` + cache
    /// writes × `cache_write` + output × `output`, all per million tokens.
    pub fn cost(&self, usage: &Usage, accounting: CacheAccounting) -> f64 {
        let cached = usage.cache_read_tokens + usage.cache_creation_tokens;
        let uncached = match accounting {
            CacheAccounting::IncludedInInput => usage.input_tokens.saturating_sub(cached),
            CacheAccounting::SeparateFromInput => usage.input_tokens,
        };
        (uncached as f64 * self.input
            + usage.cache_read_tokens as f64 * self.cache_read
            + usage.cache_creation_tokens as f64 * self.cache_write
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// One entry of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceEntry {
    /// The key as written (`openai/gpt-4o*`).
    pub key: String,
    provider: String,
    model: String,
    pub price: Price,
}

impl PriceEntry {
    /// (literal characters, −stars): larger is more specific.
    fn specificity(&self) -> (usize, isize) {
        let literal = |p: &str| {
            let mut n = 0;
            let mut in_class = false;
            for c in p.chars() {
                match c {
                    '[' if !in_class => in_class = true,
                    ']' if in_class => in_class = false,
                    '*' | '?' => {}
                    _ if !in_class => n += 1,
                    _ => {}
                }
            }
            n
        };
        let stars = self.provider.matches('*').count() + self.model.matches('*').count();
        (
            literal(&self.provider) + literal(&self.model),
            -isize::try_from(stars).unwrap_or(isize::MAX),
        )
    }
}

/// The parsed `prices:` table, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    entries: Vec<PriceEntry>,
}

impl PriceTable {
    /// The table of `config.extra["prices"]` plus one warning per skipped entry.
    pub fn from_config(config: &ArborConfig) -> (Self, Vec<String>) {
        match config.extra.get(PRICES_KEY) {
            Some(v) => Self::from_value(v),
            None => (Self::default(), Vec::new()),
        }
    }

    /// Parses a `prices` mapping. Entries whose value is not a mapping, lacks a
    /// numeric `input` or `output`, or has a negative or non-numeric price are skipped
    /// with a warning naming the key; a non-mapping table gives an empty one.
    pub fn from_value(value: &Value) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let Some(map) = value.as_object() else {
            if !value.is_null() {
                warnings.push(format!(
                    "`{PRICES_KEY}` must map \"provider/model\" to {{input, output, cache_read, cache_write}}; ignored"
                ));
            }
            return (Self::default(), warnings);
        };
        let mut entries = Vec::new();
        for (key, v) in map {
            match parse_price(v) {
                Ok(price) => {
                    let (provider, model) = match key.trim().split_once('/') {
                        Some((p, m)) => (p.trim().to_string(), m.trim().to_string()),
                        None => ("*".to_string(), key.trim().to_string()),
                    };
                    entries.push(PriceEntry {
                        key: key.clone(),
                        provider: if provider.is_empty() {
                            "*".into()
                        } else {
                            provider
                        },
                        model: if model.is_empty() { "*".into() } else { model },
                        price,
                    });
                }
                Err(why) => warnings.push(format!("{PRICES_KEY}.{key}: {why}; entry ignored")),
            }
        }
        (Self { entries }, warnings)
    }

    /// Whether the table has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The most specific entry matching `model` of a provider known by any of
    /// `provider_names` (its id, its module without `provider-`).
    pub fn lookup(&self, provider_names: &[&str], model: &str) -> Option<&PriceEntry> {
        let mut best: Option<&PriceEntry> = None;
        for entry in &self.entries {
            let provider_ok = provider_names
                .iter()
                .any(|name| glob_matches(&entry.provider, name));
            if !provider_ok || !glob_matches(&entry.model, model) {
                continue;
            }
            if best.is_none_or(|b| entry.specificity() > b.specificity()) {
                best = Some(entry);
            }
        }
        best
    }

    /// The price of a call to `model` (tried in order: the reported model, then the
    /// requested one) on a provider with `id` and `module`.
    pub fn price_for(&self, id: &str, module: &str, models: &[&str]) -> Option<Price> {
        let short = module.strip_prefix("provider-").unwrap_or(module);
        let names = [id, short];
        models
            .iter()
            .filter(|m| !m.is_empty())
            .find_map(|m| self.lookup(&names, m))
            .map(|e| e.price)
    }
}

/// Why one `prices` entry is skipped (the warning names the entry's key before it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum PriceError {
    /// The entry is not a mapping.
    #[error("expected {{input, output, cache_read?, cache_write?}} in USD per million tokens")]
    NotAMap,
    /// A price field is not a number ≥ 0 (`shown`: `""`, or `, not <value>`).
    #[error("`{field}` must be a number ≥ 0{shown}")]
    NotAPrice {
        /// `input`, `output`, `cache_read` or `cache_write`.
        field: String,
        /// The bad value as shown after the rule (empty for a number out of range).
        shown: String,
    },
    /// `input` or `output` is absent.
    #[error("`{0}` is missing")]
    Missing(&'static str),
}

fn parse_price(v: &Value) -> Result<Price, PriceError> {
    let Some(map) = v.as_object() else {
        return Err(PriceError::NotAMap);
    };
    let field = |name: &str| -> Result<Option<f64>, PriceError> {
        let bad = |shown: String| PriceError::NotAPrice {
            field: name.to_string(),
            shown,
        };
        match map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                _ => Err(bad(String::new())),
            },
            // YAML may carry a quoted number.
            Some(Value::String(s)) => match s.trim().trim_start_matches('$').parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                _ => Err(bad(format!(", not {s:?}"))),
            },
            Some(other) => Err(bad(format!(", not {other}"))),
        }
    };
    let input = field("input")?.ok_or(PriceError::Missing("input"))?;
    let output = field("output")?.ok_or(PriceError::Missing("output"))?;
    Ok(Price {
        input,
        output,
        cache_read: field("cache_read")?.unwrap_or(input),
        cache_write: field("cache_write")?.unwrap_or(input),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(v: Value) -> PriceTable {
        let (t, w) = PriceTable::from_value(&v);
        assert!(w.is_empty(), "{w:?}");
        t
    }

    #[test]
    fn most_specific_match_wins_case_insensitively() {
        let t = table(json!({
            "*": {"input": 9, "output": 9},
            "openai/gpt-4o*": {"input": 2.5, "output": 10},
            "openai/gpt-4o-mini*": {"input": 0.15, "output": 0.6},
            "openai/gpt-4o": {"input": 3, "output": 12},
        }));
        let p = |model: &str| t.price_for("openai", "provider-openai", &[model]).unwrap();
        assert_eq!(p("GPT-4o-2024-08-06").input, 2.5);
        assert_eq!(p("gpt-4o-mini-2024-07-18").input, 0.15);
        assert_eq!(p("gpt-4o").input, 3.0, "exact beats the glob");
        assert_eq!(
            p("llama3").input,
            9.0,
            "a bare glob applies to any provider"
        );
        // The module's short name matches too.
        assert_eq!(
            t.price_for("my-azure", "provider-openai", &["gpt-4o-x"])
                .unwrap()
                .input,
            2.5
        );
        let only = table(json!({"anthropic/claude-*": {"input": 3, "output": 15}}));
        assert_eq!(
            only.price_for("openai", "provider-openai", &["claude-x"]),
            None
        );
        // The reported model is tried first, then the requested one.
        assert!(
            only.price_for("anthropic", "provider-anthropic", &["", "claude-y"])
                .is_some()
        );
    }

    #[test]
    fn cost_per_million_with_both_cache_conventions() {
        let price = Price {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 400_000,
            cache_creation_tokens: 100_000,
        };
        let sep = price.cost(&usage, CacheAccounting::SeparateFromInput);
        assert!((sep - (3.0 + 1.5 + 0.12 + 0.375)).abs() < 1e-9, "{sep}");
        let incl = price.cost(&usage, CacheAccounting::IncludedInInput);
        assert!((incl - (1.5 + 1.5 + 0.12 + 0.375)).abs() < 1e-9, "{incl}");
        assert_eq!(
            CacheAccounting::for_module("provider-anthropic"),
            CacheAccounting::SeparateFromInput
        );
    }

    #[test]
    fn bad_entries_are_skipped_with_warnings() {
        let (t, w) = PriceTable::from_value(&json!({
            "a/x": {"input": -1, "output": 1},
            "a/y": {"output": 1},
            "a/z": "cheap",
            "a/ok": {"input": "1.5", "output": 2},
        }));
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("a/x"));
        let ok = t.price_for("a", "provider-a", &["ok"]).unwrap();
        assert_eq!((ok.input, ok.cache_read, ok.cache_write), (1.5, 1.5, 1.5));
        let (t, w) = PriceTable::from_value(&json!([1, 2]));
        assert!(t.is_empty() && w.len() == 1);
        assert!(
            PriceTable::from_config(&ArborConfig::default())
                .0
                .is_empty()
        );
    }
}
