//! The engine context every command builds: paths, config, bundle, registry, the
//! headless engine over them ([`Context::engine`]; front ends never see the runtime
//! behind it), and — for commands that start sessions — local servers as providers
//! when nothing is configured ([`Context::use_local_servers`]).

use std::path::PathBuf;
use std::sync::Arc;

use color_eyre::eyre::{Context as _, Result};

use crate::agent::Bundle;
use crate::agent::Registry;
use crate::agent::registry::RegistryHandle;
use crate::config::ArborConfig;
use crate::engine::{ApprovalMode, Engine, RuntimeOptions};
use crate::paths::Paths;
use crate::provider::probe::{discover_local, local_candidates};
use crate::routing::local::{local_notice, local_providers};
use crate::routing::setup::detect_providers;
use crate::session::EventBus;

/// Options shared by every subcommand.
#[derive(Debug, Clone, Default)]
pub struct ContextOptions {
    /// `--bundle PATH`: overrides config `bundle:` and the built-in bundle.
    pub bundle: Option<PathBuf>,
}

/// Environment lookup shared with the engine (keys, base URLs, agent overrides).
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What a command works with, loaded once.
pub struct Context {
    pub paths: Paths,
    pub config: ArborConfig,
    pub bundle: Bundle,
    /// The bundle file in use (`None`: built-in).
    pub bundle_path: Option<PathBuf>,
    pub registry: Arc<Registry>,
    pub env: Env,
}

impl Context {
    /// Loads paths from the environment, the config file, the bundle (`--bundle`, else
    /// config `bundle:`, else built-in) and the agent registry.
    pub fn load(options: &ContextOptions) -> Result<Self> {
        Self::load_with_paths(options, Paths::from_env())
    }

    /// As [`Context::load`], working in `cwd` instead of the process's directory (its
    /// project: sessions, project agents, trust): an `arbor acp` session's `cwd`.
    pub fn load_in(options: &ContextOptions, cwd: PathBuf) -> Result<Self> {
        let mut paths = Paths::from_env();
        paths.cwd = cwd.canonicalize().unwrap_or(cwd);
        Self::load_with_paths(options, paths)
    }

    fn load_with_paths(options: &ContextOptions, paths: Paths) -> Result<Self> {
        if let Some(root) = crate::config::trust::project_root(&paths.cwd)
            && let Some(message) =
                crate::config::trust::trust_state(&paths, &root).changed_message(&root)
        {
            crate::cli::out::warning(message);
        }
        let config = ArborConfig::load(&paths.config_file)?;
        let bundle_path = options.bundle.clone().or_else(|| config.bundle.clone());
        let bundle = match &bundle_path {
            Some(path) => {
                Bundle::load_with(path, Some(&paths)).wrap_err("cannot load the bundle")?
            }
            None => Bundle::builtin(),
        };
        let env: Env = Arc::new(|k: &str| std::env::var(k).ok());
        let registry = Arc::new(Registry::load(&paths, &bundle, env.as_ref()));
        Ok(Self {
            paths,
            config,
            bundle,
            bundle_path,
            registry,
            env,
        })
    }

    /// With no provider configured anywhere (config file, environment, bundle), looks
    /// for local servers on loopback (`provider::probe::discover_local`, at most
    /// 300 ms) and makes the ones that answer this context's providers (in memory:
    /// the config file is not written; the first is used). Returns the notice saying
    /// which (`routing::local::local_notice`); `None` when something is configured or
    /// nothing answered.
    pub fn use_local_servers(&mut self) -> Option<String> {
        let env = self.env.as_ref();
        if !detect_providers(&self.config, env).is_empty()
            || !self.bundle.mount_plan.providers().is_empty()
        {
            return None;
        }
        let servers = discover_local(&local_candidates(env));
        self.config.providers = local_providers(&servers);
        let notice = local_notice(&servers);
        if let Some(text) = &notice {
            tracing::info!("{text}");
        }
        notice
    }

    /// A headless engine over this context with a fixed registry (headless commands
    /// do not watch files): tool calls that need approval are denied, or granted when
    /// `yes` (`--yes`). Says on stderr when worktrees are left over from a crash
    /// (`worktrees::offer_cleanup`). The returned sender keeps the registry channel
    /// open.
    pub fn engine(&self, yes: bool) -> (Engine, tokio::sync::watch::Sender<Arc<Registry>>) {
        super::worktrees::offer_cleanup(&self.paths.worktrees_dir());
        self.quiet_engine(yes)
    }

    /// [`Context::engine`] without the note on left-over worktrees: for the `arbor
    /// session` subcommands that read, undo or fork stored sessions (their output
    /// never had it).
    pub fn quiet_engine(&self, yes: bool) -> (Engine, tokio::sync::watch::Sender<Arc<Registry>>) {
        let (tx, rx) = tokio::sync::watch::channel(self.registry.clone());
        let options = self.engine_options(rx, ApprovalMode::Headless { yes });
        (Engine::headless(options), tx)
    }

    /// What an engine over this context is built from: `registry` (the TUI's watcher's,
    /// or a fixed one), with `approval_mode` answering tool calls that need approval.
    pub fn engine_options(
        &self,
        registry: RegistryHandle,
        approval_mode: ApprovalMode,
    ) -> RuntimeOptions {
        RuntimeOptions {
            paths: self.paths.clone(),
            config: self.config.clone(),
            bundle: self.bundle.clone(),
            registry,
            env: self.env.clone(),
            bus: EventBus::new(),
            approval_mode,
        }
    }
}
