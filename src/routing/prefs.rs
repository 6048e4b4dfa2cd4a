//! `provider_preferences` entries, finding the mounted provider a name means, and
//! applying a chosen provider/model to a mount plan.
//!
//! Owns: provider matching ([`find_provider`], [`find_plan_provider`],
//! [`build_provider_lookup`]), and the plan rewrites ([`apply_single_override`],
//! [`apply_provider_preferences`], [`apply_resolved`]) with the
//! [`PROTECTED_CONFIG_KEYS`] a preference may never set. Re-exports
//! [`ProviderPreference`] (`{provider, model, config?}`, the shape of both a preference
//! and a routing-matrix candidate) and [`parse_preferences`], whose home is the mount
//! plan's (`config::mount_plan`). Does not own: glob resolution against model lists
//! (`resolve`).
//!
//! Matching a name to a mounted provider (a mount name is arbor's provider id: the
//! entry's `id`, else its module without `provider-`): the mount name itself; else a
//! mount named `provider-<name>` or `<name>` without `provider-`; else, among plan
//! entries whose `module` is `<name>` or `provider-<name>`, the highest-priority one
//! (lowest `config.priority`, missing = 0; ties keep plan order). Deliberate difference
//! from Amplifier's `_build_provider_lookup`: when two instances share a short name the
//! FIRST (the one mounted under that name) wins, not the last.

use serde_json::{Map, Value};

use crate::config::ModuleEntry;
use crate::routing::setup::provider_id;

/// Provider config keys a preference or matrix candidate never sets (credentials,
/// endpoints, identities, TLS): Amplifier's list plus arbor's `endpoint`.
pub const PROTECTED_CONFIG_KEYS: [&str; 27] = [
    "api_key",
    "secret",
    "password",
    "token",
    "access_token",
    "bearer_token",
    "client_id",
    "client_secret",
    "tenant_id",
    "base_url",
    "host",
    "azure_endpoint",
    "api_version",
    "deployment_name",
    "organization",
    "project",
    "managed_identity_client_id",
    "use_managed_identity",
    "use_default_credential",
    "proxy",
    "http_proxy",
    "https_proxy",
    "verify_ssl",
    "ssl_verify",
    "verify",
    "ca_bundle",
    "endpoint",
];

/// The shapes of a preference (and of a routing-matrix candidate) and reading them:
/// the mount plan's (`config::mount_plan`), where a plan's `provider_preferences` are
/// typed.
pub use crate::config::mount_plan::{PreferenceError, ProviderPreference, parse_preferences};

/// A `model_role` value as a list of roles: a string → `[it]`, a list of strings as is.
/// Errors on any other shape.
pub fn parse_roles(v: &Value) -> Result<Vec<String>, PreferenceError> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if s.trim().is_empty() => Ok(Vec::new()),
        Value::String(s) => Ok(vec![s.trim().to_string()]),
        Value::Array(items) => items
            .iter()
            .map(|item| match item.as_str().map(str::trim) {
                Some(s) if !s.is_empty() => Ok(s.to_string()),
                _ => Err(PreferenceError(format!(
                    "model_role entries must be role names, got {item}"
                ))),
            })
            .collect(),
        other => Err(PreferenceError(format!(
            "model_role must be a role name or a list of role names, got {other}"
        ))),
    }
}

fn priority(entry: &ModuleEntry) -> f64 {
    entry.provider_config().priority.unwrap_or(0.0)
}

/// The mount name `name` refers to among `mounted` (see the module docs), using the
/// plan entries `specs` (when known) for module matches and the highest-priority
/// instance fallback. `None` when no mounted provider qualifies.
pub fn find_provider(
    name: &str,
    mounted: &[String],
    specs: Option<&[ModuleEntry]>,
) -> Option<String> {
    if mounted.iter().any(|m| m == name) {
        return Some(name.to_string());
    }
    let short = name.strip_prefix("provider-");
    let long = format!("provider-{name}");
    if let Some(m) = mounted
        .iter()
        .find(|m| **m == long || Some(m.as_str()) == short)
    {
        return Some(m.clone());
    }
    let specs = specs?;
    let mut best: Option<(&ModuleEntry, String)> = None;
    for spec in specs {
        let mount = provider_id(spec);
        if (spec.module == name || spec.module == long) && mounted.contains(&mount) {
            match &best {
                Some((b, _)) if priority(b) <= priority(spec) => {}
                _ => best = Some((spec, mount)),
            }
        }
    }
    best.map(|(_, mount)| mount)
}

