//! The reload scheduler (SPEC §15): turns bursts of file-change notifications into one
//! rebuild and one event each.
//!
//! Owns: coalescing notifications until a quiet window passes (a longer grace when the
//! burst so far ends in a removal, so delete-then-create is one reload), classifying what a burst
//! touched (agents, bundle, config, themes), running the rebuild on a blocking thread,
//! publishing the new registry/bundle on `watch` channels, and the registry diff sent as
//! a [`ReloadEvent`]. Does not own: the OS watcher (`agent::watcher`, which feeds this
//! through a channel, so tests inject fake notifications) or building a registry
//! (`agent::registry`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::Bundle;
use super::Registry;

/// How long notifications must pause before a burst is handled. Editors write a file
/// (truncate + write + close, write-temp-then-rename, rename-to-backup-then-write) in
/// well under a millisecond of events; this is what edit → "reloaded" waits for.
pub const QUIET_WINDOW: Duration = Duration::from_millis(20);

/// How long notifications must pause when the last relevant one removed a file: a
/// delete is often the first half of delete-then-create, and a reload in between would
/// report the agent removed and then added again.
pub const REMOVAL_GRACE: Duration = Duration::from_millis(150);

/// The longest a continuous stream of notifications can delay a rebuild.
pub const MAX_BURST: Duration = Duration::from_secs(1);

/// What changed between two registries, by agent name (each list sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryDiff {
    /// New names whose definition is valid.
    pub added: Vec<String>,
    /// Names present before and after whose definition changed (a fixed or differently
    /// broken file counts; one that just became invalid is in `now_invalid` instead).
    pub changed: Vec<String>,
    /// Names that no longer exist.
    pub removed: Vec<String>,
    /// Names that are invalid now but were valid or absent before.
    pub now_invalid: Vec<String>,
}

impl RegistryDiff {
    /// The diff from `old` to `new` (both sorted by name, as every registry is).
    pub fn between(old: &Registry, new: &Registry) -> Self {
        let mut diff = Self::default();
        for def in new.agents() {
            match old.winner(&def.name) {
                None if def.is_valid() => diff.added.push(def.name.clone()),
                None => diff.now_invalid.push(def.name.clone()),
                Some(o) if o.is_valid() && !def.is_valid() => {
                    diff.now_invalid.push(def.name.clone())
                }
                Some(o) if o != def => diff.changed.push(def.name.clone()),
                Some(_) => {}
            }
        }
        for def in old.agents() {
            if new.winner(&def.name).is_none() {
                diff.removed.push(def.name.clone());
            }
        }
        diff
    }

    /// No agent was added, changed, removed or broken.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.changed.is_empty()
            && self.removed.is_empty()
            && self.now_invalid.is_empty()
    }
}

/// One thing the watcher tells its consumers. At most one `Agents` event per burst.
#[derive(Debug, Clone, PartialEq)]
pub enum ReloadEvent {
    /// The registry was rebuilt and differs; the new one is already on the registry
    /// channel.
    Agents(RegistryDiff),
    /// The bundle file (or its agents) reloaded with a different result; the new bundle
    /// is on the bundle channel. New root sessions use it.
    BundleChanged { warnings: Vec<String> },
    /// The bundle file no longer loads; the previous bundle stays in use.
    BundleInvalid { message: String },
    /// arbor's config file changed (re-read it).
    ConfigChanged,
    /// A theme file changed (re-read themes).
    ThemeChanged,
}

/// What a burst of notifications touched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangeSet {
    /// User or project agent files or their directories.
    pub agents: bool,
    /// The bundle file or its agent files (reload the bundle, then the registry).
    pub bundle: bool,
    /// arbor's config file.
    pub config: bool,
    /// The themes directory.
    pub themes: bool,
}

impl ChangeSet {
    /// Everything (after a watcher error or dropped events).
    pub fn all() -> Self {
        Self {
            agents: true,
            bundle: true,
            config: true,
            themes: true,
        }
    }

