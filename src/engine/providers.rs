//! Which provider a session's turns use, and the credentials its writer must scrub.
//!
//! Owns: a session's provider ([`provider_for`]: built once, then cached on the live
//! session; [`select_provider`]: `NoProvider` naming every entry's failure and what
//! was looked for), picking the provider entry of a mount plan (the first entry that
//! builds, in plan order — `routing::setup::detect_providers` already put the configured
//! preference first, and routing moves a sub-session's chosen entry first), building
//! it through the injected factory or `routing::setup::build_provider_in` (pinned to
//! the entry's `default_model`; with the runtime's `provider::HttpPool`, so all
//! sessions of a process on one endpoint share one HTTP client), the list of secret
//! values handed to `SessionWriter::set_secrets`, and running model routing for a
//! session's plan ([`route`]: every plan provider built, model lists fetched through
//! the runtime's `ModelCache`, the active routing matrix). Everything comes from the
//! runtime's [`TurnEnv`]; this file never names the runtime.
//!
//! A provider that leaves its model to the server (a local OpenAI-compatible server
//! with no configured model: `default_model()` is `""`) is wrapped so its model comes
//! from the runtime's `ModelCache` too — the first id `GET /models` lists, fetched once
//! per process and shared by the status-bar label ([`server_model`]), every session's
//! requests and routing. Does not own: credentials lookup or wire clients
//! (`routing::setup`), the routing rules themselves (`routing`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use serde_json::Value;

use super::env::TurnEnv;
pub use super::env::{Env, ProviderFactory};
use super::live::LiveSession;
use super::outcome::EngineError;
use crate::config::{ArborConfig, ModuleEntry, MountPlan};
use crate::provider::{ChatRequest, Provider, ProviderError, StreamEvent};
use crate::routing::setup::{self, provider_id};
use crate::routing::{
    ListError, ModelCache, ModelRequest, ModelSource, Mounts, Routed, active_matrix,
    resolve_precedence,
};
use crate::session::protocol::ProviderEndpointChangedEvent;

