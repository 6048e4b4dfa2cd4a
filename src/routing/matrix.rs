//! Routing matrices: model roles → ranked provider/model candidates (Amplifier's
//! `routing-matrix` format).
//!
//! ```yaml
//! name: balanced
//! description: "…"
//! updated: "2026-07-22"
//! roles:
//!   general:                       # required
//!     description: "Versatile catch-all"
//!     candidates:
//!       - {provider: anthropic, model: claude-sonnet-*}
//!       - {provider: openai, model: "gpt-[0-9].[0-9]", config: {reasoning_effort: low}}
//!   fast: {description: "…", candidates: […]}   # required
//! ```
//!
//! Owns: [`validate_matrix`] (every problem as one line), [`RoutingMatrix::parse`],
//! [`compose_matrix`] (overrides with the `base` keyword), and arbor's built-in
//! `balanced` matrix ([`builtin_balanced`], embedded from `balanced.yaml`). Does not own:
//! finding matrix files or the config choice (`catalog`), resolving roles (`resolve`).

use serde_json::{Map, Value};

use super::prefs::ProviderPreference;

/// arbor's own `balanced` matrix (YAML), embedded in the binary.
pub const BUILTIN_BALANCED: &str = include_str!("balanced.yaml");

/// Roles every matrix must define.
pub const REQUIRED_ROLES: [&str; 2] = ["general", "fast"];

/// The keyword that stands for the base matrix's candidates in an override role.
pub const BASE_KEYWORD: &str = "base";

/// A routing matrix that passed [`validate_matrix`].
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingMatrix {
    /// `name:` in the file, else the file stem.
    pub name: String,
    /// `description:` in the file.
    pub description: Option<String>,
    /// `updated:` in the file (a date string, informational).
    pub updated: Option<String>,
    /// Roles in declaration order.
    pub roles: Vec<(String, Role)>,
    /// Where it came from: a file path or `built-in`.
    pub origin: String,
}

/// One role: what it is for and its candidates, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct Role {
    /// What the role is for (required in files).
    pub description: Option<String>,
    /// `{provider, model, config?}` candidates, tried top to bottom.
    pub candidates: Vec<ProviderPreference>,
}

/// A matrix that cannot be used. Every message names the file (or `built-in`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MatrixError {
    #[error("routing matrix {file}: cannot read: {message}")]
    Read { file: String, message: String },
    #[error("routing matrix {file}: invalid YAML: {message}")]
    Yaml { file: String, message: String },
    /// Validation problems, one line each (`role 'fast' is missing 'description'`).
    #[error("routing matrix {file} is invalid: {}", problems.join("; "))]
    Invalid { file: String, problems: Vec<String> },
    #[error(
        "Role '{role}': multiple 'base' keywords found in candidates list. Only one is allowed."
    )]
    MultipleBase { role: String },
    #[error("unknown routing matrix '{name}' (available: {})", available.join(", "))]
    Unknown {
        name: String,
        available: Vec<String>,
    },
}

/// Every problem of a matrix document (`{name?, description?, roles: {…}}`), one
/// message per problem, naming the role and candidate index; empty when valid.
///
/// Checks: `roles` is a mapping; `general` and `fast` exist; each role is a mapping with
/// a string `description` and a `candidates` list; each candidate is a mapping with
/// string `provider` and `model` and an optional mapping `config`; the `base` keyword
/// (only meaningful in overrides) does not appear.
pub fn validate_matrix(matrix: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(roles) = matrix.get("roles").and_then(Value::as_object) else {
        if matrix.is_object() {
            problems.push("missing 'roles' mapping (role name → {description, candidates})".into());
        } else {
            problems.push("a routing matrix must be a mapping with 'roles'".into());
        }
        return problems;
    };
    for required in REQUIRED_ROLES {
        if !roles.contains_key(required) {
            problems.push(format!("required role '{required}' is missing"));
        }
    }
    for (name, role) in roles {
        let Some(role) = role.as_object() else {
            problems.push(format!(
                "role '{name}' must be a mapping with description and candidates"
            ));
            continue;
        };
        if !role.get("description").is_some_and(Value::is_string) {
            problems.push(format!("role '{name}' is missing 'description'"));
        }
        let Some(candidates) = role.get("candidates").and_then(Value::as_array) else {
            problems.push(format!("role '{name}': 'candidates' must be a list"));
            continue;
        };
        for (i, candidate) in candidates.iter().enumerate() {
            if candidate.as_str() == Some(BASE_KEYWORD) {
                problems.push(format!(
                    "role '{name}': candidate {i} is the 'base' keyword, which only overrides may use"
                ));
            } else if let Err(e) = ProviderPreference::from_value(candidate) {
                problems.push(format!("role '{name}': candidate {i}: {e}"));
            }
        }
    }
    problems
}

