//! Unit tests for the overlay merge, one per rule of SPEC §6. Amplifier's own cases
//! run in `tests/all/conformance.rs`.

use serde_json::{Value, json};

use crate::config::mount_plan::{AgentAccess, Parsed, ProviderPreference};

use super::*;

fn plan(v: Value) -> MountPlan {
    MountPlan::from_value(v)
}

fn modules(plan: &MountPlan, key: &str) -> Vec<String> {
    plan.module_list(key)
        .iter()
        .map(|item| module_key(&item.to_value()))
        .collect()
}

#[test]
fn spawn_tools_replaces_the_inherited_tools() {
    let parent = plan(json!({
        "tools": [{"module": "tool-filesystem", "config": {"root": "."}}, {"module": "tool-search"}, {"module": "tool-task"}],
        "spawn": {"tools": ["tool-filesystem", "tool-extra"]}
    }));
    let child = merge_for_spawn(&parent, &json!({}), &Value::Null);
    assert_eq!(modules(&child, "tools"), ["tool-filesystem", "tool-extra"]);
    // A listed id picks the parent's entry, config included.
    assert_eq!(child.tools()[0].config, json!({"root": "."}));
}

#[test]
fn spawn_exclude_tools_drops_listed_ids() {
    let parent = plan(json!({
        "tools": ["tool-filesystem", {"module": "tool-task", "id": "delegate"}, {"module": "tool-search"}],
        "spawn": {"exclude_tools": ["delegate"]}
    }));
    let child = merge_for_spawn(&parent, &json!({}), &Value::Null);
    assert_eq!(modules(&child, "tools"), ["tool-filesystem", "tool-search"]);
    let by_module = plan(
        json!({"tools": ["tool-task", "tool-search"], "spawn": {"exclude_tools": ["tool-task"]}}),
    );
    let child = merge_for_spawn(&by_module, &json!({}), &Value::Null);
    assert_eq!(modules(&child, "tools"), ["tool-search"]);
}

#[test]
fn without_a_policy_tools_are_inherited() {
    let parent = plan(json!({"tools": [{"module": "tool-filesystem"}, {"module": "tool-task"}]}));
    let child = merge_for_spawn(&parent, &json!({}), &Value::Null);
    assert_eq!(modules(&child, "tools"), ["tool-filesystem", "tool-task"]);
}

#[test]
fn calling_agent_spawn_applies_after_the_parents() {
    let parent = plan(json!({
        "tools": ["tool-filesystem", "tool-search", "tool-task"],
        "spawn": {"exclude_tools": ["tool-search"]}
    }));
    let calling = json!({"exclude_tools": ["tool-task"]});
    let child = merge_for_spawn(&parent, &json!({}), &calling);
    assert_eq!(modules(&child, "tools"), ["tool-filesystem"]);
}

#[test]
fn tools_the_agent_declares_survive_the_policy() {
    let parent = plan(json!({
        "tools": [{"module": "tool-task", "config": {"max_parallel": 4}}, {"module": "tool-search"}],
        "spawn": {"exclude_tools": ["tool-task", "tool-search"]}
    }));
    let overlay = json!({"tools": [{"module": "tool-task", "config": {"max_parallel": 1}}]});
    let child = merge_for_spawn(&parent, &overlay, &json!({"tools": []}));
    assert_eq!(modules(&child, "tools"), ["tool-task"]);
    assert_eq!(child.task_tool_config(), json!({"max_parallel": 1}));
}

