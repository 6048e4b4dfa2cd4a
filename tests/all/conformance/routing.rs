//! `amplifier-routing.yaml` onto `arbor::routing` (SPEC §9–10).
//!
//! The coordinator: `mounted_providers` become [`Mounts`] (mount names in file order)
//! and a [`StaticModels`] source (`{models}` lists, `{list_models: raises}` fails,
//! `{list_models: absent}` cannot list and never counts as a call);
//! `coordinator_provider_specs` become the mounts' plan entries (omitted: none known).
//! `preresolved_models` (Amplifier's per-session lists) become arbor's per-process
//! [`ModelCache`], filled up front and consulted before listing, as the engine does.
//!
//! Mapping (Python → arbor): `is_glob_pattern`, `ProviderPreference.from_dict/to_dict`
//! (`from_value`/`to_value`), `apply_provider_preferences`, `_apply_single_override`,
//! `resolve_model_pattern`, `apply_provider_preferences_with_resolution`,
//! `_build_provider_lookup`, `compose_matrix`, `validate_matrix` → the functions of the
//! same name; `_find_provider_instance` and `find_provider_by_type` → [`find_provider`];
//! `resolve_model_role` and `MatrixModelRoleResolver.resolve` → [`resolve_model_role`]
//! (result `[{provider, model, config}]` or `[]`); `known_roles` →
//! [`RoutingMatrix::known_roles`]; `_resolve_glob` → the cache, then
//! [`resolve_glob`]. A case's `matrix_roles` is built into a [`RoutingMatrix`] as is
//! (cases leave out roles a full matrix must have).
//!
//! Not mapped (listed as not applicable): the session:start routing hook.

use futures::executor::block_on;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use arbor::config::ModuleEntry;
use arbor::routing::{
    ListError, ModelCache, ModelSource, Mounts, ProviderPreference, Role, RoutingMatrix,
    StaticModels, apply_provider_preferences, apply_provider_preferences_with_resolution,
    apply_single_override, build_provider_lookup, compose_matrix, find_provider, is_glob_pattern,
    parse_preferences, parse_roles, resolve_glob, resolve_model_pattern, resolve_model_role,
    validate_matrix,
};

use super::eval::{self, CallResult};

