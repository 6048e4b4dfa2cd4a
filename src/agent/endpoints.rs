//! Merging an agent's overlay with the provenance of the provider endpoints it sets
//! (SPEC §6 merge, §12 "Trust").
//!
//! Owns: which agent tiers may send the user's configured key to an endpoint they
//! name ([`AgentSource::may_redirect_keys`]) and [`merge_agent`], the overlay merge
//! every session built from an agent goes through (a root started with `--agent`, a
//! spawned sub-session, `agent show --merged`): it marks each provider entry whose
//! `base_url` the overlay set with `config.endpoint_from` (`config::endpoint`).
//! Does not own: the merge rules (`config::merge`) or attaching keys
//! (`routing::setup`, which refuses to send a configured key to an untrusted mark's
//! endpoint when it is not the configured one).

use serde_json::Value;

use super::{AgentDef, AgentSource};
use crate::config::MountPlan;
use crate::config::endpoint::{ENDPOINT_FROM, EndpointFrom, without_marks};
use crate::config::merge::{merge_for_spawn, module_key};

impl AgentSource {
    /// Whether an agent file of this tier may point a provider at an endpoint of its
    /// choosing and still get the user's configured key there: the user's own files
    /// (`$AMPLIFIER_HOME/agents`, `AMPLIFIER_AGENT_<NAME>`) may; project agent files
    /// (a cloned repository's) and bundle agents may not.
    pub fn may_redirect_keys(self) -> bool {
        match self {
            Self::Env | Self::User => true,
            Self::Project | Self::Bundle => false,
        }
    }
}

/// `merge_for_spawn(parent, def.overlay, calling_agent_spawn)` with endpoint
/// provenance: any `endpoint_from` the overlay itself holds is dropped first, then
/// every merged provider entry whose `base_url` the overlay sets (matched by `id`,
/// else `module`) gets `config.endpoint_from = {agent, source, trusted}` for `def`.
/// Entries the overlay leaves alone keep the mark (or its absence) they had.
pub fn merge_agent(parent: &MountPlan, def: &AgentDef, calling_agent_spawn: &Value) -> MountPlan {
    let overlay = without_marks(&def.overlay);
    let mut plan = merge_for_spawn(parent, &overlay, calling_agent_spawn);
    let redirected: Vec<String> = match overlay.get("providers") {
        Some(Value::Array(entries)) => entries
            .iter()
            .filter(|e| e.get("config").is_some_and(|c| c.get("base_url").is_some()))
            .map(module_key)
            .collect(),
        _ => Vec::new(),
    };
    if redirected.is_empty() {
        return plan;
    }
    let mark = EndpointFrom {
        agent: def.name.clone(),
        source: def.source.as_str().to_string(),
        trusted: def.source.may_redirect_keys(),
    };
    let Ok(mark) = serde_json::to_value(mark) else {
        return plan;
    };
    for spec in plan.providers.iter_mut().flatten() {
        spec.edit(|entry| {
            if !redirected.contains(&module_key(entry)) {
                return;
            }
            if let Some(Value::Object(config)) = entry.get_mut("config") {
                config.insert(ENDPOINT_FROM.to_string(), mark.clone());
            }
        });
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent(source: AgentSource, overlay: Value) -> AgentDef {
        AgentDef::for_test("x", source, overlay)
    }

    fn parent() -> MountPlan {
        MountPlan::from_value(json!({"providers": [
            {"module": "provider-openai", "config": {"api_key": "[REDACTED]", "base_url": "http://a/v1"}},
            {"module": "provider-anthropic"}
        ]}))
    }

    #[test]
    fn an_overlay_that_sets_base_url_marks_that_entry_with_its_tier() {
        let overlay = json!({"providers": [{"module": "provider-openai", "config": {"base_url": "http://b/v1"}}]});
        for (source, trusted) in [
            (AgentSource::Project, false),
            (AgentSource::Bundle, false),
            (AgentSource::User, true),
            (AgentSource::Env, true),
        ] {
            let plan = merge_agent(&parent(), &agent(source, overlay.clone()), &Value::Null);
            let openai = &plan.to_value()["providers"][0]["config"];
            assert_eq!(openai["base_url"], "http://b/v1");
            assert_eq!(openai["api_key"], "[REDACTED]");
            assert_eq!(
                openai[ENDPOINT_FROM],
                json!({"agent": "x", "source": source.as_str(), "trusted": trusted})
            );
            assert_eq!(
                plan.to_value()["providers"][1],
                json!({"module": "provider-anthropic"})
            );
        }
    }

    #[test]
    fn an_overlay_cannot_forge_or_clear_a_mark() {
        let forged = json!({"providers": [{"module": "provider-openai", "config": {
            "base_url": "http://b/v1",
            "endpoint_from": {"agent": "mine", "source": "user", "trusted": true}
        }}]});
        let plan = merge_agent(
            &parent(),
            &agent(AgentSource::Project, forged),
            &Value::Null,
        );
        assert_eq!(
            plan.to_value()["providers"][0]["config"][ENDPOINT_FROM]["trusted"],
            false
        );
        // A later overlay that only tries to drop the mark leaves it.
        let clear = json!({"providers": [{"module": "provider-openai", "config": {"endpoint_from": null}}]});
        let again = merge_agent(&plan, &agent(AgentSource::Project, clear), &Value::Null);
        assert_eq!(
            again.to_value()["providers"][0]["config"][ENDPOINT_FROM],
            plan.to_value()["providers"][0]["config"][ENDPOINT_FROM]
        );
        // An overlay without providers changes nothing.
        let none = merge_agent(&plan, &agent(AgentSource::Project, json!({})), &Value::Null);
        assert_eq!(none.to_value()["providers"], plan.to_value()["providers"]);
    }
}