#[test]
fn module_lists_merge_by_id_else_module() {
    let parent = plan(json!({
        "providers": [
            {"module": "provider-openai", "config": {"default_model": "gpt-4o", "base_url": "http://a"}},
            {"module": "provider-openai", "id": "local", "config": {"base_url": "http://b"}}
        ],
        "hooks": [{"module": "hooks-logging", "config": {"level": "info"}}]
    }));
    let overlay = json!({
        "providers": [
            {"module": "provider-openai", "id": "local", "config": {"default_model": "qwen"}},
            {"module": "provider-anthropic"}
        ],
        "hooks": ["hooks-logging", "hooks-extra"]
    });
    let child = merge_for_spawn(&parent, &overlay, &Value::Null);
    let providers = &child.to_value()["providers"];
    assert_eq!(
        providers,
        &json!([
            {"module": "provider-openai", "config": {"default_model": "gpt-4o", "base_url": "http://a"}},
            {"module": "provider-openai", "id": "local", "config": {"base_url": "http://b", "default_model": "qwen"}},
            {"module": "provider-anthropic"}
        ])
    );
    assert_eq!(
        &child.to_value()["hooks"],
        &json!([{"module": "hooks-logging", "config": {"level": "info"}}, {"module": "hooks-extra"}])
    );
}

#[test]
fn maps_deep_merge_and_other_values_are_replaced() {
    let parent = plan(json!({
        "session": {"orchestrator": {"module": "loop-streaming", "config": {"max_iterations": 50, "stream": true}}},
        "model_role": ["general"],
        "provider_preferences": [{"provider": "openai", "model": "gpt-4o"}],
        "custom": {"list": [1, 2], "keep": 1}
    }));
    let overlay = json!({
        "session": {"orchestrator": {"config": {"max_iterations": 10}}},
        "model_role": "coding",
        "provider_preferences": [{"provider": "anthropic", "model": "claude-*"}],
        "custom": {"list": [3]}
    });
    let child = merge_for_spawn(&parent, &overlay, &Value::Null);
    assert_eq!(child.max_iterations(), 10);
    assert_eq!(child.orchestrator_config()["stream"], json!(true));
    assert_eq!(
        child.to_value()["session"]["orchestrator"]["module"],
        "loop-streaming"
    );
    assert_eq!(child.model_roles(), ["coding"]);
    assert_eq!(
        child.provider_preferences.as_ref().map(Parsed::raw),
        Some(&json!([{"provider": "anthropic", "model": "claude-*"}]))
    );
    assert_eq!(
        child.provider_preferences(),
        Ok(&[ProviderPreference::new("anthropic", "claude-*")][..])
    );
    assert_eq!(
        child.extra.get("custom").unwrap(),
        &json!({"list": [3], "keep": 1})
    );
}

#[test]
fn agents_none_gives_no_agents() {
    for parent_agents in [json!("all"), json!(["a", "b"]), Value::Null] {
        let mut p = json!({});
        if !parent_agents.is_null() {
            p["agents"] = parent_agents;
        }
        let child = merge_for_spawn(&plan(p), &json!({"agents": "none"}), &Value::Null);
        assert_eq!(
            child.agents().map(AgentAccess::to_value),
            Some(json!("none"))
        );
    }
}

#[test]
fn agents_list_filters_the_parents_agents() {
    // Parent `all` (or no `agents`, which means all): the result is the list.
    let child = merge_for_spawn(
        &plan(json!({"agents": "all"})),
        &json!({"agents": ["reviewer"]}),
        &Value::Null,
    );
    assert_eq!(
        child.agents().map(AgentAccess::to_value),
        Some(json!(["reviewer"]))
    );
    let child = merge_for_spawn(
        &plan(json!({})),
        &json!({"agents": ["reviewer"]}),
        &Value::Null,
    );
    assert_eq!(
        child.agents().map(AgentAccess::to_value),
        Some(json!(["reviewer"]))
    );
    // Parent list: intersection, never widened.
    let child = merge_for_spawn(
        &plan(json!({"agents": ["explorer", "reviewer"]})),
        &json!({"agents": ["reviewer", "ghost"]}),
        &Value::Null,
    );
    assert_eq!(
        child.agents().map(AgentAccess::to_value),
        Some(json!(["reviewer"]))
    );
    // Parent none stays none.
    let child = merge_for_spawn(
        &plan(json!({"agents": "none"})),
        &json!({"agents": ["reviewer"]}),
        &Value::Null,
    );
    assert_eq!(
        child.agents().map(AgentAccess::to_value),
        Some(json!("none"))
    );
    // Amplifier roster: filtered, `ns:name` matching the bare name.
    let child = merge_for_spawn(
        &plan(json!({"agents": {"include": ["foundation:explorer", "foundation:git-ops"]}})),
        &json!({"agents": ["explorer"]}),
        &Value::Null,
    );
    assert_eq!(
        child.agents().map(AgentAccess::to_value),
        Some(json!({"include": ["foundation:explorer"]}))
    );
}

