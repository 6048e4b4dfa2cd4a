//! The peer-cases check vocabulary (`../shared/fixtures/peer-cases/README.md`, "Case
//! format"), independent of which function a case calls.
//!
//! Owns: running a case's call(s) through a caller-supplied function, the mutation
//! isolation steps, and every expectation key (`expected`, `expected_subset`,
//! `expected_checks` with all path forms and operators, `expected_error`). Does not own:
//! mapping a Python function onto arbor (the per-file runners) or the deviations list.

use serde_json::{Map, Value};

/// What calling a case's function produced: a result, or an error message.
pub type CallResult = Result<Value, String>;

/// Case keys that carry no expectation.
const DESCRIPTIVE_KEYS: &[&str] = &["name", "function", "source", "notes", "derived_from_code"];

/// Expectation keys this module checks.
const CHECKED_KEYS: &[&str] = &[
    "input",
    "call_count",
    "expected",
    "expected_subset",
    "expected_checks",
    "expected_error",
    "then_mutate_result",
    "expected_input_after_mutation",
    "expected_inputs_unchanged",
];

thread_local! {
    static IGNORE_UNKNOWN_KEYS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with unknown case keys ignored instead of failing the case (extra cases:
/// "ignore keys you do not use"). Per thread, so other tests keep the strict check.
pub fn ignoring_unknown_keys<R>(f: impl FnOnce() -> R) -> R {
    IGNORE_UNKNOWN_KEYS.with(|c| c.set(true));
    let r = f();
    IGNORE_UNKNOWN_KEYS.with(|c| c.set(false));
    r
}

/// Runs `case` with `call` (called `call_count` times, default once) and checks every
/// expectation key. Keys in `extra_keys` are the caller's to check; any other unknown
/// key fails the case, so no expectation is silently skipped. `Err` says what failed.
pub fn run_case(
    case: &Value,
    extra_keys: &[&str],
    call: &mut dyn FnMut(&Value) -> CallResult,
) -> Result<(), String> {
    if let Some(map) = case
        .as_object()
        .filter(|_| !IGNORE_UNKNOWN_KEYS.with(std::cell::Cell::get))
    {
        for key in map.keys() {
            let k = key.as_str();
            if !DESCRIPTIVE_KEYS.contains(&k)
                && !CHECKED_KEYS.contains(&k)
                && !extra_keys.contains(&k)
            {
                return Err(format!("unknown case key '{k}'"));
            }
        }
    }
    let input = case
        .get("input")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    let before = input.clone();
    let calls = case
        .get("call_count")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1);
    let mut outcomes: Vec<CallResult> = (0..calls).map(|_| call(&input)).collect();
    if input != before
        && case
            .get("expected_inputs_unchanged")
            .and_then(Value::as_bool)
            == Some(true)
    {
        return Err("the call changed its inputs".into());
    }

    if let Some(want) = case.get("expected_error") {
        return match &outcomes[0] {
            Ok(v) => Err(format!("expected an error, got {v}")),
            Err(message) => check_error(message, want),
        };
    }
    let mut results = Vec::with_capacity(outcomes.len());
    for outcome in outcomes.drain(..) {
        results.push(outcome.map_err(|e| format!("unexpected error: {e}"))?);
    }

    for step in list(case.get("then_mutate_result")) {
        let idx = index_of(step, results.len());
        let path = step.get("path").and_then(Value::as_str).unwrap_or_default();
        let new = step.get("set").cloned().unwrap_or(Value::Null);
        if !set_path(&mut results[idx], path, new) {
            return Err(format!("mutation path '{path}' not found in the result"));
        }
    }
    if let Some(want) = case
        .get("expected_input_after_mutation")
        .and_then(Value::as_object)
    {
        for (arg, value) in want {
            if input.get(arg) != Some(value) {
                return Err(format!("input '{arg}' changed after mutating the result"));
            }
        }
    }

    if let Some(want) = case.get("expected")
        && &results[0] != want
    {
        return Err(format!("expected {want}\n      got {}", results[0]));
    }
    if let Some(subset) = case.get("expected_subset") {
        check_subset(&results[0], subset)?;
    }
    for check in list(case.get("expected_checks")) {
        let idx = index_of(check, results.len());
        check_one(&results[idx], check)?;
    }
    Ok(())
}

/// The items of an optional list value.
pub fn list(v: Option<&Value>) -> impl Iterator<Item = &Value> {
    v.and_then(Value::as_array).into_iter().flatten()
}

/// `result: n` of a step or check, clamped to the calls made.
fn index_of(step: &Value, len: usize) -> usize {
    let idx = step.get("result").and_then(Value::as_u64).unwrap_or(0) as usize;
    idx.min(len.saturating_sub(1))
}

/// `expected_subset`: every key given is present with an equal value.
pub fn check_subset(got: &Value, subset: &Value) -> Result<(), String> {
    for (key, want) in subset.as_object().into_iter().flatten() {
        match got.get(key) {
            Some(v) if v == want => {}
            other => {
                return Err(format!(
                    "subset key '{key}': expected {want}, got {other:?}"
                ));
            }
        }
    }
    Ok(())
}

/// `expected_error`: the message holds every `contains` item and matches `regex`. The
/// Python exception `type` and the informational `message_from_code` are not compared.
fn check_error(message: &str, want: &Value) -> Result<(), String> {
    for part in list(want.get("contains")).filter_map(Value::as_str) {
        if !message.contains(part) {
            return Err(format!("error {message:?} lacks {part:?}"));
        }
    }
    if let Some(re) = want.get("regex").and_then(Value::as_str) {
        let re = regex::Regex::new(re).map_err(|e| format!("bad regex in case: {e}"))?;
        if !re.is_match(message) {
            return Err(format!("error {message:?} does not match /{re}/"));
        }
    }
    Ok(())
}

/// Splits a check path (`a.b[0][*][k=v]`) into segments; bracket segments keep their
/// brackets, so dots inside `[k=v]` stay in the value.
fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '.' | '[' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if c == '[' {
                    let inner: String = chars.by_ref().take_while(|c| *c != ']').collect();
                    out.push(format!("[{inner}]"));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether `v` equals the literal `text` of a `[field=value]` selector.
fn selector_eq(v: &Value, text: &str) -> bool {
    match v {
        Value::String(s) => s == text,
        Value::Null => text == "null",
        other => serde_json::from_str::<Value>(text).is_ok_and(|t| t == *other),
    }
}

/// The value at `segs` in `v`; `None` when the path does not exist.
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
    let next = match first.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        Some(inner) => match inner.split_once('=') {
            Some((field, want)) => v.as_array()?.iter().find(|item| match item.get(field) {
                Some(x) => selector_eq(x, want),
                None => want == "null",
            })?,
            None => v.get(inner.parse::<usize>().ok()?)?,
        },
        None => v.as_object()?.get(first.as_str())?,
    };
    resolve(next, rest)
}

