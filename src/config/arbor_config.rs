//! arbor's own config file (`<config dir>/arbor/config.yaml`, or `$ARBOR_CONFIG`).
//!
//! ```yaml
//! bundle: ./my-bundle.md          # optional: replaces the built-in bundle
//! theme: dark
//! provider: openai                # which configured provider a root session uses
//! providers:                      # module entries, as in a bundle
//!   - module: provider-openai
//!     config: {base_url: "http://127.0.0.1:8765/v1", api_key: "…", default_model: "gpt-4o"}
//!   - module: provider-anthropic
//!     config: {default_model: "claude-sonnet-4-5"}
//! keymap: {}                      # overrides, see tui::keymap
//! retry: {max_wait: 60}           # seconds, see config::retry
//! approvals: {bash: ask, "bash(cargo test*)": allow}   # see config::approvals
//! limits:                         # delegation bounds no agent file can raise (`limits`)
//!   max_sessions_per_tree: 100
//!   max_concurrent_sub_sessions: 32
//! response: {max_bytes: 8388608, max_time: 600}   # see config::response
//! notify: bell                    # bell | osc9 | off, see `Notify`
//! mouse: true                     # capture the mouse in the TUI (false: the terminal's)
//! mcp_servers:                    # MCP tool servers, see config::mcp
//!   calc: {command: calc-server, args: [--stdio]}
//! sandbox: {mode: auto, network: deny, required: false}   # see config::sandbox
//! hooks: {PreToolUse: [{matcher: bash, hooks: [{type: command, command: "~/bin/check.sh"}]}]}   # see hooks
//! web: {allow_private_addresses: false}   # see tool::web
//! isolation: {mode: worktree, merge: auto}   # or just worktree | none; merge: auto | review | manual, see config::isolation
//! context: {max_tokens: 128000, compact_threshold: 0.8}  # see config::context
//! remote: {nats_url: "nats://127.0.0.1:4222", agents: [explorer]}  # see config::remote
//! ```
//!
//! Sections read by their own modules from `extra`: `prices` (`routing::prices`),
//! `retry` (`config::retry`), `routing` (`routing`), `mcp_servers` (`config::mcp`),
//! `hooks` (`hooks`), `web` (`tool::web`).
//! `context` (`config::context`).
//!
//! Relative paths in the file (`bundle:`, an MCP server's `cwd` and `./command`)
//! are relative to the file's directory, not the current one.
//!
//! A bad `approvals:` entry makes the whole file unusable ([`ConfigError::Parse`],
//! quoting the key and value): an approval rule is never silently dropped.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::approvals::Rules;
use super::isolation::IsolationSetting;
use super::limits::Limits;
use super::mount_plan::ModuleEntry;
use super::remote::RemoteConfig;
use super::sandbox::SandboxConfig;