impl RoutingMatrix {
    /// Parses and validates a matrix from YAML text; `origin` (a path or `built-in`)
    /// names it in errors, and its stem is the fallback `name`.
    pub fn parse(text: &str, origin: &str) -> Result<Self, MatrixError> {
        let value: Value = serde_saphyr::from_str(text).map_err(|e| MatrixError::Yaml {
            file: origin.to_string(),
            message: e.to_string(),
        })?;
        Self::from_value(&value, origin)
    }

    /// A matrix from its parsed document (validated first).
    pub fn from_value(value: &Value, origin: &str) -> Result<Self, MatrixError> {
        let problems = validate_matrix(value);
        if !problems.is_empty() {
            return Err(MatrixError::Invalid {
                file: origin.to_string(),
                problems,
            });
        }
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        let stem = std::path::Path::new(origin)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| origin.to_string());
        let roles = value
            .get("roles")
            .and_then(Value::as_object)
            .map(roles_of)
            .unwrap_or_default();
        Ok(Self {
            name: text("name").unwrap_or(stem),
            description: text("description"),
            updated: text("updated"),
            roles,
            origin: origin.to_string(),
        })
    }

    /// A matrix from a bare roles mapping (`{role: {description?, candidates}}`)
    /// WITHOUT validation: malformed candidates are dropped, required roles may be
    /// missing. For callers that hold roles already (tests, conformance cases, composed
    /// overrides); files go through [`RoutingMatrix::parse`].
    pub fn from_roles(roles: &Value, name: &str) -> Self {
        Self {
            name: name.to_string(),
            description: None,
            updated: None,
            roles: roles.as_object().map(roles_of).unwrap_or_default(),
            origin: name.to_string(),
        }
    }

    /// The role named `name`.
    pub fn role(&self, name: &str) -> Option<&Role> {
        self.roles.iter().find(|(n, _)| n == name).map(|(_, r)| r)
    }

    /// Role names in declaration order.
    pub fn known_roles(&self) -> Vec<String> {
        self.roles.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The roles as a JSON mapping (`{role: {description, candidates}}`), the shape
    /// [`compose_matrix`] takes.
    pub fn roles_value(&self) -> Value {
        let mut map = Map::new();
        for (name, role) in &self.roles {
            let mut r = Map::new();
            if let Some(d) = &role.description {
                r.insert("description".into(), Value::from(d.clone()));
            }
            let candidates = role.candidates.iter().map(ProviderPreference::to_value);
            r.insert("candidates".into(), Value::Array(candidates.collect()));
            map.insert(name.clone(), Value::Object(r));
        }
        Value::Object(map)
    }

    /// This matrix with `overrides` (a roles mapping, see [`compose_matrix`]) applied;
    /// the result is validated again.
    pub fn with_overrides(&self, overrides: &Value, origin: &str) -> Result<Self, MatrixError> {
        let roles = compose_matrix(&self.roles_value(), overrides)?;
        let mut doc = Map::new();
        doc.insert("name".into(), Value::from(self.name.clone()));
        if let Some(d) = &self.description {
            doc.insert("description".into(), Value::from(d.clone()));
        }
        doc.insert("roles".into(), roles);
        let mut composed = Self::from_value(&Value::Object(doc), origin)?;
        composed.updated = self.updated.clone();
        Ok(composed)
    }
}

fn roles_of(map: &Map<String, Value>) -> Vec<(String, Role)> {
    map.iter()
        .map(|(name, role)| {
            let candidates = role
                .get("candidates")
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .filter_map(|c| ProviderPreference::from_value(c).ok())
                        .collect()
                })
                .unwrap_or_default();
            let description = role
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string);
            (
                name.clone(),
                Role {
                    description,
                    candidates,
                },
            )
        })
        .collect()
}

