//! `ToolArgs`: a tool call's arguments, one JSON value shared by every copy of the call.
//!
//! Owns: holding the arguments once. An assistant message names each tool call twice
//! (its `tool_call` content block and its `tool_calls` entry) with the same
//! arguments; both hold one [`ToolArgs`], so a 100k-message session keeps one parsed
//! `Value` per call, not two, and a clone of a message (bus events, the TUI, the
//! engine's history) copies no arguments. Does not own: reading the line (`line`
//! shares the two when their values are equal) or what the arguments mean (`tool`).

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A tool call's arguments: any JSON value (a tool's input schema asks for an
/// object; `null` when a block had no `input`). Reads as a [`Value`] through
/// `Deref`; a clone shares the value.
///
/// Serialized as the JSON value itself, so the transcript's shape is unchanged. Two
/// `ToolArgs` are equal when their values are.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ToolArgs(Arc<Value>);

impl ToolArgs {
    /// The arguments as an owned value (no copy when this is the only holder).
    pub fn into_value(self) -> Value {
        Arc::unwrap_or_clone(self.0)
    }

    /// True when `a` and `b` hold the same value in one allocation (not just equal
    /// values).
    pub fn shares(a: &ToolArgs, b: &ToolArgs) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl Deref for ToolArgs {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

impl From<Value> for ToolArgs {
    /// Holds `value` with its objects and arrays at exact capacity (see [`exact`]).
    fn from(value: Value) -> Self {
        Self(Arc::new(exact(value)))
    }
}

/// `value` holding no more room than it fills. serde_json reads an object into a map
/// that grows by doubling (a one-key `{"path":…}` kept room for several, ~310 B per
/// call over a 100k-message session) and an array likewise; a call's arguments are
/// kept for the whole session, so each is rebuilt at its length. Keys keep their
/// order. Recursion is bounded by serde_json's nesting limit (128) for parsed input.
fn exact(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut fit = Map::with_capacity(map.len());
            fit.extend(map.into_iter().map(|(k, v)| (k, exact(v))));
            Value::Object(fit)
        }
        Value::Array(items) => {
            let mut fit = Vec::with_capacity(items.len());
            fit.extend(items.into_iter().map(exact));
            Value::Array(fit)
        }
        other => other,
    }
}

impl PartialEq<Value> for ToolArgs {
    fn eq(&self, other: &Value) -> bool {
        *self.0 == *other
    }
}

impl fmt::Debug for ToolArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ToolArgs {
    /// The compact JSON text, as `Value` displays it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl Serialize for ToolArgs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolArgs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_and_writes_as_the_value_itself() {
        let args: ToolArgs = serde_json::from_str(r#"{"z":1,"a":[2]}"#).unwrap();
        assert_eq!(args, json!({"z": 1, "a": [2]}));
        assert_eq!(args["a"][0], 2);
        assert_eq!(serde_json::to_string(&args).unwrap(), r#"{"z":1,"a":[2]}"#);
        assert_eq!(args.to_string(), r#"{"z":1,"a":[2]}"#);
    }

    #[test]
    fn arrays_read_keep_no_room_beyond_their_items_at_any_depth() {
        let args: ToolArgs =
            serde_json::from_str(r#"{"z":[1,2,3],"a":{"deep":[{"k":[4,5,6,7,8]}]}}"#).unwrap();
        assert_eq!(args["z"].as_array().unwrap().capacity(), 3);
        let deep = &args["a"]["deep"];
        assert_eq!(deep.as_array().unwrap().capacity(), 1);
        assert_eq!(deep[0]["k"].as_array().unwrap().capacity(), 5);
        // Same value, keys in their order.
        assert_eq!(
            args.to_string(),
            r#"{"z":[1,2,3],"a":{"deep":[{"k":[4,5,6,7,8]}]}}"#
        );
    }

    #[test]
    fn a_clone_shares_the_value() {
        let a = ToolArgs::from(json!({"p": "*"}));
        let b = a.clone();
        assert!(ToolArgs::shares(&a, &b));
        assert!(!ToolArgs::shares(&a, &ToolArgs::from(json!({"p": "*"}))));
        assert_eq!(a, ToolArgs::from(json!({"p": "*"})));
        drop(b);
        assert_eq!(a.into_value(), json!({"p": "*"}));
    }
}
