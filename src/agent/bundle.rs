//! Bundles (SPEC §5): a root mount plan plus a set of agent files.
//!
//! Owns: loading `bundle.md` (YAML frontmatter + body = root instruction) and `.yaml` /
//! `.yml` bundles (keys `bundle{name,version,description}`, `session`, `providers`,
//! `tools`, `hooks`, `spawn`, `agents`; other keys pass through), collecting the agent
//! files in `agents/*.md` beside the bundle file, and arbor's built-in bundle embedded
//! from the repo's `agents/` directory; local `includes:` composed (`includes`), remote
//! ones reported, never fetched; bundle references and the published built-in bundle
//! (`locate`).
//! Does not own: parsing agent files (`agent::file`) or merging (`config::merge`).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::frontmatter::{self, FrontmatterError};
use super::registry::agent_files_in;
use super::{file, validate};
use crate::config::MountPlan;
use crate::paths::Paths;

mod includes;
pub mod locate;

/// An agent file belonging to a bundle: on disk, or embedded in the binary.
#[derive(Debug, Clone, PartialEq)]
pub struct BundleAgentFile {
    /// File stem (the default agent name).
    pub stem: String,
    /// `None` for embedded files.
    pub path: Option<PathBuf>,
    pub text: String,
}

/// A loaded bundle: its root mount plan and its agents.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    /// `bundle.name` (namespace for `ns:name`).
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    /// The bundle file; `None` for the built-in bundle.
    pub path: Option<PathBuf>,
    /// `session`, `providers`, `tools`, `hooks`, `spawn`, `agents`, and `instruction`
    /// (the body) as a mount plan.
    pub mount_plan: MountPlan,
    /// The bundle's agent files (`agents/*.md` beside the bundle file).
    pub agent_files: Vec<BundleAgentFile>,
    /// Problems that did not stop loading (e.g. remote `includes:` not fetched).
    pub warnings: Vec<String>,
}

/// A bundle file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("cannot read bundle {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

/// The built-in bundle file, embedded.
const BUILTIN_BUNDLE: &str = include_str!("../../agents/bundle.md");

/// The built-in agents as `(file stem, text)`, embedded.
pub const BUILTIN_AGENTS: &[(&str, &str)] = &[
    ("explorer", include_str!("../../agents/explorer.md")),
    ("implementer", include_str!("../../agents/implementer.md")),
    ("researcher", include_str!("../../agents/researcher.md")),
    ("reviewer", include_str!("../../agents/reviewer.md")),
    (
        "zen-architect",
        include_str!("../../agents/zen-architect.md"),
    ),
];

/// Keys of a bundle file that describe the bundle itself, not the mount plan.
const BUNDLE_ONLY_KEYS: &[&str] = &["bundle", "meta", "includes"];

impl Bundle {
    /// arbor's built-in bundle (`agents/bundle.md` + `agents/*.md`, embedded).
    ///
    /// Never fails: if the embedded file could not be parsed (a build defect a test
    /// guards against), the result is an empty `arbor` bundle carrying the error as a
    /// warning.
    pub fn builtin() -> Self {
        let path = PathBuf::from("builtin:bundle.md");
        let mut bundle = match parse_markdown(BUILTIN_BUNDLE, &path, "arbor") {
            Ok((b, _)) => b,
            Err(e) => Self {
                name: "arbor".into(),
                version: None,
                description: None,
                path: None,
                mount_plan: MountPlan::new(),
                agent_files: Vec::new(),
                warnings: vec![e.to_string()],
            },
        };
        bundle.path = None;
        bundle.agent_files = BUILTIN_AGENTS
            .iter()
            .map(|(stem, text)| BundleAgentFile {
                stem: (*stem).to_string(),
                path: None,
                text: (*text).to_string(),
            })
            .collect();
        bundle
    }

    /// Loads a `bundle.md` or `.yaml`/`.yml` bundle from disk (a directory means its
    /// `bundle.md`, else `bundle.yaml`), with the agent files in `agents/*.md` beside it.
    ///
    /// Errors: [`BundleError::Read`] when the file cannot be read;
    /// [`BundleError::Parse`] (file line and column) for a missing frontmatter, bad YAML,
    /// a non-mapping document or a bad `agents:` value.
    pub fn load(path: &Path) -> Result<Self, BundleError> {
        Self::load_with(path, None)
    }

    /// [`Bundle::load`], composing local `includes:` (`includes::compose`: relative
    /// paths, `file://`, `ns:path` of bundles already known, and — with `paths` — names
    /// registered locally (`locate::locate`); remote and missing includes become
    /// warnings while the rest composes).
    ///
    /// Errors: as [`Bundle::load`], for this file only (a broken include is a warning).
    pub fn load_with(path: &Path, paths: Option<&Paths>) -> Result<Self, BundleError> {
        Self::load_nested(path, paths, 0, &includes::Namespaces::new())
    }

