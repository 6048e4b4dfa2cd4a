//! One agent file → one [`AgentDef`] (SPEC §3).
//!
//! Owns: parsing the frontmatter YAML (with `serde_saphyr`, errors mapped to the file's
//! own line and column), normalizing both frontmatter forms into the agent overlay
//! (`name`/`description` under `meta`, top-level `model_role` wins), the trimmed body as
//! the instruction, and validation: bad YAML, a bad `agents:` value or ill-typed plan
//! keys make the agent invalid; unavailable modules and unknown keys are warnings.
//! Does not own: which file wins (`registry`) or merging the overlay (`config::merge`).
//!
//! An invalid file never panics and never breaks the registry: it becomes an `AgentDef`
//! with `errors` and an empty-object overlay.

use std::path::Path;

use serde_json::{Map, Value};

use super::frontmatter::{self, FrontmatterError};
pub use super::frontmatter::{parse_yaml, yaml_message};
use super::{AgentDef, AgentIssue, AgentSource};
use crate::agent::validate;

/// Where an agent's text came from, for names, messages and the resulting `AgentDef`.
#[derive(Debug, Clone, Copy)]
pub struct AgentOrigin<'a> {
    /// The file on disk; `None` for agents embedded in the binary.
    pub path: Option<&'a Path>,
    /// The file stem: the agent's name when the frontmatter gives none.
    pub stem: &'a str,
    /// The resolution tier the file belongs to.
    pub source: AgentSource,
    /// Bundle namespace for bundle agents.
    pub namespace: Option<&'a str>,
}

impl AgentOrigin<'_> {
    fn display_path(&self) -> String {
        match self.path {
            Some(p) => p.display().to_string(),
            None => format!("builtin:{}", self.stem),
        }
    }
}

/// The file stem of `path` (lossy UTF-8), `"agent"` when it has none.
pub fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "agent".to_string())
}

/// Reads and parses the agent file at `path`. A read error becomes an invalid agent
/// named after the file stem (`path:0:0: cannot read …`).
pub fn load_agent_file(path: &Path, source: AgentSource, namespace: Option<&str>) -> AgentDef {
    agent_from_read(path, source, namespace, std::fs::read(path))
}

/// The agent of the file at `path` from the outcome of reading it (`read`: its bytes,
/// or the read error), as [`load_agent_file`] makes it: bytes that are not UTF-8 are
/// read lossily, an error becomes an invalid agent (`cannot read agent file: …`).
pub fn agent_from_read(
    path: &Path,
    source: AgentSource,
    namespace: Option<&str>,
    read: std::io::Result<Vec<u8>>,
) -> AgentDef {
    let stem = file_stem(path);
    let origin = AgentOrigin {
        path: Some(path),
        stem: &stem,
        source,
        namespace,
    };
    match read {
        // Valid UTF-8 (the usual case) is checked by the fast validator and not copied.
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => parse_agent(&text, &origin),
            Err(e) => parse_agent(&String::from_utf8_lossy(e.as_bytes()), &origin),
        },
        Err(e) => invalid(&origin, 0, 0, format!("cannot read agent file: {e}")),
    }
}

/// An invalid agent with one error and an empty overlay.
pub fn invalid(origin: &AgentOrigin<'_>, line: usize, column: usize, message: String) -> AgentDef {
    let mut def = empty_def(origin);
    def.errors.push(AgentIssue {
        path: origin.display_path(),
        line,
        column,
        message,
    });
    def
}

fn empty_def(origin: &AgentOrigin<'_>) -> AgentDef {
    AgentDef {
        name: origin.stem.to_string(),
        namespace: origin.namespace.map(str::to_string),
        source: origin.source,
        path: origin.path.map(Path::to_path_buf),
        description: String::new(),
        instruction: String::new(),
        overlay: Value::Object(Map::new()),
        errors: Vec::new(),
        warnings: Vec::new(),
        shadows: Vec::new(),
    }
}

