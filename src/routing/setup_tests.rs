//! Unit tests of where `setup::build_provider` sends a configured key (SPEC §12
//! "Trust"): only to the configured endpoint, or to one the user's own agent file set.

use serde_json::{Value, json};

use super::setup::{build_provider, configured_endpoint};
use crate::config::{ArborConfig, ModuleEntry};

fn openai(config: Value) -> ModuleEntry {
    ModuleEntry {
        module: "provider-openai".into(),
        config,
        ..Default::default()
    }
}

fn mark(source: &str, trusted: bool) -> Value {
    json!({"agent": "x", "source": source, "trusted": trusted})
}

/// The build's error text, or `None` when it built.
fn refusal(
    entry: &ModuleEntry,
    config: &ArborConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    build_provider(entry, config, env)
        .err()
        .map(|e| e.to_string())
}

#[test]
fn the_configured_endpoint_comes_from_the_config_file_then_the_environment() {
    let entry = openai(json!({"base_url": "http://b:2/v1"}));
    let none = |_: &str| None;
    let env = |k: &str| (k == "OPENAI_BASE_URL").then(|| "http://a:1/v1".to_string());
    assert_eq!(
        configured_endpoint(&entry, &ArborConfig::default(), &none),
        "https://api.openai.com/v1"
    );
    assert_eq!(
        configured_endpoint(&entry, &ArborConfig::default(), &env),
        "http://a:1/v1"
    );
    let config = ArborConfig {
        providers: vec![openai(json!({"base_url": "http://c:3/v1"}))],
        ..Default::default()
    };
    assert_eq!(configured_endpoint(&entry, &config, &env), "http://c:3/v1");
}

#[test]
fn an_env_key_goes_only_to_the_configured_endpoint_or_a_trusted_one() {
    let empty = ArborConfig::default();
    let env = |k: &str| match k {
        "OPENAI_API_KEY" => Some("sk-test-env".to_string()),
        "OPENAI_BASE_URL" => Some("http://a:1/v1".to_string()),
        _ => None,
    };
    // The configured endpoint (same origin, any path) builds.
    assert_eq!(refusal(&openai(Value::Null), &empty, &env), None);
    assert_eq!(
        refusal(&openai(json!({"base_url": "http://a:1/"})), &empty, &env),
        None
    );
    // A project agent's endpoint is refused, with who, where and how to allow it.
    let project =
        openai(json!({"base_url": "http://b:2/v1", "endpoint_from": mark("project", false)}));
    let text = refusal(&project, &empty, &env).unwrap();
    assert!(
        text.contains("agent x points provider openai at http://b:2/v1, which is not the configured endpoint (http://a:1/v1); arbor does not send your key there"),
        "{text}"
    );
    assert!(!text.contains("sk-test-env"));
    // An unmarked endpoint of unknown origin is refused too.
    let unmarked = openai(json!({"base_url": "http://b:2/v1"}));
    assert!(
        refusal(&unmarked, &empty, &env)
            .unwrap()
            .contains("this session's plan points provider openai")
    );
    // The user's own agent file may redirect.
    let user = openai(json!({"base_url": "http://b:2/v1", "endpoint_from": mark("user", true)}));
    assert_eq!(refusal(&user, &empty, &env), None);
    // A project agent's endpoint is refused even with no key held (issue 22): the
    // conversation would go there; an unmarked keyless one (a local server) builds.
    let keyless = |k: &str| (k == "OPENAI_BASE_URL").then(|| "http://a:1/v1".to_string());
    assert!(refusal(&project, &empty, &keyless).is_some());
    assert_eq!(refusal(&unmarked, &empty, &keyless), None);
    // An entry's own key no longer skips the guard for a project or bundle agent.
    for source in ["project", "bundle"] {
        let own = openai(
            json!({"base_url": "http://b:2/v1", "api_key": "sk-agent-own", "endpoint_from": mark(source, false)}),
        );
        assert!(refusal(&own, &empty, &env).is_some(), "{source}");
    }
    let own_unmarked = openai(json!({"base_url": "http://b:2/v1", "api_key": "sk-agent-own"}));
    assert_eq!(refusal(&own_unmarked, &empty, &env), None);
    // Headers count as held credentials.
    let headers = openai(
        json!({"base_url": "http://b:2/v1", "headers": {"authorization": "Bearer t"}, "endpoint_from": mark("bundle", false)}),
    );
    assert!(refusal(&headers, &empty, &keyless).is_some());
}

#[test]
fn a_config_file_key_goes_only_to_its_entrys_endpoint() {
    let config = ArborConfig {
        providers: vec![openai(
            json!({"base_url": "http://a:1/v1", "api_key": "sk-test-file"}),
        )],
        ..Default::default()
    };
    let none = |_: &str| None;
    // The plan's copy of the config entry (key redacted) builds with the file's key.
    let plan_entry = openai(json!({"base_url": "http://a:1/v1", "api_key": "[REDACTED]"}));
    assert_eq!(refusal(&plan_entry, &config, &none), None);
    // A project agent's base_url merged over it is refused, though the environment
    // names its endpoint: the config file's entry decides.
    let redirected = openai(
        json!({"base_url": "http://b:2/v1", "api_key": "[REDACTED]", "endpoint_from": mark("project", false)}),
    );
    let env = |k: &str| (k == "OPENAI_BASE_URL").then(|| "http://b:2/v1".to_string());
    assert!(
        refusal(&redirected, &config, &env)
            .unwrap()
            .contains("(http://a:1/v1)")
    );
    // An Anthropic entry follows the same rule with its own variables.
    let anthropic = ModuleEntry {
        module: "provider-anthropic".into(),
        config: json!({"base_url": "http://b:2", "endpoint_from": mark("project", false)}),
        ..Default::default()
    };
    let key = |k: &str| (k == "ANTHROPIC_API_KEY").then(|| "sk-ant-test".to_string());
    assert!(
        refusal(&anthropic, &ArborConfig::default(), &key)
            .unwrap()
            .contains("https://api.anthropic.com")
    );
}

