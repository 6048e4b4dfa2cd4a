//! How the engine gets providers: which ones a new root session mounts, and building
//! a live client (with its key) from a mount-plan entry.
//!
//! Owns: [`detect_providers`] (the `providers` of a new root session's mount plan),
//! [`build_provider`] (credentials, base URL and model for one entry),
//! [`current_base_url`] (the endpoint a resumed session moves to) and
//! [`no_provider_message`] (what was looked for and how to configure a provider).
//! Does not own: the wire clients (`provider::openai`, `provider::anthropic`), routing
//! by model role or `provider_preferences` (the rest of `routing`), or retries.
//!
//! Each module's variables, official endpoint, default model and client come from its
//! row in `config::modules::PROVIDER_MODULES`; the names below are those rows'.
//!
//! Keys never enter a mount plan: [`detect_providers`] replaces a config file's
//! `api_key` with `"[REDACTED]"` (env keys are never copied at all), and
//! [`build_provider`] attaches the key when the client is built, in this order:
//! 1. the entry's own `config.api_key`, unless missing, empty or `"[REDACTED]"`
//!    (stored sessions are redacted);
//! 2. the config file's entry with the same `id` (else the same `module`, preferring
//!    one with the same `base_url`);
//! 3. the environment: `OPENAI_API_KEY` (`provider-openai`) / `ANTHROPIC_API_KEY`.
//!
//! Base URL: entry, then config-file entry, then `OPENAI_BASE_URL` /
//! `ANTHROPIC_BASE_URL` / `OLLAMA_HOST`, then the official endpoint.
//!
//! A key goes only where it was configured (SPEC §12 "Trust"): the *configured
//! endpoint* of an entry is the config-file entry's `base_url`, else the environment's
//! (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `OLLAMA_HOST`), else the official one. An
//! entry whose own `base_url` is on another origin (scheme, host, port) gets the
//! credentials arbor holds — a config-file or environment key, and `headers` — only
//! when its `config.endpoint_from` mark (`config::endpoint`) says the user's own agent
//! file set that endpoint. Otherwise (a project or bundle agent file set it, or nobody
//! knows who) building fails with a `NotConfigured` error naming the agent and both
//! endpoints, so no request leaves. An entry a project or bundle agent file pointed
//! elsewhere is refused even with its own `api_key` (the conversation would still go
//! there); an unmarked entry that would carry no such credential (its own `api_key`,
//! or none at all) builds as before. Model:
//! `default_model` (or `model`) from entry or config file, then `OPENAI_MODEL` /
//! `ANTHROPIC_MODEL`, then — for an OpenAI-compatible entry with a non-official base
//! URL (a local server) — the first id its `GET /models` lists, resolved lazily on
//! the first request and cached for the provider's life (`default_model()` is `""`
//! until then), else `gpt-4o-mini` / `claude-sonnet-4-5`.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::config::arbor_config::ArborConfig;
use crate::config::endpoint::{EndpointFrom, same_origin};
use crate::config::modules::{
    OPENAI, PROVIDER_MODULES, ProviderModule, WireApi, detect_vars, provider_module,
    provider_module_names,
};
use crate::config::mount_plan::{ModuleEntry, ProviderConfig};
use crate::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use crate::provider::openai::{OpenAiConfig, OpenAiProvider};
use crate::provider::{HttpPool, Provider, ProviderError, ProviderErrorKind};

/// The value stored sessions hold in place of a key.
pub const REDACTED: &str = "[REDACTED]";

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