/// The parsed config file. A missing file is the default config, not an error.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ArborConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// Id (or module) of the provider root sessions use; the first usable one if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default)]
    pub providers: Vec<ModuleEntry>,
    #[serde(default)]
    pub keymap: Map<String, Value>,
    /// Approval rules over the defaults (full authority: the user's own file).
    #[serde(default, skip_serializing_if = "Rules::is_empty")]
    pub approvals: Rules,
    /// Tree-wide delegation limits (`limits:`); defaults when absent.
    #[serde(default)]
    pub limits: Limits,
    /// How the TUI tells the person a session started needing them (`notify:`);
    /// `bell` when absent. Any other value makes the file unusable.
    #[serde(default, skip_serializing_if = "Notify::is_default")]
    pub notify: Notify,
    /// Whether the TUI captures the mouse at start (`mouse:`; absent: `true`, see
    /// [`ArborConfig::mouse_capture`]): the wheel scrolls the pane under the pointer
    /// and clicks focus and select. `false` leaves the mouse to the terminal (its own
    /// text selection); the TUI's `global.mouse` key toggles it either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mouse: Option<bool>,
    /// The kernel sandbox of `bash` and stdio MCP servers (`sandbox:`, see
    /// `config::sandbox`); a bad key or value makes the file unusable.
    #[serde(default, skip_serializing_if = "SandboxConfig::is_default")]
    pub sandbox: SandboxConfig,
    /// Whether writing sub-sessions get their own git worktree by default and how
    /// their work comes home (`isolation: worktree | none` or `{mode, merge: auto |
    /// review | manual}`; absent: `worktree`, `auto`, see `config::isolation`). Any
    /// other value makes the file unusable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<IsolationSetting>,
    /// Which sub-sessions run on `arbor worker`s through NATS (`remote:`, see
    /// `config::remote`); absent: all run here. A bad key or value makes the file
    /// unusable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteConfig>,
    /// The MCP servers an editor gave `arbor acp` for one session (ACP `mcpServers`,
    /// in `mcp_servers:`'s `name → server` form), read as
    /// [`McpOrigin::Client`](super::mcp::McpOrigin::Client): no `${VAR}` expansion.
    /// Never read from or written to the file.
    #[serde(skip)]
    pub client_mcp_servers: Map<String, Value>,
    /// Every other key, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Config `notify:`: what the TUI writes to the terminal when a session starts
/// needing the person (SPEC §13 "needs you": an approval, paused, failed,
/// interrupted) while another thread is open.
///
/// - `bell` (the default): BEL (`0x07`), which every terminal understands (a sound,
///   a flash, or tmux's bell flag on the window).
/// - `osc9`: a desktop notification, `ESC ] 9 ; <text> BEL` (iTerm2's OSC 9, also
///   read by WezTerm, kitty, Ghostty and Windows Terminal); terminals without it
///   ignore the sequence.
/// - `off`: nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    #[default]
    Bell,
    Osc9,
    Off,
}

impl Notify {
    fn is_default(&self) -> bool {
        *self == Notify::default()
    }

    /// The config spelling (`bell`, `osc9`, `off`).
    pub fn as_str(self) -> &'static str {
        match self {
            Notify::Bell => "bell",
            Notify::Osc9 => "osc9",
            Notify::Off => "off",
        }
    }
}

/// The config file exists but cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
}

impl ArborConfig {
    /// Config `mouse:`, `true` when absent.
    pub fn mouse_capture(&self) -> bool {
        self.mouse.unwrap_or(true)
    }

    /// Loads `path`; a missing file gives the default config.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut config: Self =
            crate::config::yaml::from_str(&text).map_err(|e| ConfigError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        if let Some(dir) = path.parent() {
            config.anchor_paths(dir);
        }
        Ok(config)
    }

