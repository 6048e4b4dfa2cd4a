//! Delegation limits (SPEC §9, §12 "Trust", §17): the `tool-task` limits of a mount
//! plan, the tighten-only rule agent files follow, and the tree-wide limits of arbor's
//! config.
//!
//! Owns: [`TaskConfig`] (a `tool-task` or `tool-delegate` entry's
//! `max_recursion_depth` / `max_parallel`, parsed with their defaults),
//! [`tighten_task_limits`] (an agent overlay merged onto a plan may lower those limits
//! of either delegation module, never raise them) and [`Limits`] (the config file's
//! `limits:` block: sessions per tree, sub-sessions running at once).
//!
//! Does not own: which agent files may raise limits (the engine decides from the agent's
//! source, in the tiers approvals use: only the user's own agent files), counting sessions and refusing
//! spawns (`engine`), or withholding the task tool at the depth limit (`tool::mount`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::mount_plan::{ModuleSpec, MountPlan, TASK_MODULE};

/// A `tool-task` entry's `config`: `max_recursion_depth` (default 1: only the root
/// delegates) and `max_parallel` (default 4, at least 1) — SPEC §9.
///
/// `max_recursion_depth` is absolute: a session at depth `d` gets the task tool only
/// while `d < max_recursion_depth` (the root is depth 0). `max_parallel` bounds the
/// task calls of one assistant message that run at once; the rest wait their turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskConfig {
    pub max_recursion_depth: u32,
    pub max_parallel: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            max_recursion_depth: 1,
            max_parallel: 4,
        }
    }
}

impl TaskConfig {
    /// Reads the config object; missing or malformed keys (not a non-negative integer)
    /// take their defaults.
    pub fn from_value(config: &Value) -> Self {
        let default = Self::default();
        let max_recursion_depth = config
            .get("max_recursion_depth")
            .and_then(Value::as_u64)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
            .unwrap_or(default.max_recursion_depth);
        let max_parallel = config
            .get("max_parallel")
            .and_then(Value::as_u64)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX).max(1))
            .unwrap_or(default.max_parallel);
        Self {
            max_recursion_depth,
            max_parallel,
        }
    }

    /// The limits of `plan`'s first `tool-task` entry (the one a session mounts);
    /// the defaults when it has none.
    pub fn of_plan(plan: &MountPlan) -> Self {
        Self::from_value(&plan.task_tool_config())
    }

    /// Each limit the lower of the two.
    pub fn min(self, other: Self) -> Self {
        Self {
            max_recursion_depth: self.max_recursion_depth.min(other.max_recursion_depth),
            max_parallel: self.max_parallel.min(other.max_parallel),
        }
    }
}

/// The delegation modules whose entries carry [`TaskConfig`] limits: `tool-task` and
/// `tool-delegate` (`tool::mount` reads both configs the same way).
pub const DELEGATION_MODULES: &[&str] = &[TASK_MODULE, "tool-delegate"];

/// The limits a `module` entry (one of [`DELEGATION_MODULES`]) of a plan below
/// `parent` may have at most: `parent`'s first entry of the same module, else its
/// first entry of the other delegation module (either spawns the same sub-sessions),
/// else the defaults.
fn delegation_ceiling(parent: &MountPlan, module: &str) -> TaskConfig {
    let tools = parent.tools();
    let of = |m: &str| tools.iter().find(|t| t.module == m);
    of(module)
        .or_else(|| {
            DELEGATION_MODULES
                .iter()
                .filter(|m| **m != module)
                .find_map(|m| of(m))
        })
        .map(|entry| TaskConfig::from_value(&entry.config))
        .unwrap_or_default()
}

