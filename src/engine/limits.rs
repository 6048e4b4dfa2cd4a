//! Delegation limits at run time (SPEC §12 "Trust", §17): what an agent file may set,
//! and the config's tree-wide limits that stop a runaway tree.
//!
//! Owns: [`agent_plan`] — an agent overlay merged onto a plan, with the `tool-task`
//! and `tool-delegate` limits tightened to the plan's unless the agent file is the user's own — and [`TreeLimits`]: counting the sessions of each tree (stored ones
//! included, read once per tree per process) against `limits.max_sessions_per_tree`,
//! and the sub-sessions running at once against `limits.max_concurrent_sub_sessions`.
//! A spawn beyond either is refused with a [`LimitReached`] whose text (the task call's
//! error result, so the calling model and the thread see it) names the limit. A
//! worker's job counts its sessions in the root's tree instead ([`TreeRoom`], issue 38
//! item 7): the root's limits hold for a remote child's own sub-sessions.
//!
//! Does not own: the merge rules (`config::merge`), parsing the limits
//! (`config::limits`), the depth limit (the task tool checks it and `tool::mount`
//! withholds the tool), or spawning itself (`spawn`).

use std::collections::HashMap;

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::live::lock;
use crate::agent::AgentDef;
use crate::agent::endpoints::merge_agent;
use crate::config::approvals::Authority;
use crate::config::limits::{tighten_max_iterations, tighten_task_limits};
use crate::config::{Limits, MountPlan};
use crate::session::{SessionId, SessionStore};

/// `agent::endpoints::merge_agent(parent, agent, calling_spawn)` (SPEC §6 merge; the
/// provider endpoints the overlay sets are marked with its tier, so a project agent
/// never gets the user's key sent to its own endpoint) with the trust rule of SPEC §12, in the tiers approvals use (`AgentSource::approval_authority`):
/// the user's own agent files (`$AMPLIFIER_HOME/agents`, `AMPLIFIER_AGENT_<NAME>`) may
/// set any task-tool limit; project and bundle agent files only lower them — asking
/// for more gets `parent`'s `max_recursion_depth` / `max_parallel` (the defaults when
/// `parent` has no task tool) and `parent`'s `max_iterations`.
pub(crate) fn agent_plan(parent: &MountPlan, agent: &AgentDef, calling_spawn: &Value) -> MountPlan {
    let merged = merge_agent(parent, agent, calling_spawn);
    match agent.source.approval_authority() {
        Authority::Full => merged,
        Authority::TightenOnly => {
            tighten_max_iterations(parent, tighten_task_limits(parent, merged))
        }
    }
}

/// Why a spawn was refused. The text names the limit, its value, and where to change it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitReached {
    #[error(
        "Session limit reached: this session tree already holds {size} sessions and \
         max_sessions_per_tree is {limit} (arbor config `limits:`), so no sub-session \
         was started. Finish the work with the sessions you have."
    )]
    SessionsPerTree { size: usize, limit: usize },
    #[error(
        "Concurrency limit reached: {limit} sub-sessions are already running in this \
         process and max_concurrent_sub_sessions is {limit} (arbor config `limits:`), so \
         no sub-session was started. Try again when some have finished."
    )]
    ConcurrentSubSessions { limit: usize },
    /// The root of a remote sub-session's tree refused it (`text`: the root's own
    /// refusal, e.g. its `SessionsPerTree`) or could not be asked.
    #[error("{0}")]
    AtRoot(String),
}

/// Where a tree's sessions are counted when not in this process: a worker's job asks
/// the root that dispatched it (issue 38 item 7) before each sub-session it creates.
pub trait TreeRoom: Send + Sync {
    /// Counts `child` (of agent `agent`) into the tree of `parent` at the root, or
    /// [`LimitReached::AtRoot`] with the root's refusal (or why it could not be asked).
    fn reserve(
        &self,
        parent: &str,
        child: &str,
        agent: &str,
    ) -> BoxFuture<'static, Result<(), LimitReached>>;
}

/// The sessions of each tree this process knows.
#[derive(Default)]
struct Trees {
    /// Session id → the id of its tree's root.
    roots: HashMap<String, String>,
    /// Root id → sessions in the tree (stored ones and those created here).
    sizes: HashMap<String, usize>,
}