/// `base` roles (`{role: {description, candidates}}`) with `overrides` applied: an
/// override role replaces the base role wholesale (its description is not inherited),
/// except that one `"base"` string in its candidates expands in place to the base
/// role's candidates (nothing when the base lacks the role), so users prepend, append or
/// sandwich. Roles not overridden are kept; new roles are appended.
///
/// Errors: more than one `base` in a role (`MultipleBase`).
pub fn compose_matrix(base: &Value, overrides: &Value) -> Result<Value, MatrixError> {
    let mut out = base.as_object().cloned().unwrap_or_default();
    let Some(overrides) = overrides.as_object() else {
        return Ok(Value::Object(out));
    };
    for (name, role) in overrides {
        let mut role = role.clone();
        if let Some(candidates) = role.get("candidates").and_then(Value::as_array) {
            let is_base = |c: &Value| c.as_str() == Some(BASE_KEYWORD);
            if candidates.iter().filter(|c| is_base(c)).count() > 1 {
                return Err(MatrixError::MultipleBase { role: name.clone() });
            }
            let inherited: Vec<Value> = base
                .get(name)
                .and_then(|r| r.get("candidates"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut expanded = Vec::new();
            for c in candidates {
                if is_base(c) {
                    expanded.extend(inherited.iter().cloned());
                } else {
                    expanded.push(c.clone());
                }
            }
            if let Some(map) = role.as_object_mut() {
                map.insert("candidates".into(), Value::Array(expanded));
            }
        }
        out.insert(name.clone(), role);
    }
    Ok(Value::Object(out))
}

/// arbor's built-in `balanced` matrix (origin `built-in`).
///
/// Errors only if the embedded file were broken (a unit test guards it).
pub fn builtin_balanced() -> Result<RoutingMatrix, MatrixError> {
    RoutingMatrix::parse(BUILTIN_BALANCED, "built-in").map(|mut m| {
        m.origin = "built-in".into();
        m
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_balanced_loads_and_covers_the_standard_roles() {
        let m = builtin_balanced().unwrap();
        assert_eq!(m.name, "balanced");
        for role in [
            "general",
            "fast",
            "coding",
            "ui-coding",
            "security-audit",
            "reasoning",
            "critique",
            "creative",
            "writing",
            "research",
            "vision",
            "image-gen",
            "critical-ops",
        ] {
            let r = m.role(role).unwrap_or_else(|| panic!("{role}"));
            assert!(!r.candidates.is_empty(), "{role}");
        }
        let providers: Vec<&str> = m
            .roles
            .iter()
            .flat_map(|(_, r)| r.candidates.iter().map(|c| c.provider.as_str()))
            .collect();
        for p in ["anthropic", "openai", "ollama"] {
            assert!(providers.contains(&p), "{p}");
        }
    }

    #[test]
    fn validation_names_each_problem() {
        let problems = validate_matrix(&json!({"name": "bad", "roles": {
            "fast": {"candidates": [{"provider": "a"}, "base", 3]},
            "coding": {"description": "x", "candidates": "nope"},
        }}));
        let text = problems.join("\n");
        assert!(
            text.contains("required role 'general' is missing"),
            "{text}"
        );
        assert!(
            text.contains("role 'fast' is missing 'description'"),
            "{text}"
        );
        assert!(
            text.contains("role 'fast': candidate 0: provider preference requires 'model' key"),
            "{text}"
        );
        assert!(text.contains("candidate 1 is the 'base' keyword"), "{text}");
        assert!(text.contains("role 'fast': candidate 2"), "{text}");
        assert!(
            text.contains("role 'coding': 'candidates' must be a list"),
            "{text}"
        );
        assert_eq!(
            validate_matrix(&json!([])),
            ["a routing matrix must be a mapping with 'roles'"]
        );
    }

    #[test]
    fn parse_errors_name_the_file() {
        let e = RoutingMatrix::parse(
            "roles: {general: {description: g, candidates: []}}",
            "/m/x.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("/m/x.yaml") && e.contains("'fast' is missing"),
            "{e}"
        );
        let e = RoutingMatrix::parse("roles: [", "/m/y.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("routing matrix /m/y.yaml: invalid YAML"),
            "{e}"
        );
    }

    #[test]
    fn compose_expands_base_once() {
        let base = json!({"coding": {"description": "c", "candidates": [{"provider": "a", "model": "m"}]}});
        let out = compose_matrix(
            &base,
            &json!({"coding": {"description": "c2", "candidates": [{"provider": "l", "model": "x"}, "base"]}, "new": {"candidates": ["base"]}}),
        )
        .unwrap();
        assert_eq!(out["coding"]["candidates"][1]["provider"], "a");
        assert_eq!(out["coding"]["description"], "c2");
        assert_eq!(out["new"]["candidates"], json!([]));
        let m = RoutingMatrix::from_roles(&out, "composed");
        assert_eq!(m.known_roles(), ["coding", "new"]);
        assert_eq!(m.role("coding").unwrap().candidates[0].model, "x");
        let e = compose_matrix(&base, &json!({"coding": {"candidates": ["base", "base"]}}))
            .unwrap_err();
        assert!(e.to_string().contains("multiple 'base'"));
    }
}