    /// [`Bundle::load_with`] at include depth `depth`, where the including bundles'
    /// namespaces (`ns:path` bases) are `namespaces`.
    fn load_nested(
        path: &Path,
        paths: Option<&Paths>,
        depth: usize,
        namespaces: &includes::Namespaces,
    ) -> Result<Self, BundleError> {
        let path = resolve_bundle_file(path);
        let text = std::fs::read(&path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|source| BundleError::Read {
                path: path.clone(),
                source,
            })?;
        let fallback = default_name(&path);
        let is_markdown = path
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("md"));
        let (mut bundle, includes) = if is_markdown {
            parse_markdown(&text, &path, &fallback)?
        } else {
            parse_document(&text, "", 1, &path, &fallback)?
        };
        bundle.path = Some(path.clone());
        let dir = path.parent().unwrap_or(Path::new("."));
        bundle.agent_files = agent_files_in(&dir.join("agents"))
            .into_iter()
            .filter_map(|p| {
                let text = std::fs::read(&p).ok()?;
                Some(BundleAgentFile {
                    stem: file::file_stem(&p),
                    path: Some(p),
                    text: String::from_utf8_lossy(&text).into_owned(),
                })
            })
            .collect();
        Ok(includes::compose(
            bundle,
            includes.as_ref(),
            &path,
            paths,
            (depth, namespaces),
        ))
    }
}

/// `path`, or for a directory its `bundle.md` / `bundle.yaml` / `bundle.yml`.
fn resolve_bundle_file(path: &Path) -> PathBuf {
    if !path.is_dir() {
        return path.to_path_buf();
    }
    ["bundle.md", "bundle.yaml", "bundle.yml"]
        .iter()
        .map(|n| path.join(n))
        .find(|p| p.is_file())
        .unwrap_or_else(|| path.join("bundle.md"))
}

/// The name used when a bundle declares none: the directory for `bundle.*` files,
/// else the file stem.
fn default_name(path: &Path) -> String {
    let stem = file::file_stem(path);
    if stem == "bundle"
        && let Some(dir) = path.parent().and_then(Path::file_name)
    {
        return dir.to_string_lossy().into_owned();
    }
    stem
}

fn parse_error(path: &Path, line: usize, column: usize, message: String) -> BundleError {
    BundleError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}

/// A bundle and its `includes:` value (composed by the caller).
type Parsed = (Bundle, Option<Value>);

fn parse_markdown(text: &str, path: &Path, fallback: &str) -> Result<Parsed, BundleError> {
    let fm = frontmatter::split(text).map_err(|e| match e {
        FrontmatterError::Missing | FrontmatterError::Unclosed { .. } => {
            parse_error(path, e.line(), 1, e.to_string())
        }
    })?;
    parse_document(&fm.yaml, fm.body.trim(), fm.yaml_line, path, fallback)
}

/// Builds a bundle from its YAML (`yaml_line` = file line of its first line) and body.
fn parse_document(
    yaml: &str,
    body: &str,
    yaml_line: usize,
    path: &Path,
    fallback: &str,
) -> Result<Parsed, BundleError> {
    let doc = file::parse_yaml(yaml, yaml_line)
        .map_err(|(line, column, message)| parse_error(path, line, column, message))?;
    let mut doc = match doc {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return Err(parse_error(
                path,
                yaml_line,
                1,
                format!("a bundle must be a mapping, got {}", validate::kind(&other)),
            ));
        }
    };
    if let Some(message) = doc.get("agents").and_then(bundle_agents_problem) {
        let (line, column) = validate::key_position(yaml, yaml_line, "agents");
        return Err(parse_error(path, line, column, message));
    }
    let mut warnings = Vec::new();
    let meta = doc
        .get("bundle")
        .or_else(|| doc.get("meta"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let text_of = |key: &str| match meta.get(key) {
        Some(Value::String(s)) => Some(s.trim().to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let name = match text_of("name").filter(|n| !n.is_empty()) {
        Some(n) => n,
        None => {
            warnings.push(format!("bundle has no bundle.name; using '{fallback}'"));
            fallback.to_string()
        }
    };
    warnings.extend(validate::module_warnings(&doc));
    let includes = doc.get("includes").cloned();
    for key in BUNDLE_ONLY_KEYS {
        doc.shift_remove(*key);
    }
    if !body.is_empty() {
        doc.insert("instruction".into(), Value::String(body.to_string()));
    }
    let bundle = Bundle {
        name,
        version: text_of("version"),
        description: text_of("description"),
        path: None,
        mount_plan: MountPlan::from_value(Value::Object(doc)),
        agent_files: Vec::new(),
        warnings,
    };
    Ok((bundle, includes))
}

/// Bundle-level `agents:` must be `all`, `none`, a list of names, or Amplifier's
/// roster mapping (`{include: [ns:name, …]}` and/or inline definitions).
fn bundle_agents_problem(v: &Value) -> Option<String> {
    match v {
        Value::Object(m) => match m.get("include") {
            None => None,
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => None,
            Some(other) => Some(format!(
                "agents.include: expected a list of names, got {}",
                validate::kind(other)
            )),
        },
        other => validate::agents_problem(other),
    }
}

#[cfg(test)]
mod tests;
