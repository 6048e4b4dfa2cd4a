//! The `agents` value of a mount plan: which agents a session may delegate to, in
//! each form a plan holds it (SPEC §5), typed and lossless — a plan writes back as it
//! was read.
//!
//! Owns: [`AgentAccess`] and its JSON form. Does not own: narrowing it for a child
//! (`config::merge::filter_agents`, which works on a plan's JSON as Amplifier's
//! `merge_configs` does), the agents it then allows (`tool::task::allowed_agents`),
//! writing Amplifier's map into a stored plan (`engine::stored_plan`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// `agents`: `all` | `none` | `[names]` | a map (Amplifier's roster `{include: […]}`,
/// or agent name → agent config) | anything else, kept as read.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentAccess {
    /// `all`: every agent of the live registry.
    All,
    /// `none`: no agent.
    Nobody,
    /// `[names]` (`ns:name` matches a bundle agent); items that are not names are
    /// kept as read and match nothing.
    Names(Vec<AgentName>),
    /// A map: Amplifier's roster (`{include: [names], …}`) or its map of agent
    /// configs (which allows every agent of the live registry).
    Map(Map<String, Value>),
    /// Any other value (another string, `null`, a number): allows every agent.
    Other(Value),
}

/// One item of an `agents` list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentName {
    /// An agent name (`explorer`, `foundation:explorer`).
    Name(String),
    /// Anything else, kept as read.
    Other(Value),
}

impl AgentAccess {
    /// Reads the value (never fails: a form arbor does not know is [`Self::Other`]).
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::String(s) if s == "all" => Self::All,
            Value::String(s) if s == "none" => Self::Nobody,
            Value::Array(items) => Self::Names(
                items
                    .into_iter()
                    .map(|item| match item {
                        Value::String(name) => AgentName::Name(name),
                        other => AgentName::Other(other),
                    })
                    .collect(),
            ),
            Value::Object(map) => Self::Map(map),
            other => Self::Other(other),
        }
    }

    /// The value as JSON, as read.
    pub fn to_value(&self) -> Value {
        match self {
            Self::All => Value::from("all"),
            Self::Nobody => Value::from("none"),
            Self::Names(items) => Value::Array(
                items
                    .iter()
                    .map(|item| match item {
                        AgentName::Name(name) => Value::from(name.as_str()),
                        AgentName::Other(other) => other.clone(),
                    })
                    .collect(),
            ),
            Self::Map(map) => Value::Object(map.clone()),
            Self::Other(other) => other.clone(),
        }
    }

    /// The names the session is narrowed to: `Some([])` for `none`, the list's names,
    /// a roster's `include` names; `None` when every agent is allowed (`all`, a map
    /// of agent configs, a roster whose `include` is not a list, anything else).
    pub fn names(&self) -> Option<Vec<&str>> {
        match self {
            Self::Nobody => Some(Vec::new()),
            Self::Names(items) => Some(
                items
                    .iter()
                    .filter_map(|item| match item {
                        AgentName::Name(name) => Some(name.as_str()),
                        AgentName::Other(_) => None,
                    })
                    .collect(),
            ),
            Self::Map(map) => match map.get("include") {
                Some(Value::Array(items)) => Some(items.iter().filter_map(Value::as_str).collect()),
                _ => None,
            },
            Self::All | Self::Other(_) => None,
        }
    }

    /// Whether this is `all` or `null` — the forms a stored plan need not remember
    /// beside Amplifier's map (`engine::stored_plan`).
    pub fn is_all(&self) -> bool {
        matches!(self, Self::All | Self::Other(Value::Null))
    }

    /// Whether this is Amplifier's map of agent configs (a map without `include`).
    pub fn is_config_map(&self) -> bool {
        matches!(self, Self::Map(map) if !map.contains_key("include"))
    }
}

impl Serialize for AgentAccess {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for AgentAccess {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::from_value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_form_reads_typed_writes_back_as_read_and_names_its_agents() {
        let cases = [
            (json!("all"), None),
            (json!("none"), Some(vec![])),
            (
                json!(["explorer", 3, "foundation:zen"]),
                Some(vec!["explorer", "foundation:zen"]),
            ),
            (
                json!({"include": ["a", {"x": 1}], "a": {"k": 1}}),
                Some(vec!["a"]),
            ),
            (json!({"include": "a"}), None),
            (json!({"explorer": {"description": "d"}}), None),
            (json!("some"), None),
            (json!(null), None),
            (json!(7), None),
        ];
        for (value, names) in cases {
            let access: AgentAccess = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(serde_json::to_string(&access).unwrap(), value.to_string());
            assert_eq!(access.names(), names, "{value}");
        }
        assert!(AgentAccess::All.is_all() && AgentAccess::Other(Value::Null).is_all());
        assert!(!AgentAccess::Nobody.is_all());
        assert!(AgentAccess::from_value(json!({"explorer": {}})).is_config_map());
        assert!(!AgentAccess::from_value(json!({"include": []})).is_config_map());
    }
}
