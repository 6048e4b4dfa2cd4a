//! Provider setup: detecting entries, attaching keys, and the no-provider message.

use std::collections::HashMap;

use arbor::config::arbor_config::ArborConfig;
use arbor::config::mount_plan::ModuleEntry;
use arbor::provider::ProviderErrorKind;
use arbor::routing::setup::{build_provider, detect_providers, no_provider_message};
use serde_json::{Value, json};

use super::requests::OPENAI_OK;
use super::server::{Mode, Reply, Server};
use super::{request, run};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

fn entry(v: Value) -> ModuleEntry {
    ModuleEntry::from_value(&v).unwrap()
}

#[test]
fn detect_providers_from_env_and_config_never_carries_keys() {
    let env = env_of(&[
        ("OPENAI_API_KEY", "sk-env-openai"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
        ("ANTHROPIC_API_KEY", "sk-ant-env"),
        ("ANTHROPIC_BASE_URL", "http://proxy.local"),
    ]);
    let config = ArborConfig {
        provider: Some("anthropic".into()),
        ..Default::default()
    };
    let found = detect_providers(&config, &env);
    assert_eq!(
        found,
        vec![
            entry(
                json!({"module": "provider-anthropic", "config": {"base_url": "http://proxy.local"}})
            ),
            entry(
                json!({"module": "provider-openai", "config": {"base_url": "http://127.0.0.1:8080/v1"}})
            ),
        ]
    );
    assert!(!serde_json::to_string(&found).unwrap().contains("sk-"));

    let found = detect_providers(
        &ArborConfig::default(),
        &env_of(&[("OPENAI_BASE_URL", "http://h/v1")]),
    );
    assert_eq!(
        found,
        vec![entry(
            json!({"module": "provider-openai", "config": {"base_url": "http://h/v1"}})
        )]
    );
    assert!(
        detect_providers(
            &ArborConfig::default(),
            &env_of(&[("ANTHROPIC_BASE_URL", "http://x")])
        )
        .is_empty()
    );
    assert!(detect_providers(&ArborConfig::default(), &env_of(&[])).is_empty());

    // Config providers win over env, their keys become "[REDACTED]", and the preferred
    // one leads.
    let config = ArborConfig {
        provider: Some("local".into()),
        providers: vec![
            entry(json!({"module": "provider-anthropic", "config": {"api_key": "sk-ant-file"}})),
            entry(
                json!({"module": "provider-openai", "id": "local", "config": {"base_url": "http://h/v1", "api_key": "sk-file"}}),
            ),
        ],
        ..Default::default()
    };
    let found = detect_providers(&config, &env);
    assert_eq!(
        found,
        vec![
            entry(
                json!({"module": "provider-openai", "id": "local", "config": {"base_url": "http://h/v1", "api_key": "[REDACTED]"}})
            ),
            entry(json!({"module": "provider-anthropic", "config": {"api_key": "[REDACTED]"}})),
        ]
    );
}

#[tokio::test]
async fn build_provider_attaches_keys_from_entry_file_or_env() {
    let server = Server::always(Reply::sse(OPENAI_OK.into(), Mode::Whole)).await;
    let base = server.url("/v1");
    let env = env_of(&[
        ("OPENAI_API_KEY", "sk-from-env"),
        ("OPENAI_BASE_URL", &base),
    ]);

    // A stored (redacted) entry gets the env key at the endpoint it is configured for;
    // with that endpoint no longer configured, the key is not sent there.
    let stored = entry(
        json!({"module": "provider-openai", "config": {"api_key": "[REDACTED]", "base_url": base, "default_model": "m"}}),
    );
    let p = build_provider(&stored, &ArborConfig::default(), &env).unwrap();
    assert_eq!(
        (p.id(), p.module(), p.default_model()),
        ("openai", "provider-openai", "m")
    );
    assert!(!format!("{p:?}").contains("sk-from-env"));
    assert!(run(p.as_ref(), request("")).await.completed.is_some());
    let key_only = env_of(&[("OPENAI_API_KEY", "sk-from-env")]);
    let e = build_provider(&stored, &ArborConfig::default(), &key_only).unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::NotConfigured);
    assert!(e.message.contains("not the configured endpoint"), "{e}");

    // The config file's entry (matched by id) beats the environment.
    let config = ArborConfig {
        providers: vec![entry(
            json!({"module": "provider-openai", "id": "local", "config": {"api_key": "sk-from-file", "base_url": base}}),
        )],
        ..Default::default()
    };
    let by_id = entry(
        json!({"module": "provider-openai", "id": "local", "config": {"base_url": base, "model": "m2"}}),
    );
    let p = build_provider(&by_id, &config, &env).unwrap();
    assert_eq!((p.id(), p.default_model()), ("local", "m2"));
    assert!(run(p.as_ref(), request("")).await.completed.is_some());

    // Two file entries of one module without ids: the key follows the base_url, so the
    // key-less entries `detect_providers` hands out still get the right one.
    let config = ArborConfig {
        providers: vec![
            entry(
                json!({"module": "provider-openai", "config": {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-other"}}),
            ),
            entry(
                json!({"module": "provider-openai", "config": {"base_url": base, "api_key": "sk-this", "default_model": "m3"}}),
            ),
        ],
        ..Default::default()
    };
    let detected = detect_providers(&config, &env_of(&[]));
    let p = build_provider(&detected[1], &config, &env).unwrap();
    assert_eq!(p.default_model(), "m3");
    assert!(run(p.as_ref(), request("")).await.completed.is_some());

    let auth: Vec<Option<String>> = server
        .captured()
        .iter()
        .map(|c| c.header("authorization").map(str::to_string))
        .collect();
    assert_eq!(
        auth,
        [
            Some("Bearer sk-from-env".into()),
            Some("Bearer sk-from-file".into()),
            Some("Bearer sk-this".into()),
        ]
    );
}

#[test]
fn build_provider_defaults_and_missing_keys() {
    let none = env_of(&[]);
    let config = ArborConfig::default();
    let e = build_provider(&entry(json!("provider-openai")), &config, &none).unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::NotConfigured);
    assert!(e.message.contains("OPENAI_API_KEY"), "{e}");
    let e = build_provider(&entry(json!("provider-anthropic")), &config, &none).unwrap_err();
    assert!(e.message.contains("ANTHROPIC_API_KEY"), "{e}");
    let e = build_provider(&entry(json!("provider-gemini")), &config, &none).unwrap_err();
    assert!(e.message.contains("provider-gemini"), "{e}");

    let keyed = env_of(&[("OPENAI_API_KEY", "k1"), ("ANTHROPIC_API_KEY", "k2")]);
    let p = build_provider(&entry(json!("provider-openai")), &config, &keyed).unwrap();
    assert_eq!(p.default_model(), "gpt-4o-mini");
    let p = build_provider(&entry(json!("provider-anthropic")), &config, &keyed).unwrap();
    assert_eq!(p.default_model(), "claude-sonnet-4-5");
    let with_models = env_of(&[
        ("ANTHROPIC_API_KEY", "k2"),
        ("ANTHROPIC_MODEL", "claude-opus-4-1"),
        ("OPENAI_MODEL", "gpt-4.1"),
    ]);
    let p = build_provider(&entry(json!("provider-anthropic")), &config, &with_models).unwrap();
    assert_eq!(p.default_model(), "claude-opus-4-1");

    // A local server needs no key; its model is resolved lazily unless set.
    let local = entry(
        json!({"module": "provider-openai", "config": {"base_url": "http://127.0.0.1:1/v1"}}),
    );
    assert_eq!(
        build_provider(&local, &config, &none)
            .unwrap()
            .default_model(),
        ""
    );
    assert_eq!(
        build_provider(&local, &config, &with_models)
            .unwrap()
            .default_model(),
        "gpt-4.1"
    );
    let ollama = build_provider(&entry(json!("provider-ollama")), &config, &none).unwrap();
    assert_eq!(
        (ollama.id(), ollama.module()),
        ("ollama", "provider-ollama")
    );
    assert!(format!("{ollama:?}").contains("http://127.0.0.1:11434/v1"));
}

#[test]
fn no_provider_message_says_what_was_looked_for_and_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let closed_s = closed.to_string();
    let env = env_of(&[("OLLAMA_HOST", closed_s.as_str())]);
    let msg = no_provider_message(&path, &env);
    for needle in [
        &format!("{}: not found", path.display()),
        "OPENAI_API_KEY: not set",
        "OPENAI_BASE_URL: not set",
        "ANTHROPIC_API_KEY: not set",
        &format!("local Ollama at {closed}: nothing is listening"),
        "export ANTHROPIC_API_KEY=",
        "providers:",
        "- module: provider-anthropic",
        "- module: provider-openai",
        "base_url:",
    ] {
        assert!(msg.contains(needle), "missing {needle:?} in:\n{msg}");
    }

    std::fs::write(&path, "theme: dark\n").unwrap();
    let env = env_of(&[
        ("OLLAMA_HOST", closed_s.as_str()),
        ("OPENAI_API_KEY", "sk-secret-value"),
        ("OPENAI_BASE_URL", "http://h/v1"),
    ]);
    let msg = no_provider_message(&path, &env);
    assert!(msg.contains("found, no `providers` listed"), "{msg}");
    assert!(msg.contains("OPENAI_API_KEY: set"), "{msg}");
    assert!(msg.contains("OPENAI_BASE_URL: set to http://h/v1"), "{msg}");
    assert!(!msg.contains("sk-secret-value"));
}

/// The ```` ```lang ```` blocks of `text` in order: (the line the block starts on, 1-based;
/// its lines).
fn fenced_blocks(text: &str, lang: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        match &mut open {
            Some((_, body)) if fence.starts_with("```") => {
                let body = std::mem::take(body);
                blocks.push((open.take().unwrap().0, body));
            }
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None if fence == format!("```{lang}") => open = Some((i + 1, String::new())),
            None => {}
        }
    }
    assert!(open.is_none(), "an unclosed ```{lang} block");
    blocks
}