/// The provider table (`config::modules::PROVIDER_MODULES`) names exactly the modules
/// `build_provider` builds: every row builds a client reporting its module (from the
/// row's key and endpoint variables alone), with the row's default model on its
/// official endpoint, and a module outside the table is refused with the table's names.
#[test]
fn every_provider_row_builds_and_nothing_else_does() {
    use crate::config::modules::{PROVIDER_MODULES, WireApi, provider_module_names};
    use crate::provider::{anthropic, openai};
    let config = ArborConfig::default();
    for row in PROVIDER_MODULES {
        let entry = ModuleEntry {
            module: row.name.into(),
            ..Default::default()
        };
        let env = |k: &str| (Some(k) == row.key_var).then(|| "sk-test".to_string());
        let built = build_provider(&entry, &config, &env)
            .unwrap_or_else(|e| panic!("{} does not build: {e}", row.name));
        assert_eq!(built.module(), row.name);
        if let Some(model) = row.default_model {
            assert_eq!(built.default_model(), model, "{}", row.name);
        }
        let client_default = match row.api {
            WireApi::OpenAiChat if row.local => openai::OLLAMA_BASE_URL,
            WireApi::OpenAiChat => openai::DEFAULT_BASE_URL,
            WireApi::AnthropicMessages => anthropic::DEFAULT_BASE_URL,
        };
        assert_eq!(row.default_base_url, client_default, "{}", row.name);
        assert_eq!(
            configured_endpoint(&entry, &config, &|_: &str| None),
            row.default_base_url,
            "{}",
            row.name
        );
        // A session scrubs every key variable, and the sandbox hides it.
        if let Some(key) = row.key_var {
            assert!(crate::sandbox::is_provider_key_var(key), "{key}");
            assert!(crate::config::modules::secret_env_vars().contains(&key));
        }
    }
    let unknown = ModuleEntry {
        module: "provider-gemini".into(),
        ..Default::default()
    };
    let err = refusal(&unknown, &config, &|_: &str| None).unwrap();
    assert!(err.contains(&provider_module_names().join(", ")), "{err}");
    // Detection from the environment mounts every row a detect variable of which is set.
    for row in PROVIDER_MODULES {
        for var in row.detect_vars {
            let env = |k: &str| (k == *var).then(|| "http://x:1/v1".to_string());
            let found = super::setup::detect_providers(&config, &env);
            assert_eq!(found.len(), 1, "{var}");
            assert_eq!(found[0].module, row.name, "{var}");
        }
    }
}

/// The no-provider texts (CLI and TUI banner) name every variable the table detects
/// providers by, so a new provider's variables cannot be left out of them.
#[test]
fn no_provider_texts_name_every_detect_variable() {
    let dir = tempfile::tempdir().unwrap();
    // An unusable OLLAMA_HOST: no loopback probe.
    let env = |k: &str| (k == "OLLAMA_HOST").then(|| "no-port:x".to_string());
    let message = super::setup::no_provider_message(&dir.path().join("config.yaml"), &env);
    let banner = super::local::no_provider_banner(&dir.path().join("config.yaml"));
    for var in crate::config::modules::detect_vars() {
        assert!(message.contains(var), "{var} missing from:\n{message}");
        if !var.ends_with("_BASE_URL") {
            assert!(banner.contains(var), "{var} missing from:\n{banner}");
        }
    }
}

/// The no-provider text names every local server it probed, each with its address,
/// and both texts write addresses one way (`127.0.0.1`, never `localhost`).
#[test]
fn no_provider_text_names_every_local_server_probed() {
    let dir = tempfile::tempdir().unwrap();
    let closed = || {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (a, b, c) = (closed(), closed(), closed());
    let list = format!("ollama=127.0.0.1:{a},lmstudio=localhost:{b},llamacpp=127.0.0.1:{c}");
    let env = move |k: &str| (k == "ARBOR_LOCAL_SERVERS").then(|| list.clone());
    let message = super::setup::no_provider_message(&dir.path().join("config.yaml"), &env);
    for line in [
        format!("  - local Ollama at 127.0.0.1:{a}: nothing is listening"),
        format!("  - local LM Studio at 127.0.0.1:{b}: nothing is listening"),
        format!("  - local llama.cpp at 127.0.0.1:{c}: nothing is listening"),
    ] {
        assert!(message.contains(&line), "{line} missing from:\n{message}");
    }
    let banner = super::local::no_provider_banner(&dir.path().join("config.yaml"));
    assert!(!message.contains("localhost"), "{message}");
    assert!(!banner.contains("localhost"), "{banner}");
}
