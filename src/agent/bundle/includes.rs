//! Composing a bundle's local `includes:` the way foundation's `Bundle.compose` does
//! (`bundle/_dataclass.py`): every included bundle first, in order, then the
//! including bundle on top.
//!
//! Resolution of an entry (a string, or `{bundle: …}`): `ns:path` against the
//! directory of the bundle named `ns` (the including bundle's own name, or one
//! included before it); a relative path against the including bundle's directory;
//! `file://` URIs and absolute paths as they are; a plain name (or `bundle:name`)
//! through [`locate`] when the caller gave [`Paths`]. A path may omit `.yaml` / `.yml`
//! / `.md`, or name a directory holding `bundle.md` / `bundle.yaml`. Remote entries
//! (`git+…`, `http(s)://…`) are reported as unavailable and never fetched; the rest
//! still composes.
//!
//! Compose rules (foundation's): `session` and `spawn` deep-merge, `tools` /
//! `providers` / `hooks` merge as module lists, agent rosters (`agents:` maps) add up,
//! later wins; `instruction` is the last non-empty one; other keys deep-merge. An
//! `all | none | [names]` access form of the including bundle stays as it is. Agent
//! files add up, the including bundle's winning by stem.
//!
//! Owns: [`compose`]. Does not own: parsing one bundle file (`bundle`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::locate::{self, Located};
use super::{Bundle, BundleAgentFile};
use crate::config::MountPlan;
use crate::config::merge::{MODULE_LIST_KEYS, deep_merge, merge_module_lists};
use crate::paths::Paths;

/// Bundle name → the directory its `ns:path` references resolve against.
pub(super) type Namespaces = HashMap<String, PathBuf>;

/// How deep includes may nest (a cycle stops here with a warning).
const MAX_DEPTH: usize = 8;

/// The target of one `includes:` entry.
fn target(item: &Value) -> Option<String> {
    match item {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => m.get("bundle").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// Why an include entry cannot be used; the text becomes the bundle's warning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum IncludeError {
    /// A `git+`, `http(s)://` or `zip+` source.
    #[error("include unavailable: {0} (remote bundles are not fetched)")]
    Remote(String),
    /// `ns:path` with no bundle of that namespace loaded.
    #[error("include unavailable: {entry} (no local bundle '{ns}')")]
    NoNamespace {
        /// The entry as written.
        entry: String,
        /// Its namespace.
        ns: String,
    },
    /// A bundle name that is not installed locally.
    #[error("include unavailable: {0} (not found locally)")]
    NotFound(String),
    /// A path with no bundle file at it (the path tried).
    #[error("include unavailable: {entry} (no file at {})", .path.display())]
    NoFile {
        /// The entry as written.
        entry: String,
        /// The path it resolved to.
        path: PathBuf,
    },
}

/// Where an include entry points, or why it cannot be used.
fn resolve(
    entry: &str,
    dir: &Path,
    namespaces: &HashMap<String, PathBuf>,
    paths: Option<&Paths>,
) -> Result<PathBuf, IncludeError> {
    if ["git+", "http://", "https://", "zip+"]
        .iter()
        .any(|p| entry.starts_with(p))
    {
        return Err(IncludeError::Remote(entry.to_string()));
    }
    if let Some(rest) = entry.strip_prefix("file://") {
        return with_extension(PathBuf::from(rest.split('#').next().unwrap_or(rest)), entry);
    }
    if let Some((ns, rel)) = entry.split_once(':')
        && !ns.is_empty()
        && ns != "bundle"
    {
        return match namespaces.get(ns) {
            Some(base) => with_extension(base.join(rel), entry),
            None => Err(IncludeError::NoNamespace {
                entry: entry.to_string(),
                ns: ns.to_string(),
            }),
        };
    }
    let path = Path::new(entry);
    if path.is_absolute() || entry.starts_with('.') || entry.contains('/') {
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            dir.join(path)
        };
        return with_extension(path, entry);
    }
    match paths.map(|p| locate::locate(entry, p)) {
        Some(Located::Path(p)) => Ok(p),
        _ => Err(IncludeError::NotFound(entry.to_string())),
    }
}

