//! The kernel sandbox of `bash` commands and stdio MCP servers (issue #22).
//!
//! arbor confines a command by running it through itself: `arbor __sandbox POLICY
//! PROGRAM ARGS…` ([`HELPER_ARG`], handled first thing in `main`, before any thread
//! starts) applies [`Policy`] to its own process and then `exec`s `PROGRAM`, so the
//! command keeps the helper's pid (the caller's kill, timeout and output capture work
//! unchanged). Applying a policy, in order (`helper`):
//!
//! 0. `setsid`: a session and process group of its own (group id = its pid, so the
//!    caller's group kill still reaches everything it starts) and no controlling
//!    terminal, so it cannot type into the user's terminal with `TIOCSTI` or read and
//!    write `/dev/tty` (issue 34). The caller must not put it in a process group of
//!    its own first (a group leader cannot `setsid`; the helper then refuses to run).
//!    Commands that run unconfined go through the helper too, for this step alone
//!    (`arbor __sandbox --detach PROGRAM ARGS…`, [`Sandbox::unconfined_command`];
//!    as root also step 3's ioctl rule, since CAP_SYS_ADMIN may `TIOCSTI` any
//!    terminal);
//! 1. a user and mount namespace (`unshare`), where an empty read-only tmpfs is
//!    mounted over each deny-listed directory and `/dev/null` over each deny-listed
//!    file ([`deny_list`]: `~/.ssh`, `~/.aws`, `~/.gnupg`, cloud and registry
//!    credentials, shell histories, the `NATS_CREDS` file, arbor's config, Amplifier's
//!    key files). Where user namespaces are not available this step is skipped and the
//!    deny list stays readable ([`Probe::userns`] says so; `doctor` reports "partial");
//! 2. Landlock: reads and execution everywhere, writes only beneath the policy's
//!    `writable` directories and a few devices (`/dev/null`, `/dev/ptmx`, …; not
//!    `/dev/tty`); with the network denied, TCP bind and connect too (Landlock ABI ≥
//!    4); signals to and abstract Unix sockets of processes outside the sandbox (ABI ≥
//!    6). A Landlocked process can neither mount nor unmount, so it cannot uncover
//!    step 1's masks;
//! 3. a seccomp filter: the terminal-injection ioctls (`TIOCSTI`, `TIOCLINUX`) fail
//!    with `EPERM` on any descriptor, always; with the network denied also
//!    `socket`/`socketpair` of any family but `AF_UNIX`, and `io_uring_setup` (UDP
//!    and raw sockets, which Landlock does not cover);
//! 4. `no_new_privs` (set before Landlock and seccomp; kept across `exec`).
//!
//! Every child — sandboxed or not — also inherits none of arbor's secret variables
//! (`env`: provider keys, `*_TOKEN`, `*_SECRET*`, `*PASSWORD`, `SSH_AUTH_SOCK`,
//! `NATS_CREDS`, …) but those `sandbox.env_pass` names ([`Sandbox::strip_env`]).
//!
//! The parent side ([`Sandbox`]) decides per command whether it runs sandboxed
//! ([`Sandbox::decide`]): `sandbox.mode: off`, or a kernel where the [`probe`] failed,
//! runs it unconfined — or refuses it when `sandbox.required` is true.
//!
//! Owns: the policy, the deny list, the helper's argv, deciding and describing
//! (`sandboxed: writes ./, no network`), explaining what it blocked in a failed
//! command's output ([`explain`]), building sandboxed and detached commands
//! ([`command`], [`Sandbox::tokio_command`], [`Sandbox::unconfined_command`]) and the
//! environment they inherit. Does not own: the `sandbox:` config section
//! (`config::sandbox`), running the command (`tool::bash`, `tool::mcp`), or the doctor
//! report's layout (`cli::doctor`). Linux only; elsewhere the probe reports the
//! sandbox unavailable.

mod env;
mod error;
pub mod explain;
pub mod git_guard;
mod helper;
mod probe;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::sandbox::{SandboxConfig, SandboxMode, SandboxNetwork};
use crate::paths::Paths;

