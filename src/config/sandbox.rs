//! Config `sandbox:`: whether `bash` commands and stdio MCP servers run in the kernel
//! sandbox (`crate::sandbox`), whether they may use the network, whether a command
//! that cannot be sandboxed is refused, and which secret environment variables they
//! may still inherit.
//!
//! ```yaml
//! sandbox:
//!   mode: auto        # auto (the default): sandbox when the kernel can; off: never
//!   network: deny     # deny (the default) | allow
//!   required: false   # true: refuse a command that cannot run sandboxed (mode off included)
//!   env_pass: []      # secret variables commands, hooks and MCP servers still inherit
//! ```
//!
//! Owns: the shape, defaults and spelling of that section. Does not own: applying the
//! sandbox or probing the kernel (`crate::sandbox`). An unknown key or value makes the
//! whole config file unusable (the reader's error names it), so a typo never turns the
//! sandbox off.

use serde::{Deserialize, Serialize};

/// Config `sandbox:` (issue #22). Every key is optional; absent, the sandbox runs
/// when the kernel supports it, with no network, and falls back to running
/// unconfined when it cannot.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// `mode:` `auto` or `off`.
    #[serde(default)]
    pub mode: SandboxMode,
    /// `network:` `deny` or `allow`.
    #[serde(default)]
    pub network: SandboxNetwork,
    /// `required:` refuse commands that cannot run sandboxed (default `false`).
    #[serde(default)]
    pub required: bool,
    /// `env_pass:` names (exact) of secret environment variables that commands,
    /// hooks and stdio MCP servers still inherit (`GITHUB_TOKEN`); every other secret
    /// (`crate::sandbox::is_secret_var`: `*_API_KEY`, `*_TOKEN`, `*_SECRET*`,
    /// `*PASSWORD`, `SSH_AUTH_SOCK`, `NATS_CREDS`, …) is removed. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_pass: Vec<String>,
}

impl SandboxConfig {
    /// The defaults (`mode: auto`, `network: deny`, `required: false`, no
    /// `env_pass`).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Whether sandboxed processes may open network sockets (`network: allow`).
    pub fn network_allowed(&self) -> bool {
        self.network == SandboxNetwork::Allow
    }
}

/// `sandbox.mode`: `auto` sandboxes whenever the kernel can (Landlock present), `off`
/// never does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    #[default]
    Auto,
    Off,
}

/// `sandbox.network`: `deny` (no TCP connect/bind and no socket other than a Unix
/// one) or `allow` (the network as the user has it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    #[default]
    Deny,
    Allow,
}

impl SandboxMode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Off => "off",
        }
    }
}

impl SandboxNetwork {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxNetwork::Deny => "deny",
            SandboxNetwork::Allow => "allow",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ArborConfig;

    #[test]
    fn defaults_and_values_parse_and_bad_ones_make_the_file_unusable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.yaml");
        std::fs::write(&p, "theme: dark\n").unwrap();
        let c = ArborConfig::load(&p).unwrap();
        assert_eq!(c.sandbox, SandboxConfig::default());
        assert_eq!(c.sandbox.mode, SandboxMode::Auto);
        assert!(!c.sandbox.network_allowed());
        assert!(!c.sandbox.required);
        std::fs::write(
            &p,
            "sandbox: {mode: off, network: allow, required: true, env_pass: [GITHUB_TOKEN]}\n",
        )
        .unwrap();
        let c = ArborConfig::load(&p).unwrap();
        assert_eq!(
            c.sandbox,
            SandboxConfig {
                mode: SandboxMode::Off,
                network: SandboxNetwork::Allow,
                required: true,
                env_pass: vec!["GITHUB_TOKEN".into()],
            }
        );
        for (yaml, quoted) in [
            ("sandbox: {mode: strict}\n", "strict"),
            ("sandbox: {network: maybe}\n", "maybe"),
            ("sandbox: {required: sometimes}\n", "sometimes"),
            ("sandbox: {mdoe: off}\n", "mdoe"),
            ("sandbox: {env_pass: GITHUB_TOKEN}\n", "env_pass"),
        ] {
            std::fs::write(&p, yaml).unwrap();
            let err = ArborConfig::load(&p).unwrap_err().to_string();
            assert!(err.contains(quoted), "{yaml}: {err}");
            assert!(err.starts_with(&p.display().to_string()), "{err}");
        }
    }
}
