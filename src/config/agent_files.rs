//! The agent files of one directory, as both the registry (`agent::registry`) loads
//! them and trust (`config::trust`) covers them (issue 34 item 6): one listing and
//! one power test, so trust cannot miss a file the registry loads.
//!
//! Owns: [`list`] — which entries of a directory are agent files (`*.md` in any case,
//! no dot-files, regular files or links to them, sorted by name, at most
//! [`MAX_AGENT_FILES`]: the registry loads no file beyond them, so trust covers every
//! file it loads) — and [`grants_power`], whether a file's frontmatter sets one of
//! the [`POWER_KEYS`], read with the registry's own splitter and YAML parser
//! (`config::frontmatter`: BOMs, CRLF, PyYAML's quoted continuation lines). Does not
//! own: parsing a file into an agent (`agent::file`), reading it (`project_file`),
//! or the trust store (`trust`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::frontmatter::{self, FrontmatterError};

/// The most agent files one directory gives; the registry warns about and skips the
/// rest (by name order), and trust covers exactly these.
pub const MAX_AGENT_FILES: usize = 2_000;

/// The agent overlay keys that grant power (SPEC §12 "Trust"): an untrusted
/// project's agents have them withheld (`agent::registry`), and trust covers every
/// agent file that sets one. `tools` (and with it `tool-mcp`, which starts MCP
/// servers) and `providers` (where a model — and the prompt — is sent).
pub const POWER_KEYS: [&str; 2] = ["tools", "providers"];

/// The agent files of one directory ([`list`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentFiles {
    /// The files, sorted by file name, at most [`MAX_AGENT_FILES`].
    pub files: Vec<PathBuf>,
    /// How many more agent files the directory holds beyond the cap (not loaded).
    pub beyond_cap: usize,
}

/// Whether the directory entry name `name` is an agent file's: not a dot-file, ends
/// in `.md` in any case (`x.md`, `x.MD`, `x.Md`), with a stem.
pub fn is_agent_file_name(name: &[u8]) -> bool {
    !name.starts_with(b".") && name.len() > 3 && name[name.len() - 3..].eq_ignore_ascii_case(b".md")
}

/// The agent files directly in `dir`: names per [`is_agent_file_name`], regular
/// files or links to them, sorted by file name, the first [`MAX_AGENT_FILES`] (the
/// count of the rest in [`AgentFiles::beyond_cap`]). A missing or unreadable
/// directory has none.
///
/// The kind of each entry comes from the directory listing itself (no `stat` per
/// file); only a link is followed, to see whether it points at a regular file.
pub fn list(dir: &Path) -> AgentFiles {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return AgentFiles::default();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| is_agent_file_name(e.file_name().as_encoded_bytes()))
        .filter_map(|e| {
            let kind = e.file_type().ok()?;
            let path = e.path();
            // Follows links, as `Path::is_file` does.
            let regular = kind.is_file()
                || (kind.is_symlink() && std::fs::metadata(&path).is_ok_and(|m| m.is_file()));
            regular.then_some(path)
        })
        .collect();
    // One directory: the paths differ in their last component only, so their bytes
    // sort as their file names do (and cheaper than `Path`'s component order).
    files.sort_unstable_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    let beyond_cap = files.len().saturating_sub(MAX_AGENT_FILES);
    files.truncate(MAX_AGENT_FILES);
    AgentFiles { files, beyond_cap }
}

/// Whether the agent file `text` grants power: its frontmatter — split and parsed as
/// the registry does (`config::frontmatter`) — sets one of [`POWER_KEYS`] at the top
/// level or under `meta` (the registry lifts them from there), or mentions
/// `tool-mcp`. Fails closed: frontmatter that is unclosed or does not parse counts
/// (it may, once fixed). A file without frontmatter is all instruction: no power.
pub fn grants_power(text: &str) -> bool {
    let fm = match frontmatter::split(text) {
        Ok(fm) => fm,
        Err(FrontmatterError::Missing) => return false,
        Err(FrontmatterError::Unclosed { .. }) => return true,
    };
    if fm.yaml.contains(super::modules::MCP.name) {
        return true;
    }
    let has_power =
        |map: &serde_json::Map<String, Value>| POWER_KEYS.iter().any(|k| map.contains_key(*k));
    match frontmatter::parse_yaml(&fm.yaml, fm.yaml_line) {
        Ok(Value::Object(map)) => {
            has_power(&map)
                || map
                    .get("meta")
                    .and_then(Value::as_object)
                    .is_some_and(has_power)
        }
        Ok(_) => false,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_case_bom_and_meta_tools_grant_power() {
        for text in [
            "---\ntools: []\n---\nx",
            "\u{feff}---\ntools:\n  - module: tool-mcp\n---\nx",
            "---\r\nproviders: []\r\n---\r\nx",
            "---\nmeta:\n  name: a\n  tools: [tool-bash]\n---\nx",
            "---\ntools: [\n---\nx",
            "---\nname: a\n",
        ] {
            assert!(grants_power(text), "{text:?}");
        }
        for text in [
            "no frontmatter",
            "---\nname: a\n---\ntools: []",
            "---\n---\n",
        ] {
            assert!(!grants_power(text), "{text:?}");
        }
        assert!(is_agent_file_name(b"x.MD") && is_agent_file_name(b"x.Md"));
        assert!(!is_agent_file_name(b".x.md") && !is_agent_file_name(b".md"));
    }

    #[test]
    fn the_listing_is_capped_and_counts_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..MAX_AGENT_FILES + 3 {
            std::fs::write(tmp.path().join(format!("a{i:05}.md")), "").unwrap();
        }
        std::fs::create_dir(tmp.path().join("dir.md")).unwrap();
        let got = list(tmp.path());
        assert_eq!(got.files.len(), MAX_AGENT_FILES);
        assert_eq!(got.beyond_cap, 3);
        assert!(got.files[0].ends_with("a00000.md"));
    }
}