pub use env::{
    SECRET_NAMES, SECRET_SUFFIXES, is_provider_key_var, is_secret_var, secret_vars, strip_secrets,
};
pub use error::{SandboxError, StepError};
pub use explain::{explain, network_blocked};
pub use helper::helper_main;
pub use probe::{Probe, probe};

/// `argv[1]` of the sandbox helper: `arbor __sandbox POLICY-JSON PROGRAM ARGS…`,
/// `arbor __sandbox --detach PROGRAM ARGS…` ([`DETACH_ARG`]), or `arbor __sandbox
/// --probe` (prints a [`Probe`] as JSON).
pub const HELPER_ARG: &str = "__sandbox";

/// `argv[2]` of the helper for a command that runs unconfined but, like every
/// command, in a session of its own with no controlling terminal: `setsid`, then —
/// only when the helper holds CAP_SYS_ADMIN (root), for which the kernel allows
/// `TIOCSTI` on any terminal — step 3's ioctl filter, then `exec`.
pub const DETACH_ARG: &str = "--detach";

/// The helper's exit code when it could not apply the policy (nothing ran); its
/// stderr holds one line starting with `arbor sandbox:`.
pub const EXIT_SANDBOX_FAILED: i32 = 125;

/// What the helper applies to itself before `exec` (sent as JSON in `argv[2]`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Policy {
    /// Directories (absolute) beneath which writes are allowed; missing ones are
    /// skipped.
    pub writable: Vec<PathBuf>,
    /// Paths hidden from the command (absolute; directories get an empty tmpfs,
    /// files `/dev/null`); missing ones are skipped.
    pub deny_read: Vec<PathBuf>,
    /// Whether network sockets are allowed (`sandbox.network: allow`).
    pub network: bool,
    /// Directories bound onto themselves (so they cannot be renamed or replaced):
    /// writable roots' `.git` ([`git_guard`]); missing ones are skipped.
    #[serde(default)]
    pub pinned: Vec<PathBuf>,
    /// Paths bound read-only inside writable roots: a `.git`'s config, hooks, … and
    /// pointer files ([`git_guard`]); missing ones are skipped.
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
}

/// Whether and how one command runs (see [`Sandbox::decide`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it through the helper with this policy; `note` describes it
    /// (`sandboxed: writes ./, no network`).
    Sandboxed { policy: Policy, note: String },
    /// Run it unconfined; `note` says why (`NOT sandboxed (sandbox.mode: off)`).
    Unsandboxed { note: String },
    /// Do not run it: `sandbox.required` is true and it cannot be sandboxed.
    Refused { reason: String },
}

impl Decision {
    /// The one-line description the approval prompt shows.
    pub fn note(&self) -> String {
        match self {
            Decision::Sandboxed { note, .. } | Decision::Unsandboxed { note } => note.clone(),
            Decision::Refused { reason } => reason.clone(),
        }
    }
}

/// The process-wide sandbox settings: the config, the deny list and the helper
/// binary (this `arbor`). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Sandbox {
    config: SandboxConfig,
    /// The `arbor` binary that runs [`helper_main`], or why there is none.
    helper: Result<PathBuf, SandboxError>,
    deny_read: Vec<PathBuf>,
    /// Where `~/` in a writable entry points (`$HOME`).
    home: Option<PathBuf>,
}

impl Default for Sandbox {
    /// `mode: off`, not required: every command runs unconfined (tool unit tests).
    fn default() -> Self {
        Self {
            config: SandboxConfig {
                mode: SandboxMode::Off,
                ..SandboxConfig::default()
            },
            helper: Err(SandboxError::NotConfigured),
            deny_read: Vec::new(),
            home: None,
        }
    }
}

impl Sandbox {
    /// The sandbox of this process: `config` (the user's `sandbox:`), the deny list of
    /// `paths` and `$HOME`, and the running binary as the helper when it is `arbor`
    /// (a test harness or another embedder has none unless it calls
    /// [`Sandbox::with_helper`]).
    pub fn new(config: SandboxConfig, paths: &Paths) -> Self {
        let helper = std::env::current_exe()
            .map_err(|e| SandboxError::NoBinary(e.to_string()))
            .and_then(|exe| {
                let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                if name == "arbor" || name == "arbor.exe" {
                    Ok(exe)
                } else {
                    Err(SandboxError::NotArbor(name.to_string()))
                }
            });
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        Self {
            config,
            helper,
            deny_read: deny_list(paths, home.as_deref()),
            home,
        }
    }

