//! `Meta`: a message's free-form `metadata` object, kept as its compact JSON text.
//!
//! Owns: holding `metadata` in one allocation (a `serde_json::Value` object with
//! `preserve_order` costs ~11 allocations and ~600 B for arbor's
//! `{"author","usage":{…}}`; its text ~90 B) and reading keys from it on demand.
//! Does not own: which keys arbor writes (`engine::turn`) or reads (`agent::select`,
//! the TUI).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A message's `metadata` (any JSON value; arbor writes an object such as
/// `{"author":"arbor","usage":{"input_tokens":1200,"output_tokens":180}}`), stored as
/// compact JSON text and parsed when a key is read.
///
/// Serialized as the JSON value itself (the transcript's shape is unchanged; keys
/// keep their order). Two `Meta`s are equal when their JSON values are.
#[derive(Clone)]
pub struct Meta(Box<RawValue>);

impl Meta {
    /// The metadata as a JSON value (parsed from the text each call).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// The value under `key` when the metadata is an object that has it.
    pub fn get(&self, key: &str) -> Option<Value> {
        match self.to_value() {
            Value::Object(mut map) => map.remove(key),
            _ => None,
        }
    }

    /// The string under `key` (`None` when missing or not a string).
    pub fn get_str(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// `author`: the agent that wrote the message (arbor's key).
    pub fn author(&self) -> Option<String> {
        self.get_str("author")
    }

    /// `partial: true`: a reply kept after its turn was cut short (arbor's key).
    pub fn is_partial(&self) -> bool {
        self.get("partial") == Some(Value::Bool(true))
    }

    /// The compact JSON text.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }
}

impl From<Value> for Meta {
    fn from(value: Value) -> Self {
        // A `Value` always serializes (its keys are strings); `null` is the fallback
        // should that ever change.
        Meta(serde_json::value::to_raw_value(&value).unwrap_or_default())
    }
}

impl From<Meta> for Value {
    fn from(meta: Meta) -> Self {
        meta.to_value()
    }
}

impl PartialEq for Meta {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get() || self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for Meta {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl fmt::Debug for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

impl Serialize for Meta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Meta {
    /// Reads any JSON value (through a `Value`: metadata is small) and keeps its
    /// compact text.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Meta::from(Value::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_the_json_text_and_reads_keys_on_demand() {
        let value = json!({"author": "a\"b", "usage": {"input_tokens": 3}, "n": 1});
        let meta = Meta::from(value.clone());
        assert_eq!(meta.as_json(), value.to_string());
        assert_eq!(meta.author().as_deref(), Some("a\"b"));
        assert_eq!(meta.get("usage"), Some(json!({"input_tokens": 3})));
        assert_eq!(meta.get_str("n"), None);
        assert_eq!(meta.get("missing"), None);
        assert_eq!(serde_json::to_value(&meta).unwrap(), value);
        assert_eq!(serde_json::to_string(&meta).unwrap(), value.to_string());
        let back: Meta = serde_json::from_str(r#"{ "author" : "x" }"#).unwrap();
        assert_eq!(back.as_json(), r#"{"author":"x"}"#);
        assert_eq!(back, json!({"author": "x"}));
        assert_eq!(Meta::from(json!([1])).get("author"), None);
    }
}
