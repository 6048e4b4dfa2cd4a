//! The `context:` section of `config.yaml` and the bundle's `session.context` module
//! config: a session's context limit and compaction (issue 26).
//!
//! ```yaml
//! context:
//!   max_tokens: 128000          # the context limit; default: the model's window
//!   compact_threshold: 0.8      # compact before a request above this share of it
//!   auto_compact: true          # false: never compact on its own (`/compact` still does)
//!   child_answer_max_chars: 20000   # a sub-session's answer to its parent is cut here
//!   project_instructions_max_bytes: 32768   # AGENTS.md files in the system prompt
//! ```
//!
//! The first three keys are Amplifier `context-simple`'s; a bundle sets them as
//! `session: {context: {module: context-simple, config: {…}}}` and the config file's
//! `context:` overrides them key by key. The last two are arbor's own.
//!
//! Owns: reading and checking both sources into [`ContextConfig`]. Does not own:
//! picking the model's window (`engine::compact::limit`) or compacting.

use serde_json::{Map, Value};

use super::ArborConfig;

/// The config key of the section.
pub const CONTEXT_KEY: &str = "context";
/// `compact_threshold` when nothing sets it: 0.8 (as the issue asks; Amplifier's
/// `context-simple` defaults to 0.92 of a budget that already reserves output).
pub const DEFAULT_COMPACT_THRESHOLD: f64 = 0.8;
/// `child_answer_max_chars` when nothing sets it.
pub const DEFAULT_CHILD_ANSWER_MAX_CHARS: usize = 20_000;
/// `project_instructions_max_bytes` when nothing sets it.
pub const DEFAULT_PROJECT_INSTRUCTIONS_MAX_BYTES: usize = 32 * 1024;

/// The context settings of one session: bundle `session.context.config` under config
/// `context:`. `None` fields were set by neither.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ContextConfig {
    /// The context limit in tokens (`max_tokens`).
    pub max_tokens: Option<u64>,
    /// The share of the limit (0 < t ≤ 1) above which a request is compacted first.
    pub compact_threshold: Option<f64>,
    /// Whether the session compacts on its own (`auto_compact`, default true).
    pub auto_compact: Option<bool>,
    /// The longest sub-session answer handed to its parent, in characters.
    pub child_answer_max_chars: Option<usize>,
    /// The most bytes of `AGENTS.md` text added to a root's system prompt.
    pub project_instructions_max_bytes: Option<usize>,
}

