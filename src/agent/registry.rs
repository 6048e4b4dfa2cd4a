//! The agent registry: resolution tiers, `ns:name`, shadowing (SPEC §4).
//!
//! Owns: collecting agent definitions from the four tiers — `AMPLIFIER_AGENT_<NAME>`
//! (env) → user dir → project dir → bundle — picking the first match per name, keeping
//! the losers as `shadows`, `ns:name` lookups inside a bundle namespace, and
//! withholding the tools and providers of an untrusted project's agents
//! (`config::trust`), and
//! marking agents whose `sub_agents` break a tree invalid (`tree::check`). Does not
//! own: parsing one file (`agent::file`), reading a directory of them in parallel and
//! reusing unchanged parses (`files`), watching files (`agent::watcher`) or loading the
//! bundle (`bundle`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::Bundle;
use super::file::{self, AgentOrigin};
use super::tree;
use super::{AgentDef, AgentSource, Shadowed};
use crate::config::agent_files;
use crate::config::mount_plan::module_name;
use crate::config::project_file::Confinement;
use crate::config::trust;
use crate::paths::Paths;

mod files;

pub use files::ParseCache;

/// Prefix of the per-agent override variables (`AMPLIFIER_AGENT_ZEN_ARCHITECT`).
pub const ENV_PREFIX: &str = "AMPLIFIER_AGENT_";

/// Every agent visible to a session, winners only (sorted by name), each carrying the
/// definitions it shadows. Cheap to share as `Arc<Registry>`; rebuilt whole on change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    agents: Vec<AgentDef>,
    /// Every bundle agent, winner or not, for `ns:name` lookups.
    bundle_agents: Vec<AgentDef>,
}

/// How consumers hold the live registry: the watcher sends a new one on every change.
pub type RegistryHandle = tokio::sync::watch::Receiver<Arc<Registry>>;

/// The override variable for agent `name`: upper-cased, `-` → `_`, prefixed with
/// [`ENV_PREFIX`] (`zen-architect` → `AMPLIFIER_AGENT_ZEN_ARCHITECT`).
pub fn env_var_name(name: &str) -> String {
    format!("{ENV_PREFIX}{}", name.to_uppercase().replace('-', "_"))
}

/// The agent name an override variable introduces on its own: the suffix lower-cased,
/// `_` → `-` (`AMPLIFIER_AGENT_ZEN_ARCHITECT` → `zen-architect`). `None` for other
/// variables or an empty suffix.
pub fn agent_name_from_var(var: &str) -> Option<String> {
    let suffix = var.strip_prefix(ENV_PREFIX)?;
    (!suffix.is_empty()).then(|| suffix.to_lowercase().replace('_', "-"))
}

/// Parses one agent file for `arbor agent validate PATH` (reported as a user agent).
pub fn validate_file(path: &Path) -> AgentDef {
    file::load_agent_file(path, AgentSource::User, None)
}

/// The agent files directly in `dir` (`config::agent_files::list`: `*.md` in any
/// case, no dot-files, sorted by file name, capped). A missing or unreadable
/// directory is empty.
pub fn agent_files_in(dir: &Path) -> Vec<PathBuf> {
    files::agent_files_in(dir)
}

fn load_dir(
    dir: Option<&Path>,
    source: AgentSource,
    within: &Confinement,
    cache: Option<&mut ParseCache>,
) -> Vec<AgentDef> {
    dir.map(|d| files::load_dir(d, source, within, cache))
        .unwrap_or_default()
}

/// The names of every `AMPLIFIER_AGENT_*` variable the process has.
fn process_agent_vars() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with(ENV_PREFIX))
        .collect()
}

/// The overlay keys an untrusted project's agents may not set (SPEC §12 "Trust",
/// issue 22): `tools` (the agent inherits its parent's) and `providers` (the user's
/// providers apply, so a cloned repository cannot point a model — and the system
/// prompt it is sent — at a server of its choosing).
/// The same list trust covers (`config::agent_files::POWER_KEYS`).
const WITHHELD_UNTRUSTED: [&str; 2] = agent_files::POWER_KEYS;

/// An untrusted project's agents add no tools and no providers (SPEC §12 "Trust"):
/// the [`WITHHELD_UNTRUSTED`] lists of each agent from `agents_dir` are taken out of
/// its overlay — the agent still loads and inherits its parent's tools and providers,
/// which come from the bundle and the user's config — with a warning naming the
/// withheld modules. Nothing changes once the project is trusted (`arbor trust`).
fn withhold_untrusted_powers(paths: &Paths, agents_dir: &Path, defs: &mut [AgentDef]) {
    let Some(root) = agents_dir.parent().and_then(Path::parent) else {
        return;
    };
    if trust::is_trusted(paths, root) {
        return;
    }
    for def in defs {
        for key in WITHHELD_UNTRUSTED {
            let Some(Value::Array(entries)) = def
                .overlay
                .as_object_mut()
                .and_then(|m| m.shift_remove(key))
            else {
                continue;
            };
            if entries.is_empty() {
                continue;
            }
            let names: Vec<String> = entries
                .iter()
                .map(|t| module_name(t).unwrap_or("?").to_string())
                .collect();
            def.warnings.push(format!(
                "project {} is not trusted: {key} {} withheld (run `arbor trust` there to let its agents add {key})",
                root.display(),
                names.join(", ")
            ));
        }
    }
}