/// `path` itself, or with `.yaml` / `.yml` / `.md` added, or its `bundle.md` /
/// `bundle.yaml` when a directory.
fn with_extension(path: PathBuf, entry: &str) -> Result<PathBuf, IncludeError> {
    if path.is_file() {
        return Ok(path);
    }
    if path.is_dir() {
        for name in ["bundle.md", "bundle.yaml", "bundle.yml"] {
            if path.join(name).is_file() {
                return Ok(path.join(name));
            }
        }
    }
    for ext in ["yaml", "yml", "md"] {
        let file = PathBuf::from(format!("{}.{ext}", path.display()));
        if file.is_file() {
            return Ok(file);
        }
    }
    Err(IncludeError::NoFile {
        entry: entry.to_string(),
        path,
    })
}

/// Composes `bundle` (loaded from `path`, whose `includes:` value is `includes`, at
/// include depth `depth` below bundles whose namespaces are `inherited`) onto its
/// included bundles; problems become warnings on the result.
pub(super) fn compose(
    bundle: Bundle,
    includes: Option<&Value>,
    path: &Path,
    paths: Option<&Paths>,
    (depth, inherited): (usize, &Namespaces),
) -> Bundle {
    let items: Vec<Value> = match includes {
        None | Some(Value::Null) => return bundle,
        Some(Value::Array(items)) => items.clone(),
        Some(other) => vec![other.clone()],
    };
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut namespaces = inherited.clone();
    namespaces
        .entry(bundle.name.clone())
        .or_insert_with(|| dir.clone());
    let mut base: Option<Bundle> = None;
    let mut warnings = Vec::new();
    for item in &items {
        let Some(entry) = target(item) else {
            warnings.push(format!(
                "include ignored: {item} (expected a name, path or {{bundle: …}})"
            ));
            continue;
        };
        if depth >= MAX_DEPTH {
            warnings.push(format!(
                "include ignored: {entry} (includes nest deeper than {MAX_DEPTH})"
            ));
            continue;
        }
        let file = match resolve(&entry, &dir, &namespaces, paths) {
            Ok(file) => file,
            Err(why) => {
                warnings.push(why.to_string());
                continue;
            }
        };
        match Bundle::load_nested(&file, paths, depth + 1, &namespaces) {
            Ok(included) => {
                if let Some(parent) = file.parent() {
                    namespaces
                        .entry(included.name.clone())
                        .or_insert_with(|| parent.to_path_buf());
                }
                base = Some(match base {
                    None => included,
                    Some(earlier) => layer(earlier, included),
                });
            }
            Err(e) => warnings.push(format!("include unavailable: {entry} ({e})")),
        }
    }
    let mut out = match base {
        Some(base) => layer(base, bundle),
        None => bundle,
    };
    out.warnings.extend(warnings);
    out
}

/// `top` composed onto `base` (foundation's compose; see the module docs). The name,
/// version, description and path are `top`'s.
fn layer(base: Bundle, top: Bundle) -> Bundle {
    let plan = compose_plans(&base.mount_plan.to_value(), &top.mount_plan.to_value());
    let mut agent_files: Vec<BundleAgentFile> = top.agent_files;
    for file in base.agent_files {
        if agent_files.iter().all(|f| f.stem != file.stem) {
            agent_files.push(file);
        }
    }
    let mut warnings = base.warnings;
    warnings.extend(top.warnings);
    Bundle {
        mount_plan: MountPlan::from_value(plan),
        agent_files,
        warnings,
        ..top
    }
}