/// `child` (a plan an agent overlay was merged into) with every `tool-task` and
/// `tool-delegate` entry's limits lowered to at most `parent`'s (see
/// [`delegation_ceiling`]: the defaults when `parent` has no delegation tool). An
/// agent file asking for more gets the parent's limit;
/// asking for less keeps its own. A lowered key is written as a number (a malformed
/// value the parser would read as its default is left alone when that default is within
/// the parent's limit); entries already within the limits are untouched.
///
/// The rule of SPEC §12 "Trust": an agent file other than the user's own may only
/// tighten delegation limits. A bare-string entry (`- tool-task`) becomes a map when
/// it has to carry a lowered limit.
pub fn tighten_task_limits(parent: &MountPlan, child: MountPlan) -> MountPlan {
    let mut child = child;
    let Some(tools) = child.tools.as_mut() else {
        return child;
    };
    for spec in tools.iter_mut() {
        let Some(module) = spec.module().filter(|m| DELEGATION_MODULES.contains(m)) else {
            continue;
        };
        let ceiling = delegation_ceiling(parent, module);
        let asked = TaskConfig::from_value(spec.config());
        let allowed = asked.min(ceiling);
        if allowed == asked {
            continue;
        }
        let mut value = spec.to_value();
        let entry = &mut value;
        if let Value::String(module) = entry {
            let mut map = Map::new();
            map.insert("module".into(), Value::String(module.clone()));
            *entry = Value::Object(map);
        }
        let Value::Object(map) = entry else {
            continue;
        };
        let config = map
            .entry("config")
            .or_insert_with(|| Value::Object(Map::new()));
        if !config.is_object() {
            *config = Value::Object(Map::new());
        }
        if let Value::Object(config) = config {
            if allowed.max_recursion_depth != asked.max_recursion_depth {
                config.insert(
                    "max_recursion_depth".into(),
                    allowed.max_recursion_depth.into(),
                );
            }
            if allowed.max_parallel != asked.max_parallel {
                config.insert("max_parallel".into(), allowed.max_parallel.into());
            }
        }
        *spec = ModuleSpec::from_value(value);
    }
    child
}

/// `child` with `session.orchestrator.config.max_iterations` (model calls per turn,
/// [`MountPlan::max_iterations`]) lowered to at most `parent`'s. The same Trust rule as
/// [`tighten_task_limits`]: an agent file other than the user's own may not give its
/// sessions more model calls per turn than the plan above it. A value at or below the
/// parent's is kept; a malformed one reads as the default and is left alone when that
/// default is within the parent's limit.
pub fn tighten_max_iterations(parent: &MountPlan, child: MountPlan) -> MountPlan {
    let ceiling = parent.max_iterations();
    if child.max_iterations() <= ceiling {
        return child;
    }
    let mut whole = child.to_value();
    match whole.pointer_mut("/session/orchestrator/config/max_iterations") {
        Some(slot) => *slot = Value::from(ceiling),
        None => return child,
    }
    MountPlan::from_value(whole)
}

/// Default of [`Limits::max_sessions_per_tree`].
pub const DEFAULT_MAX_SESSIONS_PER_TREE: usize = 100;
/// Default of [`Limits::max_concurrent_sub_sessions`]: above the 4 + 16 sub-sessions
/// the built-in bundle (depth 2, 4 parallel) can run at once from one root, low
/// enough that a runaway tree cannot open hundreds of provider streams.
pub const DEFAULT_MAX_CONCURRENT_SUB_SESSIONS: usize = 32;

/// The config file's `limits:` block: bounds on delegation that no agent file or bundle
/// can raise.
///
/// ```yaml
/// limits:
///   max_sessions_per_tree: 100       # a root and all its sub-sessions, stored ones included
///   max_concurrent_sub_sessions: 32  # sub-sessions running a turn at once in one arbor process
/// ```
///
/// A spawn beyond either is refused: the task call gets an error result naming the
/// limit. Values below 1 count as 1 (the root itself is a session of its tree).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Most sessions one tree (a root session and every sub-session under it) may
    /// hold, counting those stored by earlier runs.
    pub max_sessions_per_tree: usize,
    /// Most sub-sessions running a turn at once in this process, across every tree.
    /// Root sessions a person starts are not counted and never refused.
    pub max_concurrent_sub_sessions: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_sessions_per_tree: DEFAULT_MAX_SESSIONS_PER_TREE,
            max_concurrent_sub_sessions: DEFAULT_MAX_CONCURRENT_SUB_SESSIONS,
        }
    }
}

