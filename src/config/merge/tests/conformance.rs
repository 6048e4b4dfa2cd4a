//! Runs the Amplifier merge cases (`../shared/fixtures/peer-cases/amplifier-merge.yaml`)
//! that map onto this module's functions, with the file's check vocabulary.
//!
//! Mapped: `app_cli.merge_configs` → [`merge_configs`], `merge_module_lists`,
//! `deep_merge`, `apply_spawn_tool_policy` (with the plan's own `spawn`),
//! `_provider_key` → [`module_key`], `_filter_tools` → [`apply_spawn_tool_policy`]
//! (`inherit_tools` as `spawn.tools`) plus re-adding the agent's explicit tools.
//! Not mapped: `_apply_config_overrides_to_section` (settings overrides, not arbor's),
//! `spawn_sub_session.child_agents` (live mode registry), `foundation.dicts.*`
//! (a different function, contrast only).
//!
//! Deliberate deviations (arbor's `agents` values, see the module doc): the cases in
//! [`DEVIATIONS`] assert arbor's value instead.

use std::path::Path;

use serde_json::{Value, json};

use super::super::*;

/// Amplifier cases whose `agents` result differs on purpose, with arbor's value.
const DEVIATIONS: &[(&str, &str)] = &[
    (
        "merge_configs: agents list with parent lacking agents adds an empty agents dict",
        r#"{"session": {"orchestrator": "loop-basic"}, "agents": ["coder"]}"#,
    ),
    (
        "merge_configs: agents none with parent lacking agents adds an empty agents dict",
        r#"{"session": {"orchestrator": "loop-basic"}, "agents": "none"}"#,
    ),
];

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/fixtures/peer-cases/amplifier-merge.yaml"
);

/// Runs the mapped function of `case` on its input.
fn run(function: &str, input: &Value) -> Option<Value> {
    let arg = |k: &str| input.get(k).cloned().unwrap_or(Value::Null);
    Some(match function {
        "app_cli.merge_configs" => merge_configs(&arg("parent"), &arg("overlay")),
        "app_cli.merge_module_lists" => merge_module_lists(&arg("base"), &arg("overlay")),
        "app_cli.deep_merge" => deep_merge(&arg("base"), &arg("overlay")),
        "app_cli._provider_key" => Value::String(module_key(&arg("entry"))),
        "app_cli.apply_spawn_tool_policy" => {
            let parent = arg("parent");
            let spawn = parent.get("spawn").cloned().unwrap_or(Value::Null);
            apply_spawn_tool_policy(&parent, &spawn)
        }
        "app_cli._filter_tools" => {
            let config = arg("config");
            if config.get("tools").is_none() {
                return Some(config);
            }
            let inheritance = arg("tool_inheritance");
            let spawn = match inheritance.get("inherit_tools") {
                Some(list) => json!({"tools": list}),
                None => inheritance.clone(),
            };
            let mut out = apply_spawn_tool_policy(&config, &spawn);
            let explicit = arg("agent_explicit_tools");
            let original = config["tools"].as_array().cloned().unwrap_or_default();
            let kept: Vec<String> = out["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .map(module_key)
                .collect();
            for name in explicit
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if kept.iter().any(|k| k == name) {
                    continue;
                }
                if let Some(entry) = original.iter().find(|t| module_key(t) == name)
                    && let Some(list) = out["tools"].as_array_mut()
                {
                    list.push(entry.clone());
                }
            }
            out
        }
        _ => return None,
    })
}

/// Splits a check path (`a.b[0][*][k=v]`) into segments.
fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            '[' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                let inner: String = chars.by_ref().take_while(|c| *c != ']').collect();
                out.push(format!("[{inner}]"));
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn scalar_eq(v: &Value, text: &str) -> bool {
    match v {
        Value::String(s) => s == text,
        Value::Null => text == "null",
        other => *other == serde_json::from_str::<Value>(text).unwrap_or(Value::Null),
    }
}

/// Resolves `path` in `v`; `None` when it does not exist.
fn resolve(v: &Value, segs: &[String]) -> Option<Value> {
    let Some((first, rest)) = segs.split_first() else {
        return Some(v.clone());
    };
    if first == "[*]" {
        let items = v.as_array()?;
        return Some(Value::Array(
            items.iter().filter_map(|i| resolve(i, rest)).collect(),
        ));
    }
    let next = if let Some(inner) = first.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        if let Some((field, want)) = inner.split_once('=') {
            v.as_array()?.iter().find(|item| match item.get(field) {
                Some(x) => scalar_eq(x, want) || (want == "null" && x.is_null()),
                None => want == "null",
            })?
        } else {
            v.get(inner.parse::<usize>().ok()?)?
        }
    } else {
        v.get(first.as_str())?
    };
    resolve(next, rest)
}

fn set_path(v: &mut Value, path: &str, new: Value) {
    let segs = segments(path);
    let mut cur = v;
    for s in &segs {
        cur = match cur.get_mut(s.as_str()) {
            Some(next) => next,
            None => return,
        };
    }
    *cur = new;
}

