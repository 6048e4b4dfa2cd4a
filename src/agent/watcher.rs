//! Hot reload, OS side (SPEC §15): watches agent directories, the bundle, the config
//! file and the themes directory, and feeds changes to the reload scheduler.
//!
//! Owns: the `notify` debouncer, keeping the watched set in line with the targets
//! (`targets`: each target and its nearest existing ancestor, non-recursive, so a
//! directory created after start is picked up and then watched itself), and the real
//! rebuild (bundle from `bundle_path` or built-in, then the registry). Does not own:
//! coalescing bursts, diffs and events (`agent::reload`).
//!
//! Editor save patterns need no special casing: write-temp-then-rename and
//! delete-then-create both end with an event naming the final `.md` path, and the
//! rebuild always reads the disk as it is after the burst.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify_debouncer_full::notify::event::{AccessKind, AccessMode};
use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::Bundle;
use super::Registry;
use super::bundle::BundleError;
use super::registry::RegistryHandle;
use super::reload::{ChangeSet, Notice, RebuildFn, Rebuilt, ReloadEvent, ReloadScheduler};
use crate::paths::Paths;

mod targets;

pub use targets::WatchTargets;

/// The OS debouncer's own window, before the scheduler's quiet window.
const OS_DEBOUNCE: Duration = Duration::from_millis(50);

/// A shared environment-variable lookup (`std::env::var` or a test map).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// How the registry reads `AMPLIFIER_AGENT_*` on every rebuild.
#[derive(Clone)]
pub enum AgentEnv {
    /// A variable lookup, as [`Registry::load`] takes.
    Lookup(EnvLookup),
    /// A fixed set of `(name, value)` pairs, as [`Registry::load_with_vars`] takes.
    Vars(Arc<[(String, String)]>),
}

impl AgentEnv {
    /// Builds the registry for `paths` and `bundle` with this environment.
    pub fn load(&self, paths: &Paths, bundle: &Bundle) -> Registry {
        match self {
            Self::Lookup(f) => Registry::load(paths, bundle, f.as_ref()),
            Self::Vars(v) => Registry::load_with_vars(paths, bundle, v),
        }
    }
}

/// Everything the watcher needs: where to look, how to rebuild, what is loaded now.
#[derive(Clone)]
pub struct WatchSpec {
    /// Where agents, config and themes live.
    pub paths: Paths,
    /// The active bundle file; `None` for the built-in bundle (never reloaded).
    pub bundle_path: Option<PathBuf>,
    /// How `AMPLIFIER_AGENT_*` overrides are read on each rebuild.
    pub env: AgentEnv,
    /// The bundle in use at start.
    pub bundle: Arc<Bundle>,
    /// The registry in use at start (diffs are against it).
    pub registry: Arc<Registry>,
}

/// The watcher could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("the file watcher must be started inside a tokio runtime")]
    NoRuntime,
    #[error("cannot start the file watcher: {0}")]
    Notify(#[from] notify_debouncer_full::notify::Error),
    #[error(transparent)]
    Bundle(#[from] BundleError),
}

/// A running watcher. Dropping it stops watching and ends the scheduler task; clone
/// `registry`/`bundle` receivers to share them.
pub struct WatcherHandle {
    /// The live registry: a new `Arc<Registry>` after every change.
    pub registry: RegistryHandle,
    /// The live bundle (changes only when the bundle file or its agents change).
    pub bundle: watch::Receiver<Arc<Bundle>>,
    /// One event per burst of changes (see [`ReloadEvent`]).
    pub reloads: mpsc::UnboundedReceiver<ReloadEvent>,
    task: JoinHandle<()>,
    _watches: Arc<Watches>,
}

impl Drop for WatcherHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for WatcherHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatcherHandle").finish_non_exhaustive()
    }
}

/// Starts watching with the bundle re-loaded from `bundle_path` (or built-in) and the
/// registry rebuilt with `env` on each change; `initial` is the registry in use now.
///
/// Errors: [`WatchError::NoRuntime`] outside a tokio runtime, [`WatchError::Notify`]
/// when the OS watcher cannot start, [`WatchError::Bundle`] when `bundle_path` does not
/// load.
pub fn spawn_watcher(
    paths: Paths,
    bundle_path: Option<PathBuf>,
    env: EnvLookup,
    initial: Arc<Registry>,
) -> Result<WatcherHandle, WatchError> {
    let bundle = match &bundle_path {
        Some(p) => Bundle::load_with(p, Some(&paths))?,
        None => Bundle::builtin(),
    };
    spawn_watcher_with(WatchSpec {
        paths,
        bundle_path,
        env: AgentEnv::Lookup(env),
        bundle: Arc::new(bundle),
        registry: initial,
    })
}

