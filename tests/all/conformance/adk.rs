//! `adk-selection.yaml` onto `arbor::agent::{tree, select}` (SPEC §11).
//!
//! Mapping (Python → arbor): `find_agent_to_run` → [`select::find_agent_to_run`]
//! (result `{agent}`), `is_transferable_across_agent_tree` →
//! [`AgentTree::is_transferable_across_agent_tree`] (a bool),
//! `find_matching_function_call` → [`select::find_matching_function_call`] (the event's
//! index or null). A case's `tree` becomes an [`AgentTree`] (`kind: non_llm` → an agent
//! without transfer); `history` plus `new_message` (appended with author `user`, as
//! Python does) become [`RouteEvent`]s.
//!
//! Expectations: the top-level `expected` (all implementations agree) through the
//! common vocabulary, and always `expected_by_impl.python_2026_router` (SPEC §11: the
//! 2.x router is normative). A case whose router value is `not_applicable` has no
//! arbor counterpart (`None`).

use arbor::agent::select::{self, RouteEvent};
use arbor::agent::tree::{AgentTree, TreeAgent};
use serde_json::{Value, json};

use super::eval::{self, CallResult};

/// The implementation whose values arbor follows.
const IMPL: &str = "python_2026_router";

/// Runs one case; `None` when its function has no arbor mapping or the router's value
/// is `not_applicable`.
pub fn run(case: &Value) -> Option<Result<(), String>> {
    let function = case.get("function").and_then(Value::as_str)?;
    let call: fn(&Value) -> CallResult = match function {
        "find_agent_to_run" => find_agent_to_run,
        "is_transferable_across_agent_tree" => is_transferable,
        "find_matching_function_call" => matching_call,
        _ => return None,
    };
    let by_impl = case.get("expected_by_impl").and_then(|m| m.get(IMPL));
    if by_impl.and_then(Value::as_str) == Some("not_applicable") {
        return None;
    }
    if by_impl.is_none() && case.get("expected").is_none() {
        return Some(Err(format!("neither expected nor expected_by_impl.{IMPL}")));
    }
    let mut results = Vec::new();
    let outcome = eval::run_case(case, &["expected_by_impl", "basis_by_impl"], &mut |input| {
        let r = call(input);
        results.push(r.clone());
        r
    });
    if let Err(e) = outcome {
        return Some(Err(e));
    }
    let Some(want) = by_impl else {
        return Some(Ok(()));
    };
    let got = match results.first() {
        Some(Ok(v)) if function == "find_agent_to_run" => v.get("agent").cloned(),
        Some(Ok(v)) => Some(v.clone()),
        Some(Err(e)) => return Some(Err(format!("unexpected error: {e}"))),
        None => None,
    };
    Some(if got.as_ref() == Some(want) {
        Ok(())
    } else {
        Err(format!(
            "{IMPL}: expected {want}\n      got {}",
            got.unwrap_or(Value::Null)
        ))
    })
}

fn find_agent_to_run(input: &Value) -> CallResult {
    let tree = tree(&input["tree"])?;
    let mut events: Vec<RouteEvent> = eval::list(input.get("history")).map(event).collect();
    if let Some(msg) = input.get("new_message").filter(|m| !m.is_null()) {
        let mut e = event(msg);
        e.author = select::USER.into();
        events.push(e);
    }
    let resumable = input.get("resumable").and_then(Value::as_bool) == Some(true);
    Ok(json!({"agent": select::find_agent_to_run(&tree, &events, resumable)}))
}

fn is_transferable(input: &Value) -> CallResult {
    let tree = tree(&input["tree"])?;
    let name = input["agent"].as_str().ok_or("agent: expected a name")?;
    let index = tree
        .find(name)
        .ok_or_else(|| format!("no agent '{name}'"))?;
    Ok(json!(tree.is_transferable_across_agent_tree(index)))
}

fn matching_call(input: &Value) -> CallResult {
    let events: Vec<RouteEvent> = eval::list(input.get("events")).map(event).collect();
    let refs: Vec<&RouteEvent> = events.iter().collect();
    Ok(json!(select::find_matching_function_call(&refs)))
}

/// A case tree (`{name, kind, disallow_transfer_to_parent?, disallow_transfer_to_peers?,
/// mode?, sub_agents?}`) as an [`AgentTree`].
fn tree(spec: &Value) -> Result<AgentTree, String> {
    let mut tree = AgentTree::new(node(spec)?);
    add_children(&mut tree, 0, spec)?;
    Ok(tree)
}

fn add_children(tree: &mut AgentTree, parent: usize, spec: &Value) -> Result<(), String> {
    for child in eval::list(spec.get("sub_agents")) {
        let index = tree
            .add(parent, node(child)?)
            .ok_or_else(|| format!("duplicate agent in tree: {child}"))?;
        add_children(tree, index, child)?;
    }
    Ok(())
}

fn node(spec: &Value) -> Result<TreeAgent, String> {
    let name = spec["name"].as_str().ok_or("tree agent without a name")?;
    let flag = |k: &str| spec.get(k).and_then(Value::as_bool) == Some(true);
    Ok(TreeAgent {
        llm: spec.get("kind").and_then(Value::as_str) != Some("non_llm"),
        disallow_transfer_to_parent: flag("disallow_transfer_to_parent"),
        disallow_transfer_to_peers: flag("disallow_transfer_to_peers"),
        mode: spec.get("mode").and_then(Value::as_str).map(str::to_string),
        ..TreeAgent::new(name)
    })
}

/// A case event (`{author, text?, function_calls?, function_responses?, invocation_id?,
/// actions?, error_code?}`) as a [`RouteEvent`].
fn event(spec: &Value) -> RouteEvent {
    let ids = |key: &str| -> Vec<String> {
        eval::list(spec.get(key))
            .filter_map(|c| c.get("id").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    };
    let text = |key: &str| spec.get(key).and_then(Value::as_str).map(str::to_string);
    let actions = spec.get("actions");
    let action = |key: &str| {
        actions
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let function_calls = ids("function_calls");
    let function_responses = ids("function_responses");
    RouteEvent {
        author: text("author").unwrap_or_default(),
        has_content: spec.get("text").is_some_and(|t| !t.is_null())
            || !function_calls.is_empty()
            || !function_responses.is_empty(),
        function_calls,
        function_responses,
        invocation_id: text("invocation_id"),
        transfer_to_agent: action("transfer_to_agent"),
        rewind_before_invocation_id: action("rewind_before_invocation_id"),
        agent_state_change: actions.is_some_and(|a| {
            a.get("end_of_agent").and_then(Value::as_bool) == Some(true)
                || a.get("agent_state").is_some_and(|s| !s.is_null())
        }),
        error_code: text("error_code"),
    }
}