    /// Nothing relevant changed.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The union of two change sets.
    pub fn union(self, other: Self) -> Self {
        Self {
            agents: self.agents || other.agents,
            bundle: self.bundle || other.bundle,
            config: self.config || other.config,
            themes: self.themes || other.themes,
        }
    }
}

/// The result of one rebuild.
#[derive(Debug)]
pub struct Rebuilt {
    /// The freshly built registry.
    pub registry: Registry,
    /// `None` when the bundle was not reloaded; `Err` (one line) when the bundle file
    /// no longer loads.
    pub bundle: Option<Result<Bundle, super::bundle::BundleError>>,
}

/// A notification from the OS layer: changed paths, or a request to rescan everything
/// (after a watcher error or an overflow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// These paths changed (created, written, or renamed to).
    Paths(Vec<PathBuf>),
    /// These paths were removed or renamed away (the burst waits [`REMOVAL_GRACE`] for
    /// them to come back when this is its last relevant notice).
    Removed(Vec<PathBuf>),
    /// Events may have been lost: treat everything as changed.
    Rescan,
}

/// Rebuilds registry (and bundle when `ChangeSet::bundle`) from disk, given the bundle
/// in use. Runs on a blocking thread.
pub type RebuildFn = Arc<dyn Fn(ChangeSet, Arc<Bundle>) -> Rebuilt + Send + Sync>;

/// Maps one changed path to what it touches.
pub type ClassifyFn = Arc<dyn Fn(&Path) -> ChangeSet + Send + Sync>;

/// Called on a blocking thread with each relevant burst's paths before the rebuild
/// (the OS layer re-arms watches on directories created since).
pub type BurstHook = Arc<dyn Fn(&[PathBuf]) + Send + Sync>;

/// The consumer side of a running scheduler.
#[derive(Debug)]
pub struct SchedulerOutputs {
    /// The live registry (a new `Arc` after every change).
    pub registry: watch::Receiver<Arc<Registry>>,
    /// The live bundle.
    pub bundle: watch::Receiver<Arc<Bundle>>,
    /// One event per burst.
    pub reloads: mpsc::UnboundedReceiver<ReloadEvent>,
    /// The scheduler task (ends when the notice channel closes).
    pub task: JoinHandle<()>,
}

/// Coalesces notifications and rebuilds once per burst.
#[derive(Clone)]
pub struct ReloadScheduler {
    /// Maps each changed path to what it touches.
    pub classify: ClassifyFn,
    /// Rebuilds registry (and bundle) after a relevant burst.
    pub rebuild: RebuildFn,
    /// Runs before each rebuild (re-arms OS watches).
    pub on_burst: BurstHook,
    /// Quiet window that ends a burst ([`QUIET_WINDOW`] by default).
    pub quiet: Duration,
    /// Quiet window after a relevant removal ([`REMOVAL_GRACE`] by default).
    pub removal_grace: Duration,
    /// Longest delay a continuous stream can cause ([`MAX_BURST`] by default).
    pub max_burst: Duration,
}

impl ReloadScheduler {
    /// A scheduler with the default quiet window and no burst hook.
    pub fn new(classify: ClassifyFn, rebuild: RebuildFn) -> Self {
        Self {
            classify,
            rebuild,
            on_burst: Arc::new(|_: &[PathBuf]| {}),
            quiet: QUIET_WINDOW,
            removal_grace: REMOVAL_GRACE,
            max_burst: MAX_BURST,
        }
    }

    /// Starts the scheduler task on the current tokio runtime (must be called inside
    /// one). It ends when `notices` closes.
    pub fn spawn(
        self,
        notices: mpsc::UnboundedReceiver<Notice>,
        registry: Arc<Registry>,
        bundle: Arc<Bundle>,
    ) -> SchedulerOutputs {
        let (registry_tx, registry_rx) = watch::channel(registry);
        let (bundle_tx, bundle_rx) = watch::channel(bundle);
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(self.run(notices, registry_tx, bundle_tx, events_tx));
        SchedulerOutputs {
            registry: registry_rx,
            bundle: bundle_rx,
            reloads: events_rx,
            task,
        }
    }