impl ContextConfig {
    /// The settings of a mapping (`context:` or `session.context.config`), plus one
    /// warning per value that cannot be used (which stays unset): `where_` names the
    /// source in the warning.
    pub fn from_map(map: &Map<String, Value>, where_: &str) -> (Self, Vec<String>) {
        let mut out = Self::default();
        let mut warnings = Vec::new();
        let mut bad = |key: &str, value: &Value, want: &str| {
            warnings.push(format!("{where_}.{key}: {value} is not {want}; ignored"));
        };
        if let Some(v) = map.get("max_tokens").filter(|v| !v.is_null()) {
            match v.as_u64().filter(|n| *n > 0) {
                Some(n) => out.max_tokens = Some(n),
                None => bad("max_tokens", v, "a number of tokens > 0"),
            }
        }
        if let Some(v) = map.get("compact_threshold").filter(|v| !v.is_null()) {
            match v.as_f64().filter(|t| *t > 0.0 && *t <= 1.0) {
                Some(t) => out.compact_threshold = Some(t),
                None => bad("compact_threshold", v, "a share between 0 and 1"),
            }
        }
        if let Some(v) = map.get("auto_compact").filter(|v| !v.is_null()) {
            match v.as_bool() {
                Some(b) => out.auto_compact = Some(b),
                None => bad("auto_compact", v, "true or false"),
            }
        }
        for (key, slot) in [
            ("child_answer_max_chars", &mut out.child_answer_max_chars),
            (
                "project_instructions_max_bytes",
                &mut out.project_instructions_max_bytes,
            ),
        ] {
            if let Some(v) = map.get(key).filter(|v| !v.is_null()) {
                match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
                    Some(n) => *slot = Some(n),
                    None => bad(key, v, "a whole number ≥ 0"),
                }
            }
        }
        (out, warnings)
    }

    /// Config `context:` (a missing section: all unset), plus warnings.
    pub fn from_config(config: &ArborConfig) -> (Self, Vec<String>) {
        match config.extra.get(CONTEXT_KEY) {
            None | Some(Value::Null) => (Self::default(), Vec::new()),
            Some(Value::Object(map)) => Self::from_map(map, CONTEXT_KEY),
            Some(_) => (
                Self::default(),
                vec![format!(
                    "`{CONTEXT_KEY}` must be a mapping like {{max_tokens: 128000}}; ignored"
                )],
            ),
        }
    }

    /// A mount plan's `session.context.config` (Amplifier `context-simple` keys: its
    /// `session.context` module's `config`), with warnings for bad values.
    pub fn of_plan(plan: &crate::config::mount_plan::MountPlan) -> (Self, Vec<String>) {
        match plan
            .session
            .as_ref()
            .and_then(|s| s.context.as_ref())
            .map(crate::config::mount_plan::ModuleSpec::config)
            .and_then(Value::as_object)
        {
            Some(map) => Self::from_map(map, "session.context.config"),
            None => (Self::default(), Vec::new()),
        }
    }

    /// `self` with every key `over` sets replaced by `over`'s value.
    pub fn overridden_by(self, over: Self) -> Self {
        Self {
            max_tokens: over.max_tokens.or(self.max_tokens),
            compact_threshold: over.compact_threshold.or(self.compact_threshold),
            auto_compact: over.auto_compact.or(self.auto_compact),
            child_answer_max_chars: over.child_answer_max_chars.or(self.child_answer_max_chars),
            project_instructions_max_bytes: over
                .project_instructions_max_bytes
                .or(self.project_instructions_max_bytes),
        }
    }

    /// `compact_threshold`, default [`DEFAULT_COMPACT_THRESHOLD`].
    pub fn threshold(&self) -> f64 {
        self.compact_threshold.unwrap_or(DEFAULT_COMPACT_THRESHOLD)
    }

    /// `auto_compact`, default true.
    pub fn auto(&self) -> bool {
        self.auto_compact.unwrap_or(true)
    }

    /// `child_answer_max_chars`, default [`DEFAULT_CHILD_ANSWER_MAX_CHARS`].
    pub fn child_answer_max(&self) -> usize {
        self.child_answer_max_chars
            .unwrap_or(DEFAULT_CHILD_ANSWER_MAX_CHARS)
    }

    /// `project_instructions_max_bytes`, default
    /// [`DEFAULT_PROJECT_INSTRUCTIONS_MAX_BYTES`].
    pub fn instructions_max(&self) -> usize {
        self.project_instructions_max_bytes
            .unwrap_or(DEFAULT_PROJECT_INSTRUCTIONS_MAX_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_overrides_bundle_key_by_key_and_bad_values_warn() {
        let plan = crate::config::mount_plan::MountPlan::from_value(json!({"session": {
            "context": {"module": "context-simple",
            "config": {"max_tokens": 300000, "compact_threshold": 0.9}}}}));
        let (bundle, w) = ContextConfig::of_plan(&plan);
        assert!(w.is_empty());
        let map = json!({"compact_threshold": 0.5, "auto_compact": "no"});
        let (config, w) = ContextConfig::from_map(map.as_object().unwrap(), "context");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("context.auto_compact"));
        let merged = bundle.overridden_by(config);
        assert_eq!(merged.max_tokens, Some(300_000));
        assert_eq!(merged.threshold(), 0.5);
        assert!(merged.auto());
    }

    #[test]
    fn threshold_outside_zero_to_one_is_refused() {
        let map = json!({"compact_threshold": 1.5, "max_tokens": 0});
        let (c, w) = ContextConfig::from_map(map.as_object().unwrap(), "context");
        assert_eq!(w.len(), 2);
        assert_eq!(c.threshold(), DEFAULT_COMPACT_THRESHOLD);
        assert_eq!(c.max_tokens, None);
    }
}