impl Limits {
    /// [`Limits::max_sessions_per_tree`], at least 1.
    pub fn sessions_per_tree(&self) -> usize {
        self.max_sessions_per_tree.max(1)
    }

    /// [`Limits::max_concurrent_sub_sessions`], at least 1.
    pub fn concurrent_sub_sessions(&self) -> usize {
        self.max_concurrent_sub_sessions.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::mount_plan::module_name;
    use serde_json::json;

    fn task_entry(plan: &MountPlan) -> Value {
        plan.to_value()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| module_name(t) == Some(TASK_MODULE))
            .cloned()
            .unwrap()
    }

    #[test]
    fn config_defaults_and_bounds() {
        assert_eq!(
            TaskConfig::from_value(&Value::Null),
            TaskConfig {
                max_recursion_depth: 1,
                max_parallel: 4
            }
        );
        assert_eq!(
            TaskConfig::from_value(&json!({"max_recursion_depth": 3, "max_parallel": 0})),
            TaskConfig {
                max_recursion_depth: 3,
                max_parallel: 1
            }
        );
        assert_eq!(
            TaskConfig::from_value(&json!({"max_recursion_depth": -1, "max_parallel": "50"})),
            TaskConfig::default()
        );
    }

    #[test]
    fn an_agent_asking_for_more_gets_the_parents_limits() {
        let parent = MountPlan::from_value(json!({"tools": [
            "tool-filesystem",
            {"module": "tool-task", "config": {"max_recursion_depth": 2, "max_parallel": 4}}
        ]}));
        let child = MountPlan::from_value(json!({"tools": [
            "tool-filesystem",
            {"module": "tool-task", "config": {"max_recursion_depth": 1000, "max_parallel": 50, "other": "kept"}}
        ]}));
        let out = tighten_task_limits(&parent, child);
        assert_eq!(
            task_entry(&out),
            json!({"module": "tool-task", "config": {"max_recursion_depth": 2, "max_parallel": 4, "other": "kept"}})
        );
        assert_eq!(out.to_value()["tools"][0], "tool-filesystem");
    }

    #[test]
    fn an_agent_asking_for_less_keeps_its_own_limits() {
        let parent = MountPlan::from_value(json!({"tools": [
            {"module": "tool-task", "config": {"max_recursion_depth": 3, "max_parallel": 8}}
        ]}));
        let asked = json!({"tools": [
            {"module": "tool-task", "config": {"max_recursion_depth": 1, "max_parallel": 2}}
        ]});
        let out = tighten_task_limits(&parent, MountPlan::from_value(asked.clone()));
        assert_eq!(out.to_value(), asked);
        // Mixed: one limit lowered, the other kept.
        let mixed = MountPlan::from_value(json!({"tools": [
            {"module": "tool-task", "config": {"max_recursion_depth": 1, "max_parallel": 50}}
        ]}));
        assert_eq!(
            TaskConfig::of_plan(&tighten_task_limits(&parent, mixed)),
            TaskConfig {
                max_recursion_depth: 1,
                max_parallel: 8
            }
        );
    }

    #[test]
    fn a_parent_without_the_task_tool_caps_at_the_defaults() {
        let parent = MountPlan::from_value(json!({"tools": ["tool-filesystem"]}));
        let child = MountPlan::from_value(json!({"tools": [
            {"module": "tool-task", "config": {"max_recursion_depth": 1000, "max_parallel": 1000}}
        ]}));
        assert_eq!(
            TaskConfig::of_plan(&tighten_task_limits(&parent, child)),
            TaskConfig::default()
        );
    }

    #[test]
    fn every_task_entry_is_tightened_and_bare_strings_get_a_config() {
        let parent = MountPlan::from_value(json!({"tools": [
            {"module": "tool-task", "config": {"max_recursion_depth": 0, "max_parallel": 2}}
        ]}));
        let child = MountPlan::from_value(json!({"tools": [
            "tool-task",
            {"module": "tool-task", "id": "second", "config": {"max_recursion_depth": 9, "max_parallel": "x"}}
        ]}));
        let out = tighten_task_limits(&parent, child);
        assert_eq!(
            out.to_value()["tools"],
            json!([
                {"module": "tool-task", "config": {"max_recursion_depth": 0, "max_parallel": 2}},
                {"module": "tool-task", "id": "second", "config": {"max_recursion_depth": 0, "max_parallel": 2}}
            ])
        );
    }