fn as_set(v: &Value) -> Vec<String> {
    let mut items: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .map(Value::to_string)
        .collect();
    items.sort();
    items
}

/// Checks one `expected_checks` entry; `Err` names what failed.
fn check(result: &Value, c: &Value) -> Result<(), String> {
    let path = c.get("path").and_then(Value::as_str).unwrap_or_default();
    let got = resolve(result, &segments(path));
    let fail = || Err(format!("check {c} failed; got {got:?}"));
    let ok = if let Some(want) = c.get("equals") {
        got.as_ref() == Some(want)
    } else if let Some(n) = c.get("length") {
        let len = got.as_ref().and_then(|g| {
            g.as_array()
                .map(Vec::len)
                .or(g.as_object().map(|m| m.len()))
        });
        len.map(|l| l as u64) == n.as_u64()
    } else if let Some(item) = c.get("contains") {
        got.as_ref()
            .and_then(Value::as_array)
            .is_some_and(|a| a.contains(item))
    } else if let Some(item) = c.get("not_contains") {
        !got.as_ref()
            .and_then(Value::as_array)
            .is_some_and(|a| a.contains(item))
    } else if let Some(items) = c.get("contains_all") {
        let a = got
            .as_ref()
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        items
            .as_array()
            .into_iter()
            .flatten()
            .all(|i| a.contains(i))
    } else if let Some(items) = c.get("set_equals") {
        got.as_ref().map(as_set) == Some(as_set(items))
    } else if let Some(k) = c.get("has_key").and_then(Value::as_str) {
        got.as_ref().is_some_and(|g| g.get(k).is_some())
    } else if let Some(k) = c.get("lacks_key").and_then(Value::as_str) {
        got.as_ref()
            .is_some_and(|g| g.is_object() && g.get(k).is_none())
    } else if let Some(keys) = c.get("key_set") {
        let mut have: Vec<String> = got
            .as_ref()
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let mut want: Vec<String> = keys
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        have.sort();
        want.sort();
        got.as_ref().is_some_and(Value::is_object) && have == want
    } else if c.get("absent").is_some() {
        got.is_none()
    } else {
        return Err(format!("unknown check operator in {c}"));
    };
    if ok { Ok(()) } else { fail() }
}

/// Runs one case; `Ok(false)` when it is not mapped.
fn run_case(case: &Value) -> Result<bool, String> {
    let name = case["name"].as_str().unwrap_or_default();
    let function = case["function"].as_str().unwrap_or_default();
    let input = &case["input"];
    let calls = case
        .get("call_count")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1);
    let mut results = Vec::new();
    for _ in 0..calls {
        match run(function, input) {
            Some(r) => results.push(r),
            None => return Ok(false),
        }
    }
    if let Some((_, arbor)) = DEVIATIONS.iter().find(|(n, _)| *n == name) {
        let want: Value = serde_json::from_str(arbor).map_err(|e| e.to_string())?;
        return if results[0] == want {
            Ok(true)
        } else {
            Err(format!("deviation: got {}", results[0]))
        };
    }
    // Inputs are borrowed, so they cannot change; mutating one result must not show in
    // another (each call returns its own value).
    for step in case
        .get("then_mutate_result")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let idx = step.get("result").and_then(Value::as_u64).unwrap_or(0) as usize;
        if let (Some(path), Some(r)) = (step["path"].as_str(), results.get_mut(idx)) {
            set_path(r, path, step["set"].clone());
        }
    }
    for (arg, want) in case
        .get("expected_input_after_mutation")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if input.get(arg) != Some(want) {
            return Err(format!("input {arg} changed"));
        }
    }
    if let Some(want) = case.get("expected")
        && &results[0] != want
    {
        return Err(format!("expected {want}, got {}", results[0]));
    }
    if let Some(subset) = case.get("expected_subset").and_then(Value::as_object) {
        for (k, v) in subset {
            if results[0].get(k) != Some(v) {
                return Err(format!("subset key {k}: got {:?}", results[0].get(k)));
            }
        }
    }
    for c in case
        .get("expected_checks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let idx = c.get("result").and_then(Value::as_u64).unwrap_or(0) as usize;
        check(&results[idx.min(results.len() - 1)], c)?;
    }
    Ok(true)
}

#[test]
fn amplifier_merge_cases_pass() {
    if !Path::new(CASES).is_file() {
        println!("note: {CASES} is absent; skipping the Amplifier merge cases");
        return;
    }
    let text = std::fs::read_to_string(CASES).unwrap();
    let cases: Vec<Value> = serde_saphyr::from_str(&text).unwrap();
    let mut ran = 0;
    let mut failures = Vec::new();
    for case in &cases {
        match run_case(case) {
            Ok(true) => ran += 1,
            Ok(false) => {}
            Err(e) => failures.push(format!("{}: {e}", case["name"])),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran >= 70, "only {ran} cases mapped");
    println!("{ran} Amplifier merge cases passed");
}