/// The config's tree-wide limits, enforced for one process (one per `Runtime`).
pub(crate) struct TreeLimits {
    limits: Limits,
    /// The project's sessions, read to count a tree this process has not seen.
    store: SessionStore,
    trees: Mutex<Trees>,
    running: Arc<Semaphore>,
    /// Counts the sessions at the root instead (a worker's job).
    room: Option<Arc<dyn TreeRoom>>,
}

/// Held while a sub-session's turn runs: one of `max_concurrent_sub_sessions`.
pub(crate) type RunPermit = OwnedSemaphorePermit;

impl TreeLimits {
    /// Limits over the sessions stored in `store` (the project's).
    pub fn new(limits: Limits, store: SessionStore) -> Self {
        Self {
            limits,
            store,
            trees: Mutex::default(),
            running: Arc::new(Semaphore::new(limits.concurrent_sub_sessions())),
            room: None,
        }
    }

    /// The same, with every session counted by `room` ([`TreeLimits::reserve_child`])
    /// instead of against this process's `limits.max_sessions_per_tree`.
    pub fn with_room(mut self, room: Option<Arc<dyn TreeRoom>>) -> Self {
        self.room = room;
        self
    }

    /// Counts `child` of agent `agent` into `parent`'s tree: at the root when this
    /// process runs a worker's job ([`TreeRoom`]), else [`TreeLimits::reserve`].
    pub async fn reserve_child(
        &self,
        parent: &str,
        child: &str,
        agent: &str,
    ) -> Result<(), LimitReached> {
        match &self.room {
            Some(room) => room.reserve(parent, child, agent).await,
            None => self.reserve(parent, child),
        }
    }

    /// Records a root session created by this process: a tree of one.
    pub fn root_created(&self, id: &str) {
        let mut trees = lock(&self.trees);
        trees.roots.insert(id.to_string(), id.to_string());
        trees.sizes.insert(id.to_string(), 1);
    }

    /// A permit for one more sub-session turn, or `ConcurrentSubSessions` when
    /// `max_concurrent_sub_sessions` are running. Never waits: a parent waiting on a
    /// permit its own children hold would wait forever.
    pub fn start_run(&self) -> Result<RunPermit, LimitReached> {
        self.running
            .clone()
            .try_acquire_owned()
            .map_err(|_| LimitReached::ConcurrentSubSessions {
                limit: self.limits.concurrent_sub_sessions(),
            })
    }

    /// Counts `child` into the tree of `parent`, or `SessionsPerTree` when that tree
    /// already holds `max_sessions_per_tree` sessions. A tree this process has not
    /// seen yet (a resumed session delegating) is counted from the store first. The
    /// count is kept even if creating the child then fails (a directory may exist).
    pub fn reserve(&self, parent: &str, child: &str) -> Result<(), LimitReached> {
        let limit = self.limits.sessions_per_tree();
        let mut trees = lock(&self.trees);
        let root = match trees.roots.get(parent) {
            Some(root) => root.clone(),
            None => {
                let (root, members) = stored_tree(&self.store, parent);
                let size = trees.sizes.get(&root).copied().unwrap_or(0);
                trees.sizes.insert(root.clone(), size.max(members.len()));
                for id in members {
                    trees.roots.insert(id, root.clone());
                }
                root
            }
        };
        let size = trees.sizes.entry(root.clone()).or_insert(1);
        if *size >= limit {
            return Err(LimitReached::SessionsPerTree { size: *size, limit });
        }
        *size += 1;
        trees.roots.insert(child.to_string(), root);
        Ok(())
    }
}

/// The root of `id`'s tree and every stored session in it (`id` included), from the
/// metadata in `store`. A store that cannot be listed counts `id` alone.
fn stored_tree(store: &SessionStore, id: &str) -> (String, Vec<String>) {
    let listed = match store.list() {
        Ok(list) => list,
        Err(e) => {
            tracing::warn!("cannot list sessions to count the tree of '{id}': {e}");
            Vec::new()
        }
    };
    let parents: HashMap<SessionId, Option<SessionId>> = listed
        .into_iter()
        .map(|m| (m.session_id, m.parent_id))
        .collect();
    tree_of(&parents, id)
}

