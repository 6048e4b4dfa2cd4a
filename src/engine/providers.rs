//! Which provider a session's turns use, and the credentials its writer must scrub.
//!
//! Owns: picking the provider entry of a mount plan (the first entry that builds, in
//! plan order — `provider::setup::detect_providers` already put the configured
//! preference first, and routing moves a sub-session's chosen entry first), building
//! it through the injected factory or `provider::setup::build_provider` (pinned to the
//! entry's `default_model`), the list of secret values handed to
//! `SessionWriter::set_secrets`, and running model routing for a session's plan
//! ([`route`]: every plan provider built, model lists fetched through the runtime's
//! `ModelCache`, the active routing matrix). Does not own: credentials lookup or wire
//! clients (`provider::setup`), the routing rules themselves (`provider::routing`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

use super::runtime::Runtime;
use crate::config::{ArborConfig, ModuleEntry, MountPlan};
use crate::provider::routing::{
    ModelCache, ModelRequest, ModelSource, Mounts, Routed, active_matrix, resolve_precedence,
};
use crate::provider::setup::{self, provider_id};
use crate::provider::{ChatRequest, Provider, ProviderError, StreamEvent};

/// Builds a live provider from a mount-plan entry (keys are attached by the builder;
/// plan entries hold none, or `[REDACTED]`). Injected by tests and embedders.
pub type ProviderFactory =
    Arc<dyn Fn(&ModuleEntry) -> Result<Arc<dyn Provider>, ProviderError> + Send + Sync>;

/// Environment lookup shared by the runtime.
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The provider a session with `plan` uses, with its entry's `config` (passed on in
/// every `ChatRequest`). Errors list every entry's failure; `Err` with an empty list
/// means the plan has no providers at all.
pub(crate) fn select(
    plan: &MountPlan,
    factory: Option<&ProviderFactory>,
    config: &ArborConfig,
    env: &Env,
) -> Result<(Arc<dyn Provider>, Value), Vec<String>> {
    let mut errors = Vec::new();
    for entry in plan.providers() {
        match build(&entry, factory, config, env) {
            Ok(provider) => return Ok((provider, entry.config.clone())),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(errors)
}

/// The live provider for one plan entry, pinned to the entry's `config.default_model`
/// when the built provider would use another model (an injected factory ignores the
/// entry), so a routed session's requests carry the routed model.
pub(crate) fn build(
    entry: &ModuleEntry,
    factory: Option<&ProviderFactory>,
    config: &ArborConfig,
    env: &Env,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let provider = match factory {
        Some(factory) => factory(entry)?,
        None => setup::build_provider(entry, config, env.as_ref())?,
    };
    let wanted = entry
        .config
        .get("default_model")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty());
    Ok(match wanted {
        Some(model) if model != provider.default_model() => Arc::new(PinnedModel {
            inner: provider,
            model: model.to_string(),
        }),
        _ => provider,
    })
}

/// A provider whose `default_model` (the model every request of the session names) is
/// fixed by routing.
#[derive(Debug)]
struct PinnedModel {
    inner: Arc<dyn Provider>,
    model: String,
}

impl Provider for PinnedModel {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn module(&self) -> &str {
        self.inner.module()
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        self.inner.stream(request)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ProviderError>> {
        self.inner.list_models()
    }
}

/// How long routing waits for one provider's model list.
const LIST_TIMEOUT: Duration = Duration::from_secs(15);

/// Model lists of a plan's built providers, through the runtime's cache (keyed by
/// provider id and base URL).
struct PlanModels<'a> {
    cache: &'a ModelCache,
    providers: HashMap<String, (Arc<dyn Provider>, String)>,
}

impl ModelSource for PlanModels<'_> {
    fn list_models<'a>(&'a self, mount: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>> {
        Box::pin(async move {
            let Some((provider, key)) = self.providers.get(mount) else {
                return Err("provider is not built".to_string());
            };
            let provider = provider.clone();
            let listed = self
                .cache
                .get_or_list(key, || async move {
                    match tokio::time::timeout(LIST_TIMEOUT, provider.list_models()).await {
                        Ok(Ok(models)) => Ok(models),
                        Ok(Err(e)) => Err(e.to_string()),
                        Err(_) => Err(format!("no answer within {}s", LIST_TIMEOUT.as_secs())),
                    }
                })
                .await;
            if let Err(e) = &listed {
                tracing::warn!(provider = mount, "cannot list models for routing: {e}");
            }
            listed
        })
    }
}

