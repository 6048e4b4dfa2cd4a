//! Model routing end to end: SPEC §9 precedence (one test per rank, resume keeps the
//! spawned model, a resume call overrides it), the role-list fallback with its reason
//! in metadata, model lists cached per process, listing failures skipped with a
//! reason, routing matrices (real Amplifier matrices load, bad ones fail clearly, the
//! config picks a user matrix), the `AgentPlan` query, and one run over a real
//! loopback OpenAI-compatible server. Providers are scripted (a `ScriptedProvider` per
//! mount with a fixed model list); nothing touches the real home.

use crate::support;
use crate::support::fixture;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arbor::config::{ArborConfig, ModuleEntry};
use arbor::engine::providers::ProviderFactory;
use arbor::engine::testing::{Drive, ScriptedProvider, Step, after_tool_results, last_user_text};
use arbor::engine::{ApprovalMode, Engine, RuntimeHooks, RuntimeOptions};
use arbor::provider::{ChatRequest, Provider, ProviderError, ProviderErrorKind, StreamEvent};
use arbor::routing::setup::provider_id;
use arbor::routing::{self, Via};
use arbor::session::{EventBus, SessionStatus};
use fixture::*;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::{Value, json};

/// A scripted provider mounted under `id` with a fixed model list (or a listing failure).
#[derive(Debug)]
struct Listed {
    id: String,
    inner: ScriptedProvider,
    models: Result<Vec<String>, String>,
    calls: Arc<Mutex<HashMap<String, usize>>>,
}

impl Provider for Listed {
    fn id(&self) -> &str {
        &self.id
    }
    fn module(&self) -> &str {
        "provider-scripted"
    }
    fn default_model(&self) -> &str {
        self.inner.default_model()
    }
    fn stream(
        &self,
        request: ChatRequest,
    ) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        self.inner.stream(request)
    }
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ProviderError>> {
        *self
            .calls
            .lock()
            .unwrap()
            .entry(self.id.clone())
            .or_default() += 1;
        let result = self
            .models
            .clone()
            .map_err(|e| ProviderError::new(ProviderErrorKind::Network, &self.id, e));
        Box::pin(async move { result })
    }
}

const OPENAI_MODELS: [&str; 3] = ["gpt-4o", "gpt-4o-mini", "text-embedding-3-small"];
const ANTHROPIC_MODELS: [&str; 3] = ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"];

/// The engine fixture plus: two mounted providers (`openai`, `anthropic`) with model
/// lists, list-call counters, and a root that runs whatever task call `task` holds.
struct Harness {
    fx: Fixture,
    config: ArborConfig,
    lists: HashMap<String, Result<Vec<String>, String>>,
    unbuildable: Vec<String>,
    calls: Arc<Mutex<HashMap<String, usize>>>,
    task: Arc<Mutex<Value>>,
}

impl Harness {
    fn new() -> Self {
        let task = Arc::new(Mutex::new(Value::Null));
        let args = task.clone();
        let call_ids = Arc::new(AtomicUsize::new(0));
        let fx = Fixture::new(plan(json!({})), &[], move |r: &ChatRequest| {
            if !is_root(r) {
                return vec![Step::text(format!("child: {}", last_user_text(r)))];
            }
            if after_tool_results(r) {
                return vec![Step::text("root done")];
            }
            let n = call_ids.fetch_add(1, Ordering::SeqCst);
            vec![Step::call(
                format!("t{n}"),
                "task",
                args.lock().unwrap().clone(),
            )]
        });
        let mut config = fx.config.clone();
        config.providers.push(ModuleEntry {
            module: "provider-anthropic".into(),
            config: json!({"api_key": SECRET}),
            ..Default::default()
        });
        let lists = HashMap::from([
            (
                "openai".to_string(),
                Ok(OPENAI_MODELS.map(String::from).to_vec()),
            ),
            (
                "anthropic".to_string(),
                Ok(ANTHROPIC_MODELS.map(String::from).to_vec()),
            ),
        ]);
        Self {
            fx,
            config,
            lists,
            unbuildable: Vec::new(),
            calls: Arc::default(),
            task,
        }
    }

    fn agent(&self, name: &str, frontmatter: &str) -> &Self {
        let text = format!(
            "---\nmeta:\n  name: {name}\n  description: The {name} agent.\n{frontmatter}---\nYou are {name}.\n"
        );
        std::fs::write(
            self.fx.dir.path().join(format!("amp/agents/{name}.md")),
            text,
        )
        .unwrap();
        self
    }