/// Sets the value at `path` (keys and indices only); false when it does not exist.
fn set_path(v: &mut Value, path: &str, new: Value) -> bool {
    let mut cur = v;
    for seg in segments(path) {
        let next = match seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            Some(i) => i.parse::<usize>().ok().and_then(|i| cur.get_mut(i)),
            None => cur.get_mut(seg.as_str()),
        };
        match next {
            Some(n) => cur = n,
            None => return false,
        }
    }
    *cur = new;
    true
}

/// Sorted JSON texts of a list's items (order-insensitive comparison).
fn sorted_texts(v: &Value) -> Option<Vec<String>> {
    let mut items: Vec<String> = v.as_array()?.iter().map(Value::to_string).collect();
    items.sort();
    Some(items)
}

/// Sorted key names of a mapping, or of a list of strings.
fn key_names(v: &Value) -> Option<Vec<String>> {
    let mut keys: Vec<String> = match v {
        Value::Object(m) => m.keys().cloned().collect(),
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => return None,
    };
    keys.sort();
    Some(keys)
}

/// Whether a list/string/mapping `container` holds `item` (element, substring, key).
fn holds(container: &Value, item: &Value) -> bool {
    match (container, item) {
        (Value::Array(a), _) => a.contains(item),
        (Value::String(s), Value::String(part)) => s.contains(part.as_str()),
        (Value::Object(m), Value::String(key)) => m.contains_key(key),
        _ => false,
    }
}

/// The string at the path, for string operators.
fn text(got: &Option<Value>) -> Option<&str> {
    got.as_ref().and_then(Value::as_str)
}

