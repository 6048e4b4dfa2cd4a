//! Resolving provider preferences and model roles to one mounted provider and an exact
//! model, recording why candidates were skipped.
//!
//! Owns: [`Mounts`] (the providers a session has), [`resolve_candidate`] (one
//! `{provider, model}`), [`resolve_preferences`] (ordered fallback),
//! [`resolve_model_role`] (roles tried in order against a matrix),
//! [`resolve_model_pattern`] and [`apply_provider_preferences_with_resolution`].
//! Does not own: precedence between call and agent settings (`precedence`), listing
//! (`source`), version order (`version`).
//!
//! Rules: a candidate qualifies only when its provider is mounted (see
//! `prefs::find_provider`); an exact model name is taken as is without listing; a glob
//! lists the provider's models (through the [`ModelSource`]) and takes the newest
//! match. A listing failure or a glob without a match skips the candidate with a
//! reason: `anthropic not mounted`, `openai gpt-5*: no match in 3 listed models`,
//! `local *: cannot list models (connection refused)`.

use serde::Serialize;
use serde_json::Value;

use super::glob::is_glob_pattern;
use super::matrix::RoutingMatrix;
use super::prefs::{
    ProviderPreference, apply_single_override, find_plan_provider, find_provider, plan_entries,
};
use super::source::{ListError, ModelSource};
use super::version::matching_models;
use crate::config::ModuleEntry;
use crate::routing::setup::provider_id;

/// The providers mounted in a session: mount names (arbor: provider ids, plan order),
/// the plan entries behind them when known, and plan providers that cannot be used.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mounts {
    /// Mount names of the usable providers, in plan order.
    pub names: Vec<String>,
    /// Enables module-name matches and the highest-priority-instance fallback.
    pub specs: Option<Vec<ModuleEntry>>,
    /// `(mount name, why)` for plan providers that failed to build (e.g. no API key).
    pub unavailable: Vec<(String, String)>,
}

impl Mounts {
    /// Mount names only (no plan entries: no module fallback), as Amplifier's routing
    /// hook sees providers.
    pub fn new<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self {
            names: names.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// Mount names plus the plan entries (`coordinator_provider_specs` in Amplifier's terms).
    pub fn with_specs(mut self, specs: Vec<ModuleEntry>) -> Self {
        self.specs = Some(specs);
        self
    }

    /// Every entry of a plan's `providers` mounted under its provider id.
    pub fn from_entries(entries: &[ModuleEntry]) -> Self {
        Self {
            names: entries.iter().map(provider_id).collect(),
            specs: Some(entries.to_vec()),
            unavailable: Vec::new(),
        }
    }

    /// The mount name `provider` refers to, if mounted.
    pub fn find(&self, provider: &str) -> Option<String> {
        find_provider(provider, &self.names, self.specs.as_deref())
    }

    fn missing(&self, provider: &str) -> SkipReason {
        let names: Vec<String> = self.unavailable.iter().map(|(n, _)| n.clone()).collect();
        let specs: Option<Vec<ModuleEntry>> = self.specs.as_ref().map(|s| {
            s.iter()
                .filter(|e| names.contains(&provider_id(e)))
                .cloned()
                .collect()
        });
        match find_provider(provider, &names, specs.as_deref()) {
            Some(mount) => {
                let why = self
                    .unavailable
                    .iter()
                    .find(|(n, _)| *n == mount)
                    .map(|(_, w)| w.clone())
                    .unwrap_or_default();
                SkipReason::Unavailable {
                    provider: provider.to_string(),
                    why,
                }
            }
            None => SkipReason::NotMounted(provider.to_string()),
        }
    }
}

/// Why a candidate `{provider, model}` was passed over (SPEC §9); the text goes into a
/// resolution's `skipped` list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkipReason {
    /// The provider is mounted but could not be built (`why`).
    #[error("{provider} unavailable ({why})")]
    Unavailable {
        /// The provider as the candidate names it.
        provider: String,
        /// Why it could not be built.
        why: String,
    },
    /// No mount matches the provider name.
    #[error("{0} not mounted")]
    NotMounted(String),
    /// A glob needs the model list, which failed.
    #[error("{provider} {model}: cannot list models ({error})")]
    CannotList {
        /// The provider as named.
        provider: String,
        /// The model (glob) as named.
        model: String,
        /// Why the list failed.
        error: ListError,
    },
    /// A glob matched none of the `listed` models.
    #[error("{provider} {model}: no match in {listed} listed models")]
    NoMatch {
        /// The provider as named.
        provider: String,
        /// The glob.
        model: String,
        /// How many models the provider listed.
        listed: usize,
    },
    /// An exact model the provider's list lacks.
    #[error("{provider} {model}: not among the {listed} listed models")]
    NotListed {
        /// The provider as named.
        provider: String,
        /// The model as named.
        model: String,
        /// How many models the provider listed.
        listed: usize,
    },
}