#[test]
fn agents_all_or_absent_inherits() {
    let parent = plan(json!({"agents": ["explorer"]}));
    let child = merge_for_spawn(&parent, &json!({"agents": "all"}), &Value::Null);
    assert_eq!(
        child.agents().map(AgentAccess::to_value),
        Some(json!(["explorer"]))
    );
    let child = merge_for_spawn(&parent, &json!({}), &Value::Null);
    assert_eq!(
        child.agents().map(AgentAccess::to_value),
        Some(json!(["explorer"]))
    );
    let child = merge_for_spawn(&plan(json!({})), &json!({"agents": "all"}), &Value::Null);
    assert_eq!(child.agents(), None);
}

#[test]
fn the_agents_instruction_becomes_the_childs() {
    let parent = plan(json!({"instruction": "You are the root.", "tools": ["tool-task"]}));
    let overlay = json!({"meta": {"name": "reviewer"}, "instruction": "You review."});
    let child = merge_for_spawn(&parent, &overlay, &Value::Null);
    assert_eq!(child.instruction(), "You review.");
    assert_eq!(child.extra.get("meta").unwrap()["name"], "reviewer");
    assert_eq!(parent.instruction(), "You are the root.");
}

#[test]
fn an_agents_approvals_stay_out_of_the_plan() {
    let parent = plan(json!({"approvals": {"bash": "deny"}}));
    let overlay = json!({"approvals": {"bash": "allow", "grep": "deny"}});
    let child = merge_for_spawn(&parent, &overlay, &Value::Null);
    assert_eq!(
        child.approvals.as_ref().map(Parsed::raw),
        Some(&json!({"bash": "deny"}))
    );
    let root = merge_for_spawn(&plan(json!({})), &overlay, &Value::Null);
    assert_eq!(root.approvals.as_ref().map(Parsed::raw), None);
}

#[test]
fn the_parent_is_never_modified() {
    let parent = plan(json!({
        "tools": ["tool-task", "tool-search"],
        "spawn": {"exclude_tools": ["tool-task"]},
        "agents": "all"
    }));
    let before = parent.clone();
    let _ = merge_for_spawn(
        &parent,
        &json!({"tools": ["tool-x"], "agents": "none"}),
        &json!({"tools": []}),
    );
    assert_eq!(parent, before);
}

#[test]
fn non_list_spawn_tools_disables_exclude_tools() {
    let plan = json!({"tools": [{"module": "a"}, {"module": "b"}]});
    let out = apply_spawn_tool_policy(&plan, &json!({"tools": "inherit", "exclude_tools": ["a"]}));
    assert_eq!(out, plan);
}

#[test]
fn agent_access_over_an_inline_definitions_map_is_normalized() {
    let parent = json!({"explorer": {"description": "E"}, "builder": {"description": "B"}});
    assert_eq!(
        filter_agents(Some(&parent), Some(&json!("none"))),
        Some(json!("none"))
    );
    // A list names exactly those agents, whether or not the map defines them: the map
    // only adds definitions to the live registry.
    assert_eq!(
        filter_agents(Some(&parent), Some(&json!(["explorer", "sibling"]))),
        Some(json!(["explorer", "sibling"]))
    );
    assert_eq!(filter_agents(Some(&parent), None), Some(parent.clone()));
}