    fn factory(&self) -> ProviderFactory {
        let (inner, lists, calls) = (
            self.fx.provider.clone(),
            self.lists.clone(),
            self.calls.clone(),
        );
        let unbuildable = self.unbuildable.clone();
        Arc::new(move |entry: &ModuleEntry| {
            let id = provider_id(entry);
            if unbuildable.contains(&id) {
                return Err(ProviderError::new(
                    ProviderErrorKind::NotConfigured,
                    &id,
                    "no API key",
                ));
            }
            let models = lists
                .get(&id)
                .cloned()
                .unwrap_or_else(|| Err("unknown".into()));
            Ok(Arc::new(Listed {
                id,
                inner: inner.clone(),
                models,
                calls: calls.clone(),
            }) as Arc<dyn Provider>)
        })
    }

    /// A fresh engine (a new process as far as caches go) over the same disk.
    fn engine(&self) -> Engine {
        let (_tx, registry) = tokio::sync::watch::channel(self.fx.load_registry());
        let options = RuntimeOptions {
            paths: self.fx.paths.clone(),
            config: self.config.clone(),
            bundle: self.fx.bundle.clone(),
            registry,
            env: env_of(self.fx.dir.path()),
            bus: EventBus::new(),
            approval_mode: ApprovalMode::Headless { yes: false },
        };
        let hooks = RuntimeHooks {
            provider_factory: Some(self.factory()),
            extra_tools: Vec::new(),
        };
        Engine::builder(options).hooks(hooks).build()
    }

    /// Runs one root turn whose task call is `args`; returns the task result.
    async fn delegate(&self, rt: &Engine, root: &str, args: Value) -> Value {
        *self.task.lock().unwrap() = args;
        let out = rt.run_turn(root, "go".into()).await.unwrap();
        assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
        let transcript = self.fx.transcript(root);
        let result = transcript
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .unwrap();
        serde_json::from_str(result["content"].as_str().unwrap()).unwrap()
    }

    /// Spawns `agent` from a new root with the extra task arguments `call`; returns the
    /// child id and its `resolved_model`.
    async fn spawn(&self, agent: &str, call: Value) -> (String, Value) {
        let rt = self.engine();
        let root = rt.create_root(None).unwrap();
        let mut args = json!({"agent": agent, "instruction": "work"});
        args.as_object_mut()
            .unwrap()
            .extend(call.as_object().cloned().unwrap_or_default());
        let result = self.delegate(&rt, &root, args).await;
        assert_eq!(result["status"], "completed", "{result}");
        let child = result["session_id"].as_str().unwrap().to_string();
        let resolved = self.fx.metadata(&child)["resolved_model"].clone();
        (child, resolved)
    }

    /// Models named by the requests of the sub-session of `agent` with instruction `text`.
    fn child_models(&self, agent: &str, text: &str) -> Vec<String> {
        let system = format!("You are {agent}.");
        self.fx
            .provider
            .requests()
            .into_iter()
            .filter(|r| r.system == system && last_user_text(r) == text)
            .map(|r| r.model)
            .collect()
    }

    fn list_calls(&self, id: &str) -> usize {
        self.calls.lock().unwrap().get(id).copied().unwrap_or(0)
    }
}

const FULL_AGENT: &str =
    "provider_preferences:\n  - {provider: openai, model: gpt-4o-mini}\nmodel_role: general\n";

#[tokio::test]
async fn done_when_role_list_falls_back_to_general_with_the_reason() {
    let mut h = Harness::new();
    h.config.providers.truncate(1);
    h.agent("thinker", "model_role: [reasoning, general]\n");
    let (child, resolved) = h.spawn("thinker", json!({})).await;
    assert_eq!(resolved["provider"], "openai");
    assert_eq!(resolved["model"], "gpt-4o");
    assert_eq!(resolved["via"], "agent role");
    assert_eq!(resolved["role"], "general");
    let reason = resolved["reason"].as_str().unwrap();
    assert!(reason.starts_with("role reasoning: no candidate available (anthropic not mounted; openai gpt-[0-9].[0-9]: no match in 3 listed models;"), "{reason}");
    assert!(reason.ends_with("; used role general"), "{reason}");
    assert_eq!(h.child_models("thinker", "work"), ["gpt-4o"]);
    let m = h.fx.metadata(&child);
    assert_eq!(
        m["config"]["providers"][0]["config"]["default_model"],
        "gpt-4o"
    );
    let root_models: Vec<String> =
        h.fx.provider
            .requests()
            .iter()
            .filter(|r| is_root(r))
            .map(|r| r.model.clone())
            .collect();
    assert!(
        root_models.iter().all(|m| m == "scripted-model"),
        "{root_models:?}"
    );
    let fork =
        h.fx.lines(&child, "events.jsonl")
            .into_iter()
            .find(|e| e["event"] == "session:fork")
            .unwrap();
    assert_eq!(fork["data"]["resolved_model"], resolved);
}