/// Starts watching as described by `spec`. Errors as [`spawn_watcher`].
pub fn spawn_watcher_with(spec: WatchSpec) -> Result<WatcherHandle, WatchError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(WatchError::NoRuntime);
    }
    let targets = Arc::new(WatchTargets::new(&spec.paths, spec.bundle_path.as_deref()));
    let (tx, rx) = mpsc::unbounded_channel();
    let debouncer = new_debouncer(OS_DEBOUNCE, None, move |res: DebounceEventResult| {
        if let Some(notice) = notice_from(res) {
            let _ = tx.send(notice);
        }
    })?;
    let watches = Arc::new(Watches {
        debouncer: Mutex::new(debouncer),
        watched: Mutex::new(BTreeSet::new()),
        targets: targets.clone(),
    });
    watches.sync(&[]);

    let rebuild: RebuildFn = {
        let WatchSpec {
            paths,
            bundle_path,
            env,
            ..
        } = spec.clone();
        Arc::new(move |changes: ChangeSet, current: Arc<Bundle>| {
            let mut bundle = None;
            let mut in_use = current;
            if let (true, Some(path)) = (changes.bundle, &bundle_path) {
                match Bundle::load_with(path, Some(&paths)) {
                    Ok(b) => {
                        in_use = Arc::new(b.clone());
                        bundle = Some(Ok(b));
                    }
                    Err(e) => bundle = Some(Err(e.to_string())),
                }
            }
            Rebuilt {
                registry: env.load(&paths, &in_use),
                bundle,
            }
        })
    };
    let mut scheduler =
        ReloadScheduler::new(Arc::new(move |p: &Path| targets.classify(p)), rebuild);
    let hook_watches = watches.clone();
    scheduler.on_burst = Arc::new(move |paths: &[PathBuf]| hook_watches.sync(paths));
    let out = scheduler.spawn(rx, spec.registry, spec.bundle);
    Ok(WatcherHandle {
        registry: out.registry,
        bundle: out.bundle,
        reloads: out.reloads,
        task: out.task,
        _watches: watches,
    })
}

/// Turns one debouncer callback into a notice (`None` when it only reports reads).
fn notice_from(res: DebounceEventResult) -> Option<Notice> {
    match res {
        Ok(events) => {
            let mut paths = Vec::new();
            for event in &events {
                if event.need_rescan() {
                    return Some(Notice::Rescan);
                }
                // Our own rebuild opens and reads files; only writes matter.
                let read_only = matches!(event.kind, EventKind::Access(a)
                    if a != AccessKind::Close(AccessMode::Write));
                if !read_only {
                    paths.extend(event.paths.iter().cloned());
                }
            }
            (!paths.is_empty()).then_some(Notice::Paths(paths))
        }
        Err(errors) => {
            for e in errors {
                tracing::warn!("file watcher: {e}");
            }
            Some(Notice::Rescan)
        }
    }
}

/// The OS watcher and the directories it currently watches.
struct Watches {
    debouncer: Mutex<Debouncer<RecommendedWatcher, RecommendedCache>>,
    watched: Mutex<BTreeSet<PathBuf>>,
    targets: Arc<WatchTargets>,
}

impl Watches {
    /// Brings the watched set in line with [`WatchTargets::desired`]; directories named
    /// in `burst` (created or replaced since) are re-watched.
    fn sync(&self, burst: &[PathBuf]) {
        let desired = self.targets.desired();
        let mut debouncer = self.debouncer.lock().unwrap_or_else(|e| e.into_inner());
        let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        for stale in watched.difference(&desired) {
            let _ = debouncer.unwatch(stale);
        }
        let mut now = BTreeSet::new();
        for dir in desired {
            let present = watched.contains(&dir);
            if present && !burst.contains(&dir) {
                now.insert(dir);
                continue;
            }
            if present {
                let _ = debouncer.unwatch(&dir);
            }
            match debouncer.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    now.insert(dir);
                }
                Err(e) => tracing::warn!("cannot watch {}: {e}", dir.display()),
            }
        }
        *watched = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(root: &Path) -> Paths {
        Paths {
            amplifier_home: root.join("home/.amplifier"),
            config_file: root.join("home/.config/arbor/config.yaml"),
            themes_dir: root.join("home/.config/arbor/themes"),
            log_file: root.join("log"),
            cwd: root.join("project"),
        }
    }

    #[test]
    fn outside_a_runtime_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = WatchSpec {
            paths: paths(tmp.path()),
            bundle_path: None,
            env: AgentEnv::Vars(Arc::from(Vec::new())),
            bundle: Arc::new(Bundle::builtin()),
            registry: Arc::new(Registry::default()),
        };
        assert!(matches!(
            spawn_watcher_with(spec),
            Err(WatchError::NoRuntime)
        ));
    }
}