/// The root reached from `id` through `parents` (a parent missing from the map ends
/// the walk: it is the root as far as the store knows), and every id in `parents`
/// whose walk ends there, plus `id`. Cycles end the walk where they close.
fn tree_of(parents: &HashMap<SessionId, Option<SessionId>>, id: &str) -> (String, Vec<String>) {
    let mut roots: HashMap<&str, String> = HashMap::new();
    let mut root_of = |start: &str| -> String {
        // Walk up until a known root or the top, then remember it for the whole path.
        let mut path: Vec<&str> = Vec::new();
        let mut current = start;
        let root = loop {
            if let Some(root) = roots.get(current) {
                break root.clone();
            }
            if path.contains(&current) {
                break current.to_string();
            }
            path.push(current);
            match parents.get_key_value(current) {
                Some((_, Some(parent))) => match parents.get_key_value(parent.as_str()) {
                    Some((key, _)) => current = key.as_str(),
                    None => break parent.to_string(),
                },
                _ => break current.to_string(),
            }
        };
        for p in path {
            if let Some((key, _)) = parents.get_key_value(p) {
                roots.insert(key.as_str(), root.clone());
            }
        }
        root
    };
    let root = root_of(id);
    let mut members: Vec<String> = parents
        .keys()
        .filter(|k| root_of(k) == root)
        .map(SessionId::to_string)
        .collect();
    if !members.iter().any(|m| m == id) {
        members.push(id.to_string());
    }
    members.sort();
    (root, members)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentSource;
    use crate::config::TaskConfig;
    use crate::session::SessionId;
    use serde_json::json;

    fn agent(source: AgentSource, depth: u32, parallel: u32) -> AgentDef {
        AgentDef::for_test(
            "x",
            source,
            json!({"tools": [{"module": "tool-task", "config": {"max_recursion_depth": depth, "max_parallel": parallel}}]}),
        )
    }

    #[test]
    fn only_user_agents_raise_task_limits() {
        let parent = MountPlan::from_value(json!({"tools": [
            {"module": "tool-task", "config": {"max_recursion_depth": 2, "max_parallel": 4}}
        ]}));
        let limits = |source, depth, parallel| {
            TaskConfig::of_plan(&agent_plan(
                &parent,
                &agent(source, depth, parallel),
                &Value::Null,
            ))
        };
        let parents = TaskConfig {
            max_recursion_depth: 2,
            max_parallel: 4,
        };
        for source in [AgentSource::Project, AgentSource::Bundle] {
            assert_eq!(limits(source, 1000, 50), parents, "{source:?}");
            assert_eq!(
                limits(source, 1, 2),
                TaskConfig {
                    max_recursion_depth: 1,
                    max_parallel: 2
                },
                "{source:?}"
            );
        }
        for source in [AgentSource::User, AgentSource::Env] {
            assert_eq!(
                limits(source, 1000, 50),
                TaskConfig {
                    max_recursion_depth: 1000,
                    max_parallel: 50
                },
                "{source:?}"
            );
        }
    }

    /// Issue 22: a project agent's `tool-delegate` entry is held to the plan's limits
    /// as its `tool-task` entry is; the user's own agent may still set any.
    #[test]
    fn only_user_agents_raise_delegate_limits() {
        let parent = MountPlan::from_value(json!({"tools": [
            {"module": "tool-task", "config": {"max_recursion_depth": 2, "max_parallel": 4}}
        ]}));
        let delegate_limits = |source| {
            let agent = AgentDef::for_test(
                "x",
                source,
                json!({"tools": [{"module": "tool-delegate", "config": {"max_recursion_depth": 1000, "max_parallel": 50}}]}),
            );
            let plan = agent_plan(&parent, &agent, &Value::Null);
            plan.tools()
                .into_iter()
                .find(|t| t.module == "tool-delegate")
                .map(|t| TaskConfig::from_value(&t.config))
        };
        for source in [AgentSource::Project, AgentSource::Bundle] {
            assert_eq!(
                delegate_limits(source),
                Some(TaskConfig {
                    max_recursion_depth: 2,
                    max_parallel: 4
                }),
                "{source:?}"
            );
        }
        assert_eq!(
            delegate_limits(AgentSource::User),
            Some(TaskConfig {
                max_recursion_depth: 1000,
                max_parallel: 50
            })
        );
    }

    #[test]
    fn only_user_agents_raise_max_iterations() {
        let parent = MountPlan::from_value(
            json!({"session": {"orchestrator": {"config": {"max_iterations": 20}}}}),
        );
        let mut greedy = agent(AgentSource::Project, 1, 1);
        greedy.overlay =
            json!({"session": {"orchestrator": {"config": {"max_iterations": 1000000}}}});
        for source in [AgentSource::Project, AgentSource::Bundle] {
            greedy.source = source;
            let plan = agent_plan(&parent, &greedy, &Value::Null);
            assert_eq!(plan.max_iterations(), 20, "{source:?}");
        }
        for source in [AgentSource::User, AgentSource::Env] {
            greedy.source = source;
            let plan = agent_plan(&parent, &greedy, &Value::Null);
            assert_eq!(plan.max_iterations(), 1_000_000, "{source:?}");
        }
    }

    fn parents(pairs: &[(&str, Option<&str>)]) -> HashMap<SessionId, Option<SessionId>> {
        pairs
            .iter()
            .map(|(id, p)| (SessionId::from(*id), p.map(SessionId::from)))
            .collect()
    }

    #[test]
    fn a_tree_is_its_root_and_everything_below_it() {
        let map = parents(&[
            ("r", None),
            ("a", Some("r")),
            ("b", Some("a")),
            ("other", None),
            ("c", Some("other")),
        ]);
        assert_eq!(
            tree_of(&map, "b"),
            ("r".to_string(), vec!["a".into(), "b".into(), "r".into()])
        );
        // A parent the store does not hold ends the walk.
        let orphan = parents(&[("x", Some("gone"))]);
        assert_eq!(tree_of(&orphan, "x").0, "gone");
        // A cycle ends too.
        let cycle = parents(&[("p", Some("q")), ("q", Some("p"))]);
        assert_eq!(tree_of(&cycle, "p").1.len(), 2);
        // An id the store does not list is its own tree.
        assert_eq!(tree_of(&map, "new"), ("new".into(), vec!["new".into()]));
    }

    #[test]
    fn the_tree_limit_counts_the_root_and_refuses_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let limits = TreeLimits::new(
            Limits {
                max_sessions_per_tree: 3,
                ..Limits::default()
            },
            SessionStore::new(dir.path()),
        );
        limits.root_created("r");
        limits.reserve("r", "c1").unwrap();
        limits.reserve("c1", "g1").unwrap();
        let err = limits.reserve("g1", "g2").unwrap_err();
        assert_eq!(err, LimitReached::SessionsPerTree { size: 3, limit: 3 });
        let text = err.to_string();
        assert!(text.contains("limit") && text.contains("max_sessions_per_tree is 3"));
        // Another tree has its own count.
        limits.root_created("s");
        limits.reserve("s", "d1").unwrap();
    }

    #[test]
    fn a_resumed_tree_counts_its_stored_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        for (id, parent) in [
            ("r", None),
            ("c1", Some("r")),
            ("c2", Some("r")),
            ("g1", Some("c1")),
            ("elsewhere", None),
        ] {
            let meta = crate::session::Metadata {
                session_id: id.into(),
                parent_id: parent.map(SessionId::from),
                ..Default::default()
            };
            drop(store.create(&meta).unwrap());
        }
        let limits = TreeLimits::new(
            Limits {
                max_sessions_per_tree: 5,
                ..Limits::default()
            },
            store,
        );
        // g1 was resumed and delegates: its tree already holds 4 stored sessions.
        limits.reserve("g1", "g2").unwrap();
        assert_eq!(
            limits.reserve("c2", "g3").unwrap_err(),
            LimitReached::SessionsPerTree { size: 5, limit: 5 }
        );
        // The other stored tree is counted on its own.
        limits.reserve("elsewhere", "e1").unwrap();
    }

    #[test]
    fn concurrent_sub_sessions_are_refused_not_queued() {
        let dir = tempfile::tempdir().unwrap();
        let limits = TreeLimits::new(
            Limits {
                max_concurrent_sub_sessions: 2,
                ..Limits::default()
            },
            SessionStore::new(dir.path()),
        );
        let a = limits.start_run().unwrap();
        let _b = limits.start_run().unwrap();
        let err = limits.start_run().unwrap_err();
        assert!(
            err.to_string().contains("max_concurrent_sub_sessions is 2"),
            "{err}"
        );
        drop(a);
        assert!(limits.start_run().is_ok());
    }
}