/// The index in `entries` (a plan's `providers`) of the provider `name` refers to (the
/// first entry mounted under the found mount name).
pub fn find_plan_provider(entries: &[ModuleEntry], name: &str) -> Option<usize> {
    let mounted: Vec<String> = entries.iter().map(provider_id).collect();
    let mount = find_provider(name, &mounted, Some(entries))?;
    mounted.iter().position(|m| *m == mount)
}

/// Every name that selects an entry of `entries` → its index: module, short name,
/// `provider-<short>` and `id`. The first entry to claim a name keeps it.
pub fn build_provider_lookup(entries: &[ModuleEntry]) -> Map<String, Value> {
    let mut lookup = Map::new();
    for (i, entry) in entries.iter().enumerate() {
        let short = entry
            .module
            .strip_prefix("provider-")
            .unwrap_or(&entry.module)
            .to_string();
        let mut names = vec![
            entry.module.clone(),
            short.clone(),
            format!("provider-{short}"),
        ];
        names.extend(entry.id.clone());
        for name in names {
            lookup.entry(name).or_insert(Value::from(i));
        }
    }
    lookup
}

/// A copy of `plan` where every object entry of `providers` has a `config` mapping and
/// entry `target` is rewritten: `pref_config` merged in (protected keys, `priority` and
/// `default_model` ignored), then `priority: 0` and `default_model: model`. Plans
/// without a `providers` list, or a `target` out of range, come back unchanged.
pub fn apply_single_override(
    plan: &Value,
    target: usize,
    model: &str,
    pref_config: Option<&Value>,
) -> Value {
    let mut plan = plan.clone();
    let Some(providers) = plan.get_mut("providers").and_then(Value::as_array_mut) else {
        return plan;
    };
    if target >= providers.len() {
        return plan;
    }
    for (i, entry) in providers.iter_mut().enumerate() {
        if let Value::String(module) = entry
            && i == target
        {
            *entry = serde_json::json!({"module": module});
        }
        let Some(map) = entry.as_object_mut() else {
            continue;
        };
        let mut config = map
            .get("config")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if i == target {
            if let Some(Value::Object(extra)) = pref_config {
                for (k, v) in extra {
                    let k_lower = k.to_ascii_lowercase();
                    if PROTECTED_CONFIG_KEYS.contains(&k_lower.as_str())
                        || k == "priority"
                        || k == "default_model"
                    {
                        continue;
                    }
                    config.insert(k.clone(), v.clone());
                }
            }
            config.insert("priority".into(), Value::from(0));
            config.insert("default_model".into(), Value::from(model));
        }
        map.insert("config".into(), Value::Object(config));
    }
    plan
}

/// `plan` with the first preference whose provider is in the plan applied (its model
/// taken as is, globs unresolved — see `resolve::apply_provider_preferences_with_resolution`);
/// unchanged when no preference matches or the plan has no providers.
pub fn apply_provider_preferences(plan: &Value, prefs: &[ProviderPreference]) -> Value {
    let entries = plan_entries(plan);
    for pref in prefs {
        if let Some(i) = find_plan_provider(&entries, &pref.provider) {
            return apply_single_override(plan, i, &pref.model, Some(&pref.config));
        }
    }
    plan.clone()
}

/// The `providers` of a plan value as entries, index-aligned with the list (an item
/// that is not an entry becomes an entry with an empty module, which nothing matches).
pub fn plan_entries(plan: &Value) -> Vec<ModuleEntry> {
    plan.get("providers")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| ModuleEntry::from_value(item).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// arbor's rewrite for a resolved choice (`choice.provider` a mount name, `model`
/// exact): [`apply_single_override`] on that entry, which then moves to the front of
/// `providers` — a session uses the first provider that builds, so a resumed session
/// keeps the choice. Unchanged when the mount is not in the plan.
pub fn apply_resolved(plan: &Value, choice: &ProviderPreference) -> Value {
    let entries = plan_entries(plan);
    let Some(i) = find_plan_provider(&entries, &choice.provider) else {
        return plan.clone();
    };
    let mut plan = apply_single_override(plan, i, &choice.model, Some(&choice.config));
    if let Some(providers) = plan.get_mut("providers").and_then(Value::as_array_mut)
        && i < providers.len()
    {
        let entry = providers.remove(i);
        providers.insert(0, entry);
    }
    plan
}
