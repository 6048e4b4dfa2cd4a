//! Which provider a session's turns use, and the credentials its writer must scrub.
//!
//! Owns: picking the provider entry of a mount plan (the first entry that builds, in
//! plan order — `provider::setup::detect_providers` already put the configured
//! preference first), building it through the injected factory or
//! `provider::setup::build_provider`, and the list of secret values handed to
//! `SessionWriter::set_secrets`. Does not own: credentials lookup or wire clients
//! (`provider::setup`), model routing by role or preferences (later).

use std::sync::Arc;

use serde_json::Value;

use crate::config::{ArborConfig, ModuleEntry, MountPlan};
use crate::provider::setup;
use crate::provider::{Provider, ProviderError};

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
        let built = match factory {
            Some(factory) => factory(&entry),
            None => setup::build_provider(&entry, config, env.as_ref()),
        };
        match built {
            Ok(provider) => return Ok((provider, entry.config.clone())),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(errors)
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