/// Loads `yaml` as `config.yaml` through arbor's config loader and the readers of
/// its sections (prices, retry, response limits, MCP servers): every problem any of
/// them reports, and top-level keys no reader knows, as one list.
fn config_problems(yaml: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, yaml).unwrap();
    let config = match ArborConfig::load(&path) {
        Ok(config) => config,
        Err(e) => return vec![e.to_string()],
    };
    let mut problems = arbor::routing::prices::PriceTable::from_config(&config).1;
    problems.extend(arbor::config::retry::RetryPolicy::from_config(&config).1);
    problems.extend(arbor::config::response::ResponseLimits::from_config(&config).1);
    problems.extend(arbor::config::mcp::config_servers(&config.extra).1);
    if let Some(hooks) = config.extra.get("hooks")
        && let Err(e) = arbor::hooks::Hooks::parse(hooks, &arbor::hooks::HookSource::User, "config")
    {
        problems.push(e.to_string());
    }
    problems.extend(arbor::config::context::ContextConfig::from_config(&config).1);
    // Sections read from `extra` by their own modules (see `config::arbor_config`).
    const SECTIONS: &[&str] = &[
        "prices",
        "retry",
        "routing",
        "mcp_servers",
        "response",
        "hooks",
        "web",
        "context",
    ];
    for key in config.extra.keys() {
        if !SECTIONS.contains(&key.as_str()) {
            problems.push(format!("unknown top-level key `{key}`"));
        }
    }
    problems
}