/// `candidate` resolved: `provider` = the mount name, `model` exact, `config` kept.
/// `Err` is the skip reason (see the module docs).
pub async fn resolve_candidate(
    candidate: &ProviderPreference,
    mounts: &Mounts,
    source: &dyn ModelSource,
) -> Result<ProviderPreference, SkipReason> {
    let Some(mount) = mounts.find(&candidate.provider) else {
        return Err(mounts.missing(&candidate.provider));
    };
    let model = if is_glob_pattern(&candidate.model) {
        let listed = source
            .list_models(&mount)
            .await
            .map_err(|error| SkipReason::CannotList {
                provider: candidate.provider.clone(),
                model: candidate.model.clone(),
                error,
            })?;
        matching_models(&candidate.model, &listed)
            .into_iter()
            .next()
            .ok_or_else(|| SkipReason::NoMatch {
                provider: candidate.provider.clone(),
                model: candidate.model.clone(),
                listed: listed.len(),
            })?
    } else {
        // An exact name needs no listing (Amplifier), but when the provider does list
        // its models and this one is not among them (an `openai` mount that is really a
        // local server, say) the candidate is skipped rather than sent to fail.
        if let Ok(listed) = source.list_models(&mount).await
            && !listed.is_empty()
            && !listed
                .iter()
                .any(|m| m.eq_ignore_ascii_case(&candidate.model))
        {
            return Err(SkipReason::NotListed {
                provider: candidate.provider.clone(),
                model: candidate.model.clone(),
                listed: listed.len(),
            });
        }
        candidate.model.clone()
    };
    Ok(ProviderPreference {
        provider: mount,
        model,
        config: candidate.config.clone(),
    })
}

/// What a resolution chose and what it skipped on the way.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resolution {
    /// The chosen mount/model/config; `None` when nothing resolved.
    pub choice: Option<ProviderPreference>,
    /// The role that resolved (role resolution only).
    pub role: Option<String>,
    /// Why earlier options were skipped (all options, when nothing resolved).
    pub skipped: Vec<String>,
}

/// The first preference that resolves (ordered fallback); `skipped` holds
/// `{provider}/{model}: {reason}` for each one passed over.
pub async fn resolve_preferences(
    prefs: &[ProviderPreference],
    mounts: &Mounts,
    source: &dyn ModelSource,
) -> Resolution {
    let mut out = Resolution::default();
    for pref in prefs {
        match resolve_candidate(pref, mounts, source).await {
            Ok(choice) => {
                out.choice = Some(choice);
                return out;
            }
            Err(why) => out
                .skipped
                .push(format!("{}/{}: {why}", pref.provider, pref.model)),
        }
    }
    out
}

/// The first role of `roles` (in order) with a candidate that resolves, and its first
/// such candidate. `skipped` holds one line per role passed over:
/// `role reasoning: no candidate available (anthropic not mounted; …)`,
/// `role x: not in matrix 'balanced'` or `role x: no candidates`.
pub async fn resolve_model_role(
    roles: &[String],
    matrix: &RoutingMatrix,
    mounts: &Mounts,
    source: &dyn ModelSource,
) -> Resolution {
    let mut out = Resolution::default();
    for role in roles {
        let Some(def) = matrix.role(role) else {
            out.skipped
                .push(format!("role {role}: not in matrix '{}'", matrix.name));
            continue;
        };
        if def.candidates.is_empty() {
            out.skipped.push(format!("role {role}: no candidates"));
            continue;
        }
        let mut reasons = Vec::new();
        for candidate in &def.candidates {
            match resolve_candidate(candidate, mounts, source).await {
                Ok(choice) => {
                    out.choice = Some(choice);
                    out.role = Some(role.clone());
                    return out;
                }
                Err(why) => reasons.push(why.to_string()),
            }
        }
        out.skipped.push(format!(
            "role {role}: no candidate available ({})",
            reasons.join("; ")
        ));
    }
    out
}

/// The result of resolving one model hint (Amplifier's `resolve_model_pattern`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternResolution {
    /// The exact model; the hint itself when it is not a glob (or no provider is
    /// given); `None` when the glob cannot be resolved.
    pub resolved_model: Option<String>,
    /// The hint when it is a glob.
    pub pattern: Option<String>,
    /// What the provider listed (empty when not listed).
    pub available_models: Vec<String>,
    /// The matches, newest first (natural version order).
    pub matched_models: Vec<String>,
}

/// Resolves `hint` for `provider` (a name as in a preference).
pub async fn resolve_model_pattern(
    hint: &str,
    provider: Option<&str>,
    mounts: &Mounts,
    source: &dyn ModelSource,
) -> PatternResolution {
    let glob = is_glob_pattern(hint);
    let mut out = PatternResolution {
        resolved_model: Some(hint.to_string()),
        pattern: glob.then(|| hint.to_string()),
        available_models: Vec::new(),
        matched_models: Vec::new(),
    };
    let Some(provider) = provider.filter(|_| glob) else {
        return out;
    };
    out.resolved_model = None;
    let Some(mount) = mounts.find(provider) else {
        return out;
    };
    let Ok(listed) = source.list_models(&mount).await else {
        return out;
    };
    out.matched_models = matching_models(hint, &listed);
    out.available_models = listed;
    out.resolved_model = out.matched_models.first().cloned();
    out
}

/// `plan` with the first preference that resolves applied to its provider entry
/// (`priority: 0`, `default_model`, preference config minus protected keys); only
/// providers in the plan qualify, and globs resolve through `mounts`/`source`.
/// Unchanged when none resolves.
pub async fn apply_provider_preferences_with_resolution(
    plan: &Value,
    prefs: &[ProviderPreference],
    mounts: &Mounts,
    source: &dyn ModelSource,
) -> Value {
    let entries = plan_entries(plan);
    for pref in prefs {
        let Some(target) = find_plan_provider(&entries, &pref.provider) else {
            continue;
        };
        let resolved = if is_glob_pattern(&pref.model) {
            resolve_candidate(pref, mounts, source)
                .await
                .ok()
                .map(|c| c.model)
        } else {
            Some(pref.model.clone())
        };
        if let Some(model) = resolved {
            return apply_single_override(plan, target, &model, Some(&pref.config));
        }
    }
    plan.clone()
}