    /// The same settings with `helper` (an `arbor` binary) as the helper (tests and
    /// embedders whose own binary is not `arbor`).
    pub fn with_helper(mut self, helper: PathBuf) -> Self {
        self.helper = Ok(helper);
        self
    }

    /// The same settings with `network` in place of `sandbox.network` (a stdio MCP
    /// server's own `sandbox: {network: …}` entry in the user's config).
    pub fn with_network(mut self, network: SandboxNetwork) -> Self {
        self.config.network = network;
        self
    }

    /// The config this sandbox follows.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The kernel probe through this sandbox's helper (cached per process; blocking
    /// the first time), or why there is no helper to probe with.
    pub fn probe(&self) -> Result<Probe, SandboxError> {
        self.helper.as_ref().map(|h| probe(h)).map_err(Clone::clone)
    }

    /// The deny list (absolute paths, whether or not they exist).
    pub fn deny_read(&self) -> &[PathBuf] {
        &self.deny_read
    }

    /// Whether a command in `dir` that may write beneath `writable` (entries as in
    /// `allowed_write_paths`: relative to `dir`, `~/`-prefixed, or absolute) runs
    /// sandboxed, unconfined or not at all. Runs the [`probe`] the first time
    /// (blocking, a few milliseconds).
    pub fn decide(&self, dir: &Path, writable: &[String]) -> Decision {
        let unavailable = |why: String| {
            if self.config.required {
                Decision::Refused {
                    reason: format!("refused: sandbox.required is true and {why}"),
                }
            } else {
                Decision::Unsandboxed {
                    note: format!("NOT sandboxed ({why})"),
                }
            }
        };
        if self.config.mode == SandboxMode::Off {
            return unavailable("sandbox.mode is off".into());
        }
        let helper = match &self.helper {
            Ok(h) => h,
            Err(e) => return unavailable(format!("the sandbox is unavailable: {e}")),
        };
        let probe = probe(helper);
        if let Err(why) = probe.usable(self.config.network_allowed()) {
            return unavailable(format!("the sandbox is unavailable: {why}"));
        }
        let roots = self.roots(dir, writable);
        let shown: Vec<String> = roots.iter().map(|r| show_root(r, dir)).collect();
        let mut note = if shown.is_empty() {
            "sandboxed: writes only its temp dir".to_string()
        } else {
            format!("sandboxed: writes {}", shown.join(", "))
        };
        note.push_str(if self.config.network_allowed() {
            ", network allowed"
        } else {
            ", no network"
        });
        if probe.userns.is_err() {
            note.push_str(", key files readable (no user namespaces)");
        }
        let (pinned, read_only) = git_guard::guard(&roots);
        if probe.userns.is_err() && !pinned.is_empty() {
            note.push_str(", .git config and hooks writable (no user namespaces)");
        }
        Decision::Sandboxed {
            policy: Policy {
                writable: roots,
                deny_read: self.deny_read.clone(),
                network: self.config.network_allowed(),
                pinned,
                read_only,
            },
            note,
        }
    }