#[tokio::test]
async fn rank_1_call_preferences_win() {
    let h = Harness::new();
    h.agent("full", FULL_AGENT);
    let call = json!({"provider_preferences": [{"provider": "gemini", "model": "x"}, {"provider": "anthropic", "model": "claude-opus-*", "config": {"reasoning_effort": "high", "api_key": "EVIL"}}], "model_role": "fast"});
    let (child, resolved) = h.spawn("full", call).await;
    assert_eq!(
        resolved,
        json!({"provider": "anthropic", "model": "claude-opus-4-1", "via": "call preferences", "reason": "gemini/x: gemini not mounted; used anthropic/claude-opus-4-1"})
    );
    assert_eq!(h.child_models("full", "work"), ["claude-opus-4-1"]);
    let entry = &h.fx.metadata(&child)["config"]["providers"][0];
    assert_eq!(entry["module"], "provider-anthropic");
    assert_eq!(entry["config"]["reasoning_effort"], "high");
    assert_ne!(entry["config"]["api_key"], "EVIL");
    let request =
        h.fx.provider
            .requests()
            .into_iter()
            .find(|r| r.system == "You are full.")
            .unwrap();
    assert_eq!(
        request.config["reasoning_effort"], "high",
        "preference config reaches the request"
    );
}

#[tokio::test]
async fn rank_2_call_role_beats_agent_settings() {
    let h = Harness::new();
    h.agent("full", FULL_AGENT);
    let (_, resolved) = h.spawn("full", json!({"model_role": ["fast"]})).await;
    assert_eq!(
        (resolved["via"].as_str(), resolved["model"].as_str()),
        (Some("call role"), Some("claude-haiku-4-5"))
    );
    assert_eq!(h.child_models("full", "work"), ["claude-haiku-4-5"]);
}

#[tokio::test]
async fn rank_3_agent_preferences_beat_agent_role() {
    let h = Harness::new();
    h.agent("full", FULL_AGENT);
    let (_, resolved) = h.spawn("full", json!({})).await;
    assert_eq!(
        resolved,
        json!({"provider": "openai", "model": "gpt-4o-mini", "via": "agent preferences"})
    );
    assert_eq!(h.child_models("full", "work"), ["gpt-4o-mini"]);
}

#[tokio::test]
async fn rank_4_agent_role() {
    let h = Harness::new();
    h.agent("deep", "model_role: reasoning\n");
    let (_, resolved) = h.spawn("deep", json!({})).await;
    assert_eq!(
        resolved,
        json!({"provider": "anthropic", "model": "claude-opus-4-1", "via": "agent role", "role": "reasoning"})
    );
    assert_eq!(h.child_models("deep", "work"), ["claude-opus-4-1"]);
}

#[tokio::test]
async fn rank_5_parent_model_when_nothing_is_asked_or_nothing_resolves() {
    let h = Harness::new();
    h.agent("plain", "");
    h.agent(
        "picky",
        "provider_preferences: [{provider: gemini, model: gemini-*}]\n",
    );
    let (_, resolved) = h.spawn("plain", json!({})).await;
    assert_eq!(
        resolved,
        json!({"provider": "openai", "model": "scripted-model", "via": "parent"})
    );
    assert_eq!(h.child_models("plain", "work"), ["scripted-model"]);
    let (_, resolved) = h.spawn("picky", json!({})).await;
    assert_eq!(resolved["via"], "parent");
    assert_eq!(
        resolved["reason"],
        "agent preferences: no preference available (gemini/gemini-*: gemini not mounted); used the parent's model (openai/scripted-model)"
    );
}

#[tokio::test]
async fn resume_keeps_the_model_resolved_at_spawn() {
    let h = Harness::new();
    h.agent("deep", "model_role: reasoning\n");
    let (child, resolved) = h.spawn("deep", json!({})).await;
    let rt = h.engine();
    let root = rt.create_root(None).unwrap();
    let result = h
        .delegate(
            &rt,
            &root,
            json!({"session_id": child, "instruction": "more"}),
        )
        .await;
    assert_eq!(result["status"], "completed");
    assert_eq!(h.child_models("deep", "more"), ["claude-opus-4-1"]);
    assert_eq!(h.fx.metadata(&child)["resolved_model"], resolved);
    drop(rt);
    let rt = h.engine();
    rt.run_turn(&child, "direct".into()).await.unwrap();
    assert_eq!(
        h.child_models("deep", "direct"),
        ["claude-opus-4-1"],
        "a direct resume keeps it too"
    );
}

