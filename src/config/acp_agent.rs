//! Agent frontmatter `acp:` (issue 37 item 3): an agent file that names an external
//! ACP agent instead of a model. A `task` to it (or a root opened with it) runs that
//! agent's process as the sub-session's engine, arbor being its ACP client.
//!
//! ```yaml
//! acp:
//!   command: codex-acp          # required: the program (a path, or a name on PATH)
//!   args: ["--flag"]            # optional: its arguments
//!   env: {CODEX_HOME: /x}       # optional: variables set for it (values as text)
//!   auth: openai-api-key        # optional: the `authMethods` id to `authenticate` with
//! ```
//!
//! Owns: the shape and spelling of that key ([`AcpAgentSpec`]) and reading it from an
//! agent overlay ([`AcpAgentSpec::of_overlay`]); a bad value is an agent error naming
//! the key, so a typo never silently runs the agent on arbor's own model. Does not
//! own: starting or speaking to the process (`acp_client`), running its turns
//! (`engine::hosted`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::approvals::describe;

/// Frontmatter `acp:`: the external ACP agent a session of this agent runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AcpAgentSpec {
    /// `command:` the program to start (looked up on `PATH` when it has no `/`).
    pub command: String,
    /// `args:` its arguments, in order.
    pub args: Vec<String>,
    /// `env:` variables added to the environment arbor starts it with.
    pub env: BTreeMap<String, String>,
    /// `auth:` the id of the agent's `authMethods` entry to `authenticate` with;
    /// `None`: the first `env_var` method whose variables are all set, else none.
    pub auth: Option<String>,
}

/// Why an `acp:` value cannot be used; the text names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("acp.{key}: {problem}")]
pub struct AcpSpecError {
    /// The sub-key at fault (`command`, `args`, …; empty for the value itself).
    pub key: &'static str,
    /// What is wrong, quoting the value.
    pub problem: String,
}

impl AcpAgentSpec {
    /// Reads `value` (the frontmatter's `acp:`); `Ok(None)` when absent or null.
    ///
    /// Errors: not a mapping, no non-empty `command`, `args` not a list of text,
    /// `env` not a mapping of text (numbers and booleans are taken as text), `auth`
    /// not text, an unknown sub-key.
    pub fn parse(value: Option<&Value>) -> Result<Option<Self>, AcpSpecError> {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let bad = |key, problem: String| AcpSpecError { key, problem };
        let Some(map) = value.as_object() else {
            return Err(bad(
                "",
                format!("expected a mapping, got {}", describe(value)),
            ));
        };
        let mut spec = Self::default();
        for (key, v) in map {
            match key.as_str() {
                "command" => match v.as_str().map(str::trim) {
                    Some(c) if !c.is_empty() => spec.command = c.to_string(),
                    _ => {
                        return Err(bad(
                            "command",
                            format!("expected a program, got {}", describe(v)),
                        ));
                    }
                },
                "args" => {
                    let items = v.as_array().filter(|a| a.iter().all(Value::is_string));
                    let Some(items) = items else {
                        return Err(bad(
                            "args",
                            format!("expected a list of text, got {}", describe(v)),
                        ));
                    };
                    spec.args = items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect();
                }
                "env" => {
                    let Some(vars) = v.as_object() else {
                        return Err(bad(
                            "env",
                            format!("expected a mapping, got {}", describe(v)),
                        ));
                    };
                    for (name, value) in vars {
                        let text = match value {
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            other => {
                                return Err(bad(
                                    "env",
                                    format!("{name}: expected text, got {}", describe(other)),
                                ));
                            }
                        };
                        spec.env.insert(name.clone(), text);
                    }
                }
                "auth" => match v {
                    Value::String(s) if !s.trim().is_empty() => {
                        spec.auth = Some(s.trim().to_string())
                    }
                    Value::Null => {}
                    other => {
                        return Err(bad(
                            "auth",
                            format!("expected a method id, got {}", describe(other)),
                        ));
                    }
                },
                _ => {
                    return Err(AcpSpecError {
                        key: "",
                        problem: format!("unknown key '{key}' (command, args, env, auth)"),
                    });
                }
            }
        }
        if spec.command.is_empty() {
            return Err(bad(
                "command",
                "missing: the program of the ACP agent".into(),
            ));
        }
        Ok(Some(spec))
    }

    /// The `acp:` of an agent overlay (the frontmatter as `AgentDef::overlay` keeps it);
    /// `None` when it has none or it does not parse (validation reported that).
    pub fn of_overlay(overlay: &Value) -> Option<Self> {
        Self::parse(overlay.get("acp")).ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_full_spec_reads_every_key() {
        let spec = AcpAgentSpec::parse(Some(&json!({
            "command": "codex-acp", "args": ["-x"], "env": {"A": "1", "N": 2}, "auth": "key"
        })))
        .unwrap()
        .unwrap();
        assert_eq!(spec.command, "codex-acp");
        assert_eq!(spec.args, ["-x"]);
        assert_eq!(spec.env["N"], "2");
        assert_eq!(spec.auth.as_deref(), Some("key"));
    }

    #[test]
    fn bad_values_name_their_key() {
        for (value, key) in [
            (json!("codex"), ""),
            (json!({"args": []}), "command"),
            (json!({"command": "x", "args": "y"}), "args"),
            (json!({"command": "x", "env": {"A": []}}), "env"),
            (json!({"command": "x", "auth": 3}), "auth"),
            (json!({"command": "x", "cmd": 3}), ""),
        ] {
            let err = AcpAgentSpec::parse(Some(&value)).unwrap_err();
            assert_eq!(err.key, key, "{value}");
        }
        assert_eq!(AcpAgentSpec::parse(None).unwrap(), None);
    }
}