    /// `writable` entries resolved against `dir` and `$HOME`, canonical, existing
    /// ones only (Landlock needs an open directory), duplicates dropped.
    fn roots(&self, dir: &Path, writable: &[String]) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = Vec::new();
        for entry in writable {
            let path = if entry == "~" {
                match &self.home {
                    Some(h) => h.clone(),
                    None => continue,
                }
            } else if let Some(rest) = entry.strip_prefix("~/") {
                match &self.home {
                    Some(h) => h.join(rest),
                    None => continue,
                }
            } else {
                dir.join(entry)
            };
            if let Ok(path) = std::fs::canonicalize(&path)
                && !roots.contains(&path)
            {
                roots.push(path);
            }
        }
        roots
    }

    /// `PROGRAM ARGS…` run through the helper under `policy` as a tokio command (see
    /// [`command`]); `None` when there is no helper binary.
    pub fn tokio_command(
        &self,
        policy: &Policy,
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Option<tokio::process::Command> {
        let helper = self.helper.as_ref().ok()?;
        Some(tokio::process::Command::from(command(
            helper, policy, program, args,
        )))
    }

    /// `PROGRAM ARGS…` as a tokio command that runs unconfined (the sandbox is off,
    /// unavailable, or the command is the user's own hook) but still in a session and
    /// process group of its own, with no controlling terminal: through `helper
    /// __sandbox --detach` (`setsid`, then `exec`; the group id is the child's pid, as
    /// with [`Sandbox::tokio_command`]). Without a helper binary (a test harness, an
    /// embedder whose binary is not `arbor`) it is a plain command in a new process
    /// group that keeps the terminal.
    pub fn unconfined_command(
        &self,
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> tokio::process::Command {
        match &self.helper {
            Ok(helper) => {
                let mut cmd = tokio::process::Command::new(helper);
                cmd.arg(HELPER_ARG).arg(DETACH_ARG).arg(program.into());
                cmd.args(args.into_iter().map(Into::into));
                cmd
            }
            Err(_) => {
                let mut cmd = tokio::process::Command::new(program.into());
                cmd.args(args.into_iter().map(Into::into));
                #[cfg(unix)]
                cmd.process_group(0);
                cmd
            }
        }
    }

    /// Removes the secret variables of arbor's environment from what `cmd` inherits
    /// ([`strip_secrets`]), but those `sandbox.env_pass` names.
    pub fn strip_env(&self, cmd: &mut tokio::process::Command) {
        strip_secrets(cmd, &self.config.env_pass);
    }
}

/// `helper __sandbox POLICY-JSON PROGRAM ARGS…`: a command that runs `PROGRAM ARGS…`
/// confined by `policy` (the caller sets its working directory, environment and
/// pipes; give the command a private temp dir as `TMPDIR` and list it in
/// `policy.writable`). `helper` is an `arbor` binary (`env!("CARGO_BIN_EXE_arbor")`
/// in an integration test). If the policy cannot be applied the command exits with
/// [`EXIT_SANDBOX_FAILED`] without running `PROGRAM`.
///
/// Example (a test running a script under `sh` in `dir`, nothing but `dir` writable,
/// no network):
///
/// ```no_run
/// # use std::path::Path;
/// # let (helper, dir) = (Path::new("target/debug/arbor"), Path::new("/tmp/x"));
/// let policy = arbor::sandbox::Policy { writable: vec![dir.to_path_buf()], ..Default::default() };
/// let out = arbor::sandbox::command(helper, &policy, "sh", ["-c", "touch ok"])
///     .current_dir(dir)
///     .output();
/// ```
pub fn command(
    helper: &Path,
    policy: &Policy,
    program: impl Into<OsString>,
    args: impl IntoIterator<Item = impl Into<OsString>>,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(helper);
    // Serializing plain strings, paths and a bool cannot fail; an empty policy
    // object would still confine writes to nothing.
    let json = serde_json::to_string(policy).unwrap_or_else(|_| "{}".into());
    cmd.arg(HELPER_ARG).arg(json).arg(program.into());
    cmd.args(args.into_iter().map(Into::into));
    cmd
}

/// A writable root as the note shows it: `./` for `dir`, `./sub` beneath it, else
/// the absolute path.
fn show_root(root: &Path, dir: &Path) -> String {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    match root.strip_prefix(&dir) {
        Ok(rest) if rest.as_os_str().is_empty() => "./".into(),
        Ok(rest) => format!("./{}", rest.display()),
        Err(_) => root.display().to_string(),
    }
}

/// Every path a sandboxed command must not read: the key files of
/// [`crate::config::private::key_files`] — the home directory's credential files,
/// arbor's config directory and config file (`$ARBOR_CONFIG`), and Amplifier's key
/// and settings files — the same list `@mentions` are kept from.
pub fn deny_list(paths: &Paths, home: Option<&Path>) -> Vec<PathBuf> {
    crate::config::private::key_files(paths, home)
}

#[cfg(test)]
mod tests;
