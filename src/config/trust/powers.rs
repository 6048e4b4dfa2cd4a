//! What trusting a project lets in, file by file (issue 39): exactly the power files
//! trust covers ([`super::power_files`]) and what each gains — a settings file's hooks
//! by event, `.mcp.json`'s servers by name, an agent file's tools and providers, the
//! bundles directory. The trust prompt, `arbor trust` and `arbor doctor` show it.
//!
//! Owns: describing each power file in one line. Does not own: which files are power
//! files or the trust store (`trust`), parsing hooks for running (`hooks`).

use std::path::Path;

use serde_json::Value;

use super::{AGENTS_DIR, BUNDLES_DIR, MAX_POWER_BYTES, MCP_FILE, SETTINGS_FILES};
use crate::config::frontmatter;
use crate::config::project_file::{self, Confinement};

/// One power file of a project and what trusting it gains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PowerFile {
    /// Relative to the project root (`/`-separated); the bundles directory is one
    /// row (`.amplifier/bundles/`).
    pub path: String,
    /// What it gains once trusted (`hooks: PreToolUse (1), PostToolUse (2)`).
    pub gains: String,
}

/// The power files of the project at `root`, each with what it gains, in
/// [`super::power_files`]' order (bundle files folded into one row).
pub fn describe(root: &Path) -> Vec<PowerFile> {
    let mut out = Vec::new();
    let mut bundle_files = 0usize;
    for path in super::power_files(root).into_keys() {
        if path.starts_with(BUNDLES_DIR) {
            bundle_files += 1;
            continue;
        }
        let gains = if path == MCP_FILE {
            mcp_gains(root)
        } else if SETTINGS_FILES.contains(&path.as_str()) {
            hooks_gains(&root.join(&path))
        } else if path.starts_with(AGENTS_DIR) {
            agent_gains(&root.join(&path))
        } else {
            "grants power".to_string()
        };
        out.push(PowerFile { path, gains });
    }
    if bundle_files > 0 {
        out.push(PowerFile {
            path: format!("{BUNDLES_DIR}/"),
            gains: format!(
                "bundles loadable by name ({bundle_files} file{})",
                if bundle_files == 1 { "" } else { "s" }
            ),
        });
    }
    out
}

/// `MCP servers started for every session: calc, github` (the names under
/// `mcpServers`; `config::mcp` checks each entry when the servers start).
fn mcp_gains(root: &Path) -> String {
    let Some(text) = read(&root.join(MCP_FILE)) else {
        return "MCP servers (unreadable)".into();
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return format!("MCP servers (does not parse: {e})"),
    };
    let names: Vec<&str> = value
        .get("mcpServers")
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "MCP servers (none listed)".into()
    } else {
        format!(
            "MCP servers started for every session: {}",
            names.join(", ")
        )
    }
}

/// The file's text, read as trust reads it (capped, non-blocking, regular files).
fn read(path: &Path) -> Option<String> {
    project_file::read(path, &Confinement::unconfined(), MAX_POWER_BYTES)
        .ok()
        .map(|r| r.text())
}

/// `hooks: PreToolUse (1), PostToolUse (2)` (commands per event), `no hooks`, or
/// why it cannot be read.
fn hooks_gains(path: &Path) -> String {
    let Some(text) = read(path) else {
        return "hooks (unreadable)".into();
    };
    let parsed: Result<Value, String> = if path.extension().is_some_and(|x| x == "json") {
        serde_json::from_str(&text).map_err(|e| e.to_string())
    } else {
        crate::config::yaml::from_str(&text).map_err(|e| e.to_string())
    };
    let value = match parsed {
        Ok(v) => v,
        Err(e) => return format!("hooks (does not parse: {e})"),
    };
    let Some(Value::Object(events)) = value.get("hooks") else {
        return "no hooks".into();
    };
    let counts: Vec<String> = events
        .iter()
        .map(|(event, list)| {
            let n: usize = list.as_array().map_or(0, |entries| {
                entries
                    .iter()
                    .map(|e| e.get("hooks").and_then(Value::as_array).map_or(0, Vec::len))
                    .sum()
            });
            format!("{event} ({n})")
        })
        .collect();
    if counts.is_empty() {
        "no hooks".into()
    } else {
        format!(
            "hooks: {} (run in the sandbox, as bash does)",
            counts.join(", ")
        )
    }
}

/// `agent NAME: tools tool-bash, tool-mcp; providers provider-openai`.
fn agent_gains(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(text) = read(path) else {
        return format!("agent {stem} (unreadable)");
    };
    let map = frontmatter::split(&text)
        .ok()
        .and_then(|fm| frontmatter::parse_yaml(&fm.yaml, fm.yaml_line).ok());
    let Some(Value::Object(map)) = map else {
        return format!("agent {stem} (frontmatter does not parse; may add tools once fixed)");
    };
    let meta = map.get("meta").and_then(Value::as_object);
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or(&stem)
        .to_string();
    let modules = |key: &str| -> Vec<String> {
        let list = map.get(key).or_else(|| meta.and_then(|m| m.get(key)));
        list.and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.get("module").and_then(Value::as_str).or(i.as_str()))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut parts = Vec::new();
    for key in ["tools", "providers"] {
        let found = modules(key);
        if !found.is_empty() {
            parts.push(format!("{key} {}", found.join(", ")));
        }
    }
    if parts.is_empty() {
        format!("agent {name}: adds tools or providers")
    } else {
        format!("agent {name}: adds {}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_exactly_the_power_files_with_what_each_gains() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::write(
            root.join(".claude/settings.json"),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}, {"type": "command", "command": "y"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers": {"calc": {"command": "calc"}}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".amplifier/agents")).unwrap();
        std::fs::write(
            root.join(".amplifier/agents/plain.md"),
            "---\nmeta: {name: plain, description: d}\n---\nHi.\n",
        )
        .unwrap();
        std::fs::write(
            root.join(".amplifier/agents/shell.md"),
            "---\nmeta: {name: shell, description: d}\ntools:\n  - module: tool-bash\n---\nHi.\n",
        )
        .unwrap();
        let rows = describe(root);
        let shown: Vec<String> = rows
            .iter()
            .map(|r| format!("{} — {}", r.path, r.gains))
            .collect();
        assert_eq!(rows.len(), 3, "{shown:#?}");
        assert!(
            shown.contains(
                &".claude/settings.json — hooks: PreToolUse (2) (run in the sandbox, as bash does)"
                    .to_string()
            ),
            "{shown:#?}"
        );
        assert!(
            shown.contains(&".mcp.json — MCP servers started for every session: calc".to_string()),
            "{shown:#?}"
        );
        assert!(
            shown.contains(
                &".amplifier/agents/shell.md — agent shell: adds tools tool-bash".to_string()
            ),
            "{shown:#?}"
        );
    }
}
