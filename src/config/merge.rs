//! Agent overlay merge (SPEC §6): `child = merge(parent_mount_plan, agent_overlay)`.
//!
//! Owns: the spawn tool policy (`spawn.tools` / `spawn.exclude_tools`), module-list
//! merging keyed by `id` else `module`, deep merge of maps, `agents` access control, and
//! the child's instruction. The pieces follow amplifier-app-cli's `merge_configs`,
//! `merge_module_lists`, `deep_merge` and `apply_spawn_tool_policy`, so Amplifier's own
//! cases (`peer-cases/amplifier-merge.yaml`) run against them. Does not own: loading
//! agents (`agent`) or deciding which agents exist (`agent::registry`).
//!
//! Deliberate differences from Amplifier, all about `agents` (arbor's plan holds
//! `all | none | [names] | {include: …}`, Amplifier's a map of agent configs):
//! `none` over a non-map parent gives `"none"` (Amplifier: `{}`), and a list over a
//! parent without `agents` (meaning all) gives the list (Amplifier: `{}`).

use serde_json::{Map, Value};

use super::mount_plan::{Listed, MountPlan, SpawnPolicy, ToolRef, module_name};

/// Top-level keys merged as module lists.
pub const MODULE_LIST_KEYS: &[&str] = &["tools", "providers", "hooks"];

/// `child = merge(parent_mount_plan, agent_overlay)` with the spawn tool policy from the
/// parent's `spawn` and the calling agent's own `spawn` (`calling_agent_spawn`, may be
/// null), `agents` access control, and the overlay's `instruction` as the child's.
///
/// Steps: (1) the parent's tools pass through the parent's spawn policy, then the
/// calling agent's; (2) the overlay merges in — `tools`/`providers`/`hooks` as module
/// lists (overlay tools are added after the policy, so they always survive it), maps
/// deep-merged, other values replaced; (3) `agents` = [`filter_agents`] of the parent's
/// and the overlay's. The parent is never modified.
pub fn merge_for_spawn(
    parent: &MountPlan,
    overlay: &Value,
    calling_agent_spawn: &Value,
) -> MountPlan {
    let whole = parent.to_value();
    let mut base = match parent.spawn() {
        Some(policy) => apply_spawn_policy(&whole, policy),
        None => whole.clone(),
    };
    base = apply_spawn_tool_policy(&base, calling_agent_spawn);
    MountPlan::from_value(merge_overlay(&base, &whole, overlay))
}

/// Amplifier's `merge_configs(parent, overlay)`: [`merge_for_spawn`] with only the
/// parent's own `spawn` policy, on plain JSON values.
pub fn merge_configs(parent: &Value, overlay: &Value) -> Value {
    let spawn = parent.get("spawn").cloned().unwrap_or(Value::Null);
    let base = apply_spawn_tool_policy(parent, &spawn);
    merge_overlay(&base, parent, overlay)
}

/// Merges `overlay` into `base` (the policy-filtered parent); `agents` is computed from
/// the unfiltered `parent`'s. An overlay's `approvals` never enters the plan: maps merge
/// child-wins here, while agent approvals follow their tier (`config::approvals`), so
/// the gate reads them from the agent, not the plan.
fn merge_overlay(base: &Value, parent: &Value, overlay: &Value) -> Value {
    let mut out = match base {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    if let Value::Object(over) = overlay {
        for (key, value) in over {
            if key == "agents" || key == "approvals" {
                continue;
            }
            let merged = match (out.get(key.as_str()), value) {
                (Some(old @ Value::Array(_)), Value::Array(_))
                    if MODULE_LIST_KEYS.contains(&key.as_str()) =>
                {
                    merge_module_lists(old, value)
                }
                (Some(old @ Value::Object(_)), Value::Object(_)) => deep_merge(old, value),
                _ => value.clone(),
            };
            out.insert(key.clone(), merged);
        }
    }
    match filter_agents(parent.get("agents"), overlay.get("agents")) {
        Some(agents) => {
            out.insert("agents".into(), agents);
        }
        None => {
            out.shift_remove("agents");
        }
    }
    Value::Object(out)
}

/// Recursive merge, `overlay` wins: two maps merge key by key; anything else (lists,
/// scalars, an explicit null) replaces the base value.
pub fn deep_merge(base: &Value, overlay: &Value) -> Value {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            let mut out = b.clone();
            for (key, value) in o {
                let merged = match out.get(key.as_str()) {
                    Some(old) => deep_merge(old, value),
                    None => value.clone(),
                };
                out.insert(key.clone(), merged);
            }
            Value::Object(out)
        }
        _ => overlay.clone(),
    }
}

/// The merge key of a module entry: a non-empty `id`, else `module`, else `""`
/// (a bare string is its own key).
pub fn module_key(entry: &Value) -> String {
    match entry {
        Value::String(s) => s.clone(),
        Value::Object(m) => match m.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => m
                .get("module")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        },
        _ => String::new(),
    }
}

/// A module entry as a map: a bare string `s` becomes `{module: s}`; maps are kept;
/// anything else is `None`.
fn normalize_entry(entry: &Value) -> Option<Map<String, Value>> {
    match entry {
        Value::String(s) => {
            let mut m = Map::new();
            m.insert("module".into(), Value::String(s.clone()));
            Some(m)
        }
        Value::Object(m) => Some(m.clone()),
        _ => None,
    }
}

