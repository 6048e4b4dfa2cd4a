//! A person's model choice (`--model NAME`, the TUI's model switch, later `/model`)
//! and the model of a root session started with an agent (SPEC §9, §14).
//!
//! Owns: reading a model choice against a session's plan ([`choose`]), applying it to
//! the plan ([`apply`]: the chosen entry first with `default_model`, its provider
//! built), and routing a new root session the way a spawned child is routed
//! ([`route_root`]: the agent's `provider_preferences` > its `model_role` > the
//! plan's provider). Does not own: creating or switching sessions (`runtime`), the
//! routing rules (`routing`), building providers (`providers`).
//!
//! A choice `TEXT` reads: `PROVIDER/MODEL` when `PROVIDER` names a provider of the
//! plan (its id, module, or module without `provider-`), else `MODEL` on the provider
//! the session uses now — so `openai/gpt-4o`, `gpt-4o` and an OpenRouter name such as
//! `anthropic/claude-3.5-sonnet` (with no `anthropic` provider configured) all work.
//! An exact model is taken as given (the server says if it does not know it); a glob
//! (`claude-sonnet-*`) resolves against the provider's model list (cached per
//! process) to the newest match, and no match is an error.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::env::TurnEnv;
use super::outcome::{EngineError, ModelChoiceError};
use super::providers;
use super::root_plan;
use super::spawn::{apply_routing, model_of, pair};
use crate::config::MountPlan;
use crate::provider::Provider;
use crate::routing::setup::provider_id;
use crate::routing::{
    ModelRequest, ProviderPreference, ResolvedModel, Via, apply_resolved, find_plan_provider,
    is_glob_pattern, matching_models,
};

/// How long a glob choice waits for the provider's model list.
const LIST_TIMEOUT: Duration = Duration::from_secs(15);

/// A built provider with its plan entry's config (what a live session caches).
pub(crate) type SessionProvider = (Arc<dyn Provider>, Value);

/// The exact `{provider, model}` that `text` asks for in a session with `plan` whose
/// provider is now `current` (see the module docs).
///
/// Errors (`Model`): an empty choice; a glob whose provider cannot be built or listed,
/// or that matches no listed model.
pub(crate) async fn choose(
    env: &TurnEnv,
    plan: &MountPlan,
    current: &dyn Provider,
    text: &str,
) -> Result<ProviderPreference, EngineError> {
    let (mount, model) = split_choice(plan, current.id(), text)?;
    if !is_glob_pattern(&model) {
        return Ok(ProviderPreference::new(mount, model));
    }
    let entry = plan
        .providers()
        .into_iter()
        .find(|e| provider_id(e) == mount)
        .ok_or_else(|| ModelChoiceError::NoProvider {
            choice: text.to_string(),
            mount: mount.clone(),
        })?;
    let provider = providers::build(env, &entry).map_err(|e| ModelChoiceError::Build {
        choice: text.to_string(),
        reason: e.to_string(),
    })?;
    let listed = cached_models(env, &entry, provider, LIST_TIMEOUT)
        .await
        .map_err(|reason| ModelChoiceError::CannotList {
            choice: text.to_string(),
            reason,
        })?;
    let exact = matching_models(&model, &listed)
        .into_iter()
        .next()
        .ok_or_else(|| ModelChoiceError::NoMatch {
            choice: text.to_string(),
            mount: mount.clone(),
            listed: listed.len(),
        })?;
    Ok(ProviderPreference::new(mount, exact))
}

/// `(mount name, model)` of a choice, without listing anything (see the module docs).
/// Errors (`Model`: `Empty`): the choice is empty.
pub(crate) fn split_choice(
    plan: &MountPlan,
    current: &str,
    text: &str,
) -> Result<(String, String), EngineError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ModelChoiceError::Empty.into());
    }
    let entries = plan.providers();
    if let Some((prefix, rest)) = text.split_once('/')
        && !rest.trim().is_empty()
        && let Some(i) = find_plan_provider(&entries, prefix.trim())
    {
        return Ok((provider_id(&entries[i]), rest.trim().to_string()));
    }
    Ok((current.to_string(), text.to_string()))
}

/// `plan` rewritten for `choice` (its entry first, `default_model` set) and that
/// entry's provider, built. Errors (`Model`): the provider is not in the plan or
/// cannot be built (the message names the choice and why).
pub(crate) fn apply(
    env: &TurnEnv,
    plan: &MountPlan,
    choice: &ProviderPreference,
) -> Result<(MountPlan, SessionProvider), EngineError> {
    let label = format!("{}/{}", choice.provider, choice.model);
    let plan = MountPlan::from_value(apply_resolved(&plan.to_value(), choice));
    let entry = plan
        .providers()
        .into_iter()
        .next()
        .filter(|e| provider_id(e) == choice.provider)
        .ok_or_else(|| ModelChoiceError::NotConfigured {
            choice: label.clone(),
            provider: choice.provider.clone(),
        })?;
    let provider = providers::build(env, &entry).map_err(|e| ModelChoiceError::Build {
        choice: label.clone(),
        reason: e.to_string(),
    })?;
    Ok((plan, (provider, entry.config)))
}

