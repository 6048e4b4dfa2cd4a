//! What the project of the working directory grants this process now (issue 39:
//! trust is live): its hooks (`.claude/settings*.json`, `.amplifier/settings*.yaml`)
//! and its `.mcp.json` servers, next to the user's own from `config.yaml`.
//!
//! Owns: [`ProjectPowers`] — the current [`Powers`], read again at the start of every
//! turn ([`ProjectPowers::refresh`], through `TurnEnv::refresh_powers` when a turn
//! builds its gate), so trusting
//! a project (the TUI's prompt, `arbor trust` in another shell) or untrusting it (a
//! revoke, a changed power file) takes effect for every session of the process at
//! its next turn; servers of the project that are no longer listed are stopped
//! (`McpHub::retire_project_servers`). Reading is a trust-store read and a hash of the
//! project's power files (`config::trust::trust_state`): small next to a model call.
//! Does not own: what trust is (`config::trust`), parsing hooks or servers (`hooks`,
//! `config::mcp`), the agents' own tools (the registry, rebuilt by the watcher when
//! the trust store changes), or running hooks and servers (`hooks`, `tool::mcp`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::config::ArborConfig;
use crate::config::mcp::{McpServer, process_servers_with};
use crate::config::trust;
use crate::hooks::HookRunner;
use crate::paths::Paths;
use crate::sandbox::Sandbox;
use crate::tool::mcp::McpHub;

/// The hooks and MCP servers every session of the process uses now.
#[derive(Debug, Clone, Default)]
pub struct Powers {
    /// The hooks that run (and the listing of all of them).
    pub hooks: HookRunner,
    /// The MCP servers every session mounts: config `mcp_servers:` and a trusted
    /// project's `.mcp.json`.
    pub mcp_servers: Vec<McpServer>,
}

impl Powers {
    /// The powers for `paths.cwd`'s project as it stands: its trust state is read
    /// once, for the hooks and the servers alike. Problems are logged.
    pub fn read(paths: &Paths, config: &ArborConfig, sandbox: &Sandbox) -> Self {
        let project = trust::Project::of(paths);
        let servers = process_servers_with(config, project.as_ref());
        for problem in &servers.problems {
            tracing::warn!("{problem}");
        }
        let (hooks, problems) = HookRunner::for_process(config, sandbox.clone(), project.as_ref());
        for problem in &problems {
            tracing::warn!("hooks: {problem}");
        }
        Self {
            hooks,
            mcp_servers: servers.servers,
        }
    }
}

/// The current [`Powers`], replaced as a whole when read again.
#[derive(Debug, Default)]
pub(crate) struct ProjectPowers {
    now: Mutex<Arc<Powers>>,
    /// The next [`refresh`](Self::refresh) keeps `now` (read an instant before by an
    /// engine whose first turn starts at once, [`ProjectPowers::read_just_now`]).
    just_read: AtomicBool,
}

impl ProjectPowers {
    /// Starts from `powers`.
    pub fn new(powers: Powers) -> Self {
        Self {
            now: Mutex::new(Arc::new(powers)),
            just_read: AtomicBool::new(false),
        }
    }

    /// The powers in force were read just now, for a turn that starts at once: the
    /// next [`refresh`](Self::refresh) returns them instead of reading them again.
    pub fn read_just_now(&self) {
        self.just_read.store(true, Ordering::Release);
    }

    /// The powers in force (as last read).
    pub fn current(&self) -> Arc<Powers> {
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads the project's powers again ([`Powers::read`]) and puts them in force;
    /// stops the project MCP servers of `mcp` no longer listed. Returns them. Right
    /// after [`read_just_now`](Self::read_just_now), once, returns those in force.
    pub fn refresh(
        &self,
        paths: &Paths,
        config: &ArborConfig,
        sandbox: &Sandbox,
        mcp: &McpHub,
    ) -> Arc<Powers> {
        if self.just_read.swap(false, Ordering::AcqRel) {
            return self.current();
        }
        let fresh = Powers::read(paths, config, sandbox);
        let before = self.current();
        if before.hooks.listing() != fresh.hooks.listing()
            || before.mcp_servers != fresh.mcp_servers
        {
            let active = fresh
                .hooks
                .listing()
                .iter()
                .filter(|h| h.skipped.is_none())
                .count();
            tracing::info!(
                "project powers changed: {active} hook(s) active, {} MCP server(s)",
                fresh.mcp_servers.len()
            );
        }
        let retired = mcp.retire_project_servers(&fresh.mcp_servers);
        if !retired.is_empty() {
            tracing::info!(
                "stopped MCP server(s) the project no longer grants: {}",
                retired.join(", ")
            );
        }
        let fresh = Arc::new(fresh);
        *self
            .now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = fresh.clone();
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_read_just_now_serve_the_next_turn_and_later_turns_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        let lookup = |k: &str| match k {
            "HOME" => Some(dir.path().join("home").display().to_string()),
            "XDG_STATE_HOME" => Some(dir.path().join("state").display().to_string()),
            _ => None,
        };
        let paths = Paths::from_env_map(&lookup, project.clone());
        let config = ArborConfig::default();
        let sandbox = Sandbox::new(config.sandbox.clone(), &paths);
        let mcp = McpHub::new(Arc::new(|_: &str| None));
        let powers = ProjectPowers::new(Powers::read(&paths, &config, &sandbox));
        assert!(powers.current().hooks.listing().is_empty());
        powers.read_just_now();
        // A hook appears after the read: the turn that starts at once does not look.
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::write(
            project.join(".claude/settings.json"),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2"}]}]}}"#,
        )
        .unwrap();
        let first = powers.refresh(&paths, &config, &sandbox, &mcp);
        assert!(first.hooks.listing().is_empty());
        // Every later turn reads the project again (untrusted: listed, skipped).
        let second = powers.refresh(&paths, &config, &sandbox, &mcp);
        assert_eq!(second.hooks.listing().len(), 1);
        assert!(second.hooks.listing()[0].skipped.is_some());
        assert_eq!(powers.current().hooks.listing().len(), 1);
    }
}
