//! `arbor doctor`'s report of a config file that cannot be used (issue 23 item 10):
//! every bad top-level key, not only the first one loading stops at (and within a
//! key's map or list every bad entry), and every bad
//! `keymap:` entry, not only the first one the keymap stops at — each once, the file's
//! path said once by the caller.
//!
//! Owns: [`config_errors`] and [`keymap_errors`]. Does not own: the rules (the config
//! types, `tui::keymap`), loading the config for real (`config::ArborConfig::load`), or
//! the rest of the report (`doctor`).

use std::path::Path;

use serde_json::{Map, Value};

use crate::config::ArborConfig;
use crate::tui::keymap::{Keymap, KeymapError};

/// Why the config file at `path` cannot be used, one line per problem: a YAML syntax
/// error alone (nothing further can be read), else `key: why` for each top-level key
/// whose value is wrong (each checked on its own, in file order), `keymap:` entries
/// included ([`keymap_errors`]). Empty when the file loads, or is missing.
pub fn config_errors(path: &Path) -> Vec<String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => return vec![format!("cannot read it: {e}")],
    };
    if text.trim().is_empty() {
        return Vec::new();
    }
    let whole = match crate::config::yaml::from_str::<ArborConfig>(&text) {
        Ok(_) => return Vec::new(),
        Err(e) => e.to_string(),
    };
    let Ok(Value::Object(keys)) = crate::config::yaml::from_str::<Value>(&text) else {
        return vec![whole];
    };
    let mut errors = Vec::new();
    for (key, value) in keys {
        // The keymap is checked now too: the report runs no further.
        if key == "keymap"
            && let Value::Object(overrides) = &value
        {
            let (bad, _) = keymap_errors(overrides);
            errors.extend(bad.into_iter().map(|e| format!("keymap: {e}")));
        }
        if key != "keymap" || !matches!(value, Value::Object(_)) {
            errors.extend(key_errors(&key, value));
        }
    }
    if errors.is_empty() {
        errors.push(whole);
    }
    errors
}

/// Whether `{key: value}` alone loads as a config; its error when not.
fn check(key: &str, value: Value) -> Result<(), String> {
    let one = Value::Object(Map::from_iter([(key.to_string(), value)]));
    serde_json::from_value::<ArborConfig>(one)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The problems of top-level `key`: `key: why` when its value is wrong as a whole;
/// for a map or list, each entry is checked on its own too and each bad one said
/// (`limits.max_depth: …`, `providers[1]: …`), so one wrong entry does not hide the
/// next. An entry that fails alone only for a missing sibling field is not blamed.
fn key_errors(key: &str, value: Value) -> Vec<String> {
    let Err(whole) = check(key, value.clone()) else {
        return Vec::new();
    };
    let entries: Vec<(String, Value)> = match value {
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| {
                (
                    format!("{key}.{k}"),
                    Value::Object(Map::from_iter([(k, v)])),
                )
            })
            .collect(),
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("{key}[{i}]"), Value::Array(vec![v])))
            .collect(),
        _ => Vec::new(),
    };
    let each: Vec<String> = entries
        .into_iter()
        .filter_map(|(label, v)| match check(key, v) {
            Err(e) if !e.contains("missing field") => Some(format!("{label}: {e}")),
            _ => None,
        })
        .collect();
    if each.len() > 1 {
        each
    } else {
        vec![format!("{key}: {whole}")]
    }
}

/// Every problem of a `keymap:` section, once each and without the `keymap: ` the
/// error texts start with: each entry checked on its own
/// against the defaults, then (when each is fine alone) the entries together. An
/// unknown action is named without the list of known ones; `known` is that list,
/// given when some action was unknown.
pub fn keymap_errors(overrides: &Map<String, Value>) -> (Vec<String>, Option<String>) {
    let mut errors: Vec<String> = Vec::new();
    let mut known = None;
    let mut note = |e: KeymapError, errors: &mut Vec<String>| {
        let text = match e {
            KeymapError::UnknownAction { name, known: list } => {
                known = Some(list);
                format!("unknown action {name:?}")
            }
            // Said once, by the `keymap` lines it is printed on.
            other => other.to_string().trim_start_matches("keymap: ").to_string(),
        };
        if !errors.contains(&text) {
            errors.push(text);
        }
    };
    for (name, value) in overrides {
        let one = Map::from_iter([(name.clone(), value.clone())]);
        if let Err(e) = Keymap::with_overrides(&one) {
            note(e, &mut errors);
        }
    }
    if errors.is_empty()
        && let Err(e) = Keymap::with_overrides(overrides)
    {
        note(e, &mut errors);
    }
    (errors, known)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_bad_key_is_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(
            &path,
            "notify: beep\ntheme: dark\napprovals:\n  bash: maybe\n",
        )
        .unwrap();
        let errors = config_errors(&path);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with("notify: ") && errors[0].contains("beep"),
            "{errors:?}"
        );
        assert!(
            errors[1].starts_with("approvals: ") && errors[1].contains("maybe"),
            "{errors:?}"
        );
        // Two wrong entries of one key are both said.
        std::fs::write(
            &path,
            "limits: {max_depth: -1, max_sessions_per_tree: x}\nproviders:\n  - module: [5]\n  - {module: a, id: [1]}\n",
        )
        .unwrap();
        let errors = config_errors(&path);
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].starts_with("limits.max_depth: "), "{errors:?}");
        assert!(
            errors[1].starts_with("limits.max_sessions_per_tree: "),
            "{errors:?}"
        );
        assert!(errors[2].starts_with("providers[0]: "), "{errors:?}");
        assert!(errors[3].starts_with("providers[1]: "), "{errors:?}");
        std::fs::write(&path, "notify: [unclosed\n").unwrap();
        assert_eq!(config_errors(&path).len(), 1);
        std::fs::write(&path, "notify: off\n").unwrap();
        assert!(config_errors(&path).is_empty());
    }

    #[test]
    fn every_bad_keymap_entry_is_reported_once() {
        let overrides = json!({"fly": "ctrl+q", "swim": "ctrl+w", "tree.cancel": "hyper+q"});
        let map = overrides.as_object().unwrap();
        let (errors, known) = keymap_errors(map);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors.iter().all(|e| !e.contains("known:")), "{errors:?}");
        assert!(known.is_some_and(|k| k.contains("tree.cancel")));
    }
}