/// The record of a person's choice, as `resolved_model` in metadata.
pub(crate) fn chosen(choice: &ProviderPreference) -> ResolvedModel {
    ResolvedModel {
        provider: choice.provider.clone(),
        model: choice.model.clone(),
        via: Via::User,
        role: None,
        reason: None,
    }
}

/// A new root session's plan and provider, routed as a spawned child is: with an
/// `agent` whose file sets `provider_preferences` or `model_role`, those pick the
/// provider and model (the plan's provider when nothing resolves, with the reason);
/// then a `model` choice wins over both. Returns the routed plan, its provider and the
/// resolution to record (`None` when neither applied).
///
/// Errors: `UnknownAgent` / `InvalidAgent`; `NoProvider`; a bad `model` choice.
pub(crate) async fn route_root(
    env: &TurnEnv,
    plan: MountPlan,
    agent: Option<&str>,
    model: Option<&str>,
) -> Result<(MountPlan, SessionProvider, Option<ResolvedModel>), EngineError> {
    let mut provider = providers::select_provider(env, &plan)?;
    let mut plan = plan;
    let mut resolved = None;
    if let Some(name) = agent {
        let def = root_plan::valid_agent(env, name)?;
        let request = ModelRequest::default().with_agent(&def.overlay);
        if !request.is_empty() {
            let fallback = model_of(&provider.0);
            let routed = providers::route(env, &plan, &request, pair(&fallback)).await;
            (plan, provider) = apply_routing(env, plan, &routed, provider)?;
            resolved = Some(routed.resolved);
        }
    }
    if let Some(text) = model {
        let choice = choose(env, &plan, provider.0.as_ref(), text).await?;
        (plan, provider) = apply(env, &plan, &choice)?;
        resolved = Some(chosen(&choice));
    }
    Ok((plan, provider, resolved))
}

/// How long [`unlisted`] waits for a provider's model list.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// A warning when `label` (`PROVIDER/MODEL`, as a switch returns it) names a model its
/// provider's list lacks: `gpt-4o-typo is not among the 12 models openai lists (used
/// anyway: the server decides)`. `None` when the model is listed, or no list is
/// available (the provider is not in `plan`, cannot be built, or fails or is slower
/// than 5 s to list). The list is cached per process, as for globs.
pub(crate) async fn unlisted(env: &TurnEnv, plan: &MountPlan, label: &str) -> Option<String> {
    let (mount, model) = label.split_once('/')?;
    let entry = plan
        .providers()
        .into_iter()
        .find(|e| provider_id(e) == mount)?;
    let provider = providers::build(env, &entry).ok()?;
    let listed = cached_models(env, &entry, provider, CHECK_TIMEOUT)
        .await
        .ok()?;
    if listed.is_empty() || listed.iter().any(|m| m == model) {
        return None;
    }
    Some(format!(
        "{model} is not among the {} models {mount} lists (used anyway: the server decides)",
        listed.len()
    ))
}

/// One provider of a session's plan and the models it lists
/// ([`EngineQuery::ListModels`](crate::session::EngineQuery::ListModels)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderModels {
    /// The provider id (mount name): the `PROVIDER` of a `PROVIDER/MODEL` choice.
    pub provider: String,
    /// Its module (`provider-openai`, …): how its usage counts cache tokens.
    pub module: String,
    /// The model the plan entry names (`default_model`), when it names one.
    pub configured: Option<String>,
    /// Its model list, sorted, or why there is none (it cannot be built, its list
    /// failed or took longer than 5 s) as one line.
    pub models: Result<Vec<String>, String>,
}

/// `provider`'s model list (for plan `entry`) through the runtime's per-process cache;
/// a list that takes longer than `timeout` is the error `no answer within Ns`.
async fn cached_models(
    env: &TurnEnv,
    entry: &crate::config::ModuleEntry,
    provider: Arc<dyn Provider>,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    env.models
        .get_or_list(&providers::cache_key(entry), || async move {
            match tokio::time::timeout(timeout, provider.list_models()).await {
                Ok(listed) => listed.map_err(|e| e.to_string()),
                Err(_) => Err(format!("no answer within {}s", timeout.as_secs())),
            }
        })
        .await
}

/// The models each provider of `plan` lists, in plan order, through the runtime's
/// per-process cache (the lists a glob choice and `arbor models` read).
pub(crate) async fn plan_models(env: &TurnEnv, plan: &MountPlan) -> Vec<ProviderModels> {
    let mut out = Vec::new();
    for entry in plan.providers() {
        let config = entry.provider_config();
        let configured = config
            .default_model
            .or(config.model)
            .filter(|m| !m.is_empty());
        let models = match providers::build(env, &entry) {
            Ok(provider) => cached_models(env, &entry, provider, CHECK_TIMEOUT)
                .await
                .map(|mut listed| {
                    listed.sort();
                    listed
                }),
            Err(e) => Err(e.to_string()),
        };
        out.push(ProviderModels {
            provider: provider_id(&entry),
            module: entry.module.clone(),
            configured,
            models,
        });
    }
    out
}
