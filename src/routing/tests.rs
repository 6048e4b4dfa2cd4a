//! Unit tests of preference matching, plan rewrites, resolution and precedence.

use serde_json::{Value, json};

use super::*;
use crate::config::ModuleEntry;

fn entries(v: Value) -> Vec<ModuleEntry> {
    prefs::plan_entries(&json!({ "providers": v }))
}

fn matrix() -> RoutingMatrix {
    RoutingMatrix::parse(
        "name: t\nroles:\n  general:\n    description: g\n    candidates:\n      - {provider: anthropic, model: claude-sonnet-*}\n      - {provider: openai, model: gpt-4o}\n  fast:\n    description: f\n    candidates:\n      - {provider: openai, model: gpt-?.?-mini*}\n  reasoning:\n    description: r\n    candidates:\n      - {provider: anthropic, model: claude-opus-*}\n      - {provider: openai, model: gpt-5*, config: {reasoning_effort: high}}\n",
        "t.yaml",
    )
    .unwrap()
}

fn block<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

#[test]
fn preferences_parse_with_clear_errors() {
    let p = parse_preferences(
        &json!([{"provider": "openai", "model": "gpt-5", "config": {"reasoning_effort": "high"}}]),
    )
    .unwrap();
    assert_eq!(
        p[0].to_value(),
        json!({"provider": "openai", "model": "gpt-5", "config": {"reasoning_effort": "high"}})
    );
    assert_eq!(
        ProviderPreference::new("openai", "gpt-5").to_value(),
        json!({"provider": "openai", "model": "gpt-5"})
    );
    let e = parse_preferences(&json!([{"provider": "a", "model": "b"}, {"provider": "openai"}]))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "provider_preferences[1]: provider preference requires 'model' key"
    );
    let e = ProviderPreference::from_value(&json!({"model": "gpt-4"})).unwrap_err();
    assert!(e.to_string().contains("requires 'provider' key"));
    assert!(parse_preferences(&json!("openai")).is_err());
    assert_eq!(parse_roles(&json!("fast")).unwrap(), ["fast"]);
    assert_eq!(
        parse_roles(&json!(["reasoning", "general"])).unwrap(),
        ["reasoning", "general"]
    );
    assert!(parse_roles(&json!([1])).is_err());
}

#[test]
fn provider_names_match_by_id_module_and_short_name() {
    let e = entries(json!([
        {"module": "provider-openai"},
        {"module": "provider-openai", "id": "openai-2"},
        {"module": "provider-anthropic", "id": "claude-a", "config": {"priority": 5}},
        {"module": "provider-anthropic", "id": "claude-b", "config": {"priority": 1}},
    ]));
    assert_eq!(find_plan_provider(&e, "openai"), Some(0), "mount name wins");
    assert_eq!(find_plan_provider(&e, "provider-openai"), Some(0));
    assert_eq!(find_plan_provider(&e, "openai-2"), Some(1));
    assert_eq!(
        find_plan_provider(&e, "anthropic"),
        Some(3),
        "highest priority instance"
    );
    assert_eq!(find_plan_provider(&e, "provider-anthropic"), Some(3));
    assert_eq!(find_plan_provider(&e, "claude-a"), Some(2));
    assert_eq!(find_plan_provider(&e, "gemini"), None);
    let mounted = vec!["provider-anthropic".to_string()];
    assert_eq!(
        find_provider("anthropic", &mounted, None).as_deref(),
        Some("provider-anthropic")
    );
    let mounted = vec!["openai-internal".to_string(), "openai-external".to_string()];
    assert_eq!(
        find_provider("openai", &mounted, None),
        None,
        "no cross match without specs"
    );
    let lookup = build_provider_lookup(&e);
    assert_eq!(
        (lookup["openai"].clone(), lookup["openai-2"].clone()),
        (json!(0), json!(1))
    );
}