/// Runs one case; `None` when its function has no arbor mapping.
pub fn run(case: &Value) -> Option<Result<(), String>> {
    let function = case.get("function").and_then(Value::as_str)?;
    let input = case.get("input").cloned().unwrap_or(Value::Null);
    let coordinator = Coordinator::new(&input);
    let call: fn(&Coordinator, &Value) -> CallResult = match function {
        "foundation.spawn_utils.is_glob_pattern" => |_, i| {
            let hints = eval::list(i.get("model_hints")).filter_map(Value::as_str);
            Ok(json!(hints.map(is_glob_pattern).collect::<Vec<_>>()))
        },
        "foundation.spawn_utils.ProviderPreference.from_dict" => |_, i| pref(&i["data"]),
        "foundation.spawn_utils.ProviderPreference.to_dict" => |_, i| pref(i),
        "foundation.spawn_utils.apply_provider_preferences" => |_, i| {
            let prefs = prefs(i)?;
            Ok(apply_provider_preferences(&i["mount_plan"], &prefs))
        },
        "foundation.spawn_utils._apply_single_override" => |_, i| {
            let target = i["target_index"].as_u64().ok_or("target_index")? as usize;
            let model = i["model"].as_str().unwrap_or_default();
            let config = Some(&i["pref_config"]).filter(|c| !c.is_null());
            Ok(apply_single_override(
                &i["mount_plan"],
                target,
                model,
                config,
            ))
        },
        "foundation.spawn_utils.resolve_model_pattern" => |c, i| {
            let hint = i["model_hint"].as_str().unwrap_or_default();
            let provider = i["provider_name"].as_str();
            let found = block_on(resolve_model_pattern(
                hint,
                provider,
                &c.mounts,
                &c.cached(),
            ));
            serde_json::to_value(found).map_err(|e| e.to_string())
        },
        "foundation.spawn_utils.apply_provider_preferences_with_resolution" => |c, i| {
            let prefs = prefs(i)?;
            let source = c.cached();
            let plan = &i["mount_plan"];
            let future =
                apply_provider_preferences_with_resolution(plan, &prefs, &c.mounts, &source);
            Ok(block_on(future))
        },
        "foundation.spawn_utils._build_provider_lookup" => |_, i| {
            Ok(Value::Object(build_provider_lookup(&entries(
                &i["providers"],
            ))))
        },
        "foundation.spawn_utils._find_provider_instance" | "routing.find_provider_by_type" => {
            |c, i| {
                let name = i["provider_name"]
                    .as_str()
                    .or(i["type_name"].as_str())
                    .unwrap_or_default();
                let mounted: Vec<String> = eval::list(i.get("mounted"))
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                Ok(json!(find_provider(
                    name,
                    &mounted,
                    c.mounts.specs.as_deref()
                )))
            }
        }
        "routing.resolve_model_role" | "routing.MatrixModelRoleResolver.resolve" => |c, i| {
            let roles_value = i
                .get("roles")
                .or(i.get("model_role"))
                .unwrap_or(&Value::Null);
            let roles = parse_roles(roles_value).map_err(|e| e.to_string())?;
            let matrix = matrix(&i["matrix_roles"])?;
            let found = block_on(resolve_model_role(&roles, &matrix, &c.mounts, &c.cached()));
            Ok(json!(found.choice.iter().map(shown).collect::<Vec<_>>()))
        },
        "routing.MatrixModelRoleResolver.known_roles" => {
            |_, i| Ok(json!(matrix(&i["matrix_roles"])?.known_roles()))
        }
        "routing.compose_matrix" => {
            |_, i| compose_matrix(&i["base"], &i["overrides"]).map_err(|e| e.to_string())
        }
        "routing.validate_matrix" => |_, i| Ok(json!(validate_matrix(&i["matrix"]))),
        "routing._resolve_glob" => resolve_glob_case,
        _ => return None,
    };
    let result = eval::run_case(case, &["expected_list_models_calls"], &mut |i| {
        call(&coordinator, i)
    });
    Some(result.and_then(|()| coordinator.check_calls(case)))
}

/// The modelled coordinator of a case (see the module doc).
struct Coordinator {
    mounts: Mounts,
    source: StaticModels,
    cache: ModelCache,
    /// Mounts without `list_models`: their (failing) listings are not calls.
    absent: Vec<String>,
}

impl Coordinator {
    fn new(input: &Value) -> Self {
        let mounted = input
            .get("mounted_providers")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut source = StaticModels::new();
        let mut absent = Vec::new();
        for (mount, spec) in &mounted {
            if let Some(models) = spec.get("models") {
                let models = eval::list(Some(models)).filter_map(Value::as_str);
                source = source.with_models(mount, models.map(str::to_string));
            } else if spec.get("list_models").and_then(Value::as_str) == Some("raises") {
                source = source.with_failure(mount, "list_models raised");
            } else {
                absent.push(mount.clone());
            }
        }
        let mut mounts = Mounts::new(mounted.keys().cloned());
        if let Some(specs) = input.get("coordinator_provider_specs") {
            mounts = mounts.with_specs(entries(specs));
        }
        let coordinator = Self {
            mounts,
            source,
            cache: ModelCache::new(),
            absent,
        };
        // Preresolved lists are keyed by the matrix's provider name, the cache by mount.
        for (name, list) in preresolved(input) {
            let key = coordinator.mounts.find(&name).unwrap_or(name);
            let _ = block_on(
                coordinator
                    .cache
                    .get_or_list(&key, || async { Ok::<_, ListError>(list) }),
            );
        }
        coordinator
    }

    /// The source resolution sees: the cache first, then the provider's listing.
    fn cached(&self) -> Cached<'_> {
        Cached {
            cache: &self.cache,
            inner: &self.source,
        }
    }

    /// Listing calls made to `mount` (never any for a mount without `list_models`).
    fn calls(&self, mount: &str) -> u64 {
        if self.absent.iter().any(|m| m == mount) {
            0
        } else {
            self.source.calls(mount) as u64
        }
    }

    /// `expected_list_models_calls`: mount → number of listings the case made.
    fn check_calls(&self, case: &Value) -> Result<(), String> {
        let want = case
            .get("expected_list_models_calls")
            .and_then(Value::as_object);
        for (mount, n) in want.into_iter().flatten() {
            let got = self.calls(mount);
            if Some(got) != n.as_u64() {
                return Err(format!(
                    "list_models calls on {mount}: expected {n}, got {got}"
                ));
            }
        }
        Ok(())
    }
}

