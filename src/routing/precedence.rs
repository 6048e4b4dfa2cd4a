//! Which model a sub-session gets (SPEC §9): call `provider_preferences` > call
//! `model_role` > agent `provider_preferences` > agent `model_role` > the parent's
//! provider/model.
//!
//! Owns: [`ModelRequest`] (the four settings, raw), [`resolve_precedence`] and its record
//! [`ResolvedModel`] (`resolved_model` in the child's metadata and `session:fork`), with
//! a `reason` that explains every fallback. Does not own: building providers or
//! rewriting the session (`engine::providers`), resolving one tier (`resolve`).

use serde_json::Value;

use super::matrix::RoutingMatrix;
use super::prefs::{ProviderPreference, parse_preferences, parse_roles};
use super::resolve::{Mounts, Resolution, resolve_model_role, resolve_preferences};
use super::source::ModelSource;

/// Defined with the protocol (`session:fork` and `task:agent_*` carry the record).
pub use crate::session::protocol::{ResolvedModel, Via};

/// The raw model settings of a spawn (each `None` when not given): from the task call
/// and from the agent's frontmatter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelRequest {
    /// The task call's `provider_preferences`.
    pub call_preferences: Option<Value>,
    /// The task call's `model_role` (string or list).
    pub call_role: Option<Value>,
    /// The agent's `provider_preferences`.
    pub agent_preferences: Option<Value>,
    /// The agent's `model_role` (string or list).
    pub agent_role: Option<Value>,
}

impl ModelRequest {
    /// The agent settings from an agent overlay: top-level `provider_preferences` /
    /// `model_role`, else the same keys under `meta`.
    pub fn with_agent(mut self, overlay: &Value) -> Self {
        let get = |key: &str| {
            overlay
                .get(key)
                .or_else(|| overlay.get("meta").and_then(|m| m.get(key)))
                .filter(|v| !v.is_null())
                .cloned()
        };
        self.agent_preferences = get("provider_preferences");
        self.agent_role = get("model_role");
        self
    }

    /// Whether any setting is given (no setting → the parent's model, no reason).
    pub fn is_empty(&self) -> bool {
        self.tiers().iter().all(|(_, v)| v.is_none())
    }

    /// Whether a model role is asked for (the caller needs a matrix).
    pub fn wants_matrix(&self) -> bool {
        self.call_role.is_some() || self.agent_role.is_some()
    }

    fn tiers(&self) -> [(Via, Option<&Value>); 4] {
        [
            (Via::CallPreferences, self.call_preferences.as_ref()),
            (Via::CallRole, self.call_role.as_ref()),
            (Via::AgentPreferences, self.agent_preferences.as_ref()),
            (Via::AgentRole, self.agent_role.as_ref()),
        ]
    }
}

/// The outcome of [`resolve_precedence`]: the record, and the choice to apply to the
/// session's plan (`None` when the parent's model stays).
#[derive(Debug, Clone, PartialEq)]
pub struct Routed {
    /// What to record in metadata.
    pub resolved: ResolvedModel,
    /// The mount name, exact model and preference config to apply, if not the parent's.
    pub choice: Option<ProviderPreference>,
}

enum Tier {
    Absent,
    Failed(String),
    Resolved(Resolution),
}

async fn tier(
    via: Via,
    value: &Value,
    matrix: Option<&RoutingMatrix>,
    mounts: &Mounts,
    source: &dyn ModelSource,
) -> Tier {
    let resolution = match via {
        Via::CallPreferences | Via::AgentPreferences => match parse_preferences(value) {
            Err(e) => return Tier::Failed(format!("invalid provider_preferences ({e})")),
            Ok(prefs) if prefs.is_empty() => return Tier::Absent,
            Ok(prefs) => resolve_preferences(&prefs, mounts, source).await,
        },
        _ => match (parse_roles(value), matrix) {
            (Err(e), _) => return Tier::Failed(format!("invalid model_role ({e})")),
            (Ok(roles), _) if roles.is_empty() => return Tier::Absent,
            (Ok(_), None) => return Tier::Failed("no routing matrix available".into()),
            (Ok(roles), Some(m)) => resolve_model_role(&roles, m, mounts, source).await,
        },
    };
    if resolution.choice.is_some() {
        return Tier::Resolved(resolution);
    }
    let skipped = resolution.skipped.join("; ");
    Tier::Failed(match via {
        Via::CallPreferences | Via::AgentPreferences => {
            format!("no preference available ({skipped})")
        }
        _ => skipped,
    })
}

/// Resolves `request` by precedence against the session's `mounts` (globs listed via
/// `source`; roles looked up in `matrix`), falling back to `parent` (`(provider, model)`
/// of the parent session; an empty model means a server-decided model not known yet).
/// Earlier tiers that fail, and options skipped inside the tier that succeeds, are
/// explained in `reason` (a fallback ends "used the parent's model (openai/gpt-4o)",
/// or "used the parent's provider openai (model resolved by the server)"); with no
/// settings at all the result is the parent's model with no reason.
pub async fn resolve_precedence(
    request: &ModelRequest,
    matrix: Option<&RoutingMatrix>,
    mounts: &Mounts,
    source: &dyn ModelSource,
    parent: (&str, &str),
) -> Routed {
    let mut failed = Vec::new();
    for (via, value) in request.tiers() {
        let Some(value) = value else { continue };
        match tier(via, value, matrix, mounts, source).await {
            Tier::Absent => {}
            Tier::Failed(why) => failed.push(format!("{}: {why}", via.as_str())),
            Tier::Resolved(resolution) => {
                let Some(choice) = resolution.choice else {
                    continue;
                };
                let what = match &resolution.role {
                    Some(role) => role.clone(),
                    None => format!("{}/{}", choice.provider, choice.model),
                };
                let used = match (&resolution.role, failed.is_empty()) {
                    (Some(_), true) => format!("role {what}"),
                    (None, true) => what,
                    (_, false) => format!("{} {what}", via.as_str()),
                };
                let mut notes = failed;
                notes.extend(resolution.skipped);
                let reason =
                    (!notes.is_empty()).then(|| format!("{}; used {used}", notes.join("; ")));
                return Routed {
                    resolved: ResolvedModel {
                        provider: choice.provider.clone(),
                        model: choice.model.clone(),
                        via,
                        role: resolution.role,
                        reason,
                    },
                    choice: Some(choice),
                };
            }
        }
    }
    let (provider, model) = parent;
    let reason = (!failed.is_empty()).then(|| {
        let used = if model.is_empty() {
            format!("the parent's provider {provider} (model resolved by the server)")
        } else {
            format!("the parent's model ({provider}/{model})")
        };
        format!("{}; used {used}", failed.join("; "))
    });
    Routed {
        resolved: ResolvedModel {
            provider: provider.to_string(),
            model: model.to_string(),
            via: Via::Parent,
            role: None,
            reason,
        },
        choice: None,
    }
}