#[test]
fn overrides_protect_credentials_and_pin_priority() {
    let plan = json!({"providers": [
        {"module": "provider-anthropic"},
        {"module": "provider-openai", "config": {"api_key": "sk-test", "base_url": "http://real", "priority": 10}},
    ], "session": {"orchestrator": {"module": "loop-basic"}}});
    let pref =
        ProviderPreference::from_value(&json!({"provider": "openai", "model": "gpt-5", "config": {
        "api_key": "EVIL", "base_url": "EVIL", "endpoint": "EVIL", "proxy": "EVIL", "priority": 99,
        "default_model": "x", "reasoning_effort": "high"}}))
        .unwrap();
    let out = apply_provider_preferences(&plan, std::slice::from_ref(&pref));
    assert_eq!(
        out["providers"][0],
        json!({"module": "provider-anthropic", "config": {}})
    );
    assert_eq!(
        out["providers"][1]["config"],
        json!({"api_key": "sk-test", "base_url": "http://real", "priority": 0, "reasoning_effort": "high", "default_model": "gpt-5"})
    );
    assert_eq!(out["session"], plan["session"]);
    let none = apply_provider_preferences(&plan, &[ProviderPreference::new("gemini", "g")]);
    assert_eq!(none, plan);
    let moved = apply_resolved(&plan, &ProviderPreference::new("openai", "gpt-5"));
    assert_eq!(moved["providers"][0]["module"], "provider-openai");
    assert_eq!(moved["providers"][0]["config"]["default_model"], "gpt-5");
    assert_eq!(moved["providers"][1]["module"], "provider-anthropic");
}

#[test]
fn candidates_resolve_globs_and_explain_skips() {
    let mounts = Mounts::from_entries(&entries(
        json!([{"module": "provider-openai"}, {"module": "provider-ollama"}]),
    ));
    let source = StaticModels::new()
        .with_models("openai", ["gpt-5.1-mini", "gpt-5.4-mini", "gpt-4o"])
        .with_failure("ollama", "connection refused");
    let got = block(resolve_candidate(
        &ProviderPreference::new("openai", "gpt-?.?-mini*"),
        &mounts,
        &source,
    ))
    .unwrap();
    assert_eq!(
        (got.provider.as_str(), got.model.as_str()),
        ("openai", "gpt-5.4-mini")
    );
    let skip = |p: &str, m: &str| {
        block(resolve_candidate(
            &ProviderPreference::new(p, m),
            &mounts,
            &source,
        ))
        .unwrap_err()
        .to_string()
    };
    assert_eq!(skip("anthropic", "claude-*"), "anthropic not mounted");
    assert_eq!(
        skip("openai", "gpt-6*"),
        "openai gpt-6*: no match in 3 listed models"
    );
    assert_eq!(
        skip("ollama", "*"),
        "ollama *: cannot list models (connection refused)"
    );
    let exact = block(resolve_candidate(
        &ProviderPreference::new("ollama", "qwen3"),
        &mounts,
        &source,
    ))
    .unwrap();
    assert_eq!(
        exact.model, "qwen3",
        "a failed listing still accepts an exact name"
    );
    // A provider that lists its models must serve an exact name to be chosen.
    assert_eq!(
        skip("openai", "gpt-9"),
        "openai gpt-9: not among the 3 listed models"
    );
    let listed = block(resolve_candidate(
        &ProviderPreference::new("openai", "GPT-4o"),
        &mounts,
        &source,
    ))
    .unwrap();
    assert_eq!(listed.model, "GPT-4o");

    let mut with_bad = mounts.clone();
    with_bad.names.retain(|n| n != "ollama");
    with_bad
        .unavailable
        .push(("ollama".into(), "no server".into()));
    let e = block(resolve_candidate(
        &ProviderPreference::new("ollama", "x"),
        &with_bad,
        &source,
    ))
    .unwrap_err();
    assert_eq!(e.to_string(), "ollama unavailable (no server)");
}

#[test]
fn roles_fall_back_in_order_with_reasons() {
    let mounts = Mounts::from_entries(&entries(json!([{"module": "provider-openai"}])));
    let source = StaticModels::new().with_models("openai", ["gpt-4o", "gpt-4o-mini", "o3"]);
    let roles = vec![
        "nope".to_string(),
        "reasoning".to_string(),
        "general".to_string(),
    ];
    let r = block(resolve_model_role(&roles, &matrix(), &mounts, &source));
    let choice = r.choice.unwrap();
    assert_eq!(
        (
            choice.provider.as_str(),
            choice.model.as_str(),
            r.role.as_deref()
        ),
        ("openai", "gpt-4o", Some("general"))
    );
    assert_eq!(
        r.skipped,
        [
            "role nope: not in matrix 't'",
            "role reasoning: no candidate available (anthropic not mounted; openai gpt-5*: no match in 3 listed models)",
        ]
    );
    let r = block(resolve_model_role(
        &["fast".into()],
        &matrix(),
        &mounts,
        &source,
    ));
    assert!(r.choice.is_none());
    // One listing for the glob, one to check the exact `gpt-4o`: StaticModels does not cache.
    assert_eq!(source.calls("openai"), 3);
}

