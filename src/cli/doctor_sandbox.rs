//! `arbor doctor`'s sandbox section (issue #22): the `sandbox:` config, the secret
//! variables children do not inherit and the `env_pass` ones they do, that they have
//! no terminal (issue 34), what the kernel offers (Landlock ABI, user namespaces,
//! seccomp, from the sandbox probe) and what a `bash` command is confined in: file
//! writes, the key-file deny list, the network; and that stdio MCP servers are
//! confined the same way (`tool::mcp`).
//!
//! ```text
//! sandbox   mode: auto, network: deny, required: false
//!   env     not inherited: secrets (*_API_KEY, *_TOKEN, *_SECRET*, *PASSWORD, SSH_AUTH_SOCK, NATS_CREDS, …); env_pass: GITHUB_TOKEN
//!   tty     none: commands, hooks and MCP servers run in a session of their own
//!   kernel  Landlock ABI 7, user namespaces: yes, seccomp: yes
//!   writes  confined: the working dir (allowed_write_paths) and a private TMPDIR
//!   keys    hidden: 19 paths (~/.ssh, ~/.aws, ~/.gnupg, arbor's config, Amplifier's keys)
//!   network denied (Landlock TCP rules and a seccomp filter on socket)
//!   mcp     stdio servers confined the same way: writes the project dir and a private TMPDIR; …
//!   status  full
//! ```

use color_eyre::Result;

use super::context::Context;
use crate::config::sandbox::SandboxMode;
use crate::outln;
use crate::sandbox::{Probe, Sandbox, SandboxError, StepError};

/// Prints the section; returns the number of problems: one when `sandbox.required`
/// is true and commands cannot be sandboxed (every `bash` call would be refused).
pub async fn report(ctx: &Context) -> Result<usize> {
    let sandbox = Sandbox::new(ctx.config.sandbox.clone(), &ctx.paths);
    let config = sandbox.config();
    outln!(
        "sandbox   mode: {}, network: {}, required: {}",
        config.mode.as_str(),
        config.network.as_str(),
        config.required
    )?;
    let pass = if config.env_pass.is_empty() {
        "none".to_string()
    } else {
        config.env_pass.join(", ")
    };
    outln!(
        "  env     not inherited: secrets (*_API_KEY, *_TOKEN, *_SECRET*, *PASSWORD, SSH_AUTH_SOCK, NATS_CREDS, …); env_pass: {pass}"
    )?;
    outln!(
        "  tty     none: commands, hooks and MCP servers run in a session of their own; TIOCSTI and TIOCLINUX fail in the sandbox"
    )?;
    let probing = sandbox.clone();
    let probe = tokio::task::spawn_blocking(move || probing.probe())
        .await
        .unwrap_or_else(|e| Err(SandboxError::ProbeFailed(e.to_string())));
    let probe = match probe {
        Ok(p) => p,
        Err(why) => {
            outln!("  kernel  not probed: {why}")?;
            return status(config.required, Err(why));
        }
    };
    outln!("  kernel  {}", kernel(&probe))?;
    let usable = probe.usable(config.network_allowed());
    if config.mode == SandboxMode::Off {
        return status(config.required, Err(SandboxError::Off));
    }
    if usable.is_ok() {
        outln!("  writes  confined: the working dir (allowed_write_paths) and a private TMPDIR")?;
        let keys = sandbox.deny_read().iter().filter(|p| p.exists()).count();
        if probe.userns.is_ok() {
            outln!(
                "  keys    hidden: {keys} present of {} paths (~/.ssh, ~/.aws, ~/.gnupg, arbor's config, Amplifier's keys)",
                sandbox.deny_read().len()
            )?;
        } else {
            outln!("  keys    readable: no user namespaces to hide them (partial)")?;
        }
        if config.network_allowed() {
            outln!("  network allowed (sandbox.network: allow)")?;
        } else if probe.landlock_tcp() {
            outln!("  network denied (Landlock TCP rules and a seccomp filter on socket)")?;
        } else {
            outln!(
                "  network denied (a seccomp filter on socket; Landlock ABI < 4 has no TCP rules)"
            )?;
        }
        outln!(
            "  mcp     stdio servers confined the same way: writes the project dir and a private TMPDIR; network as sandbox.network, or a config.yaml server's own `sandbox: {{network: allow}}`"
        )?;
    }
    match usable {
        Ok(()) if probe.userns.is_ok() => {
            outln!("  status  full")?;
            Ok(0)
        }
        Ok(()) => {
            outln!("  status  partial: key files stay readable")?;
            Ok(0)
        }
        Err(why) => status(config.required, Err(why)),
    }
}

/// `Landlock ABI 7, user namespaces: yes, seccomp: yes` (each `no (why)` otherwise).
fn kernel(probe: &Probe) -> String {
    let yes = |r: &Result<(), StepError>| match r {
        Ok(()) => "yes".to_string(),
        Err(e) => format!("no ({e})"),
    };
    let landlock = match (&probe.landlock, probe.landlock_abi) {
        (Ok(()), Some(abi)) => format!("Landlock ABI {abi}"),
        (Ok(()), None) => "Landlock (ABI unknown)".to_string(),
        (Err(e), _) => format!("Landlock: no ({e})"),
    };
    format!(
        "{landlock}, user namespaces: {}, seccomp: {}",
        yes(&probe.userns),
        yes(&probe.seccomp)
    )
}

/// The `status` line of a sandbox that cannot be used; a problem when required.
fn status(required: bool, unusable: Result<(), SandboxError>) -> Result<usize> {
    let Err(why) = unusable else { return Ok(0) };
    if required {
        outln!(
            "  status  every bash command and stdio MCP server is refused: sandbox.required is true and {why}"
        )?;
        Ok(1)
    } else {
        outln!("  status  off: commands and stdio MCP servers run unconfined ({why})")?;
        Ok(0)
    }
}
