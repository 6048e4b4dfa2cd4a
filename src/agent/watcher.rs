//! Hot reload, OS side (SPEC §15): watches agent directories, the bundle, the config
//! file and the themes directory, and feeds changes to the reload scheduler.
//!
//! Owns: the OS watcher (`notify`'s raw events, no debouncer of its own: the
//! scheduler's quiet window is the only wait), telling removals from other changes,
//! keeping the watched set in line with the targets (`targets`: each target and its
//! nearest existing ancestor, non-recursive, so a directory created after start is
//! picked up and then watched itself), and the real rebuild (bundle from `bundle_path`
//! or built-in, then the registry, reusing the previous registry's parse of every
//! file whose mtime and size are unchanged). Does not own: coalescing bursts, diffs and
//! events (`agent::reload`).
//!
//! Editor save patterns: write-temp-then-rename and rename-to-backup-then-write end
//! with an event naming the final `.md` path; delete-then-create ends with a creation,
//! and a burst whose last relevant event is a removal waits the scheduler's longer
//! removal grace for the file to come back. The rebuild always reads the disk as it
//! is after the burst.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::Bundle;
use super::Registry;
use super::bundle::BundleError;
use super::registry::{ParseCache, RegistryHandle};
use super::reload::{ChangeSet, Notice, RebuildFn, Rebuilt, ReloadEvent, ReloadScheduler};
use crate::paths::Paths;

mod targets;

pub use targets::WatchTargets;

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

    /// Like [`AgentEnv::load`], reusing (and refreshing) `cache`'s parses of unchanged
    /// agent files ([`Registry::load_cached`]).
    pub fn load_cached(&self, paths: &Paths, bundle: &Bundle, cache: &mut ParseCache) -> Registry {
        match self {
            Self::Lookup(f) => Registry::load_cached(paths, bundle, f.as_ref(), cache),
            Self::Vars(v) => Registry::load_with_vars_cached(paths, bundle, v, Some(cache)),
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
    Notify(#[from] notify::Error),
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
    let watcher = notify::recommended_watcher(move |res: notify::Result<Event>| {
        if let Some(notice) = notice_from(res) {
            let _ = tx.send(notice);
        }
    })?;
    let watches = Arc::new(Watches {
        watcher: Mutex::new(watcher),
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
        // The rebuilds run one at a time; only the warm-up below can hold the lock
        // when one starts (it then waits for the warm cache).
        let cache = Arc::new(Mutex::new(ParseCache::default()));
        warm_up(&cache, &paths, &env, &spec.bundle);
        Arc::new(move |changes: ChangeSet, current: Arc<Bundle>| {
            let mut bundle = None;
            let mut in_use = current;
            if let (true, Some(path)) = (changes.bundle, &bundle_path) {
                match Bundle::load_with(path, Some(&paths)) {
                    Ok(b) => {
                        in_use = Arc::new(b.clone());
                        bundle = Some(Ok(b));
                    }
                    Err(e) => bundle = Some(Err(e)),
                }
            }
            let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
            Rebuilt {
                registry: env.load_cached(&paths, &in_use, &mut cache),
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

/// Fills `cache` on a blocking thread, so the first reload after start parses only the
/// files changed since instead of all of them.
fn warm_up(cache: &Arc<Mutex<ParseCache>>, paths: &Paths, env: &AgentEnv, bundle: &Arc<Bundle>) {
    let (cache, paths, env, bundle) = (cache.clone(), paths.clone(), env.clone(), bundle.clone());
    tokio::task::spawn_blocking(move || {
        let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        env.load_cached(&paths, &bundle, &mut cache);
    });
}

/// Turns one OS event into a notice: `Removed` for a deletion or the old name of a
/// rename, `Paths` for any other change, `None` when it only reports a read (our own
/// rebuild opens and reads files), `Rescan` after an overflow or a watcher error.
fn notice_from(res: notify::Result<Event>) -> Option<Notice> {
    let event = match res {
        Ok(event) => event,
        Err(e) => {
            tracing::warn!("file watcher: {e}");
            return Some(Notice::Rescan);
        }
    };
    if event.need_rescan() {
        return Some(Notice::Rescan);
    }
    if event.paths.is_empty() {
        return None;
    }
    match event.kind {
        EventKind::Access(a) if a != AccessKind::Close(AccessMode::Write) => None,
        EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(RenameMode::From)) => {
            Some(Notice::Removed(event.paths))
        }
        _ => Some(Notice::Paths(event.paths)),
    }
}

/// The OS watcher and the directories it currently watches.
struct Watches {
    watcher: Mutex<RecommendedWatcher>,
    watched: Mutex<BTreeSet<PathBuf>>,
    targets: Arc<WatchTargets>,
}

impl Watches {
    /// Brings the watched set in line with [`WatchTargets::desired`]; directories named
    /// in `burst` (created or replaced since) are re-watched.
    fn sync(&self, burst: &[PathBuf]) {
        let desired = self.targets.desired();
        let mut watcher = self.watcher.lock().unwrap_or_else(|e| e.into_inner());
        let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        for stale in watched.difference(&desired) {
            let _ = watcher.unwatch(stale);
        }
        let mut now = BTreeSet::new();
        for dir in desired {
            let present = watched.contains(&dir);
            if present && !burst.contains(&dir) {
                now.insert(dir);
                continue;
            }
            if present {
                let _ = watcher.unwatch(&dir);
            }
            match watcher.watch(&dir, RecursiveMode::NonRecursive) {
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
            store_home: None,
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