/// Resolves `request` for a session with `plan` (SPEC §9 precedence): every plan
/// provider is built (those that fail are "unavailable" with the error), globs list
/// models through the runtime's cache, roles use the matrix the config selects
/// (`routing.matrix`, default `balanced`; a problem with it is logged and the built-in
/// is used). `parent` is the `(provider, model)` kept when nothing resolves.
pub(crate) async fn route(
    rt: &Runtime,
    plan: &MountPlan,
    request: &ModelRequest,
    parent: (&str, &str),
) -> Routed {
    let entries = plan.providers();
    let mut mounts = Mounts {
        specs: Some(entries.clone()),
        ..Default::default()
    };
    let mut providers = HashMap::new();
    if !request.is_empty() {
        for entry in &entries {
            let mount = provider_id(entry);
            match build(entry, rt.provider_factory(), &rt.config, &rt.env) {
                Ok(provider) => {
                    let base = entry.config.get("base_url").and_then(Value::as_str);
                    let key = format!("{mount} {}", base.unwrap_or_default());
                    mounts.names.push(mount.clone());
                    providers.entry(mount).or_insert((provider, key));
                }
                Err(e) => mounts.unavailable.push((mount, e.to_string())),
            }
        }
    }
    let matrix = request.wants_matrix().then(|| {
        let active = active_matrix(&rt.config, &rt.paths.routing_dir());
        if let Some(problem) = &active.problem {
            tracing::warn!("routing matrix: {problem}");
        }
        active.matrix
    });
    let source = PlanModels {
        cache: &rt.models,
        providers,
    };
    let routed =
        resolve_precedence(request, matrix.flatten().as_ref(), &mounts, &source, parent).await;
    if let Some(reason) = &routed.resolved.reason {
        tracing::info!(
            provider = %routed.resolved.provider,
            model = %routed.resolved.model,
            via = routed.resolved.via.as_str(),
            "model routing fell back: {reason}"
        );
    }
    routed
}

/// `provider/model` for display and metadata; just the provider id while a local
/// server's model is still unresolved (`default_model()` is empty).
pub(crate) fn label(provider: &dyn Provider, model: Option<&str>) -> String {
    let model = model
        .filter(|m| !m.is_empty())
        .unwrap_or(provider.default_model());
    if model.is_empty() {
        provider.id().to_string()
    } else {
        format!("{}/{model}", provider.id())
    }
}

/// Secret values to scrub from everything a session writes: keys in the config file's
/// provider entries and in `plan`'s, and the provider key variables of the environment.
pub(crate) fn secrets(plan: &MountPlan, config: &ArborConfig, env: &Env) -> Vec<String> {
    let mut out = Vec::new();
    let entries = config.providers.iter().cloned().chain(plan.providers());
    for entry in entries {
        collect_secret_strings(&entry.config, false, &mut out);
    }
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
    ] {
        if let Some(v) = env(var).filter(|v| !v.trim().is_empty()) {
            out.push(v.trim().to_string());
        }
    }
    out.retain(|s| s != setup::REDACTED);
    out.sort();
    out.dedup();
    out
}

fn collect_secret_strings(value: &Value, secret: bool, out: &mut Vec<String>) {
    match value {
        Value::String(s) if secret => out.push(s.clone()),
        Value::Object(map) => {
            for (key, v) in map {
                let k = key.to_ascii_lowercase();
                let is_secret = secret
                    || k.contains("key")
                    || k.contains("token")
                    || k.contains("secret")
                    || k.contains("password")
                    || k == "authorization";
                collect_secret_strings(v, is_secret, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                collect_secret_strings(v, secret, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_come_from_config_plan_and_env() {
        let config = ArborConfig {
            providers: vec![ModuleEntry {
                module: "provider-openai".into(),
                config: json!({"api_key": "sk-config-1234", "base_url": "http://x"}),
                ..Default::default()
            }],
            ..Default::default()
        };
        let plan = MountPlan(
            json!({"providers": [{"module": "provider-anthropic", "config": {"headers": {"x-api-key": "plan-secret-99"}, "api_key": "[REDACTED]"}}]}),
        );
        let env: Env =
            Arc::new(|k: &str| (k == "OPENAI_API_KEY").then(|| "sk-env-5678".to_string()));
        assert_eq!(
            secrets(&plan, &config, &env),
            ["plan-secret-99", "sk-config-1234", "sk-env-5678"]
        );
    }
}