#[tokio::test]
async fn resume_call_with_a_role_re_routes_and_updates_metadata() {
    let h = Harness::new();
    h.agent("deep", "model_role: reasoning\n");
    let (child, _) = h.spawn("deep", json!({})).await;
    let rt = h.engine();
    let root = rt.create_root(None).unwrap();
    let args = json!({"session_id": child, "instruction": "faster", "model_role": "fast"});
    h.delegate(&rt, &root, args).await;
    assert_eq!(h.child_models("deep", "faster"), ["claude-haiku-4-5"]);
    let m = h.fx.metadata(&child);
    assert_eq!(
        m["resolved_model"],
        json!({"provider": "anthropic", "model": "claude-haiku-4-5", "via": "call role", "role": "fast"})
    );
    assert_eq!(m["model_role"], "fast");
    assert_eq!(
        m["config"]["providers"][0]["config"]["default_model"],
        "claude-haiku-4-5"
    );

    let args = json!({"session_id": child, "instruction": "nothing", "provider_preferences": [{"provider": "gemini", "model": "g"}]});
    h.delegate(&rt, &root, args).await;
    assert_eq!(h.child_models("deep", "nothing"), ["claude-haiku-4-5"]);
    let kept = &h.fx.metadata(&child)["resolved_model"];
    assert_eq!(kept["model"], "claude-haiku-4-5");
    assert_eq!(
        kept["reason"],
        "resume override not applied (call preferences: no preference available (gemini/g: gemini not mounted)); kept anthropic/claude-haiku-4-5"
    );

    drop(rt);
    let rt = h.engine();
    rt.run_turn(&child, "later".into()).await.unwrap();
    assert_eq!(
        h.child_models("deep", "later"),
        ["claude-haiku-4-5"],
        "a later process keeps the override"
    );
}

#[tokio::test]
async fn model_lists_are_fetched_once_per_provider_per_process() {
    let h = Harness::new();
    h.agent("deep", "model_role: [reasoning, general]\n");
    let rt = h.engine();
    let root = rt.create_root(None).unwrap();
    for _ in 0..3 {
        h.delegate(&rt, &root, json!({"agent": "deep", "instruction": "work"}))
            .await;
    }
    assert_eq!(h.child_models("deep", "work"), ["claude-opus-4-1"; 3]);
    assert_eq!((h.list_calls("anthropic"), h.list_calls("openai")), (1, 0));
    let model = rt.resolve_child_model("deep").await.unwrap();
    assert_eq!(
        (model.via, model.model.as_str()),
        (Via::AgentRole, "claude-opus-4-1")
    );
    assert_eq!(h.list_calls("anthropic"), 1);
    let (plan, _) = rt.routed_child_mount_plan("deep").await.unwrap();
    let first = &plan.to_value()["providers"][0];
    assert_eq!(first["module"], "provider-anthropic");
    assert_eq!(first["config"]["default_model"], "claude-opus-4-1");
    assert!(!plan.to_value().to_string().contains(SECRET));
}

#[tokio::test]
async fn listing_failures_and_unusable_providers_are_skipped_with_reasons() {
    let mut h = Harness::new();
    h.lists
        .insert("anthropic".into(), Err("connection refused".into()));
    h.agent("deep", "model_role: [reasoning, general]\n");
    let (_, resolved) = h.spawn("deep", json!({})).await;
    assert_eq!(
        (resolved["provider"].as_str(), resolved["model"].as_str()),
        (Some("openai"), Some("gpt-4o"))
    );
    let reason = resolved["reason"].as_str().unwrap();
    assert!(
        reason.contains("anthropic claude-opus-*: cannot list models ("),
        "{reason}"
    );
    assert!(reason.contains("connection refused"), "{reason}");
    assert_eq!(h.list_calls("anthropic"), 2, "failures are not cached");

    let mut h = Harness::new();
    h.unbuildable.push("anthropic".into());
    h.agent("deep", "model_role: reasoning\nprovider_preferences: [{provider: anthropic, model: claude-opus-4-1}]\n");
    let (_, resolved) = h.spawn("deep", json!({})).await;
    assert_eq!(resolved["via"], "parent");
    let reason = resolved["reason"].as_str().unwrap();
    assert!(reason.starts_with("agent preferences: no preference available (anthropic/claude-opus-4-1: anthropic unavailable ("), "{reason}");
    assert!(reason.contains("no API key"), "{reason}");
}

