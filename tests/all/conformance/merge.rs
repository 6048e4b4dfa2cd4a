//! `amplifier-merge.yaml` onto `arbor::config::merge` (SPEC §6).
//!
//! Mapping (Python → arbor):
//! - `app_cli.merge_configs` → [`merge_configs`]; `merge_module_lists`, `deep_merge` →
//!   the functions of the same name; `_provider_key` → [`module_key`];
//!   `apply_spawn_tool_policy(parent)` → [`apply_spawn_tool_policy`] with the parent's
//!   own `spawn`.
//! - `app_cli._filter_tools(config, tool_inheritance, agent_explicit_tools)` → the spawn
//!   path [`merge_for_spawn`]: `config` is the parent plan, `tool_inheritance` the
//!   calling agent's spawn policy (`inherit_tools` is arbor's `spawn.tools`), and the
//!   agent's explicit tools (their entries in `config.tools`) its overlay, since arbor
//!   keeps tools an agent declares by merging them in after the policy.
//! - `app_cli.spawn_sub_session.child_agents` → the child plan from [`merge_for_spawn`],
//!   then the agents its task tool offers: `arbor::tool::task::allowed_agents` over a
//!   registry holding `live_agents` (arbor's registry is always live). The result is
//!   `{agents: {name: {description}}}`.
//!
//! Not mapped (listed as not applicable): `_apply_config_overrides_to_section` and
//! `foundation.dicts.*`.

use std::path::PathBuf;

use arbor::agent::{AgentDef, AgentSource};
use arbor::config::MountPlan;
use arbor::config::merge::{
    apply_spawn_tool_policy, deep_merge, merge_configs, merge_for_spawn, merge_module_lists,
    module_key,
};
use arbor::tool::task::allowed_agents;
use serde_json::{Map, Value, json};

use super::eval::{self, CallResult};

/// Runs one case; `None` when its function has no arbor mapping.
pub fn run(case: &Value) -> Option<Result<(), String>> {
    let function = case.get("function").and_then(Value::as_str)?;
    let call: fn(&Value) -> Value = match function {
        "app_cli.merge_configs" => |i| merge_configs(&arg(i, "parent"), &arg(i, "overlay")),
        "app_cli.merge_module_lists" => |i| merge_module_lists(&arg(i, "base"), &arg(i, "overlay")),
        "app_cli.deep_merge" => |i| deep_merge(&arg(i, "base"), &arg(i, "overlay")),
        "app_cli._provider_key" => |i| Value::String(module_key(&arg(i, "entry"))),
        "app_cli.apply_spawn_tool_policy" => |i| {
            let parent = arg(i, "parent");
            let spawn = parent.get("spawn").cloned().unwrap_or(Value::Null);
            apply_spawn_tool_policy(&parent, &spawn)
        },
        "app_cli._filter_tools" => filter_tools,
        "app_cli.spawn_sub_session.child_agents" => child_agents,
        _ => return None,
    };
    Some(eval::run_case(case, &[], &mut |input| -> CallResult {
        Ok(call(input))
    }))
}

fn arg(input: &Value, key: &str) -> Value {
    input.get(key).cloned().unwrap_or(Value::Null)
}

/// `_filter_tools` through the spawn path (see the module doc).
fn filter_tools(input: &Value) -> Value {
    let config = arg(input, "config");
    let inheritance = arg(input, "tool_inheritance");
    let mut spawn = inheritance.as_object().cloned().unwrap_or_default();
    if let Some(list) = spawn.shift_remove("inherit_tools") {
        spawn.insert("tools".into(), list);
    }
    let explicit: Vec<&str> = eval::list(input.get("agent_explicit_tools"))
        .filter_map(Value::as_str)
        .collect();
    let mut overlay = Map::new();
    if !explicit.is_empty() {
        let declared: Vec<Value> = eval::list(config.get("tools"))
            .filter(|t| explicit.contains(&module_key(t).as_str()))
            .cloned()
            .collect();
        overlay.insert("tools".into(), Value::Array(declared));
    }
    merge_for_spawn(
        &MountPlan::from_value(config),
        &Value::Object(overlay),
        &Value::Object(spawn),
    )
    .to_value()
}

/// The agents a spawned child may delegate to (see the module doc).
fn child_agents(input: &Value) -> Value {
    let parent = MountPlan::from_value(arg(input, "parent_config"));
    let child = merge_for_spawn(&parent, &arg(input, "agent_config"), &Value::Null);
    let registry: Vec<AgentDef> = input
        .get("live_agents")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, cfg)| agent(name, cfg))
        .collect();
    let agents: Map<String, Value> = allowed_agents(&registry, child.agents())
        .into_iter()
        .map(|a| (a.name.clone(), json!({"description": a.description})))
        .collect();
    json!({ "agents": agents })
}

/// A valid user agent `name` with `cfg` as its overlay.
fn agent(name: &str, cfg: &Value) -> AgentDef {
    AgentDef {
        name: name.to_string(),
        namespace: None,
        source: AgentSource::User,
        path: Some(PathBuf::from(format!("/agents/{name}.md"))),
        description: cfg
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        instruction: String::new(),
        overlay: cfg.clone(),
        errors: Vec::new(),
        warnings: Vec::new(),
        shadows: Vec::new(),
    }
}
