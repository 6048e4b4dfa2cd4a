//! Why a tool call failed, typed ([`ToolError`]); its text is what the model reads.
//!
//! Owns: the failure kinds the built-in tools share (bad input, confinement, file
//! access) and their wording. Does not own: turning a failure into a tool result (the
//! caller does, `ToolOutput::error(e.to_string())`: the model's wire stays text), MCP
//! failures (`mcp::McpError`) or whether a call may run at all (approvals).

use std::path::PathBuf;

/// A built-in tool's failure. `Display` is the exact text the model gets (and tests
/// and transcripts check), so wording changes here change recorded sessions.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The call's input is malformed: not an object, a missing or wrongly typed
    /// argument, an invalid pattern, an unknown agent. The text names the argument.
    #[error("{0}")]
    Input(String),
    /// A path argument contains a NUL byte.
    #[error("the path contains a NUL byte")]
    NulInPath,
    /// `write_file` / `edit_file` got an empty path.
    #[error("the file path is empty")]
    EmptyPath,
    /// The session's working directory cannot be canonicalized.
    #[error("the working directory {} is not accessible: {source}", .dir.display())]
    WorkingDir {
        /// The working directory as configured.
        dir: PathBuf,
        /// Why `canonicalize` failed.
        #[source]
        source: std::io::Error,
    },
    /// A read-side path leaves the working directory (lexically or via a symlink).
    #[error(
        "path '{requested}' is outside the working directory {}; only files under it can be read",
        .root.display()
    )]
    OutsideWorkingDir {
        /// The path as the model passed it (trimmed).
        requested: String,
        /// The canonical working directory.
        root: PathBuf,
    },
    /// A read-side path does not exist.
    #[error("path not found: '{0}'")]
    NotFound(String),
    /// A file-system call on a path the model passed failed: `cannot {action}
    /// '{path}': {source}` (`action` is `access`, `read`, `write`, `list`, …).
    #[error("cannot {action} '{path}': {source}")]
    Io {
        /// The verb of the message (`read`, `access`, `write`, `list`).
        action: &'static str,
        /// The path as shown to the model.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A write outside `allowed_write_paths`, or an unusable `allowed_write_paths`
    /// config; the text names the roots.
    #[error("{0}")]
    Denied(String),
    /// The path names something the tool cannot act on: a directory to read as a file,
    /// a binary or oversized file, a dangling symlink, a parent that is a file.
    #[error("{0}")]
    Unsuitable(String),
    /// A `budget` argument that is not a budget (`task`).
    #[error(transparent)]
    Budget(#[from] crate::config::budget::BudgetError),
    /// A `model_role` / `provider_preferences` argument that does not parse (`task`).
    #[error(transparent)]
    Preference(#[from] crate::routing::prefs::PreferenceError),
    /// The call's work did not finish: an edit that does not apply, a task that could
    /// not run, a host that is shutting down.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// `cannot {action} '{path}': {source}` (see [`ToolError::Io`]).
    pub fn io(action: &'static str, path: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::confine;

    /// The texts are the ones the tools returned as plain strings before they were
    /// typed (recorded transcripts and tests quote them).
    #[test]
    fn texts_are_the_old_strings() {
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(
            ToolError::io("read", "a.txt", missing).to_string(),
            "cannot read 'a.txt': entity not found"
        );
        assert_eq!(
            ToolError::NulInPath.to_string(),
            "the path contains a NUL byte"
        );
        assert_eq!(ToolError::EmptyPath.to_string(), "the file path is empty");
        assert_eq!(
            ToolError::NotFound("x".into()).to_string(),
            "path not found: 'x'"
        );
    }

    #[test]
    fn confinement_failures_are_told_apart_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let root = confine::root(dir.path()).unwrap();
        let outside = confine::resolve(&root, "../x").unwrap_err();
        assert!(
            matches!(&outside, ToolError::OutsideWorkingDir { requested, .. } if requested == "../x"),
            "{outside:?}"
        );
        assert!(
            outside
                .to_string()
                .starts_with("path '../x' is outside the working directory")
        );
        assert!(matches!(
            confine::resolve(&root, "nope.txt"),
            Err(ToolError::NotFound(p)) if p == "nope.txt"
        ));
        assert!(matches!(
            confine::resolve(&root, "a\0b"),
            Err(ToolError::NulInPath)
        ));
        let denied = confine::resolve_for_write(dir.path(), &[], "a.txt", None).unwrap_err();
        assert!(matches!(denied, ToolError::Denied(_)), "{denied:?}");
    }
}
