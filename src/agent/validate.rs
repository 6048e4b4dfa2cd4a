//! Validation rules for agent frontmatter (SPEC §3), shared with bundles.
//!
//! Owns: the type checks on plan keys (`agents`, `model_role`, module lists, transfer
//! flags, `approvals` through `config::approvals`, `budget` through `config::budget`,
//! `acp` through `config::acp_agent`), agent-name rules, "unavailable
//! module" and "unknown key" warnings, and finding a top-level key's line in the YAML
//! for error positions. Does not own: YAML parsing
//! or the frontmatter split (`agent::file`, `agent::frontmatter`).

use serde_json::{Map, Value};

use crate::config::approvals::Rules;
use crate::config::modules::{plan_tool_modules, provider_module_names};
use crate::config::mount_plan::module_name;

/// The modules a mount-plan list may name, per list (`tools`, `providers`, `hooks`), from
/// the tables of `config::modules` (`tool::mount` mounts exactly the `tools` rows,
/// `tool-mcp` through the engine, which starts its servers; its tests keep the two in
/// step). Anything else in a list is an "unavailable module" (loaded, reported, not
/// mounted); arbor runs no hook modules.
pub fn implemented_modules() -> [(&'static str, Vec<&'static str>); 3] {
    [
        ("tools", plan_tool_modules()),
        ("providers", provider_module_names()),
        ("hooks", Vec::new()),
    ]
}

/// Mount-plan keys an agent may set; when only `meta` has one, it is lifted to the top.
pub const PLAN_KEYS: &[&str] = &[
    "model_role",
    "provider_preferences",
    "tools",
    "providers",
    "hooks",
    "session",
    "spawn",
    "agents",
];

/// Every top-level frontmatter key arbor knows; others are kept with a warning.
const KNOWN_KEYS: &[&str] = &[
    "meta",
    "instruction",
    "model_role",
    "provider_preferences",
    "tools",
    "providers",
    "hooks",
    "session",
    "spawn",
    "agents",
    "sub_agents",
    "disallow_transfer_to_parent",
    "disallow_transfer_to_peers",
    "approvals",
    "budget",
    "isolation",
    "remote",
    "acp",
];

/// A short description of a JSON value's type for messages: `a list`, `42`, `null`, ….
pub fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("'{s}'"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

/// Why `name` cannot be an agent name, or `None` when it can. Names become file and
/// session-path components, so separators, `:` (namespace), whitespace and a leading
/// `.` are refused.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("must not be empty");
    }
    if name.starts_with('.') {
        return Some("must not start with '.'");
    }
    let ok = name
        .chars()
        .all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == '.');
    if ok {
        None
    } else {
        Some("may only contain letters, digits, '-', '_' and '.'")
    }
}

/// The problem with an `agents:` value in an agent file, if any: it must be `all`,
/// `none` or a list of names (a roster mapping is accepted and ignored, see warnings).
pub fn agents_problem(v: &Value) -> Option<String> {
    let expected = "agents: expected all, none or a list of names";
    match v {
        Value::String(s) if s == "all" || s == "none" => None,
        Value::Array(items) => items
            .iter()
            .find(|i| !i.is_string())
            .map(|bad| format!("{expected}, got a list containing {}", kind(bad))),
        Value::Object(_) => None,
        other => Some(format!("{expected}, got {}", kind(other))),
    }
}