/// One `expected_checks` entry against `result`.
fn check_one(result: &Value, c: &Value) -> Result<(), String> {
    let path = c.get("path").and_then(Value::as_str).unwrap_or_default();
    let got = resolve(result, &segments(path));
    let ops: Vec<(&String, &Value)> = c
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !matches!(k.as_str(), "path" | "result" | "note" | "notes"))
        .collect();
    if ops.is_empty() {
        return Err(format!("check without operator: {c}"));
    }
    for (op, arg) in ops {
        let ok = match op.as_str() {
            "equals" => got.as_ref() == Some(arg),
            "not_equals" => got.as_ref() != Some(arg),
            "length" => {
                let len = got.as_ref().and_then(|g| match g {
                    Value::Array(a) => Some(a.len()),
                    Value::Object(m) => Some(m.len()),
                    Value::String(s) => Some(s.chars().count()),
                    _ => None,
                });
                len.map(|l| l as u64) == arg.as_u64()
            }
            "contains" => got.as_ref().is_some_and(|g| holds(g, arg)),
            "not_contains" => !got.as_ref().is_some_and(|g| holds(g, arg)),
            "contains_all" => got
                .as_ref()
                .is_some_and(|g| list(Some(arg)).all(|item| holds(g, item))),
            "set_equals" => got.as_ref().and_then(sorted_texts) == sorted_texts(arg),
            "has_key" => got
                .as_ref()
                .and_then(Value::as_object)
                .is_some_and(|m| arg.as_str().is_some_and(|k| m.contains_key(k))),
            "lacks_key" => got
                .as_ref()
                .and_then(Value::as_object)
                .is_some_and(|m| arg.as_str().is_some_and(|k| !m.contains_key(k))),
            "key_set" => {
                got.as_ref().is_some_and(Value::is_object)
                    && got.as_ref().and_then(key_names) == key_names(arg)
            }
            "absent" => got.is_none() == arg.as_bool().unwrap_or(true),
            "starts_with" => str_op(&got, arg, |s, a| s.starts_with(a)),
            "not_starts_with" => !str_op(&got, arg, |s, a| s.starts_with(a)),
            "ends_with" => str_op(&got, arg, |s, a| s.ends_with(a)),
            "contains_substring" => str_op(&got, arg, |s, a| s.contains(a)),
            "not_contains_substring" => !str_op(&got, arg, |s, a| s.contains(a)),
            "stripped_equals" => str_op(&got, arg, |s, a| s.trim() == a),
            "matches" => {
                let re = arg.as_str().unwrap_or_default();
                let re = regex::Regex::new(&format!("^(?:{re})$"))
                    .map_err(|e| format!("bad regex in case: {e}"))?;
                text(&got).is_some_and(|s| re.is_match(s))
            }
            "any_item_contains" => any_item(&got, arg, false),
            "any_item_contains_ci" => any_item(&got, arg, true),
            "distinct_child_spans" => {
                let spans: std::collections::HashSet<&str> = list(got.as_ref())
                    .filter_map(Value::as_str)
                    .filter_map(|id| id.get(17..33))
                    .collect();
                Some(spans.len() as u64) == arg.as_u64()
            }
            other => return Err(format!("unknown check operator '{other}'")),
        };
        if !ok {
            return Err(format!("check {c} failed; got {}", shown(&got)));
        }
    }
    Ok(())
}

/// A string operator; false when the path is missing or not a string.
fn str_op(got: &Option<Value>, arg: &Value, f: impl Fn(&str, &str) -> bool) -> bool {
    match (text(got), arg.as_str()) {
        (Some(s), Some(a)) => f(s, a),
        _ => false,
    }
}

/// Some item of the list at the path (as text) contains `arg`.
fn any_item(got: &Option<Value>, arg: &Value, ci: bool) -> bool {
    let norm = |s: &str| if ci { s.to_lowercase() } else { s.to_string() };
    let want = norm(arg.as_str().unwrap_or_default());
    list(got.as_ref()).any(|item| {
        let s = match item {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        norm(&s).contains(&want)
    })
}

fn shown(got: &Option<Value>) -> String {
    match got {
        Some(v) => v.to_string(),
        None => "<absent>".into(),
    }
}