/// [`ModelSource`] through the cache, keyed by mount (as `engine::providers` does).
struct Cached<'a> {
    cache: &'a ModelCache,
    inner: &'a StaticModels,
}

impl ModelSource for Cached<'_> {
    fn list_models<'a>(&'a self, mount: &'a str) -> BoxFuture<'a, Result<Vec<String>, ListError>> {
        Box::pin(
            self.cache
                .get_or_list(mount, move || self.inner.list_models(mount)),
        )
    }
}

/// `preresolved_models` of a case: provider name → model list.
fn preresolved(input: &Value) -> Vec<(String, Vec<String>)> {
    let map = input.get("preresolved_models").and_then(Value::as_object);
    map.into_iter()
        .flatten()
        .map(|(name, list)| {
            let models = eval::list(Some(list)).filter_map(Value::as_str);
            (name.clone(), models.map(str::to_string).collect())
        })
        .collect()
}

/// `_resolve_glob(pattern, provider, provider_key, preresolved_models)`: the listing
/// through the cache (`call_count` times), then the newest match. The result shows
/// the cache as Amplifier's dict: the given one plus what the cache now holds.
fn resolve_glob_case(c: &Coordinator, input: &Value) -> CallResult {
    let key = input["provider_key"].as_str().unwrap_or_default();
    let pattern = input["pattern"].as_str().unwrap_or_default();
    let mut inner = StaticModels::new();
    if let Some(models) = input["provider"].get("models") {
        let models = eval::list(Some(models)).filter_map(Value::as_str);
        inner = inner.with_models(key, models.map(str::to_string));
    }
    let source = Cached {
        cache: &c.cache,
        inner: &inner,
    };
    let mut result = None;
    for _ in 0..input["call_count"].as_u64().unwrap_or(1) {
        let listed = block_on(source.list_models(key));
        result = listed
            .ok()
            .and_then(|models| resolve_glob(pattern, &models));
    }
    let calls = if input["provider"].get("models").is_some() {
        inner.calls(key)
    } else {
        0
    };
    let mut after = input["preresolved_models"].clone();
    if let Some(list) = c.cache.cached(key) {
        if !after.is_object() {
            after = Value::Object(Map::new());
        }
        after[key] = json!(list);
    }
    Ok(json!({"result": result, "list_models_calls": calls, "preresolved_models_after": after}))
}

fn pref(v: &Value) -> CallResult {
    ProviderPreference::from_value(v)
        .map(|p| p.to_value())
        .map_err(|e| e.to_string())
}

fn prefs(input: &Value) -> Result<Vec<ProviderPreference>, String> {
    parse_preferences(&input["preferences"]).map_err(|e| e.to_string())
}

fn entries(list: &Value) -> Vec<ModuleEntry> {
    eval::list(Some(list))
        .filter_map(ModuleEntry::from_value)
        .collect()
}

/// A resolver result as Amplifier shows it: `{provider, model, config}`.
fn shown(choice: &ProviderPreference) -> Value {
    json!({"provider": choice.provider, "model": choice.model, "config": choice.config})
}

/// A matrix with exactly the case's roles, in order (not validated: cases omit the
/// roles every full matrix needs).
fn matrix(roles: &Value) -> Result<RoutingMatrix, String> {
    let mut out = Vec::new();
    for (name, role) in roles.as_object().into_iter().flatten() {
        let candidates = eval::list(role.get("candidates"))
            .map(ProviderPreference::from_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("role {name}: {e}"))?;
        let description = role.get("description").and_then(Value::as_str);
        let description = description.map(str::to_string);
        out.push((
            name.clone(),
            Role {
                description,
                candidates,
            },
        ));
    }
    Ok(RoutingMatrix {
        name: "case".into(),
        description: None,
        updated: None,
        roles: out,
        origin: "conformance case".into(),
    })
}