/// Issue 23 item 3: every config snippet arbor prints (the no-provider help, the TUI
/// banner) and every ```` ```yaml ```` block of README.md loads through the real config
/// loader without a problem; README's agent examples (```` ```markdown ```` blocks
/// with frontmatter) parse as agent files. A block that is not config must be listed
/// in `NOT_CONFIG` (by its first line) to be skipped, so a new broken one fails here.
#[test]
fn every_config_snippet_arbor_prints_or_documents_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    let none = |_: &str| None;

    // The no-provider help: the lines after "or add providers to …:", as printed
    // (indented) and as a person might paste them (dedented).
    let help = no_provider_message(&path, &none);
    let printed: String = help
        .lines()
        .skip_while(|l| !l.starts_with("or add providers to"))
        .skip(1)
        .skip_while(|l| l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(printed.contains("providers:"), "{help}");
    let dedented: String = printed
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("  ").unwrap_or(l)))
        .collect();
    for snippet in [&printed, &dedented] {
        assert_eq!(
            config_problems(snippet),
            Vec::<String>::new(),
            "the no-provider help's config:\n{snippet}"
        );
        std::fs::write(&path, snippet).unwrap();
        let config = ArborConfig::load(&path).unwrap();
        let ids: Vec<String> = config
            .providers
            .iter()
            .map(arbor::routing::setup::provider_id)
            .collect();
        assert_eq!(ids, ["anthropic", "ollama", "local"], "{snippet}");
        assert_eq!(config.provider.as_deref(), Some("anthropic"));
    }
    assert_eq!(dedented, arbor::routing::setup::PROVIDERS_EXAMPLE);

    // The TUI banner's suggestion.
    let banner = arbor::routing::local::no_provider_banner(&path);
    let suggested: String = banner
        .lines()
        .skip_while(|l| *l != "providers:")
        .take_while(|l| !l.starts_with("Details"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!suggested.is_empty(), "{banner}");
    assert_eq!(
        config_problems(&suggested),
        Vec::<String>::new(),
        "{suggested}"
    );

    // README.md.
    const NOT_CONFIG: &[&str] = &[];
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let yaml = fenced_blocks(&readme, "yaml");
    assert!(yaml.len() >= 6, "README.md lost its config examples?");
    for (line, block) in &yaml {
        if NOT_CONFIG.contains(&block.lines().next().unwrap_or_default()) {
            continue;
        }
        assert_eq!(
            config_problems(block),
            Vec::<String>::new(),
            "README.md:{line}: ```yaml block:\n{block}"
        );
    }
    let agents: Vec<(usize, String)> = fenced_blocks(&readme, "markdown")
        .into_iter()
        .filter(|(_, b)| b.starts_with("---\n"))
        .collect();
    assert!(!agents.is_empty(), "README.md lost its agent example?");
    for (line, block) in &agents {
        let origin = arbor::agent::file::AgentOrigin {
            path: None,
            stem: "readme-example",
            source: arbor::agent::AgentSource::User,
            namespace: None,
        };
        let agent = arbor::agent::file::parse_agent(block, &origin);
        assert!(
            agent.errors.is_empty() && agent.warnings.is_empty(),
            "README.md:{line}: agent example: {:?} {:?}",
            agent.errors,
            agent.warnings
        );
        assert!(!agent.instruction.is_empty());
    }
}
