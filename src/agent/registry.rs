//! The agent registry: resolution tiers, `ns:name`, shadowing (SPEC §4).
//! CONTRACT STUB — the agent helper replaces the bodies; keep these signatures.

use std::sync::Arc;

use super::AgentDef;
use crate::config::Bundle;
use crate::paths::Paths;

/// Every agent visible to a session, winners only (sorted by name), each carrying the
/// definitions it shadows. Cheap to share as `Arc<Registry>`; rebuilt whole on change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    agents: Vec<AgentDef>,
}

/// How consumers hold the live registry: the watcher sends a new one on every change.
pub type RegistryHandle = tokio::sync::watch::Receiver<Arc<Registry>>;

impl Registry {
    /// Builds the registry from `AMPLIFIER_AGENT_*` in `env`, the user dir, the project
    /// dir (both from `paths`) and `bundle`'s agents. Never fails: bad files become
    /// invalid entries.
    pub fn load(paths: &Paths, bundle: &Bundle, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let _ = (paths, bundle, env);
        todo!("agent helper")
    }

    /// The winning definition for `name` (`ns:name` looks only in bundle namespace `ns`).
    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// All winning definitions, sorted by name (valid and invalid).
    pub fn agents(&self) -> &[AgentDef] {
        &self.agents
    }

    /// Names of valid agents, sorted.
    pub fn valid_names(&self) -> Vec<String> {
        self.agents
            .iter()
            .filter(|a| a.is_valid())
            .map(|a| a.name.clone())
            .collect()
    }
}
