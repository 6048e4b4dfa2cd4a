//! The mount plan of a new root session.
//!
//! Owns: bundle mount plan + `providers` from `routing::setup::detect_providers`
//! (the bundle's own `providers` when nothing is configured), and — for a root started
//! with an agent — that agent's overlay merged in as if the bundle's root spawned it, so
//! the root uses its instruction and tools (its task limits at most the bundle's,
//! unless it is a user agent); checking an agent name against the registry
//! ([`valid_agent`]). Reads the
//! runtime's [`TurnEnv`]. Does not own: the merge rules (`config::merge`) or spawned
//! children (`spawn`).

use serde_json::Value;

use super::env::TurnEnv;
use super::limits::agent_plan;
use super::outcome::EngineError;
use crate::agent::AgentDef;
use crate::agent::Bundle;
use crate::agent::bundle::locate;
use crate::config::MountPlan;
use crate::routing::setup::{detect_providers, no_provider_message};

/// The root plan (with whatever credentials the config holds: never persist it
/// unredacted) and the agent overlay recorded in metadata (`{}` for the bundle).
///
/// A root started as an agent gets the tools that agent gets when the bundle's root
/// spawns it: the bundle's `spawn` policy applies before the overlay merges in (the
/// built-in bundle keeps `tool-bash` from every agent whose file does not add it), and
/// stays the policy for the root's own children unless the agent sets its own.
pub(crate) fn build(env: &TurnEnv, agent: Option<&str>) -> Result<(MountPlan, Value), EngineError> {
    build_from(env, &env.bundle, agent)
}

/// [`build`] over `bundle` instead of the active one.
fn build_from(
    env: &TurnEnv,
    bundle: &Bundle,
    agent: Option<&str>,
) -> Result<(MountPlan, Value), EngineError> {
    let mut plan = bundle.mount_plan.clone();
    let detected = detect_providers(&env.config, env.env.as_ref());
    if !detected.is_empty() {
        plan.providers = Some(detected.into_iter().map(Into::into).collect());
    } else if plan.providers().is_empty() {
        return Err(EngineError::NoProvider(no_provider_message(
            &env.paths.config_file,
            env.env.as_ref(),
        )));
    }
    let Some(name) = agent else {
        return Ok((plan, Value::Object(Default::default())));
    };
    let def = valid_agent(env, name)?;
    let merged = agent_plan(&plan, &def, &Value::Null);
    Ok((merged, def.overlay))
}

/// The mount plan of a stored root that has no `config` (Amplifier never writes one
/// for roots), rebuilt from its recorded `bundle` (`locate::bundle_for`: the bundle
/// it names when it is on this machine, else the active one with a note — the second
/// value — for the thread and `session show`).
///
/// Errors: as [`build`] (`NoProvider`).
pub(crate) fn rebuild_root(
    env: &TurnEnv,
    reference: Option<&str>,
) -> Result<(MountPlan, Option<String>), EngineError> {
    let (bundle, note) = locate::bundle_for(&env.bundle, &env.paths, reference);
    let (plan, _) = build_from(env, &bundle, None)?;
    Ok((plan, note))
}

/// The registry's definition of `name`: `UnknownAgent` (listing valid names) when
/// absent, `InvalidAgent` (its errors) when it failed validation.
pub(crate) fn valid_agent(env: &TurnEnv, name: &str) -> Result<AgentDef, EngineError> {
    let registry = env.registry();
    match registry.get(name) {
        None => Err(EngineError::UnknownAgent {
            name: name.to_string(),
            available: registry.valid_names(),
        }),
        Some(def) if !def.is_valid() => Err(EngineError::InvalidAgent {
            name: name.to_string(),
            reason: def
                .errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        }),
        Some(def) => Ok(def.clone()),
    }
}
