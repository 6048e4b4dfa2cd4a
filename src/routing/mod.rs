//! Model routing: `provider_preferences`, model roles and routing matrices (SPEC §9–10),
//! provider setup from config + environment, and model prices.
//!
//! Sits above `provider` (it builds wire clients and lists their models) and below
//! `tool` (the task tool validates `model_role` / `provider_preferences` with it);
//! reads `config` for the config file and mount-plan entries.
//!
//! Owns building providers ([`setup`]: which providers a new root session mounts,
//! credentials, base URL and default model; [`local`]: local servers found on
//! loopback as providers, and the no-provider banner), the config's price table ([`prices`]:
//! what a model call costs, keyed by the same provider/model globs), and the pure side
//! of choosing a sub-session's provider and model:
//! - [`glob`]: fnmatch-style model globs (`*`, `?`, `[0-9]`, `[!..]`), case-insensitive;
//! - [`version`]: natural version order (`claude-opus-4-10` > `claude-opus-4-7`; an
//!   undated alias beats a dated snapshot) and picking the newest glob match;
//! - [`prefs`]: preference entries, matching a name to a mounted provider, and
//!   rewriting a mount plan for a choice (protected config keys never set);
//! - [`matrix`] / [`catalog`]: routing-matrix YAML (validation, `base` composition,
//!   arbor's built-in `balanced`), user matrices in `$AMPLIFIER_HOME/routing/`, and the
//!   config's `routing: {matrix, overrides}`;
//! - [`source`]: where model lists come from ([`ModelSource`]) and the per-process
//!   [`ModelCache`] the runtime owns;
//! - [`resolve`] / [`precedence`]: resolving preferences and roles with reasons, and
//!   the call > agent > parent precedence producing [`ResolvedModel`].
//!
//! Does not own: HTTP or the wire clients (`provider`), or applying the result to a live
//! session — the engine does that (`engine::providers`, `engine::spawn`). Model choice
//! is deterministic given a [`ModelSource`]; resolution functions are `async` only
//! because listing is (drive them with `futures::executor::block_on` in sync code).
//!
//! Deliberate differences from Amplifier (listed for the conformance suite): natural
//! version order instead of foundation's reverse string sort, and between two dated
//! snapshots the newer date wins (the routing hook keeps list order); a short name
//! shared by two provider instances selects the first (the one mounted under that
//! name), not the last; a name's module-type fallback to the highest-priority instance
//! always applies (arbor always knows the plan entries).

pub mod catalog;
pub mod glob;
pub mod local;
pub mod matrix;
pub mod precedence;
pub mod prefs;
pub mod prices;
pub mod resolve;
pub mod setup;
pub mod source;
pub mod version;

#[cfg(test)]
mod setup_tests;
#[cfg(test)]
mod tests;

pub use catalog::{ActiveMatrix, RoutingSettings, active_matrix, available_matrices, load_matrix};
pub use glob::{glob_matches, is_glob_pattern};
pub use matrix::{
    MatrixError, Role, RoutingMatrix, builtin_balanced, compose_matrix, validate_matrix,
};
pub use precedence::{ModelRequest, ResolvedModel, Routed, Via, resolve_precedence};
pub use prefs::{
    PROTECTED_CONFIG_KEYS, PreferenceError, ProviderPreference, apply_provider_preferences,
    apply_resolved, apply_single_override, build_provider_lookup, find_plan_provider,
    find_provider, parse_preferences, parse_roles,
};
pub use resolve::{
    Mounts, PatternResolution, Resolution, apply_provider_preferences_with_resolution,
    resolve_candidate, resolve_model_pattern, resolve_model_role, resolve_preferences,
};
pub use source::{ListError, ModelCache, ModelSource, StaticModels};
pub use version::{compare_versions, matching_models, newest_first, resolve_glob};
