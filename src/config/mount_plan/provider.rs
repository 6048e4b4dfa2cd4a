//! What arbor reads of a provider entry's `config` ([`ProviderConfig`]), typed. The
//! entry keeps its `config` as read — Amplifier's provider modules read keys arbor
//! does not, and a stored plan must round-trip — so this is a view: each key arbor
//! reads, `None` when absent or of another type.
//!
//! Owns: the keys' names and shapes. Does not own: what a provider does with them
//! (`routing::setup` attaches keys and endpoints, `engine::slots` limits requests),
//! the `endpoint_from` mark (`config::endpoint`).

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::ModuleEntry;

/// The keys of a provider entry's `config` that arbor reads.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default)]
pub struct ProviderConfig {
    /// `api_key` (`[REDACTED]` in a stored plan: the real one comes from the config
    /// file or the environment).
    #[serde(deserialize_with = "text")]
    pub api_key: Option<String>,
    /// `base_url`: the endpoint.
    #[serde(deserialize_with = "text")]
    pub base_url: Option<String>,
    /// `default_model`: the model requests name (a routed session's pinned one).
    #[serde(deserialize_with = "text")]
    pub default_model: Option<String>,
    /// `model`: read when `default_model` is absent.
    #[serde(deserialize_with = "text")]
    pub model: Option<String>,
    /// `headers: {name: value}` as pairs (values that are not strings skipped).
    #[serde(deserialize_with = "header_pairs")]
    pub headers: Option<Vec<(String, String)>>,
    /// `priority`: lower wins among instances of one module (missing = 0).
    #[serde(deserialize_with = "number")]
    pub priority: Option<f64>,
    /// `max_concurrent` as written (`engine::slots` checks it is a positive integer
    /// and logs it when not); `None` when absent or null.
    pub max_concurrent: Option<Value>,
}

impl ProviderConfig {
    /// The keys of `config` (a provider entry's `config`; anything but a map reads as
    /// none of them).
    pub fn of(config: &Value) -> Self {
        Self::deserialize(config).unwrap_or_default()
    }
}

impl ModuleEntry {
    /// This entry's `config` as a provider's (see [`ProviderConfig`]).
    pub fn provider_config(&self) -> ProviderConfig {
        ProviderConfig::of(&self.config)
    }
}

/// A string, `None` for anything else.
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// A number, `None` for anything else.
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(Value::deserialize(d)?.as_f64())
}

/// A map's string values as pairs, `None` for anything but a map.
fn header_pairs<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<(String, String)>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Object(map) => Some(
            map.into_iter()
                .filter_map(|(k, v)| match v {
                    Value::String(v) => Some((k, v)),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_keys_arbor_reads_and_nothing_else() {
        let config = ProviderConfig::of(&json!({
            "api_key": "[REDACTED]",
            "base_url": "http://127.0.0.1:8080/v1",
            "default_model": 7,
            "model": "m",
            "headers": {"X-A": "1", "X-B": 2},
            "priority": 2,
            "max_concurrent": "two",
            "temperature": 0.2,
        }));
        assert_eq!(
            config,
            ProviderConfig {
                api_key: Some("[REDACTED]".into()),
                base_url: Some("http://127.0.0.1:8080/v1".into()),
                default_model: None,
                model: Some("m".into()),
                headers: Some(vec![("X-A".into(), "1".into())]),
                priority: Some(2.0),
                max_concurrent: Some(json!("two")),
            }
        );
        assert_eq!(ProviderConfig::of(&Value::Null), ProviderConfig::default());
        assert_eq!(
            ProviderConfig::of(&json!({"max_concurrent": null, "headers": []})),
            ProviderConfig::default()
        );
    }
}
