//! A mount-plan value arbor reads into a type with checks of its own (approval rules,
//! provider preferences): [`Parsed`] holds what it read — or why it could not — and
//! the value as written, which is what the plan writes back.
//!
//! Owns: [`Parsed`] and the [`PlanValue`] trait a type implements to be one. Does not
//! own: the types' checks (`config::approvals`, `preferences`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::preferences::{PreferenceError, ProviderPreference, parse_preferences};
use crate::config::approvals::{ApprovalIssue, Rules};

/// A type read from a mount-plan value with its own checks.
pub trait PlanValue: Sized {
    /// Why a value is not one (the messages its readers report).
    type Error;
    /// Reads `value`.
    fn parse(value: &Value) -> Result<Self, Self::Error>;
}

/// `approvals:` (a bundle's approval rules).
impl PlanValue for Rules {
    type Error = Vec<ApprovalIssue>;
    fn parse(value: &Value) -> Result<Self, Self::Error> {
        Rules::from_value(value)
    }
}

/// `provider_preferences:` (`[{provider, model, config?}]`, or one mapping).
impl PlanValue for Vec<ProviderPreference> {
    type Error = PreferenceError;
    fn parse(value: &Value) -> Result<Self, Self::Error> {
        parse_preferences(value)
    }
}

/// A plan value read as a `T`, kept as written.
#[derive(Debug, Clone)]
pub struct Parsed<T: PlanValue> {
    raw: Value,
    parsed: Result<T, T::Error>,
}

impl<T: PlanValue> Parsed<T> {
    /// Reads `raw` (kept as it is).
    pub fn new(raw: Value) -> Self {
        let parsed = T::parse(&raw);
        Self { raw, parsed }
    }

    /// What it reads as, or why it does not.
    pub fn get(&self) -> Result<&T, &T::Error> {
        self.parsed.as_ref()
    }

    /// The value as written.
    pub fn raw(&self) -> &Value {
        &self.raw
    }
}

/// Two are equal when written the same (what they read as follows from it).
impl<T: PlanValue> PartialEq for Parsed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl<T: PlanValue> Serialize for Parsed<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl<'de, T: PlanValue> Deserialize<'de> for Parsed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_reads_typed_or_says_why_and_writes_back_as_written() {
        let prefs: Parsed<Vec<ProviderPreference>> =
            serde_json::from_value(json!({"provider": "openai", "model": "gpt-*", "note": 1}))
                .unwrap();
        assert_eq!(prefs.get().map(|p| p[0].model.as_str()), Ok("gpt-*"));
        assert_eq!(
            serde_json::to_value(&prefs).unwrap(),
            json!({"provider": "openai", "model": "gpt-*", "note": 1})
        );
        let bad: Parsed<Vec<ProviderPreference>> =
            serde_json::from_value(json!([{"provider": "openai"}])).unwrap();
        assert_eq!(
            bad.get().map_err(ToString::to_string),
            Err("provider_preferences[0]: provider preference requires 'model' key".into())
        );
        assert_eq!(bad.raw(), &json!([{"provider": "openai"}]));
        let rules: Parsed<Rules> = Parsed::new(json!({"bash": "maybe"}));
        assert!(rules.get().is_err());
        assert_eq!(rules.raw(), &json!({"bash": "maybe"}));
    }
}