/// Type problems in a normalized frontmatter map, as `(top-level key, message)`.
pub fn check_keys(front: &Map<String, Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (key, v) in front {
        let expected = match key.as_str() {
            "meta" | "session" | "spawn" if !v.is_object() => Some("a mapping"),
            "model_role" => {
                let ok = v.is_string()
                    || v.as_array()
                        .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string));
                (!ok).then_some("a role name or a list of role names")
            }
            "provider_preferences" => {
                (!v.as_array().is_some_and(|a| a.iter().all(Value::is_object)))
                    .then_some("a list of {provider, model} mappings")
            }
            "tools" | "providers" | "hooks" if !v.is_array() => Some("a list of modules"),
            "sub_agents" => (!v.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
                .then_some("a list of agent names"),
            "disallow_transfer_to_parent" | "disallow_transfer_to_peers" if !v.is_boolean() => {
                Some("true or false")
            }
            "instruction" if !v.is_string() => Some("text"),
            "agents" => {
                if let Some(message) = agents_problem(v) {
                    out.push((key.clone(), message));
                }
                None
            }
            "budget" => {
                if let Err(message) = crate::config::budget::Budget::parse(Some(v)) {
                    out.push((key.clone(), message.to_string()));
                }
                None
            }
            "isolation" => {
                if let Err(e) = crate::config::isolation::IsolationSetting::parse(Some(v)) {
                    out.push((key.clone(), e.to_string()));
                }
                None
            }
            "remote" => {
                if let Err(e) = crate::config::remote::parse(Some(v)) {
                    out.push((key.clone(), e.to_string()));
                }
                None
            }
            "acp" => {
                if let Err(e) = crate::config::acp_agent::AcpAgentSpec::parse(Some(v)) {
                    out.push((key.clone(), e.to_string()));
                }
                None
            }
            "approvals" => {
                if let Err(issues) = Rules::from_value(v) {
                    out.extend(issues.into_iter().map(|i| (key.clone(), i.0)));
                }
                None
            }
            _ => None,
        };
        if let Some(expected) = expected {
            out.push((
                key.clone(),
                format!("{key}: expected {expected}, got {}", kind(v)),
            ));
        }
    }
    out
}

/// Warnings for a normalized frontmatter map: unavailable modules, ignored entries,
/// a roster-shaped `agents:` mapping, `approvals:` keys naming no known tool or module,
/// unknown top-level keys (kept).
pub fn warnings(front: &Map<String, Value>) -> Vec<String> {
    let mut out = module_warnings(front);
    if let Some(Ok(rules)) = front.get("approvals").map(Rules::from_value) {
        out.extend(rules.warnings());
    }
    if front.get("agents").is_some_and(Value::is_object) {
        out.push("agents: a roster mapping is ignored in agent files (the parent's agents are inherited)".into());
    }
    for key in front.keys() {
        if !KNOWN_KEYS.contains(&key.as_str()) {
            out.push(format!("unknown key '{key}' kept"));
        }
    }
    out
}

/// "unavailable module X" for every `tools`/`providers`/`hooks` entry arbor does not
/// implement, and a note for entries that are neither a name nor `{module: …}`.
pub fn module_warnings(front: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (list, implemented) in implemented_modules() {
        let Some(items) = front.get(list).and_then(Value::as_array) else {
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            match module_name(item) {
                Some(m) if implemented.contains(&m) => {}
                Some(m) => out.push(format!("unavailable module {m}")),
                None => out.push(format!(
                    "{list}[{i}]: ignored entry (expected a module name or {{module: …}})"
                )),
            }
        }
    }
    out
}

