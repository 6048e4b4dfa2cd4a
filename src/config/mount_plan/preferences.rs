//! `provider_preferences` entries (`{provider, model, config?}`), typed: the shape of
//! a preference and of a routing-matrix candidate ([`ProviderPreference`]) and reading
//! a list of them ([`parse_preferences`]). They live here, below `routing`, so a mount
//! plan can hold its own typed.
//!
//! Owns: the shape and its checks. Does not own: resolving a preference against the
//! mounted providers and model lists, or applying one to a plan (`routing`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One provider preference or routing-matrix candidate: `provider` (a mount name, an
/// `id`, a module or its short name), `model` (exact id or glob) and optional `config`
/// (model parameters such as `reasoning_effort`; `{}` when absent). After resolution
/// `provider` is the chosen mount name and `model` an exact id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderPreference {
    /// A mount name, an `id`, a module or its short name.
    pub provider: String,
    /// An exact model id or a glob.
    pub model: String,
    /// Model parameters (`{}` when absent).
    #[serde(default = "empty_object", skip_serializing_if = "is_empty_config")]
    pub config: Value,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

fn is_empty_config(v: &Value) -> bool {
    v.is_null() || v.as_object().is_some_and(Map::is_empty)
}

/// A malformed preference list or entry; the text names the problem
/// (`provider preference requires 'model' key`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PreferenceError(pub String);

impl ProviderPreference {
    /// A preference from its parts (`config` `{}`).
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            model: model.into(),
            config: empty_object(),
        }
    }

    /// Reads `{provider, model, config?}`. Errors: not a mapping; `provider` or `model`
    /// missing or not a non-empty string ("requires 'provider' key"); `config` not a
    /// mapping.
    pub fn from_value(v: &Value) -> Result<Self, PreferenceError> {
        let Some(map) = v.as_object() else {
            return Err(PreferenceError(format!(
                "provider preference must be a mapping like {{provider, model}}, got {v}"
            )));
        };
        let text = |key: &str| {
            map.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| PreferenceError(format!("provider preference requires '{key}' key")))
        };
        let provider = text("provider")?;
        let model = text("model")?;
        let config = match map.get("config") {
            None | Some(Value::Null) => empty_object(),
            Some(c @ Value::Object(_)) => c.clone(),
            Some(other) => {
                return Err(PreferenceError(format!(
                    "provider preference 'config' must be a mapping, got {other}"
                )));
            }
        };
        Ok(Self {
            provider,
            model,
            config,
        })
    }

    /// `{provider, model}` plus `config` only when it is non-empty.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A `provider_preferences` value: null → empty; a list of preferences (errors name the
/// index: `provider_preferences[1]: provider preference requires 'model' key`); a
/// single mapping is accepted as a one-item list.
pub fn parse_preferences(v: &Value) -> Result<Vec<ProviderPreference>, PreferenceError> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Object(_) => Ok(vec![ProviderPreference::from_value(v)?]),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                ProviderPreference::from_value(item)
                    .map_err(|e| PreferenceError(format!("provider_preferences[{i}]: {e}")))
            })
            .collect(),
        other => Err(PreferenceError(format!(
            "provider_preferences must be a list of {{provider, model}}, got {other}"
        ))),
    }
}
