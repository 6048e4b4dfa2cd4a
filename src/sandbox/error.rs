//! Why the sandbox cannot confine a command ([`SandboxError`]) and why one kernel step
//! failed ([`StepError`]).
//!
//! Owns: the failure texts `doctor`, the approval prompt's sandbox note and a refused
//! command show. Does not own: deciding what to do about a failure (`Sandbox::decide`).

use serde::{Deserialize, Serialize};

/// One sandbox step that failed in the helper (`unshare(user, mount): …`, `Landlock:
/// …`, `seccomp: …`, `cannot set no_new_privs: …`): the text the helper reports. It
/// crosses from `arbor __sandbox --probe` to the parent as a JSON string inside
/// [`crate::sandbox::Probe`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(transparent)]
#[error("{0}")]
pub struct StepError(pub String);

impl From<String> for StepError {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl From<&str> for StepError {
    fn from(text: &str) -> Self {
        Self(text.to_string())
    }
}

/// Why commands cannot be sandboxed here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// No sandbox is configured (the default of tool unit tests).
    #[error("no sandbox configured")]
    NotConfigured,
    /// The running binary cannot be found (the OS error).
    #[error("cannot find the arbor binary: {0}")]
    NoBinary(String),
    /// The running binary is not `arbor` (its file name).
    #[error("this process ({0}) is not the arbor binary that runs the sandbox")]
    NotArbor(String),
    /// `sandbox.mode` is `off`.
    #[error("sandbox.mode is off")]
    Off,
    /// The probe could not be run (the task's error).
    #[error("probe failed: {0}")]
    ProbeFailed(String),
    /// Landlock does not work on this kernel.
    #[error("Landlock: {0}")]
    Landlock(StepError),
    /// `no_new_privs` cannot be set.
    #[error("{0}")]
    NoNewPrivs(StepError),
    /// The network filter cannot be installed (needed when the network is denied).
    #[error("{0}")]
    Seccomp(StepError),
}