/// The file position (1-based line, column) of top-level `key` in frontmatter `yaml`
/// whose first line is file line `yaml_line`: the value's column when it sits on the
/// key's line, else the key's. Falls back to `meta:`, then to the first YAML line.
pub fn key_position(yaml: &str, yaml_line: usize, key: &str) -> (usize, usize) {
    let find = |key: &str| {
        yaml.lines().enumerate().find_map(|(i, line)| {
            let rest = line.strip_prefix(key)?.strip_prefix(':')?;
            if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
                return None;
            }
            let value_at = rest.len() - rest.trim_start().len();
            let column = if rest.trim().is_empty() || rest.trim_start().starts_with('#') {
                1
            } else {
                key.chars().count() + 2 + value_at
            };
            Some((yaml_line + i, column))
        })
    };
    find(key).or_else(|| find("meta")).unwrap_or((yaml_line, 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agents_values() {
        assert_eq!(agents_problem(&json!("all")), None);
        assert_eq!(agents_problem(&json!("none")), None);
        assert_eq!(agents_problem(&json!(["a", "b"])), None);
        assert_eq!(
            agents_problem(&json!("maybe")).unwrap(),
            "agents: expected all, none or a list of names, got 'maybe'"
        );
        assert!(agents_problem(&json!(42)).unwrap().ends_with("got 42"));
        assert!(agents_problem(&Value::Null).unwrap().ends_with("got null"));
        assert!(agents_problem(&json!(["a", 1])).is_some());
    }

    #[test]
    fn remote_is_a_known_boolean_key() {
        let good = json!({"remote": true});
        assert!(check_keys(good.as_object().unwrap()).is_empty());
        assert!(warnings(good.as_object().unwrap()).is_empty());
        let bad = json!({"remote": "yes"});
        assert_eq!(
            check_keys(bad.as_object().unwrap()),
            [(
                "remote".to_string(),
                "remote: expected true or false, got 'yes'".to_string()
            )]
        );
    }

    #[test]
    fn names() {
        assert_eq!(name_problem("zen-architect"), None);
        assert_eq!(name_problem("v1.2_x"), None);
        assert!(name_problem("").is_some());
        assert!(name_problem("../x").is_some());
        assert!(name_problem("ns:name").is_some());
        assert!(name_problem("two words").is_some());
    }

    #[test]
    fn key_positions_point_at_the_value() {
        let yaml = "meta:\n  name: a\nagents: maybe\ntools:\n  - x\n";
        assert_eq!(key_position(yaml, 2, "agents"), (4, 9));
        assert_eq!(key_position(yaml, 2, "tools"), (5, 1));
        assert_eq!(key_position(yaml, 2, "missing"), (2, 1));
        assert_eq!(key_position("x: 1\n", 2, "missing"), (2, 1));
    }

    #[test]
    fn warns_about_unavailable_modules_and_unknown_keys() {
        let front = json!({
            "tools": [{"module": "tool-filesystem"}, "tool-lsp", 3],
            "providers": [{"module": "provider-openai"}, {"module": "provider-gemini"}],
            "custom": 1
        });
        let w = warnings(front.as_object().unwrap());
        assert!(w.contains(&"unavailable module tool-lsp".to_string()));
        assert!(w.contains(&"unavailable module provider-gemini".to_string()));
        assert!(!w.iter().any(|m| m.contains("tool-filesystem")));
        assert!(w.iter().any(|m| m.starts_with("tools[2]")));
        assert!(w.contains(&"unknown key 'custom' kept".to_string()));
    }

    #[test]
    fn type_checks() {
        let front = json!({
            "model_role": 3, "tools": "x", "sub_agents": ["a"], "disallow_transfer_to_parent": "no",
            "spawn": {"exclude_tools": []}, "approvals": {"bash": "maybe", "grep": "allow"}
        });
        let problems = check_keys(front.as_object().unwrap());
        let keys: Vec<_> = problems.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "model_role",
                "tools",
                "disallow_transfer_to_parent",
                "approvals"
            ]
        );
        assert_eq!(
            problems[3].1,
            "approvals: \"bash\": expected allow, ask or deny, got 'maybe'"
        );
        let budget = json!({"budget": {"tokens": "lots"}});
        let problems = check_keys(budget.as_object().unwrap());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].1.contains("budget.tokens"), "{problems:?}");
        assert!(check_keys(json!({"budget": {"tokens": 10}}).as_object().unwrap()).is_empty());
        let fine = json!({"approvals": {"bash": "deny"}});
        assert!(check_keys(fine.as_object().unwrap()).is_empty());
        assert!(
            warnings(fine.as_object().unwrap()).is_empty(),
            "a known key"
        );
    }
}