/// Parses agent file `text` (frontmatter + Markdown body; a file without frontmatter
/// is all body, as foundation reads it). Never panics.
///
/// The overlay holds every frontmatter key, with `name` and `description` moved under
/// `meta`, plan keys found only under `meta` (`model_role`, `agents`, `tools`, …) lifted
/// to the top level, and the trimmed body as `instruction` (omitted when empty).
pub fn parse_agent(text: &str, origin: &AgentOrigin<'_>) -> AgentDef {
    let (fm, mut front) = match frontmatter_of(text, origin) {
        Ok(parts) => parts,
        Err(invalid) => return *invalid,
    };
    let instruction = fm.body.trim().to_string();
    let mut def = empty_def(origin);
    let issue = |key: &str, message: String| {
        let (line, column) = validate::key_position(&fm.yaml, fm.yaml_line, key);
        AgentIssue {
            path: origin.display_path(),
            line,
            column,
            message,
        }
    };

    normalize(&mut front);
    read_meta(&mut def, &front, &issue);
    for (key, message) in validate::check_keys(&front) {
        def.errors.push(issue(&key, message));
    }
    def.warnings = validate::warnings(&front);

    if !instruction.is_empty() {
        front.insert("instruction".into(), Value::String(instruction.clone()));
    }
    def.instruction = match front.get("instruction") {
        Some(Value::String(s)) => s.clone(),
        _ => instruction,
    };
    if def.errors.is_empty() {
        def.overlay = Value::Object(front);
    }
    def
}

/// Agent file `text` split into its frontmatter and body, the frontmatter read as a
/// mapping (none: an empty one, the whole text the body, as foundation's
/// `parse_frontmatter` reads it).
///
/// Errors: the invalid definition to return, saying where — an unclosed frontmatter,
/// YAML that does not parse, or frontmatter that is not a mapping (the body kept as
/// its instruction).
fn frontmatter_of<'t>(
    text: &'t str,
    origin: &AgentOrigin<'_>,
) -> Result<(frontmatter::Frontmatter<'t>, Map<String, Value>), Box<AgentDef>> {
    let fm = match frontmatter::split(text) {
        Ok(fm) => fm,
        // No frontmatter is `{}` and the whole text is the body (name from the file
        // stem, empty description).
        Err(FrontmatterError::Missing) => frontmatter::Frontmatter {
            yaml: "".into(),
            yaml_line: 1,
            body: text.trim_start_matches('\u{feff}'),
            body_line: 1,
        },
        Err(e @ FrontmatterError::Unclosed { .. }) => {
            return Err(Box::new(invalid(origin, e.line(), 1, e.to_string())));
        }
    };
    let invalid_at = |line, column, message| {
        let mut def = invalid(origin, line, column, message);
        def.instruction = fm.body.trim().to_string();
        Box::new(def)
    };
    match parse_yaml(&fm.yaml, fm.yaml_line) {
        Ok(Value::Object(map)) => Ok((fm, map)),
        Ok(Value::Null) => Ok((fm, Map::new())),
        Ok(other) => {
            let kind = validate::kind(&other);
            let message = format!("frontmatter must be a mapping, got {kind}");
            Err(invalid_at(fm.yaml_line, 1, message))
        }
        Err((line, column, message)) => Err(invalid_at(line, column, message)),
    }
}

/// The agent's `name` (when a non-empty string; checked either way) and
/// `description` from the normalized frontmatter's `meta`.
fn read_meta(
    def: &mut AgentDef,
    front: &Map<String, Value>,
    issue: &impl Fn(&str, String) -> AgentIssue,
) {
    let meta = front.get("meta").and_then(Value::as_object);
    match meta.and_then(|m| m.get("name")) {
        Some(Value::String(n)) if !n.trim().is_empty() => def.name = n.trim().to_string(),
        Some(Value::String(_)) | Some(Value::Null) | None => {}
        Some(other) => def.errors.push(issue(
            "meta",
            format!("name: expected a string, got {}", validate::kind(other)),
        )),
    }
    if let Some(reason) = validate::name_problem(&def.name) {
        def.errors
            .push(issue("meta", format!("name '{}': {reason}", def.name)));
    }
    def.description = match meta.and_then(|m| m.get("description")) {
        Some(Value::String(d)) => d.trim().to_string(),
        _ => String::new(),
    };
}

/// Moves `name`/`description` under `meta` and lifts plan keys that only `meta` has.
fn normalize(front: &mut Map<String, Value>) {
    let mut meta = match front.shift_remove("meta") {
        Some(Value::Object(m)) => m,
        Some(Value::Null) | None => Map::new(),
        Some(other) => {
            // Not a mapping: keep it where it was; `check_keys` reports it.
            front.insert("meta".into(), other);
            return;
        }
    };
    for key in ["name", "description"] {
        if let Some(v) = front.shift_remove(key)
            && !meta.contains_key(key)
        {
            meta.insert(key.to_string(), v);
        }
    }
    for key in validate::PLAN_KEYS {
        if !front.contains_key(*key)
            && let Some(v) = meta.get(*key)
        {
            front.insert((*key).to_string(), v.clone());
        }
    }
    // `meta` first: it reads best in `agent show`.
    let rest = std::mem::take(front);
    front.insert("meta".into(), Value::Object(meta));
    front.extend(rest);
}

#[cfg(test)]
mod tests;