#[tokio::test]
async fn config_routing_matrix_picks_a_user_matrix() {
    let mut h = Harness::new();
    let dir = h.fx.dir.path().join("amp/routing");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mine.yaml"),
        "name: mine\nroles:\n  general: {description: g, candidates: [{provider: openai, model: \"gpt-4o-*\"}]}\n  fast: {description: f, candidates: [{provider: openai, model: text-*}]}\n",
    )
    .unwrap();
    h.config
        .extra
        .insert("routing".into(), json!({"matrix": "mine"}));
    h.agent("quick", "model_role: fast\n");
    let (_, resolved) = h.spawn("quick", json!({})).await;
    assert_eq!(resolved["model"], "text-embedding-3-small");
    assert_eq!(
        h.engine().resolve_child_model("quick").await.unwrap().model,
        "text-embedding-3-small"
    );
    assert!(matches!(
        h.engine().resolve_child_model("nobody").await,
        Err(arbor::engine::EngineError::UnknownAgent { .. })
    ));
}

#[test]
fn every_real_amplifier_matrix_loads() {
    let Some(dir) = support::shared::fixtures("amplifier/routing") else {
        return;
    };
    let names = routing::available_matrices(&dir);
    assert!(names.len() >= 8, "{names:?}");
    for name in names {
        let m = routing::load_matrix(&dir, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.name, name);
        assert!(
            m.role("general").is_some() && m.role("fast").is_some(),
            "{name}"
        );
        assert!(
            m.origin.ends_with(&format!("{name}.yaml")),
            "{name}: {}",
            m.origin
        );
    }
    let balanced = routing::load_matrix(&dir, "balanced").unwrap();
    assert_eq!(balanced.known_roles()[..3], ["general", "fast", "coding"]);
}

#[test]
fn bad_matrices_fail_naming_file_and_role() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        std::fs::write(dir.path().join(format!("{name}.yaml")), text).unwrap()
    };
    write(
        "nofast",
        "roles:\n  general: {description: g, candidates: []}\n",
    );
    write(
        "nodesc",
        "roles:\n  general: {candidates: []}\n  fast: {description: f, candidates: [{provider: openai}]}\n",
    );
    write("broken", "roles: [\n");
    let err = |name: &str| {
        routing::load_matrix(dir.path(), name)
            .unwrap_err()
            .to_string()
    };
    let e = err("nofast");
    assert!(
        e.contains("nofast.yaml") && e.contains("required role 'fast' is missing"),
        "{e}"
    );
    let e = err("nodesc");
    assert!(e.contains("role 'general' is missing 'description'"), "{e}");
    assert!(
        e.contains("role 'fast': candidate 0: provider preference requires 'model' key"),
        "{e}"
    );
    assert!(err("broken").contains("broken.yaml: invalid YAML"));
    assert!(err("absent").starts_with(
        "unknown routing matrix 'absent' (available: balanced, broken, nodesc, nofast)"
    ));
}

#[tokio::test]
async fn a_real_loopback_server_serves_the_model_list_and_sees_the_routed_model() {
    let server = support::ScriptedServer::start(Arc::new(|body: Value| {
        Box::pin(async move {
            let system = body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let reply = if system == ROOT && support::last_role(&body) != "tool" {
                support::sse_tool_calls(&[(
                    "t1",
                    "task",
                    json!({"agent": "local", "instruction": "hi"}),
                )])
            } else {
                support::sse_text("done")
            };
            support::Reply::Sse(reply)
        })
    }));
    let h = Harness::new();
    h.agent(
        "local",
        "provider_preferences: [{provider: provider-openai, model: \"SCRIPTED-*\"}]\n",
    );
    let mut config = h.config.clone();
    config.providers = vec![ModuleEntry {
        module: "provider-openai".into(),
        config: json!({"base_url": server.base_url, "api_key": SECRET, "default_model": "root-model"}),
        ..Default::default()
    }];
    let (_tx, registry) = tokio::sync::watch::channel(h.fx.load_registry());
    let rt = Engine::interactive(RuntimeOptions {
        paths: h.fx.paths.clone(),
        config,
        bundle: h.fx.bundle.clone(),
        registry,
        env: env_of(h.fx.dir.path()),
        bus: EventBus::new(),
        approval_mode: ApprovalMode::Headless { yes: false },
    });
    let root = rt.create_root(None).unwrap();
    let out = rt.run_turn(&root, "go".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{out:?}");
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|b| b["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(models, ["root-model", "scripted-model", "root-model"]);
}