/// Merges two module lists (`tools`, `providers`, `hooks`) keyed by [`module_key`]:
/// base order first, then new overlay entries; the same key deep-merges (overlay wins).
///
/// As in Amplifier: bare strings become `{module: …}`; null/number entries are dropped;
/// a base entry without `module` is dropped, an overlay entry needs an `id` or a
/// `module`; duplicate base keys collapse (first position, last value). Non-list inputs
/// count as empty.
pub fn merge_module_lists(base: &Value, overlay: &Value) -> Value {
    let mut index: Map<String, Value> = Map::new();
    for entry in base.as_array().into_iter().flatten() {
        let Some(m) = normalize_entry(entry) else {
            continue;
        };
        let has_module = m
            .get("module")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        if !has_module {
            continue;
        }
        index.insert(module_key(entry), Value::Object(m));
    }
    for entry in overlay.as_array().into_iter().flatten() {
        let Some(m) = normalize_entry(entry) else {
            continue;
        };
        let key = module_key(entry);
        if key.is_empty() {
            continue;
        }
        let entry = Value::Object(m);
        let merged = match index.get(&key) {
            Some(old) => deep_merge(old, &entry),
            None => entry,
        };
        index.insert(key, merged);
    }
    Value::Array(index.into_iter().map(|(_, v)| v).collect())
}

/// Applies a spawn policy to `plan`'s `tools` and returns the new plan.
///
/// `spawn.tools` present: when a list, it replaces the tools (a string item picks the
/// plan's entry with that key, else becomes `{module: …}`; a map item is used as is);
/// when not a list it is ignored — and still disables `exclude_tools`, as in Amplifier.
/// Else `spawn.exclude_tools` (list of module names or ids) drops matching tools (a
/// plan without tools gets `tools: []`). Else, or when `spawn` is not a map, the plan is
/// unchanged.
pub fn apply_spawn_tool_policy(plan: &Value, spawn: &Value) -> Value {
    match spawn {
        Value::Object(_) => apply_spawn_policy(plan, &SpawnPolicy::from_value(spawn.clone())),
        _ => plan.clone(),
    }
}

/// [`apply_spawn_tool_policy`] with a policy already read.
pub fn apply_spawn_policy(plan: &Value, spawn: &SpawnPolicy) -> Value {
    let mut out = plan.clone();
    let tools: Vec<Value> = plan
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let new_tools = match (&spawn.tools, &spawn.exclude_tools) {
        (Some(Listed::List(listed)), _) => listed
            .iter()
            .filter_map(|item| match item {
                ToolRef::Key(key) => Some(
                    tools
                        .iter()
                        .find(|t| module_key(t) == *key)
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({"module": key})),
                ),
                ToolRef::Entry(entry) => Some(Value::Object(entry.clone())),
                ToolRef::Other(_) => None,
            })
            .collect(),
        (Some(Listed::Other(_)), _) => return out,
        (None, Some(Listed::List(excluded))) => {
            let excluded: Vec<&str> = excluded
                .iter()
                .filter_map(|item| match item {
                    ToolRef::Key(key) => Some(key.as_str()),
                    _ => None,
                })
                .collect();
            let is_excluded = |t: &Value| {
                let module = module_name(t).unwrap_or_default();
                excluded.contains(&module) || excluded.contains(&module_key(t).as_str())
            };
            tools.into_iter().filter(|t| !is_excluded(t)).collect()
        }
        (None, _) => return out,
    };
    if let Value::Object(m) = &mut out {
        m.insert("tools".into(), Value::Array(new_tools));
    }
    out
}

/// Whether agent reference `entry` (`name` or `ns:name`) matches a `wanted` name.
fn agent_matches(entry: &str, wanted: &str) -> bool {
    entry == wanted
        || entry
            .rsplit_once(':')
            .is_some_and(|(_, local)| local == wanted)
        || wanted
            .rsplit_once(':')
            .is_some_and(|(_, local)| local == entry)
}

/// The child's `agents` from the parent's (`parent`) and the overlay's (`overlay`).
///
/// Overlay absent, `all`, a map or anything else → the parent's, unchanged (`None`
/// when the parent has none). `none` → `"none"`. A list of names → the parent's agents
/// narrowed to those names: a parent list is intersected (parent order), an
/// `{include: …}` roster is filtered, a parent `none` stays `"none"`, and a parent
/// `all`, no `agents`, or an Amplifier map of inline definitions (which only adds
/// definitions to the live registry) gives the list itself. `ns:name` entries match
/// their bare name.
///
/// Amplifier writes `{}` / a filtered map for the last two; arbor writes `"none"` and
/// the list, so the task tool reads the child's access the same way whatever form
/// the parent used.
pub fn filter_agents(parent: Option<&Value>, overlay: Option<&Value>) -> Option<Value> {
    match overlay {
        Some(Value::String(s)) if s == "none" => Some(Value::String("none".into())),
        Some(Value::Array(names)) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            let wanted = |entry: &str| names.iter().any(|n| agent_matches(entry, n));
            Some(match parent {
                Some(Value::String(s)) if s == "none" => Value::String("none".into()),
                Some(Value::Array(items)) => Value::Array(
                    items
                        .iter()
                        .filter(|i| i.as_str().is_some_and(wanted))
                        .cloned()
                        .collect(),
                ),
                Some(Value::Object(m)) if m.contains_key("include") => {
                    let mut roster = Map::new();
                    for (key, value) in m {
                        let kept = if key == "include" {
                            Value::Array(
                                value
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .filter(|i| i.as_str().is_some_and(wanted))
                                    .cloned()
                                    .collect(),
                            )
                        } else if wanted(key) {
                            value.clone()
                        } else {
                            continue;
                        };
                        roster.insert(key.clone(), kept);
                    }
                    Value::Object(roster)
                }
                _ => Value::Array(names.iter().map(|n| Value::String((*n).into())).collect()),
            })
        }
        _ => parent.cloned(),
    }
}

#[cfg(test)]
mod tests;
