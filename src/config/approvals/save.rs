//! Saving an "always" answer into the user's config file (issue 22): one
//! `"KEY": allow` line added to its `approvals:` block, the rest of the file kept
//! byte for byte (comments included).
//!
//! Owns: [`save_rule`] — where the line goes, checking the result, the atomic write.
//! Does not own: which rule an answer saves (`pattern::suggest_prefix`, the TUI's
//! prompt), which keys are never saved (the caller checks [`super::Grant::from_scope`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Decision, Rules};

/// What [`save_rule`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// The line was added.
    Added,
    /// The file already had the key with that decision; nothing was written.
    AlreadyThere,
}

/// Why a rule was not saved; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// Reading, writing or renaming failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file as it stands, or as it would be, is not a valid config.
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// The key is already there with another decision (never overwritten).
    #[error("{path}: approvals already says \"{key}\": {existing}; edit the file to change it")]
    Conflict {
        path: PathBuf,
        key: String,
        existing: Decision,
    },
}

/// Adds `"key": decision` to the `approvals:` mapping of the config file at `path`
/// (created when missing). The line goes right after a top-level `approvals:` line
/// that opens a block mapping, indented like its entries; a file with no `approvals:`
/// gets the block appended. The new text is parsed again (YAML, and the `approvals:`
/// rules must hold the key with `decision`) before it is written to a temp file in the
/// same directory and renamed over `path` (keeping the file's permissions).
///
/// Errors: [`SaveError::Invalid`] when the file does not parse now, its `approvals:`
/// is not a block mapping (`approvals: {…}`), or the result would not parse;
/// [`SaveError::Conflict`] when the key is there with another decision;
/// [`SaveError::Io`] when reading or writing fails.
pub fn save_rule(path: &Path, key: &str, decision: Decision) -> Result<Saved, SaveError> {
    let io = |source| SaveError::Io {
        path: path.to_path_buf(),
        source,
    };
    let invalid = |e: TextError| SaveError::Invalid {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(e)),
    };
    if let Some(existing) = rules_of(&text).map_err(&invalid)?.get(key) {
        if existing == decision {
            return Ok(Saved::AlreadyThere);
        }
        return Err(SaveError::Conflict {
            path: path.to_path_buf(),
            key: key.to_string(),
            existing,
        });
    }
    let new = with_rule(&text, key, decision).map_err(&invalid)?;
    match rules_of(&new).map_err(&invalid)?.get(key) {
        Some(d) if d == decision => {}
        _ => {
            return Err(SaveError::Invalid {
                path: path.to_path_buf(),
                message: format!("adding \"{key}\" did not give a valid config"),
            });
        }
    }
    write_atomic(path, &new).map_err(io)?;
    Ok(Saved::Added)
}

/// The decision of each key of the `approvals:` of config `text`.
struct Keys(Vec<(String, Decision)>);

impl Keys {
    fn get(&self, key: &str) -> Option<Decision> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, d)| *d)
    }
}