fn compose_plans(base: &Value, top: &Value) -> Value {
    let mut out = base.as_object().cloned().unwrap_or_default();
    let Some(top) = top.as_object() else {
        return Value::Object(out);
    };
    for (key, value) in top {
        let merged = match (key.as_str(), out.get(key.as_str())) {
            (k, Some(old)) if MODULE_LIST_KEYS.contains(&k) => merge_module_lists(old, value),
            ("agents", Some(Value::Object(old))) => match value {
                Value::Object(new) => Value::Object(merge_rosters(old, new)),
                other => other.clone(),
            },
            ("instruction", _) if value.as_str().is_some_and(str::is_empty) => continue,
            (_, Some(old)) => deep_merge(old, value),
            (_, None) => value.clone(),
        };
        out.insert(key.clone(), merged);
    }
    Value::Object(out)
}

/// Two `agents:` rosters: `include` lists concatenated (no repeats), inline
/// definitions added, later wins.
fn merge_rosters(base: &Map<String, Value>, top: &Map<String, Value>) -> Map<String, Value> {
    let mut out = base.clone();
    for (key, value) in top {
        if key == "include"
            && let (Some(Value::Array(old)), Value::Array(new)) = (out.get("include"), value)
        {
            let mut all = old.clone();
            all.extend(new.iter().filter(|n| !old.contains(n)).cloned());
            out.insert(key.clone(), Value::Array(all));
            continue;
        }
        out.insert(key.clone(), value.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn local_includes_compose_and_remote_ones_are_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("team");
        write(
            &root.join("behaviors/agents.yaml"),
            "bundle: {name: behavior-agents}\ntools:\n  - module: tool-delegate\n    config: {a: 1}\nagents:\n  include: [team:helper]\n",
        );
        write(
            &tmp.path().join("shared/base.md"),
            "---\nbundle: {name: base}\nsession: {orchestrator: {module: loop-basic, config: {max_iterations: 7}}}\ntools: [tool-search]\n---\nBase instruction.\n",
        );
        write(
            &root.join("agents/helper.md"),
            "---\nmeta: {name: helper, description: Helps}\n---\nHelp.\n",
        );
        write(
            &root.join("bundle.md"),
            "---\nbundle: {name: team}\nincludes:\n  - bundle: git+https://example.invalid/x@main\n  - ../shared/base\n  - bundle: team:behaviors/agents\n  - team:behaviors/missing\nsession: {orchestrator: {config: {max_iterations: 9}}}\ntools:\n  - module: tool-delegate\n    config: {b: 2}\n---\nTeam instruction.\n",
        );
        let b = Bundle::load(&root.join("bundle.md")).unwrap();
        assert_eq!(b.name, "team");
        assert_eq!(
            b.mount_plan.to_value()["session"],
            json!({"orchestrator": {"module": "loop-basic", "config": {"max_iterations": 9}}})
        );
        assert_eq!(
            b.mount_plan.to_value()["tools"],
            json!([{"module": "tool-search"}, {"module": "tool-delegate", "config": {"a": 1, "b": 2}}])
        );
        assert_eq!(
            b.mount_plan.to_value()["agents"],
            json!({"include": ["team:helper"]})
        );
        assert_eq!(b.mount_plan.instruction(), "Team instruction.");
        let warnings = b.warnings.join("\n");
        assert!(
            warnings.contains("include unavailable: git+https://example.invalid/x@main (remote bundles are not fetched)"),
            "{warnings}"
        );
        assert!(
            warnings.contains("include unavailable: team:behaviors/missing"),
            "{warnings}"
        );
        assert_eq!(b.agent_files.len(), 1);
    }

    #[test]
    fn an_include_cycle_stops_with_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            &tmp.path().join("a.yaml"),
            "bundle: {name: a}\nincludes: [./b.yaml]\n",
        );
        write(
            &tmp.path().join("b.yaml"),
            "bundle: {name: b}\nincludes: [./a.yaml]\n",
        );
        let b = Bundle::load(&tmp.path().join("a.yaml")).unwrap();
        assert!(
            b.warnings.iter().any(|w| w.contains("nest deeper")),
            "{:?}",
            b.warnings
        );
    }
}
