//! The mount plan as `metadata.config` stores it: arbor's plan with `agents` written
//! as Amplifier's map (agent name → agent config), the form amplifier-app-cli's
//! spawner and foundation's `delegate` tool read (`config["agents"].items()`), so
//! Amplifier can resume and delegate from any session arbor wrote.
//!
//! Owns: [`stored_config`] and the agent-config shape [`amplifier_agent_config`]
//! (foundation `bundle/_dataclass.py` `_load_agent_file_metadata`: `name`,
//! `description`, the other `meta` keys, the frontmatter's mount-plan keys,
//! `instruction`). Does not own: which agents a plan allows (`tool::task::
//! allowed_agents`, which reads this map back as the names it holds) or redaction
//! (`session::store`).

use serde_json::{Map, Value};

use super::env::TurnEnv;
use crate::agent::AgentDef;
use crate::config::MountPlan;
use crate::config::mount_plan::AgentAccess;
use crate::tool::delegate::raw_description;
use crate::tool::task::allowed_agents;

/// `plan` as stored: `agents` (`all`, absent, `none`, `[names]`, `{include: …}`) resolved
/// against the live registry into Amplifier's map of the agents it allows — `{}` for
/// none — with any form other than `all` kept under [`ACCESS_KEY`] ([`restored`] puts
/// it back). A plan that already holds a map without `include` (an Amplifier session
/// resumed) keeps it.
pub(crate) fn stored_config(env: &TurnEnv, plan: &MountPlan) -> Value {
    let mut stored = plan.to_value();
    let Value::Object(map) = &mut stored else {
        return stored;
    };
    if plan.agents().is_some_and(AgentAccess::is_config_map) {
        return stored;
    }
    if let Some(access) = plan.agents().filter(|a| !a.is_all()) {
        map.insert(ACCESS_KEY.into(), access.to_value());
    }
    let registry = env.registry();
    let allowed = allowed_agents(registry.agents(), plan.agents());
    let agents: Map<String, Value> = allowed
        .into_iter()
        .map(|def| (agent_key(def), amplifier_agent_config(def)))
        .collect();
    map.insert("agents".into(), Value::Object(agents));
    stored
}

/// The stored key that keeps arbor's own access form (`none`, `[names]`,
/// `{include: …}`) beside Amplifier's map: arbor reads a plain map as "every agent of
/// the live registry" (Amplifier's spawner also adds live agents to it), so without
/// this a stored `none` (`{}`) would read back as all. Amplifier ignores the key.
pub(crate) const ACCESS_KEY: &str = "arbor_agents";

/// A stored plan made live again (a resume): arbor's access form, when stored, back
/// in `agents`.
pub(crate) fn restored(mut config: Value) -> Value {
    if let Value::Object(map) = &mut config
        && let Some(access) = map.shift_remove(ACCESS_KEY)
    {
        map.insert("agents".into(), access);
    }
    config
}

/// `ns:name` for a bundle agent with a namespace other than arbor's own, else the name.
fn agent_key(def: &AgentDef) -> String {
    match def.namespace.as_deref() {
        Some(ns) if ns != "arbor" => format!("{ns}:{}", def.name),
        _ => def.name.clone(),
    }
}

/// One agent as Amplifier's map holds it: `name`, `description` (whole, every line),
/// the other `meta` keys, then the overlay's other keys (`tools`, `model_role`, …,
/// `instruction`).
pub(crate) fn amplifier_agent_config(def: &AgentDef) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), Value::String(def.name.clone()));
    out.insert("description".into(), Value::String(raw_description(def)));
    if let Value::Object(overlay) = &def.overlay {
        if let Some(Value::Object(meta)) = overlay.get("meta") {
            for (k, v) in meta {
                if k != "name" && k != "description" {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        for (k, v) in overlay {
            if k != "meta" {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if !def.instruction.is_empty() {
        out.insert("instruction".into(), Value::String(def.instruction.clone()));
    }
    Value::Object(out)
}