/// The provider a session with `plan` uses, with its plan entry (whose `config` is
/// passed on in every `ChatRequest`). Errors list every entry's failure; `Err` with an
/// empty list means the plan has no providers at all.
fn select(
    env: &TurnEnv,
    plan: &MountPlan,
) -> Result<(Arc<dyn Provider>, ModuleEntry), Vec<String>> {
    let mut errors = Vec::new();
    for entry in plan.providers() {
        match build(env, &entry) {
            Ok(provider) => return Ok((provider, entry)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(errors)
}

/// The provider a session with `plan` uses and its entry's `config`; `NoProvider`
/// (every entry's failure, then what was looked for) when none builds.
pub(crate) fn select_provider(
    env: &TurnEnv,
    plan: &MountPlan,
) -> Result<(Arc<dyn Provider>, Value), EngineError> {
    let (provider, entry) = select_entry(env, plan)?;
    Ok((provider, entry.config))
}

/// [`select_provider`] with the whole plan entry.
pub(crate) fn select_entry(
    env: &TurnEnv,
    plan: &MountPlan,
) -> Result<(Arc<dyn Provider>, ModuleEntry), EngineError> {
    select(env, plan).map_err(|errors| {
        let mut text =
            crate::routing::setup::no_provider_message(&env.paths.config_file, env.env.as_ref());
        if !errors.is_empty() {
            text = format!("{}\n\n{text}", errors.join("\n"));
        }
        EngineError::NoProvider(text)
    })
}

/// The session's provider (built once, then cached) and its entry config.
pub(crate) fn provider_for(
    env: &TurnEnv,
    live: &LiveSession,
) -> Result<(Arc<dyn Provider>, Value), EngineError> {
    if let Some(cached) = live.provider() {
        return Ok(cached);
    }
    let (provider, config) = select_provider(env, &live.plan)?;
    live.set_provider(provider.clone(), config.clone());
    Ok((provider, config))
}

/// The `ModelCache` key of a plan entry: its provider id and base URL.
pub(crate) fn cache_key(entry: &ModuleEntry) -> String {
    let base = entry.provider_config().base_url;
    format!("{} {}", provider_id(entry), base.unwrap_or_default())
}

/// The live provider for one plan entry (through the runtime's injected factory, else
/// `routing::setup::build_provider_in` with the runtime's `provider::HttpPool`),
/// pinned to the entry's `config.default_model` when the built provider would use
/// another model (an injected factory ignores the entry), so a routed session's
/// requests carry the routed model. A provider that leaves the model to the server
/// gets it from the runtime's model cache ([`server_model`]).
pub(crate) fn build(
    env: &TurnEnv,
    entry: &ModuleEntry,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let provider = match &env.provider_factory {
        Some(factory) => factory(entry)?,
        None => setup::build_provider_in(entry, &env.config, env.env.as_ref(), &env.http)?,
    };
    let wanted = entry.provider_config().default_model;
    let wanted = wanted.as_deref().map(str::trim).filter(|m| !m.is_empty());
    Ok(match wanted {
        Some(model) if model != provider.default_model() => Arc::new(PinnedModel {
            inner: provider,
            model: model.to_string(),
        }),
        _ if provider.default_model().is_empty() => Arc::new(ServerModel {
            inner: provider,
            cache: env.models.clone(),
            key: cache_key(entry),
            model: Arc::new(OnceLock::new()),
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

/// A provider that leaves its model to the server (`default_model()` of the built
/// client is `""`): the model is the first id of the server's model list, listed
/// through the runtime's [`ModelCache`] (at most once per process when it succeeds,
/// shared with the status-bar label and routing) and then named in every request, so
/// the client never lists on its own. Until known, `default_model()` is `""`.
#[derive(Debug)]
struct ServerModel {
    inner: Arc<dyn Provider>,
    cache: Arc<ModelCache>,
    key: String,
    /// Set once the cache has the list (shared with in-flight streams).
    model: Arc<OnceLock<String>>,
}

impl ServerModel {
    /// The model, once any lister in this process has fetched the list.
    fn known(&self) -> Option<&str> {
        if self.model.get().is_none()
            && let Some(first) = first_model(self.cache.cached(&self.key).unwrap_or_default())
        {
            // A concurrent `set` stored the same first id.
            let _ = self.model.set(first);
        }
        self.model.get().map(String::as_str)
    }
}

impl Provider for ServerModel {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn module(&self) -> &str {
        self.inner.module()
    }

    fn default_model(&self) -> &str {
        self.known().unwrap_or("")
    }

    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let mut request = request;
        if request.model.is_empty()
            && let Some(model) = self.known()
        {
            request.model = model.to_string();
        }
        if !request.model.is_empty() {
            return self.inner.stream(request);
        }
        let inner = self.inner.clone();
        let cache = self.cache.clone();
        let key = self.key.clone();
        let slot = self.model.clone();
        futures::stream::once(async move {
            match server_model(&cache, &key, &inner).await {
                Ok(model) => {
                    let _ = slot.set(model.clone());
                    request.model = model;
                }
                // The client resolves the model itself and reports the failure as a
                // typed provider error (retryable network errors stay retryable).
                Err(e) => tracing::debug!(provider = inner.id(), "model list failed: {e}"),
            }
            inner.stream(request)
        })
        .flatten()
        .boxed()
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ProviderError>> {
        self.inner.list_models()
    }
}

/// The first non-blank id of a model list.
fn first_model(models: Vec<String>) -> Option<String> {
    models.into_iter().find(|m| !m.trim().is_empty())
}

/// The model a provider that leaves it to the server uses: the first id of its model
/// list, listed through `cache` under `key` (see [`cache_key`]; a successful list is
/// kept for the process, so this lists at most once). Errors: the list failed or did
/// not answer within 15 s (one line), or it names no model.
pub(crate) async fn server_model(
    cache: &ModelCache,
    key: &str,
    provider: &Arc<dyn Provider>,
) -> Result<String, ListError> {
    let provider = provider.clone();
    let models = cache
        .get_or_list(key, || list_within(provider, LIST_TIMEOUT))
        .await?;
    first_model(models).ok_or(ListError::NoModel)
}

/// How long routing (and resolving a server's model) waits for one model list.
const LIST_TIMEOUT: Duration = Duration::from_secs(15);

/// `provider`'s model list, its error as one line, or a timeout after `limit`.
async fn list_within(
    provider: Arc<dyn Provider>,
    limit: Duration,
) -> Result<Vec<String>, ListError> {
    match tokio::time::timeout(limit, provider.list_models()).await {
        Ok(Ok(models)) => Ok(models),
        Ok(Err(e)) => Err(ListError::Failed(e.to_string())),
        Err(_) => Err(ListError::Timeout(limit.as_secs())),
    }
}

/// Model lists of a plan's built providers, through the runtime's cache (keyed by
/// [`cache_key`]).
struct PlanModels<'a> {
    cache: &'a ModelCache,
    providers: HashMap<String, (Arc<dyn Provider>, String)>,
}

impl ModelSource for PlanModels<'_> {
    fn list_models<'a>(&'a self, mount: &'a str) -> BoxFuture<'a, Result<Vec<String>, ListError>> {
        Box::pin(async move {
            let Some((provider, key)) = self.providers.get(mount) else {
                return Err(ListError::NotBuilt);
            };
            let provider = provider.clone();
            let listed = self
                .cache
                .get_or_list(key, || list_within(provider, LIST_TIMEOUT))
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
    env: &TurnEnv,
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
            match build(env, entry) {
                Ok(provider) => {
                    mounts.names.push(mount.clone());
                    providers
                        .entry(mount)
                        .or_insert((provider, cache_key(entry)));
                }
                Err(e) => mounts.unavailable.push((mount, e.to_string())),
            }
        }
    }
    let matrix = request.wants_matrix().then(|| {
        let active = active_matrix(&env.config, &env.paths.routing_dir());
        if let Some(problem) = &active.problem {
            tracing::warn!("routing matrix: {problem}");
        }
        active.matrix
    });
    let source = PlanModels {
        cache: &env.models,
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

/// A stored plan (a session being resumed) with each provider entry's `base_url`
/// replaced by the one the current config file or environment sets for it
/// (`routing::setup::current_base_url`; SPEC §7 "Resume": the current config and
/// environment win), and one [`ProviderEndpointChangedEvent`] per entry that moved.
/// Entries with no stored `base_url` are left alone: building one already reads the
/// config file and environment. A trailing `/` is not a change.
pub(crate) fn follow_current_endpoints(
    plan: MountPlan,
    config: &ArborConfig,
    env: &Env,
) -> (MountPlan, Vec<ProviderEndpointChangedEvent>) {
    let mut plan = plan;
    let mut changes = Vec::new();
    let Some(entries) = plan.providers.as_mut() else {
        return (plan, changes);
    };
    for spec in entries.iter_mut() {
        let mut item = spec.to_value();
        let Some(entry) = ModuleEntry::from_value(&item) else {
            continue;
        };
        let Some(stored) = entry
            .provider_config()
            .base_url
            .filter(|s| !s.trim().is_empty())
        else {
            continue;
        };
        let Some(current) = setup::current_base_url(&entry, config, env.as_ref()) else {
            continue;
        };
        if current.trim_end_matches('/') == stored.trim().trim_end_matches('/') {
            continue;
        }
        if let Some(slot) = item.pointer_mut("/config/base_url") {
            *slot = Value::String(current.clone());
            *spec = crate::config::mount_plan::ModuleSpec::from_value(item);
            changes.push(ProviderEndpointChangedEvent {
                provider: provider_id(&entry),
                from: stored,
                to: current,
            });
        }
    }
    (plan, changes)
}

/// Secret values to scrub from everything a session writes: keys in the config file's
/// provider entries and in `plan`'s, and the provider key variables of the environment.
pub(crate) fn secrets(plan: &MountPlan, config: &ArborConfig, env: &Env) -> Vec<String> {
    let mut out = Vec::new();
    let entries = config.providers.iter().cloned().chain(plan.providers());
    for entry in entries {
        collect_secret_strings(&entry.config, false, &mut out);
    }
    for var in crate::config::modules::secret_env_vars() {
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
    fn a_resumed_plan_follows_the_current_endpoint() {
        let plan = MountPlan::from_value(json!({"providers": [
            {"module": "provider-openai", "config": {"base_url": "http://a:1/v1/", "api_key": "[REDACTED]"}},
            {"module": "provider-anthropic", "config": {"default_model": "claude-sonnet-4-5"}},
            "provider-ollama"
        ], "tools": ["tool-task"]}));
        let none: Env = Arc::new(|_: &str| None);
        let config = ArborConfig::default();
        let (same, moved) = follow_current_endpoints(plan.clone(), &config, &none);
        assert_eq!((same, moved), (plan.clone(), Vec::new()));
        let same_url: Env =
            Arc::new(|k: &str| (k == "OPENAI_BASE_URL").then(|| "http://a:1/v1".to_string()));
        assert!(
            follow_current_endpoints(plan.clone(), &config, &same_url)
                .1
                .is_empty()
        );
        let env: Env = Arc::new(|k: &str| match k {
            "OPENAI_BASE_URL" => Some("http://b:2/v1".to_string()),
            "ANTHROPIC_BASE_URL" => Some("http://c:3".to_string()),
            _ => None,
        });
        let (moved_plan, moved) = follow_current_endpoints(plan.clone(), &config, &env);
        assert_eq!(
            moved,
            [ProviderEndpointChangedEvent {
                provider: "openai".into(),
                from: "http://a:1/v1/".into(),
                to: "http://b:2/v1".into(),
            }]
        );
        let mut expected = plan.to_value();
        expected["providers"][0]["config"]["base_url"] = json!("http://b:2/v1");
        assert_eq!(
            moved_plan.to_value(),
            expected,
            "only the stored base_url changes"
        );
    }

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
        let plan = MountPlan::from_value(
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