    /// Issue 22: `tool-delegate` entries were not tightened, so a project agent could
    /// give its sessions any depth and parallelism through `delegate`.
    #[test]
    fn delegate_entries_are_tightened_like_task_entries() {
        let delegate = |plan: &MountPlan| {
            plan.to_value()["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| module_name(t) == Some("tool-delegate"))
                .map(|t| TaskConfig::from_value(&t["config"]))
                .unwrap()
        };
        let greedy = || {
            MountPlan::from_value(json!({"tools": [
                {"module": "tool-delegate", "config": {"max_recursion_depth": 1000, "max_parallel": 1000}}
            ]}))
        };
        // Capped by the parent's delegate entry, else its task entry, else the defaults.
        for (parent, want) in [
            (
                json!({"tools": [{"module": "tool-delegate", "config": {"max_recursion_depth": 2, "max_parallel": 3}}]}),
                (2, 3),
            ),
            (
                json!({"tools": [{"module": "tool-task", "config": {"max_recursion_depth": 3, "max_parallel": 5}}]}),
                (3, 5),
            ),
            (json!({"tools": ["tool-filesystem"]}), (1, 4)),
        ] {
            let out = tighten_task_limits(&MountPlan::from_value(parent), greedy());
            assert_eq!(
                delegate(&out),
                TaskConfig {
                    max_recursion_depth: want.0,
                    max_parallel: want.1
                }
            );
        }
        // Asking for less keeps its own.
        let modest = MountPlan::from_value(json!({"tools": [
            {"module": "tool-delegate", "config": {"max_recursion_depth": 1, "max_parallel": 1}}
        ]}));
        let out = tighten_task_limits(&MountPlan::from_value(json!({})), modest.clone());
        assert_eq!(out, modest);
    }

    #[test]
    fn limits_parse_with_defaults_and_reject_unknown_keys() {
        let limits: Limits = crate::config::yaml::from_str("max_sessions_per_tree: 7\n").unwrap();
        assert_eq!(
            limits,
            Limits {
                max_sessions_per_tree: 7,
                max_concurrent_sub_sessions: DEFAULT_MAX_CONCURRENT_SUB_SESSIONS
            }
        );
        assert!(crate::config::yaml::from_str::<Limits>("max_session: 7\n").is_err());
        assert!(crate::config::yaml::from_str::<Limits>("max_sessions_per_tree: lots\n").is_err());
        let zero = Limits {
            max_sessions_per_tree: 0,
            max_concurrent_sub_sessions: 0,
        };
        assert_eq!(
            (zero.sessions_per_tree(), zero.concurrent_sub_sessions()),
            (1, 1)
        );
    }

    #[test]
    fn an_agent_asking_for_more_model_calls_gets_the_parents() {
        let parent = MountPlan::from_value(
            json!({"session": {"orchestrator": {"config": {"max_iterations": 20}}}}),
        );
        let greedy = MountPlan::from_value(
            json!({"session": {"orchestrator": {"config": {"max_iterations": 1000000}}}}),
        );
        assert_eq!(tighten_max_iterations(&parent, greedy).max_iterations(), 20);
        let modest = MountPlan::from_value(
            json!({"session": {"orchestrator": {"config": {"max_iterations": 5}}}}),
        );
        assert_eq!(tighten_max_iterations(&parent, modest).max_iterations(), 5);
        // A parent that sets nothing has the default ceiling (50).
        let greedy = MountPlan::from_value(
            json!({"session": {"orchestrator": {"config": {"max_iterations": 999}}}}),
        );
        let bare = MountPlan::from_value(json!({}));
        assert_eq!(tighten_max_iterations(&bare, greedy).max_iterations(), 50);
    }
}
