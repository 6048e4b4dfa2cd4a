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
