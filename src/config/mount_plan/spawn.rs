//! The `spawn` section of a mount plan (SPEC §6 step 1): which of a parent's tools
//! its sub-sessions get, typed and lossless — items and values arbor does not use are
//! kept as read, so a plan writes back as it was read.
//!
//! Owns: [`SpawnPolicy`] and its item shapes. Does not own: applying it to a plan's
//! tools (`config::merge`, which Amplifier's `merge_configs` semantics live in).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::keyed::{Fields, KeyOrder, json, write_object};

/// `spawn`: `{tools?, exclude_tools?, …}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpawnPolicy {
    /// `tools`: a list replaces the parent's tools; any other value changes nothing
    /// and still disables `exclude_tools` (as in Amplifier).
    pub tools: Option<Listed>,
    /// `exclude_tools`: the module names or ids dropped from the parent's tools (a
    /// list; its items that are not names, and any other value, are ignored).
    pub exclude_tools: Option<Listed>,
    /// Every other key, as read.
    pub extra: Map<String, Value>,
    /// The keys in the order read.
    pub order: KeyOrder,
}

/// A `spawn` value that should be a list of tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Listed {
    /// A list.
    List(Vec<ToolRef>),
    /// Anything else, kept as read.
    Other(Value),
}

/// One item of a `spawn` tool list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolRef {
    /// A module name or id.
    Key(String),
    /// A module entry (`{module, config?, …}`), used as it is.
    Entry(Map<String, Value>),
    /// Anything else, kept as read and skipped.
    Other(Value),
}

impl SpawnPolicy {
    /// Reads `spawn` (a non-object reads as empty; the plan keeps such a value in its
    /// `extra`, see `MountPlan::from_value`).
    pub fn from_value(value: Value) -> Self {
        let mut fields = Fields::of(value);
        let tools = fields.take("tools");
        let exclude_tools = fields.take("exclude_tools");
        let (extra, order) = fields.finish();
        Self {
            tools,
            exclude_tools,
            extra,
            order,
        }
    }

    /// `spawn` as JSON, keys in the order read.
    pub fn to_value(&self) -> Value {
        write_object(
            vec![
                ("tools", json(&self.tools)),
                ("exclude_tools", json(&self.exclude_tools)),
            ],
            &self.extra,
            &self.order,
        )
    }
}

impl Serialize for SpawnPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for SpawnPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        if !value.is_object() {
            return Err(serde::de::Error::custom("`spawn` is not a map"));
        }
        Ok(Self::from_value(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_form_reads_typed_and_writes_back_as_read() {
        for value in [
            json!({"exclude_tools": ["tool-task", 3], "note": "kept"}),
            json!({"tools": ["tool-bash", {"module": "tool-x", "config": {"a": 1}}, null], "exclude_tools": "ignored"}),
            json!({"note": 1, "tools": "all"}),
            json!({}),
        ] {
            let policy: SpawnPolicy = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(
                serde_json::to_string(&policy).unwrap(),
                value.to_string(),
                "{value}"
            );
        }
        let policy = SpawnPolicy::from_value(
            json!({"tools": ["tool-bash", {"module": "tool-x"}, 7], "exclude_tools": "x"}),
        );
        let Some(Listed::List(tools)) = &policy.tools else {
            panic!("{policy:?}")
        };
        assert_eq!(tools[0], ToolRef::Key("tool-bash".into()));
        assert!(matches!(&tools[1], ToolRef::Entry(m) if m["module"] == "tool-x"));
        assert_eq!(tools[2], ToolRef::Other(json!(7)));
        assert_eq!(policy.exclude_tools, Some(Listed::Other(json!("x"))));
        assert!(serde_json::from_value::<SpawnPolicy>(json!("none")).is_err());
    }
}
