//! Bundles (SPEC §5). CONTRACT STUB — the config helper replaces the bodies; keep these
//! signatures.

use std::path::{Path, PathBuf};

use super::mount_plan::MountPlan;

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

impl Bundle {
    /// arbor's built-in bundle (`agents/bundle.md` + `agents/*.md`, embedded).
    pub fn builtin() -> Self {
        todo!("config helper")
    }

    /// Loads a `bundle.md` or `.yaml` bundle from disk.
    pub fn load(path: &Path) -> Result<Self, BundleError> {
        let _ = path;
        todo!("config helper")
    }
}