/// Why a config text cannot take a rule (becomes [`SaveError::Invalid`]).
#[derive(Debug, thiserror::Error)]
enum TextError {
    /// The text is not YAML.
    #[error("{0}")]
    Yaml(#[from] serde_saphyr::Error),
    /// Its `approvals:` has bad entries (each issue, `; `-separated).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Rules(Vec<super::ApprovalIssue>),
    /// `approvals:` is written inline, where a line cannot be added.
    #[error("its approvals: is not a block mapping; add the rule by hand")]
    NotABlock,
    /// The key cannot be quoted.
    #[error("{0}")]
    Quote(#[from] serde_json::Error),
}

fn rules_of(text: &str) -> Result<Keys, TextError> {
    if text.trim().is_empty() {
        return Ok(Keys(Vec::new()));
    }
    let value: Value = crate::config::yaml::from_str(text)?;
    let approvals = value.get("approvals").cloned().unwrap_or(Value::Null);
    let rules = Rules::from_value(&approvals).map_err(TextError::Rules)?;
    Ok(Keys(
        rules
            .rules()
            .iter()
            .map(|r| (r.key.clone(), r.decision))
            .collect(),
    ))
}

/// `text` with the rule line inserted (see [`save_rule`]).
fn with_rule(text: &str, key: &str, decision: Decision) -> Result<String, TextError> {
    // A JSON string is a valid YAML double-quoted scalar.
    let quoted = serde_json::to_string(key)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let header = lines.iter().position(|l| {
        l.strip_prefix("approvals:")
            .is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#'))
    });
    let Some(header) = header else {
        if lines
            .iter()
            .any(|l| l.starts_with("approvals:") || l.starts_with("\"approvals\""))
        {
            return Err(TextError::NotABlock);
        }
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("approvals:\n  {quoted}: {decision}\n"));
        return Ok(out);
    };
    let indent = lines[header + 1..]
        .iter()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| &l[..l.len() - l.trim_start().len()])
        .filter(|i| !i.is_empty())
        .unwrap_or("  ");
    let mut out = String::with_capacity(text.len() + quoted.len() + 16);
    for (i, line) in lines.iter().enumerate() {
        out.push_str(line);
        if i == header {
            if !line.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("{indent}{quoted}: {decision}\n"));
        }
    }
    Ok(out)
}

/// Writes `text` to a temp file beside `path` and renames it over `path`, keeping the
/// permissions of the file it replaces.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), meta.permissions())?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save(text: Option<&str>, key: &str) -> (Result<Saved, SaveError>, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        if let Some(t) = text {
            std::fs::write(&path, t).unwrap();
        }
        let result = save_rule(&path, key, Decision::Allow);
        (result, std::fs::read_to_string(&path).unwrap_or_default())
    }

    #[test]
    fn the_rule_joins_an_approvals_block_keeping_comments() {
        let text = "# my config\ntheme: dark  # keep\napprovals:   # rules\n    bash: ask\n    # a comment\nmouse: false\n";
        let (r, out) = save(Some(text), "bash(cargo test*)");
        assert_eq!(r.unwrap(), Saved::Added);
        assert_eq!(
            out,
            "# my config\ntheme: dark  # keep\napprovals:   # rules\n    \"bash(cargo test*)\": allow\n    bash: ask\n    # a comment\nmouse: false\n"
        );
        // Saving again changes nothing.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.yaml");
        std::fs::write(&path, &out).unwrap();
        assert_eq!(
            save_rule(&path, "bash(cargo test*)", Decision::Allow).unwrap(),
            Saved::AlreadyThere
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), out);
    }

    #[test]
    fn a_file_without_approvals_gets_the_block_appended_or_created() {
        let (r, out) = save(Some("theme: dark"), "bash(ls*)");
        assert_eq!(r.unwrap(), Saved::Added);
        assert_eq!(out, "theme: dark\napprovals:\n  \"bash(ls*)\": allow\n");
        let (r, out) = save(None, "write_file");
        assert_eq!(r.unwrap(), Saved::Added);
        assert_eq!(out, "approvals:\n  \"write_file\": allow\n");
    }

    #[test]
    fn conflicts_flow_mappings_and_broken_files_are_left_alone() {
        let deny = "approvals:\n  \"bash(ls*)\": deny\n";
        let (r, out) = save(Some(deny), "bash(ls*)");
        assert!(matches!(r, Err(SaveError::Conflict { .. })), "{r:?}");
        assert_eq!(out, deny);
        let flow = "approvals: {bash: ask}\n";
        let (r, out) = save(Some(flow), "bash(ls*)");
        let message = r.unwrap_err().to_string();
        assert!(message.contains("not a block mapping"), "{message}");
        assert_eq!(out, flow);
        let broken = "approvals:\n  bash: maybe\n";
        let (r, out) = save(Some(broken), "bash(ls*)");
        assert!(matches!(r, Err(SaveError::Invalid { .. })), "{r:?}");
        assert_eq!(out, broken);
    }
}