/// Loads the file an override variable names, as agent `name`. A set variable whose
/// file is missing gives an invalid agent (never a silent fall-through).
fn load_env_agent(name: &str, var: &str, value: &str, cwd: &Path) -> AgentDef {
    let path = cwd.join(value);
    let origin = AgentOrigin {
        path: Some(&path),
        stem: name,
        source: AgentSource::Env,
        namespace: None,
    };
    if !path.is_file() {
        return file::invalid(
            &origin,
            0,
            0,
            format!(
                "{var} is set but the file {} does not exist",
                path.display()
            ),
        );
    }
    let mut def = file::load_agent_file(&path, AgentSource::Env, None);
    if def.name != name {
        def.warnings.push(format!(
            "the file names its agent '{}'; {var} selects it as '{name}'",
            def.name
        ));
        def.name = name.to_string();
    }
    def
}

impl Registry {
    /// Builds the registry from `AMPLIFIER_AGENT_*` in `env`, the user dir, the project
    /// dir (both from `paths`) and `bundle`'s agents. Never fails: bad files become
    /// invalid entries.
    ///
    /// `env` is asked about the variable of every name found in any tier, and about
    /// every `AMPLIFIER_AGENT_*` variable the process has (so an env-only agent appears
    /// when `env` reads the process environment). For a fixed set of variables use
    /// [`Registry::load_with_vars`].
    pub fn load(paths: &Paths, bundle: &Bundle, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let vars = process_agent_vars();
        Self::build(paths, bundle, env, &vars, None)
    }

    /// Like [`Registry::load`], reusing `cache`'s parse of every user and project agent
    /// file whose size, mtime and inode are unchanged since `cache` last parsed it (and
    /// whose mtime was then older than the file system's timestamp tick), and leaving
    /// this build's parses in `cache` for the next. The result equals
    /// [`Registry::load`]'s.
    pub fn load_cached(
        paths: &Paths,
        bundle: &Bundle,
        env: &dyn Fn(&str) -> Option<String>,
        cache: &mut ParseCache,
    ) -> Self {
        let vars = process_agent_vars();
        Self::build(paths, bundle, env, &vars, Some(cache))
    }

    /// Like [`Registry::load`], with the environment given as `(name, value)` pairs;
    /// every `AMPLIFIER_AGENT_*` among them is scanned, so an agent that only exists as
    /// a variable appears (name = suffix lower-cased, `_` → `-`).
    pub fn load_with_vars(paths: &Paths, bundle: &Bundle, vars: &[(String, String)]) -> Self {
        Self::load_with_vars_cached(paths, bundle, vars, None)
    }

    /// [`Registry::load_with_vars`] with an optional [`ParseCache`], as
    /// [`Registry::load_cached`] uses it.
    pub fn load_with_vars_cached(
        paths: &Paths,
        bundle: &Bundle,
        vars: &[(String, String)],
        cache: Option<&mut ParseCache>,
    ) -> Self {
        let lookup = |k: &str| {
            vars.iter()
                .rev()
                .find(|(name, _)| name == k)
                .map(|(_, v)| v.clone())
        };
        let names: Vec<String> = vars
            .iter()
            .map(|(k, _)| k.clone())
            .filter(|k| k.starts_with(ENV_PREFIX))
            .collect();
        Self::build(paths, bundle, &lookup, &names, cache)
    }

    fn build(
        paths: &Paths,
        bundle: &Bundle,
        env: &dyn Fn(&str) -> Option<String>,
        env_vars: &[String],
        mut cache: Option<&mut ParseCache>,
    ) -> Self {
        if let Some(c) = cache.as_deref_mut() {
            c.begin();
        }
        let project_dir = paths.project_agents_dir();
        let bundle_agents: Vec<AgentDef> = bundle
            .agent_files
            .iter()
            .map(|f| {
                let origin = AgentOrigin {
                    path: f.path.as_deref(),
                    stem: &f.stem,
                    source: AgentSource::Bundle,
                    namespace: Some(&bundle.name),
                };
                file::parse_agent(&f.text, &origin)
            })
            .collect();
        let mut by_name: BTreeMap<String, Vec<AgentDef>> = BTreeMap::new();
        let user_agents = load_dir(
            Some(&paths.user_agents_dir()),
            AgentSource::User,
            &Confinement::unconfined(),
            cache.as_deref_mut(),
        );
        // A project's agent files are read only inside the project and never from a
        // private path (issue 34): `.amplifier/agents/x.md → ~/.ssh/id_rsa` is refused.
        let project_within = project_dir
            .as_deref()
            .and_then(|d| d.parent().and_then(Path::parent))
            .map(|root| Confinement::project_from_env(root, paths))
            .unwrap_or_default();
        let mut project_agents = load_dir(
            project_dir.as_deref(),
            AgentSource::Project,
            &project_within,
            cache.as_deref_mut(),
        );
        if let Some(c) = cache {
            c.finish();
        }
        if let Some(dir) = &project_dir {
            withhold_untrusted_powers(paths, dir, &mut project_agents);
        }
        let tiers = [user_agents, project_agents, bundle_agents.clone()];
        for def in tiers.into_iter().flatten() {
            by_name.entry(def.name.clone()).or_default().push(def);
        }
        let mut agents = winners(by_name, paths, env, env_vars);
        tree::check(&mut agents);
        Self {
            agents,
            bundle_agents,
        }
    }
}