#[test]
fn pattern_resolution_reports_lists() {
    let mounts = Mounts::new(["provider-anthropic"]);
    let source = StaticModels::new().with_models(
        "provider-anthropic",
        ["claude-opus-4-7", "claude-opus-4-10", "claude-opus-4-6"],
    );
    let r = block(resolve_model_pattern(
        "claude-opus-*",
        Some("anthropic"),
        &mounts,
        &source,
    ));
    assert_eq!(r.resolved_model.as_deref(), Some("claude-opus-4-10"));
    assert_eq!(
        r.matched_models,
        ["claude-opus-4-10", "claude-opus-4-7", "claude-opus-4-6"]
    );
    let r = block(resolve_model_pattern(
        "claude-x",
        Some("anthropic"),
        &mounts,
        &source,
    ));
    assert_eq!(
        (r.resolved_model.as_deref(), r.pattern),
        (Some("claude-x"), None)
    );
    let r = block(resolve_model_pattern("claude-*", None, &mounts, &source));
    assert_eq!(r.resolved_model.as_deref(), Some("claude-*"));
    let r = block(resolve_model_pattern(
        "claude-*",
        Some("openai"),
        &mounts,
        &source,
    ));
    assert_eq!(r.resolved_model, None);
}

fn precedence(request: &ModelRequest) -> Routed {
    let mounts = Mounts::from_entries(&entries(
        json!([{"module": "provider-openai"}, {"module": "provider-anthropic"}]),
    ));
    let source = StaticModels::new()
        .with_models("openai", ["gpt-4o", "gpt-4o-mini", "gpt-5.4-mini"])
        .with_models("anthropic", ["claude-sonnet-4-5", "claude-opus-4-1"]);
    block(resolve_precedence(
        request,
        Some(&matrix()),
        &mounts,
        &source,
        ("openai", "gpt-4o"),
    ))
}

#[test]
fn precedence_ranks_call_over_agent_over_parent() {
    let all = ModelRequest {
        call_preferences: Some(json!([{"provider": "anthropic", "model": "claude-opus-*"}])),
        call_role: Some(json!("fast")),
        agent_preferences: Some(json!([{"provider": "openai", "model": "gpt-4o"}])),
        agent_role: Some(json!("general")),
    };
    let r = precedence(&all).resolved;
    assert_eq!(
        (r.via, r.model.as_str(), r.reason),
        (Via::CallPreferences, "claude-opus-4-1", None)
    );
    let r = precedence(&ModelRequest {
        call_preferences: None,
        ..all.clone()
    })
    .resolved;
    assert_eq!(
        (r.via, r.model.as_str(), r.role.as_deref()),
        (Via::CallRole, "gpt-5.4-mini", Some("fast"))
    );
    let r = precedence(&ModelRequest {
        call_preferences: None,
        call_role: None,
        ..all.clone()
    })
    .resolved;
    assert_eq!((r.via, r.model.as_str()), (Via::AgentPreferences, "gpt-4o"));
    let r = precedence(&ModelRequest {
        agent_role: Some(json!("general")),
        ..Default::default()
    })
    .resolved;
    assert_eq!(
        (r.via, r.provider.as_str(), r.model.as_str()),
        (Via::AgentRole, "anthropic", "claude-sonnet-4-5")
    );
    let routed = precedence(&ModelRequest::default());
    assert_eq!(
        (
            routed.resolved.via,
            routed.resolved.reason.clone(),
            routed.choice.clone()
        ),
        (Via::Parent, None, None)
    );
    assert_eq!(
        routed.resolved.to_value(),
        json!({"provider": "openai", "model": "gpt-4o", "via": "parent"})
    );
}

#[test]
fn precedence_explains_cross_tier_fallbacks() {
    let r = precedence(&ModelRequest {
        call_preferences: Some(json!([{"provider": "gemini", "model": "gemini-*"}])),
        agent_role: Some(json!(["nope", "fast"])),
        ..Default::default()
    })
    .resolved;
    assert_eq!(r.via, Via::AgentRole);
    assert_eq!(
        r.reason.as_deref(),
        Some(
            "call preferences: no preference available (gemini/gemini-*: gemini not mounted); role nope: not in matrix 't'; used agent role fast"
        )
    );
    let r = precedence(&ModelRequest {
        call_role: Some(json!(42)),
        ..Default::default()
    })
    .resolved;
    assert_eq!(r.via, Via::Parent);
    let reason = r.reason.unwrap();
    assert!(
        reason.starts_with("call role: invalid model_role")
            && reason.ends_with("used the parent's model (openai/gpt-4o)"),
        "{reason}"
    );
    let back = ResolvedModel::from_value(
        &json!({"provider": "p", "model": "m", "via": "agent role", "role": "fast"}),
    )
    .unwrap();
    assert_eq!(
        (back.via, back.role.as_deref()),
        (Via::AgentRole, Some("fast"))
    );
}
