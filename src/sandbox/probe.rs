//! What the kernel can do for the sandbox, asked once per process: the helper run
//! as `arbor __sandbox --probe` tries each step on itself and prints a [`Probe`].
//!
//! Owns: running the probe, caching its answer, and judging it ([`Probe::usable`]).
//! Does not own: the steps themselves (`helper`).

use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::HELPER_ARG;
use super::error::{SandboxError, StepError};

/// The lowest Landlock ABI the sandbox is built for: TCP rules (Linux 6.7).
pub const TARGET_ABI: i32 = 4;

/// The outcome of each sandbox step on this kernel; `Err` holds why it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// Whether the probe ran at all (`false`: the helper could not be started or
    /// answered something else; every field then holds that reason).
    pub probed: bool,
    /// The kernel's Landlock ABI version (`None`: no Landlock).
    pub landlock_abi: Option<i32>,
    /// Landlock restricted the probe (file writes confined).
    pub landlock: Result<(), StepError>,
    /// A user and mount namespace could be made and a path hidden (deny list).
    pub userns: Result<(), StepError>,
    /// The network seccomp filter could be installed.
    pub seccomp: Result<(), StepError>,
    /// `no_new_privs` could be set.
    pub no_new_privs: Result<(), StepError>,
}

impl Default for Probe {
    fn default() -> Self {
        let not_tried = || Err(StepError::from("not tried"));
        Self {
            probed: false,
            landlock_abi: None,
            landlock: not_tried(),
            userns: not_tried(),
            seccomp: not_tried(),
            no_new_privs: not_tried(),
        }
    }
}

impl Probe {
    /// A probe that could not run, for `reason`.
    fn failed(reason: String) -> Self {
        let reason = StepError(reason);
        Self {
            probed: false,
            landlock_abi: None,
            landlock: Err(reason.clone()),
            userns: Err(reason.clone()),
            seccomp: Err(reason.clone()),
            no_new_privs: Err(reason),
        }
    }

    /// Whether commands can be sandboxed (with the network allowed or not): Landlock
    /// and `no_new_privs` must work, and the seccomp filter too when the network is
    /// denied. User namespaces are optional (without them the deny list stays
    /// readable). `Err` says what is missing.
    pub fn usable(&self, network_allowed: bool) -> Result<(), SandboxError> {
        self.landlock.clone().map_err(SandboxError::Landlock)?;
        self.no_new_privs
            .clone()
            .map_err(SandboxError::NoNewPrivs)?;
        if !network_allowed {
            self.seccomp.clone().map_err(SandboxError::Seccomp)?;
        }
        Ok(())
    }

    /// Whether the network is confined by Landlock TCP rules too (ABI ≥ 4), besides
    /// the seccomp filter.
    pub fn landlock_tcp(&self) -> bool {
        self.landlock.is_ok() && self.landlock_abi.is_some_and(|abi| abi >= TARGET_ABI)
    }
}

static PROBE: OnceLock<Probe> = OnceLock::new();

/// The probe of this process's kernel, run through `helper` (an `arbor` binary) the
/// first time and cached for the life of the process. Blocks while it runs (a few
/// milliseconds).
pub fn probe(helper: &Path) -> Probe {
    PROBE.get_or_init(|| run_probe(helper)).clone()
}

/// Runs `helper __sandbox --probe` and reads its answer.
fn run_probe(helper: &Path) -> Probe {
    let output = std::process::Command::new(helper)
        .arg(HELPER_ARG)
        .arg("--probe")
        .stdin(std::process::Stdio::null())
        .output();
    let output = match output {
        Ok(o) => o,
        Err(e) => {
            return Probe::failed(format!(
                "cannot run the sandbox helper {}: {e}",
                helper.display()
            ));
        }
    };
    let text = String::from_utf8_lossy(&output.stdout);
    match serde_json::from_str::<Probe>(text.trim()) {
        Ok(probe) if probe.probed => probe,
        _ => Probe::failed(format!(
            "the sandbox helper {} did not answer the probe ({}{})",
            helper.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .next()
                .map(|l| format!(": {l}"))
                .unwrap_or_default()
        )),
    }
}