    /// Makes the file's relative paths relative to `dir`, the config file's directory
    /// (issue 22: never the current directory, which may be a cloned repository):
    /// `bundle:`, and in `mcp_servers:` each `cwd` and each `command` written as a
    /// path (`./x`, `../x`). Absolute paths, `~`, `${VAR}` references and bare
    /// command names (looked up on `PATH`) are left alone.
    fn anchor_paths(&mut self, dir: &Path) {
        if let Some(bundle) = &self.bundle
            && bundle.is_relative()
            && !bundle.starts_with("~")
        {
            self.bundle = Some(dir.join(bundle));
        }
        let Some(Value::Object(servers)) = self.extra.get_mut("mcp_servers") else {
            return;
        };
        for server in servers.values_mut() {
            let Value::Object(server) = server else {
                continue;
            };
            for key in ["cwd", "command"] {
                let Some(Value::String(text)) = server.get_mut(key) else {
                    continue;
                };
                let as_path = Path::new(text.as_str());
                let anchored = if key == "cwd" {
                    as_path.is_relative() && !text.starts_with(['~', '$'])
                } else {
                    text.starts_with("./") || text.starts_with("../")
                };
                if anchored && !text.is_empty() {
                    *text = dir.join(as_path).display().to_string();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_is_default_and_keys_parse() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            ArborConfig::load(&dir.path().join("nope.yaml")).unwrap(),
            ArborConfig::default()
        );
        let p = dir.path().join("c.yaml");
        std::fs::write(
            &p,
            "theme: dark\nproviders:\n  - module: provider-openai\n    config: {base_url: 'http://x'}\nfoo: 1\n",
        )
        .unwrap();
        let c = ArborConfig::load(&p).unwrap();
        assert_eq!(c.theme.as_deref(), Some("dark"));
        assert_eq!(c.providers[0].config["base_url"], "http://x");
        assert_eq!(c.extra["foo"], 1);
        std::fs::write(&p, "providers: [unclosed\n").unwrap();
        assert!(ArborConfig::load(&p).is_err());
    }

    #[test]
    fn relative_paths_resolve_against_the_config_files_directory() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.yaml");
        std::fs::write(
            &p,
            "bundle: ./my-bundle.md\nmcp_servers:\n  a: {command: ./srv, cwd: data}\n  b: {command: npx, cwd: /abs}\n  c: {command: srv, cwd: \"${HOME}/x\"}\n",
        )
        .unwrap();
        let c = ArborConfig::load(&p).unwrap();
        assert_eq!(c.bundle, Some(dir.path().join("./my-bundle.md")));
        let servers = &c.extra["mcp_servers"];
        let at = |rel: &str| dir.path().join(rel).display().to_string();
        assert_eq!(servers["a"]["command"], at("./srv"));
        assert_eq!(servers["a"]["cwd"], at("data"));
        assert_eq!(servers["b"]["command"], "npx");
        assert_eq!(servers["b"]["cwd"], "/abs");
        assert_eq!(servers["c"]["cwd"], "${HOME}/x");
        std::fs::write(&p, "bundle: /abs/b.md\n").unwrap();
        assert_eq!(
            ArborConfig::load(&p).unwrap().bundle,
            Some(PathBuf::from("/abs/b.md"))
        );
    }

    #[test]
    fn notify_defaults_to_bell_and_a_bad_value_makes_the_file_unusable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.yaml");
        std::fs::write(&p, "theme: dark\n").unwrap();
        assert_eq!(ArborConfig::load(&p).unwrap().notify, Notify::Bell);
        for (yaml, want) in [
            ("notify: osc9\n", Notify::Osc9),
            ("notify: off\n", Notify::Off),
            ("notify: bell\n", Notify::Bell),
        ] {
            std::fs::write(&p, yaml).unwrap();
            assert_eq!(ArborConfig::load(&p).unwrap().notify, want, "{yaml}");
        }
        std::fs::write(&p, "notify: beep\n").unwrap();
        let err = ArborConfig::load(&p).unwrap_err().to_string();
        assert!(err.contains("beep"), "{err}");
        assert!(err.starts_with(&p.display().to_string()), "{err}");
    }

    #[test]
    fn approvals_parse_and_a_bad_entry_makes_the_file_unusable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.yaml");
        std::fs::write(
            &p,
            "approvals:\n  bash: deny\n  \"bash(cargo test*)\": allow\n",
        )
        .unwrap();
        let c = ArborConfig::load(&p).unwrap();
        assert_eq!(c.approvals.rules().len(), 2);
        assert_eq!(
            c.approvals.rules()[0].decision,
            crate::config::approvals::Decision::Deny
        );
        for (yaml, quoted) in [
            (
                "approvals:\n  bash: maybe\n",
                "\"bash\": expected allow, ask or deny, got 'maybe'",
            ),
            ("approvals: [bash]\n", "approvals: expected a mapping"),
            (
                "approvals:\n  \"bash([)\": allow\n",
                "\"bash([)\": pattern does not compile",
            ),
        ] {
            std::fs::write(&p, yaml).unwrap();
            let err = ArborConfig::load(&p).unwrap_err().to_string();
            assert!(err.contains(quoted), "{yaml}: {err}");
            assert!(err.starts_with(&p.display().to_string()), "{err}");
        }
    }
}
