//! Who pointed a mount-plan provider entry at its endpoint (SPEC §12 "Trust").
//!
//! Owns: the `config.endpoint_from` mark of a provider entry ([`EndpointFrom`]) and
//! the origin comparison of two endpoints ([`same_origin`]). The mark is written by
//! `agent::endpoints` when an agent overlay sets a provider's `base_url` and read by
//! `routing::setup` when a key is attached. Does not own: deciding which agent tiers
//! may redirect a key (`agent::endpoints`) or attaching keys (`routing::setup`).
//!
//! The mark lives in the entry's `config`, so it is stored with the session's plan and
//! survives resume; providers ignore unknown config keys. Agent files never write it:
//! `agent::endpoints` strips it from every overlay before merging.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::mount_plan::{ModuleEntry, MountPlan};

/// The key of the mark inside a provider entry's `config`.
pub const ENDPOINT_FROM: &str = "endpoint_from";

/// The agent file whose overlay last set a provider entry's `base_url`:
/// `{"agent": "x", "source": "project", "trusted": false}` at `config.endpoint_from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointFrom {
    /// The agent's name.
    pub agent: String,
    /// Its tier as `agent list` shows it: `env`, `user`, `project` or `bundle`.
    pub source: String,
    /// Whether that tier may send the user's configured key to an endpoint it names
    /// (the user's own agent files may; project and bundle agent files may not).
    pub trusted: bool,
}

impl EndpointFrom {
    /// The mark of `entry`, if it has a well-formed one.
    pub fn of(entry: &ModuleEntry) -> Option<Self> {
        serde_json::from_value(entry.config.get(ENDPOINT_FROM)?.clone()).ok()
    }
}

/// Whether two endpoint URLs name the same server: the same scheme, host and port
/// (the web's origin; the path does not matter, so `http://h:1/v1` and `http://h:1`
/// are one). URLs that do not parse compare as trimmed strings, without trailing `/`.
pub fn same_origin(a: &str, b: &str) -> bool {
    match (reqwest::Url::parse(a.trim()), reqwest::Url::parse(b.trim())) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => a.trim().trim_end_matches('/') == b.trim().trim_end_matches('/'),
    }
}

/// `value` (an agent overlay) without any `config.endpoint_from` in its `providers`:
/// only arbor writes the mark.
pub fn without_marks(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(Value::Array(entries)) = value.get_mut("providers") {
        for entry in entries {
            if let Some(Value::Object(config)) = entry.get_mut("config") {
                config.shift_remove(ENDPOINT_FROM);
            }
        }
    }
    value
}

/// Strips every provider entry of `plan` of its mark (see [`without_marks`]): a job
/// comes off the bus, and only the worker's own config may vouch for an endpoint.
pub fn remove_marks(plan: &mut MountPlan) {
    for spec in plan.providers.iter_mut().flatten() {
        spec.edit(|entry| {
            if let Some(Value::Object(config)) = entry.get_mut("config") {
                config.shift_remove(ENDPOINT_FROM);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn origins_ignore_the_path_but_not_host_port_or_scheme() {
        assert!(same_origin(
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:8080/"
        ));
        assert!(same_origin(
            "https://api.openai.com/v1",
            "https://api.openai.com"
        ));
        assert!(!same_origin(
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:8081/v1"
        ));
        assert!(!same_origin(
            "http://api.openai.com/v1",
            "https://api.openai.com/v1"
        ));
        assert!(!same_origin(
            "https://api.openai.com.evil.example/v1",
            "https://api.openai.com/v1"
        ));
        assert!(same_origin("not a url/", "not a url"));
    }

    #[test]
    fn overlays_lose_their_marks_and_entries_read_theirs() {
        let overlay = json!({"providers": [
            {"module": "provider-openai", "config": {"base_url": "http://b", "endpoint_from": {"agent": "u", "source": "user", "trusted": true}}},
            "provider-anthropic"
        ]});
        let clean = without_marks(&overlay);
        assert_eq!(
            clean["providers"][0]["config"],
            json!({"base_url": "http://b"})
        );
        assert_eq!(clean["providers"][1], "provider-anthropic");
        let entry = ModuleEntry::from_value(&overlay["providers"][0]).unwrap();
        assert_eq!(
            EndpointFrom::of(&entry),
            Some(EndpointFrom {
                agent: "u".into(),
                source: "user".into(),
                trusted: true
            })
        );
        let bare = ModuleEntry::from_value(&clean["providers"][0]).unwrap();
        assert_eq!(EndpointFrom::of(&bare), None);
    }

    #[test]
    fn a_plan_loses_its_marks_and_keeps_the_rest_as_read() {
        let mut plan = MountPlan::from_value(json!({
            "providers": [
                {"module": "provider-openai", "config": {"endpoint_from": {"agent": "p", "source": "project", "trusted": true}, "base_url": "http://b"}},
                "provider-anthropic"
            ],
            "tools": [{"module": "tool-bash", "config": {"endpoint_from": "kept: not a provider"}}]
        }));
        remove_marks(&mut plan);
        assert_eq!(
            plan.to_value(),
            json!({
                "providers": [
                    {"module": "provider-openai", "config": {"base_url": "http://b"}},
                    "provider-anthropic"
                ],
                "tools": [{"module": "tool-bash", "config": {"endpoint_from": "kept: not a provider"}}]
            })
        );
    }
}
