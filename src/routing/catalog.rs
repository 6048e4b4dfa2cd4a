//! Which routing matrices exist and which one a session uses.
//!
//! Owns: the built-in `balanced` plus user matrices `$AMPLIFIER_HOME/routing/<name>.yaml`
//! (`.yml` too; a user `balanced.yaml` replaces the built-in), looked up by file stem
//! ([`load_matrix`], [`available_matrices`]); and arbor's config choice
//! ([`RoutingSettings`] from `routing: {matrix: NAME, overrides: {role: …}}` in
//! `config.yaml`, default `balanced`) resolved to the matrix in use ([`active_matrix`]).
//! Does not own: the matrix format (`matrix`) or resolving roles (`resolve`).
//!
//! Files are read on every call (a few small files), so edits apply to the next spawn.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::matrix::{MatrixError, RoutingMatrix, builtin_balanced};
use crate::config::ArborConfig;

/// The matrix name used when the config names none.
pub const DEFAULT_MATRIX: &str = "balanced";

/// `routing:` in arbor's config file: `{matrix: NAME, overrides: {role: {…}}}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RoutingSettings {
    /// The matrix to use (`balanced` when unset).
    pub matrix: String,
    /// Role overrides composed over the matrix (`base` keyword allowed), or null.
    pub overrides: Value,
}

impl RoutingSettings {
    /// Reads `config.extra["routing"]`; a bare string is taken as the matrix name.
    /// Missing or malformed values give the defaults.
    pub fn from_config(config: &ArborConfig) -> Self {
        let routing = config.extra.get("routing");
        let matrix = match routing {
            Some(Value::String(s)) => Some(s.as_str()),
            Some(v) => v.get("matrix").and_then(Value::as_str),
            None => None,
        }
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_MATRIX)
        .to_string();
        let overrides = routing
            .and_then(|r| r.get("overrides"))
            .cloned()
            .unwrap_or(Value::Null);
        Self { matrix, overrides }
    }
}

fn user_file(dir: &Path, name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return None;
    }
    ["yaml", "yml"]
        .iter()
        .map(|ext| dir.join(format!("{name}.{ext}")))
        .find(|p| p.is_file())
}

/// Names of the matrices available with user directory `dir`: `balanced` and every
/// `*.yaml`/`*.yml` stem there, sorted and de-duplicated (not validated).
pub fn available_matrices(dir: &Path) -> Vec<String> {
    let mut names = vec![DEFAULT_MATRIX.to_string()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            let ext = path.extension().and_then(|e| e.to_str());
            if matches!(ext, Some("yaml" | "yml"))
                && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
            {
                names.push(stem.to_string());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The matrix `name`: the user file `dir/<name>.yaml` when present (even for
/// `balanced`), else the built-in for `balanced`.
///
/// Errors: the file cannot be read, is not YAML or fails validation (messages name the
/// file and role); `Unknown` (listing what is available) for any other name.
pub fn load_matrix(dir: &Path, name: &str) -> Result<RoutingMatrix, MatrixError> {
    if let Some(path) = user_file(dir, name) {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| MatrixError::Read {
            file: origin.clone(),
            message: e.to_string(),
        })?;
        return RoutingMatrix::parse(&text, &origin);
    }
    if name == DEFAULT_MATRIX {
        return builtin_balanced();
    }
    Err(MatrixError::Unknown {
        name: name.to_string(),
        available: available_matrices(dir),
    })
}

/// The matrix a session uses, and what went wrong getting it.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveMatrix {
    /// `None` only if even the built-in failed to load (never in a released build).
    pub matrix: Option<RoutingMatrix>,
    /// Why the configured matrix (or its overrides) is not the one in use, if so.
    pub problem: Option<String>,
}

/// The matrix `config` selects from user directory `dir`, with the config's overrides
/// applied. A configured matrix that cannot be loaded falls back to the built-in
/// `balanced`, and bad overrides are ignored; either way `problem` says why (the
/// caller logs it; `arbor doctor` shows it).
pub fn active_matrix(config: &ArborConfig, dir: &Path) -> ActiveMatrix {
    let settings = RoutingSettings::from_config(config);
    let mut problems = Vec::new();
    let mut matrix = match load_matrix(dir, &settings.matrix) {
        Ok(m) => Some(m),
        Err(e) => {
            problems.push(format!("{e}; using the built-in balanced matrix"));
            builtin_balanced()
                .map_err(|e| problems.push(e.to_string()))
                .ok()
        }
    };
    if !settings.overrides.is_null()
        && let Some(m) = &matrix
    {
        match m.with_overrides(&settings.overrides, "config routing.overrides") {
            Ok(composed) => matrix = Some(composed),
            Err(e) => problems.push(format!("{e}; overrides ignored")),
        }
    }
    ActiveMatrix {
        matrix,
        problem: (!problems.is_empty()).then(|| problems.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(routing: Value) -> ArborConfig {
        let mut c = ArborConfig::default();
        c.extra.insert("routing".into(), routing);
        c
    }

    #[test]
    fn settings_default_to_balanced() {
        assert_eq!(
            RoutingSettings::from_config(&ArborConfig::default()).matrix,
            "balanced"
        );
        assert_eq!(
            RoutingSettings::from_config(&config(json!({"matrix": "quality"}))).matrix,
            "quality"
        );
        assert_eq!(
            RoutingSettings::from_config(&config(json!("economy"))).matrix,
            "economy"
        );
    }

    #[test]
    fn user_files_override_and_add_matrices() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            load_matrix(dir.path(), "balanced").unwrap().origin,
            "built-in"
        );
        let user = "name: balanced\nroles:\n  general: {description: g, candidates: [{provider: ollama, model: x}]}\n  fast: {description: f, candidates: []}\n";
        std::fs::write(dir.path().join("balanced.yaml"), user).unwrap();
        std::fs::write(
            dir.path().join("mine.yml"),
            user.replace("name: balanced", "name: mine"),
        )
        .unwrap();
        let m = load_matrix(dir.path(), "balanced").unwrap();
        assert_eq!(m.role("general").unwrap().candidates[0].provider, "ollama");
        assert_eq!(load_matrix(dir.path(), "mine").unwrap().name, "mine");
        assert_eq!(available_matrices(dir.path()), ["balanced", "mine"]);
        let e = load_matrix(dir.path(), "nope").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown routing matrix 'nope' (available: balanced, mine)"
        );
        assert!(load_matrix(dir.path(), "../x").is_err());
    }

    #[test]
    fn bad_choice_falls_back_with_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("broken.yaml"),
            "roles: {general: {candidates: []}}",
        )
        .unwrap();
        let active = active_matrix(&config(json!({"matrix": "broken"})), dir.path());
        assert_eq!(active.matrix.unwrap().origin, "built-in");
        let problem = active.problem.unwrap();
        assert!(
            problem.contains("broken.yaml") && problem.contains("'fast' is missing"),
            "{problem}"
        );

        let active = active_matrix(
            &config(
                json!({"overrides": {"fast": {"description": "mine", "candidates": [{"provider": "local", "model": "tiny"}, "base"]}}}),
            ),
            dir.path(),
        );
        assert!(active.problem.is_none());
        let fast = active.matrix.unwrap().role("fast").unwrap().clone();
        assert_eq!(fast.candidates[0].model, "tiny");
        assert!(fast.candidates.len() > 1);
    }
}
