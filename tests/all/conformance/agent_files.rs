//! `amplifier-agent-files.yaml` onto `arbor::agent` (SPEC §3).
//!
//! Mapping (Python → arbor):
//! - `foundation.io.parse_frontmatter(text)` → [`frontmatter::split`] then
//!   [`file::parse_yaml`]; the result is `{frontmatter, body}` (null YAML → `{}`).
//! - `foundation._load_agent_file_metadata(path, fallback_name)` → [`file::parse_agent`]
//!   with the path and `fallback_name` as the file stem. An invalid agent is an error
//!   whose message is its issues (`path:line:col: reason`). A valid one is shown in
//!   Amplifier's agent-config shape: `name`, `description`, then the other `meta` keys,
//!   then the overlay's top-level keys (which win), `instruction` only when non-empty.
//!
//! Not mapped (listed as not applicable): `_parse_agents`, `Bundle.load_agent_metadata`
//! and `validate_agent_config`.

use std::path::Path;

use arbor::agent::AgentSource;
use arbor::agent::file::{self, AgentOrigin};
use arbor::agent::frontmatter;
use serde_json::{Map, Value, json};

use super::eval::{self, CallResult};

/// Runs one case; `None` when its function has no arbor mapping.
pub fn run(case: &Value) -> Option<Result<(), String>> {
    let call: fn(&Value) -> CallResult = match case.get("function").and_then(Value::as_str)? {
        "foundation.io.parse_frontmatter" => parse_frontmatter,
        "foundation._load_agent_file_metadata" => load_agent_file,
        _ => return None,
    };
    Some(eval::run_case(case, &[], &mut |input| call(input)))
}

fn str_arg<'a>(input: &'a Value, key: &str) -> &'a str {
    input.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn parse_frontmatter(input: &Value) -> CallResult {
    let fm = frontmatter::split(str_arg(input, "text")).map_err(|e| e.to_string())?;
    let yaml = file::parse_yaml(&fm.yaml, fm.yaml_line)
        .map_err(|(line, col, message)| format!("{line}:{col}: {message}"))?;
    let front = if yaml.is_null() { json!({}) } else { yaml };
    Ok(json!({"frontmatter": front, "body": fm.body}))
}

fn load_agent_file(input: &Value) -> CallResult {
    let path = Path::new(str_arg(input, "path"));
    let origin = AgentOrigin {
        path: Some(path),
        stem: str_arg(input, "fallback_name"),
        source: AgentSource::User,
        namespace: None,
    };
    let def = file::parse_agent(str_arg(input, "file_text"), &origin);
    if !def.is_valid() {
        let issues: Vec<String> = def.errors.iter().map(ToString::to_string).collect();
        return Err(issues.join("; "));
    }
    let mut out = Map::new();
    out.insert("name".into(), json!(def.name));
    out.insert("description".into(), json!(def.description));
    let overlay = def.overlay.as_object().cloned().unwrap_or_default();
    if let Some(meta) = overlay.get("meta").and_then(Value::as_object) {
        for (k, v) in meta {
            if k != "name" && k != "description" {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    for (k, v) in overlay {
        if k != "meta" {
            out.insert(k, v);
        }
    }
    Ok(Value::Object(out))
}