/// One agent per name from its definitions by tier (user, project, bundle, in that
/// order), an `AMPLIFIER_AGENT_<NAME>` variable's definition first: the first wins and
/// records the ones it shadows. A variable not covered by a tier's name introduces
/// an env-only agent.
fn winners(
    mut by_name: BTreeMap<String, Vec<AgentDef>>,
    paths: &Paths,
    env: &dyn Fn(&str) -> Option<String>,
    env_vars: &[String],
) -> Vec<AgentDef> {
    let covered: Vec<String> = by_name.keys().map(|n| env_var_name(n)).collect();
    for var in env_vars {
        if covered.contains(var) {
            continue;
        }
        if let Some(name) = agent_name_from_var(var) {
            by_name.entry(name).or_default();
        }
    }
    let mut agents = Vec::with_capacity(by_name.len());
    for (name, mut defs) in by_name {
        let var = env_var_name(&name);
        if let Some(value) = env(&var).filter(|v| !v.trim().is_empty()) {
            defs.insert(0, load_env_agent(&name, &var, &value, &paths.cwd));
        }
        let mut iter = defs.into_iter();
        let Some(mut winner) = iter.next() else {
            continue;
        };
        winner.shadows = iter
            .map(|d| Shadowed {
                source: d.source,
                path: d.display_path(),
            })
            .collect();
        agents.push(winner);
    }
    agents
}

impl Registry {
    /// A registry over given definitions (winners), e.g. for tests and embedders.
    /// Sorted by name; `ns:name` finds the `Bundle`-source ones with a namespace.
    ///
    /// The `sub_agents` trees are checked as in [`Registry::load`] (`tree::check`).
    pub fn from_defs(mut agents: Vec<AgentDef>) -> Self {
        agents.sort_by(|a, b| a.name.cmp(&b.name));
        tree::check(&mut agents);
        let bundle_agents = agents
            .iter()
            .filter(|a| a.source == AgentSource::Bundle && a.namespace.is_some())
            .cloned()
            .collect();
        Self {
            agents,
            bundle_agents,
        }
    }

    /// The winning definition for `name` (`ns:name` looks only in bundle namespace `ns`).
    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        match name.split_once(':') {
            Some((ns, local)) => self
                .bundle_agents
                .iter()
                .find(|a| a.namespace.as_deref() == Some(ns) && a.name == local),
            None => self.winner(name),
        }
    }

    /// The winning definition named exactly `name` (no `ns:` form), found by binary
    /// search: the winners are sorted by name.
    pub fn winner(&self, name: &str) -> Option<&AgentDef> {
        self.agents
            .binary_search_by(|a| a.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.agents[i])
    }

    /// All winning definitions, sorted by name (valid and invalid).
    pub fn agents(&self) -> &[AgentDef] {
        &self.agents
    }

    /// Every agent of the active bundle (winner or shadowed), in bundle order.
    pub fn bundle_agents(&self) -> &[AgentDef] {
        &self.bundle_agents
    }

    /// Names of valid agents, sorted.
    pub fn valid_names(&self) -> Vec<String> {
        self.agents
            .iter()
            .filter(|a| a.is_valid())
            .map(|a| a.name.clone())
            .collect()
    }

    /// Winning definitions that are invalid.
    pub fn invalid(&self) -> impl Iterator<Item = &AgentDef> {
        self.agents.iter().filter(|a| !a.is_valid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_round_trip() {
        assert_eq!(
            env_var_name("zen-architect"),
            "AMPLIFIER_AGENT_ZEN_ARCHITECT"
        );
        assert_eq!(
            agent_name_from_var("AMPLIFIER_AGENT_ZEN_ARCHITECT").as_deref(),
            Some("zen-architect")
        );
        assert_eq!(agent_name_from_var("AMPLIFIER_AGENT_"), None);
        assert_eq!(agent_name_from_var("HOME"), None);
    }
}
