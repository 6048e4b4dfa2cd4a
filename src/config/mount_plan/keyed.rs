//! Reading a JSON object into named fields plus the keys nobody named, and writing it
//! back in the order it was read, so a typed struct over an Amplifier file round-trips
//! to the same bytes (issue 24 item 5).
//!
//! Owns: [`KeyOrder`] and the [`Fields`] reader / [`write_object`] writer the typed
//! mount plan uses. Does not own: what the fields mean (`mount_plan`).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The order of an object's keys as read. Writing puts keys back in this order, keys
/// not in it (set later) after them in field order. Two plans differing only in key
/// order are equal, as JSON objects are.
#[derive(Debug, Clone, Default)]
pub struct KeyOrder(pub Vec<String>);

/// Key order never makes two values differ.
impl PartialEq for KeyOrder {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// An object being read into named fields: each [`Fields::take`] moves one key out when
/// its value has the field's type; what is left is the struct's `extra`.
pub(crate) struct Fields {
    map: Map<String, Value>,
    order: KeyOrder,
}

impl Fields {
    /// The object's entries (a non-object reads as an empty object).
    pub(crate) fn of(value: Value) -> Self {
        let map = match value {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let order = KeyOrder(map.keys().cloned().collect());
        Self { map, order }
    }

    /// The value at `key` as a `T`, removed from the object; `None` when absent or of
    /// another type (then it stays, and is written back untouched from `extra`).
    pub(crate) fn take<T: DeserializeOwned>(&mut self, key: &str) -> Option<T> {
        let value = self.map.get(key)?;
        let typed = T::deserialize(value).ok()?;
        self.map.shift_remove(key);
        Some(typed)
    }

    /// The keys no field took, and the order of all keys as read.
    pub(crate) fn finish(self) -> (Map<String, Value>, KeyOrder) {
        (self.map, self.order)
    }
}

/// An object of `named` fields (`None` ones left out) and `extra`, its keys in `order`
/// first, the rest after in the order given.
pub(crate) fn write_object(
    named: Vec<(&str, Option<Value>)>,
    extra: &Map<String, Value>,
    order: &KeyOrder,
) -> Value {
    let mut all = Map::new();
    for (key, value) in named {
        if let Some(value) = value {
            all.insert(key.to_string(), value);
        }
    }
    for (key, value) in extra {
        all.insert(key.clone(), value.clone());
    }
    let mut out = Map::new();
    for key in &order.0 {
        if let Some(value) = all.shift_remove(key) {
            out.insert(key.clone(), value);
        }
    }
    out.extend(all);
    Value::Object(out)
}

/// `value` as JSON, for a named field (`None` when absent; our field types always
/// encode, a failure would only drop the field).
pub(crate) fn json<T: Serialize>(value: &Option<T>) -> Option<Value> {
    value.as_ref().and_then(|v| serde_json::to_value(v).ok())
}