    async fn run(
        self,
        mut notices: mpsc::UnboundedReceiver<Notice>,
        registry_tx: watch::Sender<Arc<Registry>>,
        bundle_tx: watch::Sender<Arc<Bundle>>,
        events: mpsc::UnboundedSender<ReloadEvent>,
    ) {
        while let Some(first) = notices.recv().await {
            let deadline = tokio::time::Instant::now() + self.max_burst;
            let mut removal = self.ends_in_removal(&first, false);
            let mut burst = vec![first];
            let mut open = true;
            while open {
                let window = if removal {
                    self.removal_grace
                } else {
                    self.quiet
                };
                let wake = (tokio::time::Instant::now() + window).min(deadline);
                tokio::select! {
                    more = notices.recv() => match more {
                        Some(n) => {
                            removal = self.ends_in_removal(&n, removal);
                            burst.push(n);
                        }
                        None => open = false,
                    },
                    _ = tokio::time::sleep_until(wake) => break,
                }
            }
            self.handle(burst, &registry_tx, &bundle_tx, &events).await;
        }
    }

    /// Whether the burst's last relevant notice is a removal once `notice` is added
    /// (`before`: whether it was so far). Irrelevant paths (an editor's backup or swap
    /// file) leave it as it was.
    fn ends_in_removal(&self, notice: &Notice, before: bool) -> bool {
        let relevant = |paths: &[PathBuf]| paths.iter().any(|p| !(self.classify)(p).is_empty());
        match notice {
            Notice::Rescan => false,
            Notice::Paths(p) if relevant(p) => false,
            Notice::Removed(p) if relevant(p) => true,
            Notice::Paths(_) | Notice::Removed(_) => before,
        }
    }

    async fn handle(
        &self,
        burst: Vec<Notice>,
        registry_tx: &watch::Sender<Arc<Registry>>,
        bundle_tx: &watch::Sender<Arc<Bundle>>,
        events: &mpsc::UnboundedSender<ReloadEvent>,
    ) {
        let mut changes = ChangeSet::default();
        let mut paths = Vec::new();
        for notice in burst {
            match notice {
                Notice::Rescan => changes = ChangeSet::all(),
                Notice::Paths(p) | Notice::Removed(p) => {
                    for path in &p {
                        changes = changes.union((self.classify)(path));
                    }
                    paths.extend(p);
                }
            }
        }
        if changes.is_empty() {
            return;
        }
        let on_burst = self.on_burst.clone();
        let rebuild = self.rebuild.clone();
        let current_bundle = bundle_tx.borrow().clone();
        let needs_rebuild = changes.agents || changes.bundle;
        let joined = tokio::task::spawn_blocking(move || {
            on_burst(&paths);
            needs_rebuild.then(|| rebuild(changes, current_bundle))
        })
        .await;
        if changes.config {
            let _ = events.send(ReloadEvent::ConfigChanged);
        }
        if changes.themes {
            let _ = events.send(ReloadEvent::ThemeChanged);
        }
        let rebuilt = match joined {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                tracing::error!("agent registry rebuild failed: {e}");
                return;
            }
        };
        match rebuilt.bundle {
            Some(Ok(bundle)) if **bundle_tx.borrow() != bundle => {
                let warnings = bundle.warnings.clone();
                bundle_tx.send_replace(Arc::new(bundle));
                let _ = events.send(ReloadEvent::BundleChanged { warnings });
            }
            Some(Err(e)) => {
                let _ = events.send(ReloadEvent::BundleInvalid {
                    message: e.to_string(),
                });
            }
            _ => {}
        }
        let old = registry_tx.borrow().clone();
        if *old != rebuilt.registry {
            let diff = RegistryDiff::between(&old, &rebuilt.registry);
            registry_tx.send_replace(Arc::new(rebuilt.registry));
            if !diff.is_empty() {
                let _ = events.send(ReloadEvent::Agents(diff));
            }
        }
    }
}

#[cfg(test)]
mod tests;
