//! Agent files, bundles, resolution and the registry (SPEC §3–5), and hot reload
//! (SPEC §15).
//!
//! Owns: splitting frontmatter from body (`frontmatter`), parsing and validating one
//! agent file into an [`AgentDef`] (`file`), bundles — a root mount plan plus agent
//! files (`bundle`), the resolution tiers env → user → project → bundle with `ns:name`
//! and shadowing (`registry`), the validation rules shared with bundles and the lists
//! of modules arbor implements (`validate`), the reload scheduler that coalesces change
//! bursts and reports a diff (`reload`), the OS file watcher feeding it (`watcher`),
//! the tier rule for an agent's `approvals:` (`approvals`), agent trees for transfer and
//! their checks (`tree`), which agent of a tree answers next (`select`), the project's
//! `AGENTS.md` instructions (`instructions`), and withholding the tools
//! of an untrusted project's agents (`registry`, with `config::trust`). Sits above
//! `config` (it reads YAML and builds mount plans with it) and below `provider`. Does
//! not own: merging an agent into a mount plan (`config::merge`) or mounting tools
//! (`tool::mount`).

pub mod approvals;
pub mod bundle;
pub mod commands;
pub mod endpoints;
pub mod file;
pub mod instructions;
pub mod mentions;
pub mod registry;
pub mod reload;
pub mod select;
pub mod tree;
pub mod validate;
pub mod watcher;

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

/// Frontmatter splitting and YAML parsing, shared with `config::trust`.
pub use crate::config::frontmatter;
pub use bundle::Bundle;
pub use registry::Registry;

/// Where an agent definition came from (its shape is metadata's, where a session keeps
/// its agent's tier as `agent_source`).
pub use crate::session::metadata::AgentSource;

#[cfg(test)]
impl AgentDef {
    /// A valid agent `name` of tier `source` with `overlay` and no file (unit tests).
    pub(crate) fn for_test(name: &str, source: AgentSource, overlay: Value) -> Self {
        Self {
            name: name.into(),
            namespace: None,
            source,
            path: None,
            description: String::new(),
            instruction: format!("You are {name}."),
            overlay,
            errors: Vec::new(),
            warnings: Vec::new(),
            shadows: Vec::new(),
        }
    }
}

/// A validation problem with a position: `path:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentIssue {
    pub path: String,
    /// 1-based; 0 when unknown.
    pub line: usize,
    /// 1-based; 0 when unknown.
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for AgentIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path, self.line, self.column, self.message
        )
    }
}

/// A definition that lost to a higher-precedence one of the same name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shadowed {
    pub source: AgentSource,
    pub path: String,
}

/// One agent as loaded from a file (valid or not).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentDef {
    /// `meta.name` / `name`, else the file stem.
    pub name: String,
    /// Bundle namespace for bundle agents (`foundation` in `foundation:explorer`).
    pub namespace: Option<String>,
    pub source: AgentSource,
    /// The file; `None` for agents embedded in the binary (shown as `builtin:<name>`).
    pub path: Option<PathBuf>,
    /// `meta.description` / `description` (may be multi-line).
    pub description: String,
    /// The trimmed Markdown body: the agent's system prompt.
    pub instruction: String,
    /// The agent overlay: every frontmatter key (both forms normalized so `name` and
    /// `description` live under `meta`), plus `instruction`. Empty object when invalid.
    pub overlay: Value,
    /// Errors that make the agent invalid (parse errors with line:col, bad `agents:`).
    pub errors: Vec<AgentIssue>,
    /// Non-fatal notes: unavailable modules (`tool-lsp`), unknown keys kept.
    pub warnings: Vec<String>,
    /// Lower-precedence definitions of the same name.
    pub shadows: Vec<Shadowed>,
}

impl AgentDef {
    /// Valid when it has no errors.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// `path` for display: the file path, or `builtin:<name>` for embedded agents.
    pub fn display_path(&self) -> String {
        self.path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| format!("builtin:{}", self.name))
    }

    /// The first line of the description.
    pub fn summary(&self) -> &str {
        self.description.lines().next().unwrap_or_default().trim()
    }
}