fn env_var(env: Env<'_>, name: &str) -> Option<String> {
    env(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The provider id of an entry: its `id`, else the module without `provider-`
/// (`provider-openai` → `openai`).
pub fn provider_id(entry: &ModuleEntry) -> String {
    match &entry.id {
        Some(id) if !id.is_empty() => id.clone(),
        _ => entry
            .module
            .strip_prefix("provider-")
            .unwrap_or(&entry.module)
            .to_string(),
    }
}

/// The `providers` for a new root session's mount plan.
///
/// The config file's `providers` when it has any (`api_key` → `"[REDACTED]"`); else from
/// the environment: `provider-openai` when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is
/// set (with `config.base_url` from `OPENAI_BASE_URL`), `provider-anthropic` when
/// `ANTHROPIC_API_KEY` is set (with `config.base_url` from `ANTHROPIC_BASE_URL`).
/// Keys are never included. The entry matching `config.provider` (by id or module)
/// comes first; otherwise the order is kept. Empty when nothing is configured (show
/// [`no_provider_message`]).
pub fn detect_providers(
    config: &ArborConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<ModuleEntry> {
    let mut entries: Vec<ModuleEntry> = if config.providers.is_empty() {
        from_env(env)
    } else {
        config.providers.iter().map(without_key).collect()
    };
    if let Some(preferred) = config.provider.as_deref().filter(|p| !p.is_empty())
        && let Some(pos) = entries
            .iter()
            .position(|e| provider_id(e) == preferred || e.module == preferred)
    {
        let entry = entries.remove(pos);
        entries.insert(0, entry);
    }
    entries
}

/// One entry per `config::modules` row one of whose `detect_vars` is set, in table
/// order, with `config.base_url` from its `base_url_var`.
fn from_env(env: Env<'_>) -> Vec<ModuleEntry> {
    PROVIDER_MODULES
        .iter()
        .filter(|p| p.detect_vars.iter().any(|v| env_var(env, v).is_some()))
        .map(|p| ModuleEntry {
            module: p.name.to_string(),
            config: match p.base_url_var.and_then(|v| env_var(env, v)) {
                Some(b) => serde_json::json!({ "base_url": b }),
                None => Value::Null,
            },
            ..Default::default()
        })
        .collect()
}

/// The entry with its key replaced by `"[REDACTED]"`: the plan (and so the stored
/// metadata) shows that a key is configured, and [`build_provider`] fetches the real one
/// from the config file when the client is built.
fn without_key(entry: &ModuleEntry) -> ModuleEntry {
    let mut entry = entry.clone();
    if let Value::Object(map) = &mut entry.config
        && let Some(key) = map.get_mut("api_key")
    {
        *key = Value::String(REDACTED.to_string());
    }
    entry
}

/// A usable string setting: present, non-empty and not `"[REDACTED]"`.
fn usable(setting: Option<&str>) -> Option<String> {
    setting
        .map(str::trim)
        .filter(|v| !v.is_empty() && *v != REDACTED)
        .map(str::to_string)
}

/// `entry`'s usable `base_url`.
fn base_url(entry: &ModuleEntry) -> Option<String> {
    usable(entry.provider_config().base_url.as_deref())
}

/// The config file's entry for `entry`: same `id` if the entry has one and the file
/// has it, else one with the same `module` — the one with the same `base_url` when
/// several share the module, else the first.
fn file_entry<'a>(entry: &ModuleEntry, config: &'a ArborConfig) -> Option<&'a ModuleEntry> {
    let by_id = entry
        .id
        .as_ref()
        .and_then(|id| config.providers.iter().find(|e| e.id.as_ref() == Some(id)));
    let same_module = || config.providers.iter().filter(|e| e.module == entry.module);
    let base = base_url(entry);
    by_id
        .or_else(|| {
            base.as_ref()
                .and_then(|b| same_module().find(|e| base_url(e).as_ref() == Some(b)))
        })
        .or_else(|| same_module().next())
}

/// The endpoint the current config file and environment set for a stored plan
/// `entry`: the `base_url` of the config file's matching entry (same `id`, else same
/// `module`, as when building), else `OPENAI_BASE_URL` (`provider-openai`),
/// `ANTHROPIC_BASE_URL` (`provider-anthropic`) or `OLLAMA_HOST` as `http://HOST/v1`
/// (`provider-ollama`); `None` when neither sets one. A resumed session takes it over
/// its stored `base_url` (SPEC §7 "Resume").
pub fn current_base_url(
    entry: &ModuleEntry,
    config: &ArborConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    if let Some(url) = file_entry(entry, config).and_then(base_url) {
        return Some(url);
    }
    let module = provider_module(&entry.module)?;
    let set = env_var(env, module.base_url_var?)?;
    if module.local {
        // A host, not a URL (`OLLAMA_HOST`).
        local_base_url(env)
    } else {
        Some(set)
    }
}

/// Builds the live client for a mount-plan provider entry, attaching credentials,
/// base URL and model as described in the module docs.
///
/// Errors (`NotConfigured`): an unknown module; the official OpenAI or Anthropic
/// endpoint without a key (the message names the variable to set). An entry with a
/// custom `base_url` needs no key (local servers).
///
/// The provider gets an HTTP client of its own; [`build_provider_in`] shares one.
pub fn build_provider(
    entry: &ModuleEntry,
    config: &ArborConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    build_provider_in(entry, config, env, &HttpPool::new())
}

/// [`build_provider`] with the HTTP client `pool` keeps for the entry's endpoint: the
/// engine builds every session's provider through its runtime's pool, so all
/// sessions of a process on one endpoint share one client.
pub fn build_provider_in(
    entry: &ModuleEntry,
    config: &ArborConfig,
    env: &dyn Fn(&str) -> Option<String>,
    pool: &HttpPool,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let id = provider_id(entry);
    // The entry's own settings, else those of the config file's matching entry.
    let own = entry.provider_config();
    let file = file_entry(entry, config)
        .map(ModuleEntry::provider_config)
        .unwrap_or_default();
    let get = |key: fn(&ProviderConfig) -> &Option<String>| {
        usable(key(&own).as_deref()).or_else(|| usable(key(&file).as_deref()))
    };
    let headers = own
        .headers
        .clone()
        .or(file.headers.clone())
        .unwrap_or_default();
    let model = get(|c| &c.default_model).or_else(|| get(|c| &c.model));
    let not_configured =
        |message: String| ProviderError::new(ProviderErrorKind::NotConfigured, &id, message);
    let Some(module) = provider_module(&entry.module) else {
        return Err(not_configured(format!(
            "unknown provider module `{}` (arbor implements {})",
            entry.module,
            provider_module_names().join(", ")
        )));
    };
    // The row's variables: key, endpoint (a URL unless the module is a local server's)
    // and model.
    let var = |name: Option<&str>| name.and_then(|n| env_var(env, n));
    let env_base = || {
        if module.local {
            local_base_url(env)
        } else {
            var(module.base_url_var)
        }
    };
    // The official endpoint without a key: name the official API's row's variables.
    let missing_key = |official: &ProviderModule| {
        let local = match (official.api, official.base_url_var) {
            (WireApi::OpenAiChat, Some(b)) => {
                format!(", or set `base_url` / {b} for a local OpenAI-compatible server")
            }
            _ => String::new(),
        };
        not_configured(format!(
            "no API key for {}: set {} (or `api_key` in this provider's entry in the config file){local}",
            official.title,
            official.key_var.unwrap_or_default()
        ))
    };
    match module.api {
        WireApi::OpenAiChat => {
            // A hosted API's row is its own official endpoint; a local server whose
            // address does not parse falls back to the OpenAI API's.
            let official_row = if module.local { &OPENAI } else { module };
            let base_url = get(|c| &c.base_url).or_else(env_base);
            let base_url = base_url.unwrap_or_else(|| official_row.default_base_url.to_string());
            let official = base_url.trim_end_matches('/') == official_row.default_base_url;
            let api_key = get(|c| &c.api_key).or_else(|| var(module.key_var));
            guard_endpoint(entry, &id, (config, env), &api_key, &headers)?;
            if official && api_key.is_none() {
                return Err(missing_key(official_row));
            }
            let model = model.or_else(|| var(module.model_var)).or_else(|| {
                official
                    .then_some(official_row.default_model)
                    .flatten()
                    .map(str::to_string)
            });
            let settings = OpenAiConfig {
                id,
                module: entry.module.clone(),
                base_url,
                api_key,
                default_model: model,
                headers,
            };
            Ok(Arc::new(OpenAiProvider::with_pool(settings, pool)))
        }
        WireApi::AnthropicMessages => {
            let base_url = get(|c| &c.base_url)
                .or_else(env_base)
                .unwrap_or_else(|| module.default_base_url.to_string());
            let official =
                base_url.trim_end_matches('/').trim_end_matches("/v1") == module.default_base_url;
            let api_key = get(|c| &c.api_key).or_else(|| var(module.key_var));
            guard_endpoint(entry, &id, (config, env), &api_key, &headers)?;
            if official && api_key.is_none() {
                return Err(missing_key(module));
            }
            let model = model
                .or_else(|| var(module.model_var))
                .unwrap_or_else(|| module.default_model.unwrap_or_default().to_string());
            let settings = AnthropicConfig {
                id,
                module: entry.module.clone(),
                base_url,
                api_key,
                default_model: model,
                headers,
            };
            Ok(Arc::new(AnthropicProvider::with_pool(settings, pool)))
        }
    }
}

/// The endpoint `entry`'s configured key belongs to: [`current_base_url`] (the config
/// file's matching entry, else `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` /
/// `OLLAMA_HOST` — the endpoint a resumed session moves to, so both rules name one
/// endpoint), else the official one (`http://127.0.0.1:11434/v1` for Ollama). The
/// entry's own `base_url` plays no part. Empty for an unknown module.
pub fn configured_endpoint(
    entry: &ModuleEntry,
    config: &ArborConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    current_base_url(entry, config, env).unwrap_or_else(|| match provider_module(&entry.module) {
        Some(m) if m.local => local_base_url(env).unwrap_or_default(),
        Some(m) => m.default_base_url.to_string(),
        None => String::new(),
    })
}

/// The base URL of the local server at `OLLAMA_HOST` (`http://HOST/v1`, default
/// `127.0.0.1:11434`); `None` when the variable does not parse.
fn local_base_url(env: Env<'_>) -> Option<String> {
    crate::provider::probe::ollama_addr(env)
        .ok()
        .map(|a| format!("http://{a}/v1"))
}

/// Refuses to build `entry` when its own endpoint is on another origin than
/// [`configured_endpoint`] and either its `endpoint_from` mark is untrusted (a
/// project or bundle agent file set it: refused even with the entry's own `api_key`,
/// issue 22) or, unmarked, it would carry credentials arbor holds (`api_key` from the
/// config file or environment rather than the entry itself, or any `headers`). A
/// trusted mark passes (see the module docs). The error names the agent that set the endpoint, both endpoints and how to
/// allow it.
fn guard_endpoint(
    entry: &ModuleEntry,
    id: &str,
    (config, env): (&ArborConfig, Env<'_>),
    api_key: &Option<String>,
    headers: &[(String, String)],
) -> Result<(), ProviderError> {
    let Some(own) = base_url(entry) else {
        return Ok(());
    };
    let configured = &configured_endpoint(entry, config, env);
    if same_origin(&own, configured) {
        return Ok(());
    }
    let from = EndpointFrom::of(entry);
    if from.as_ref().is_some_and(|f| f.trusted) {
        return Ok(());
    }
    // A project or bundle agent file's endpoint gets nothing, not even with a key of
    // its own: the conversation (system prompt, files read) would go there too.
    let held_key =
        api_key.is_some() && usable(entry.provider_config().api_key.as_deref()).is_none();
    let carries_credentials = held_key || !headers.is_empty();
    if !carries_credentials && from.is_none() {
        return Ok(());
    }
    let who = from.map_or_else(
        || "this session's plan".to_string(),
        |f| format!("agent {}", f.agent),
    );
    Err(ProviderError::new(
        ProviderErrorKind::NotConfigured,
        id,
        format!(
            "{who} points provider {id} at {own}, which is not the configured endpoint ({configured}); arbor does not send your key there, nor the conversation — set it as this provider's base_url in your config (or keep the agent in your own agents directory) to allow it"
        ),
    ))
}

/// The `config.yaml` the no-provider message suggests ([`no_provider_message`]): valid
/// YAML that `config::ArborConfig` loads as three providers (Anthropic, a local
/// Ollama, an OpenAI-compatible server with id `local`), Anthropic used by root
/// sessions. The message prints it indented by two spaces, which YAML also reads.
pub const PROVIDERS_EXAMPLE: &str = "\
provider: anthropic            # which entry root sessions use
providers:
  - module: provider-anthropic
    config: {default_model: claude-sonnet-4-5}   # key from ANTHROPIC_API_KEY, or api_key: ...
  - module: provider-ollama    # a local Ollama at 127.0.0.1:11434
    config: {default_model: qwen3}
  - module: provider-openai
    id: local
    config: {base_url: \"http://127.0.0.1:8080/v1\"}
";

/// `text` with every line indented by two spaces (each line ends with `\n`).
fn indented(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// One line per local server arbor probes (`provider::probe::local_candidates`:
/// Ollama, LM Studio, llama.cpp, or `ARBOR_LOCAL_SERVERS`), all probed at once (at
/// most [`crate::provider::probe::PROBE_BUDGET`] in all): `  - local llama.cpp at
/// 127.0.0.1:8080: nothing is listening`. An `OLLAMA_HOST` that is no address is
/// said instead of its probe.
fn local_server_lines(env: &dyn Fn(&str) -> Option<String>) -> String {
    use crate::provider::probe::{NotAnAddress, OllamaProbe, local_candidates, probe_at};
    let mut lines = String::new();
    if env("ARBOR_LOCAL_SERVERS").is_none()
        && let Err(NotAnAddress(host)) = crate::provider::probe::ollama_addr(env)
    {
        lines.push_str(&format!(
            "  - local Ollama: not probed (OLLAMA_HOST={host} is not an IP address)\n"
        ));
    }
    let candidates = local_candidates(env);
    let probes: Vec<Option<OllamaProbe>> = std::thread::scope(|scope| {
        let running: Vec<_> = candidates
            .iter()
            .map(|&(_, addr)| scope.spawn(move || probe_at(addr)))
            .collect();
        running.into_iter().map(|h| h.join().ok()).collect()
    });
    for ((kind, addr), probe) in candidates.iter().zip(probes) {
        let state = match probe {
            Some(OllamaProbe::Found { models, .. }) if models.is_empty() => {
                "a server answers, but lists no models".to_string()
            }
            Some(OllamaProbe::Found { models, .. }) => {
                format!("answers with models: {}", models.join(", "))
            }
            Some(OllamaProbe::NotRunning { .. }) => "nothing is listening".to_string(),
            Some(OllamaProbe::NotProbed { .. }) | None => "not probed".to_string(),
        };
        lines.push_str(&format!("  - local {} at {addr}: {state}\n", kind.title()));
    }
    lines
}

/// The message shown (TUI and CLI) when no provider is usable: what was looked for —
/// the config file at `config_path` and its `providers`, `OPENAI_API_KEY`,
/// `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, and every local server (loopback probes,
/// at most 300 ms in all: [`local_server_lines`]) — and how to configure a
/// provider (environment variables, and [`PROVIDERS_EXAMPLE`] indented). Never shows
/// key values.
pub fn no_provider_message(config_path: &Path, env: &dyn Fn(&str) -> Option<String>) -> String {
    let path = config_path.display();
    let file = if config_path.exists() {
        match ArborConfig::load(config_path) {
            Ok(c) if c.providers.is_empty() => format!("{path}: found, no `providers` listed"),
            Ok(c) => format!(
                "{path}: lists {} provider(s): {}",
                c.providers.len(),
                c.providers
                    .iter()
                    .map(provider_id)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(e) => format!("{path}: cannot be used: {e}"),
        }
    } else {
        format!("{path}: not found")
    };
    // Every variable the provider table detects providers by; an endpoint's value
    // is shown, a key's never.
    let vars: String = detect_vars()
        .into_iter()
        .map(|var| {
            let endpoint = PROVIDER_MODULES.iter().any(|p| p.base_url_var == Some(var));
            let state = match env_var(env, var) {
                Some(url) if endpoint => format!("set to {url}"),
                Some(_) => "set".to_string(),
                None => "not set".to_string(),
            };
            format!("  - {var}: {state}\n")
        })
        .collect();
    let servers = local_server_lines(env);
    format!(
        // Lines continue without `\` so their indentation stays.
        "No model provider is configured.

arbor looked for:
  - config file {file}
{vars}{servers}
To use a provider, set one of these environment variables:
  export ANTHROPIC_API_KEY=sk-ant-...
  export OPENAI_API_KEY=sk-...
  export OPENAI_BASE_URL=http://127.0.0.1:8080/v1   # any OpenAI-compatible server (llama.cpp, vLLM, LM Studio)

or add providers to {path}:

{example}",
        example = indented(PROVIDERS_EXAMPLE),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(module: &str, id: Option<&str>, base: Option<&str>) -> ModuleEntry {
        ModuleEntry {
            module: module.into(),
            id: id.map(str::to_string),
            config: base.map_or(Value::Null, |b| json!({"base_url": b})),
            ..Default::default()
        }
    }

    #[test]
    fn the_current_endpoint_comes_from_the_config_file_then_the_environment() {
        let stored = entry("provider-openai", None, Some("http://a:1/v1"));
        let env = |k: &str| (k == "OPENAI_BASE_URL").then(|| "http://b:2/v1".to_string());
        let none = |_: &str| None;
        let empty = ArborConfig::default();
        assert_eq!(
            current_base_url(&stored, &empty, &env).as_deref(),
            Some("http://b:2/v1")
        );
        assert_eq!(current_base_url(&stored, &empty, &none), None);
        let config = ArborConfig {
            providers: vec![
                entry("provider-openai", Some("local"), Some("http://c:3/v1")),
                entry("provider-anthropic", None, None),
            ],
            ..Default::default()
        };
        // The config file wins over the environment, matched by module (or id).
        assert_eq!(
            current_base_url(&stored, &config, &env).as_deref(),
            Some("http://c:3/v1")
        );
        // A config entry without base_url leaves it to the environment.
        let anthropic = entry("provider-anthropic", None, Some("http://old/v1"));
        let env = |k: &str| (k == "ANTHROPIC_BASE_URL").then(|| "http://new".to_string());
        assert_eq!(
            current_base_url(&anthropic, &config, &env).as_deref(),
            Some("http://new")
        );
        let ollama = entry("provider-ollama", None, Some("http://127.0.0.1:11434/v1"));
        assert_eq!(current_base_url(&ollama, &empty, &none), None);
        let env = |k: &str| (k == "OLLAMA_HOST").then(|| "10.0.0.5:9999".to_string());
        assert_eq!(
            current_base_url(&ollama, &empty, &env).as_deref(),
            Some("http://10.0.0.5:9999/v1")
        );
    }
}
