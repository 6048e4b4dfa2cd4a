//! Shared fixture of the engine integration tests (`engine`, `engine_delegation`
//! and the other in-process ones): a temp project with `HOME`, `AMPLIFIER_HOME` and
//! `ARBOR_CONFIG` inside it, user agent files, a test bundle, a config with a secret
//! key, and an engine wired to a scripted provider. Nothing touches the real home.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arbor::agent::Bundle;
use arbor::agent::Registry;
use arbor::agent::registry::RegistryHandle;
use arbor::config::{ArborConfig, ModuleEntry, MountPlan};
use arbor::engine::providers::Env;
use arbor::engine::testing::{ScriptedProvider, Step, after_tool_results};
use arbor::engine::{ApprovalMode, Engine, RuntimeHooks, RuntimeOptions};
use arbor::paths::Paths;
use arbor::provider::ChatRequest;
use arbor::session::{Event, EventBus};
use arbor::tool::Tool;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

pub const SECRET: &str = "sk-test-SECRET-0123456789";
pub const ROOT: &str = "You are root.";
pub const HELPER: &str = "You are helper.";
pub const GUARD: Duration = Duration::from_secs(20);

pub type Script = dyn Fn(&ChatRequest) -> Vec<Step> + Send + Sync;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub paths: Paths,
    pub bundle: Bundle,
    pub config: ArborConfig,
    pub registry: Arc<Registry>,
    pub provider: ScriptedProvider,
}

pub fn plan(extra: Value) -> Value {
    let mut plan = json!({
        "instruction": ROOT,
        "tools": [{"module": "tool-filesystem"}, {"module": "tool-search"}, {"module": "tool-task"}],
        "agents": "all",
    });
    if let (Value::Object(p), Value::Object(e)) = (&mut plan, extra) {
        p.extend(e);
    }
    plan
}

impl Fixture {
    /// A project with `agents` (`(name, instruction)`) in the user agents dir and the
    /// bundle `test-bundle` with mount plan `plan`.
    pub fn new(
        plan: Value,
        agents: &[(&str, &str)],
        script: impl Fn(&ChatRequest) -> Vec<Step> + Send + Sync + 'static,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for sub in ["home", "amp/agents", "work"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("work/inside.txt"), "inside\n").unwrap();
        std::fs::write(root.join("outside.txt"), "outside\n").unwrap();
        for (name, instruction) in agents {
            write_agent(&root, name, instruction);
        }
        let env = env_of(&root);
        let paths = Paths::from_env_map(&*env, root.join("work"));
        let bundle = Bundle {
            name: "test-bundle".into(),
            version: None,
            description: None,
            path: None,
            mount_plan: MountPlan::from_value(plan),
            agent_files: Vec::new(),
            warnings: Vec::new(),
        };
        let config = ArborConfig {
            providers: vec![ModuleEntry {
                module: "provider-openai".into(),
                config: json!({"api_key": SECRET, "base_url": "http://127.0.0.1:9/v1"}),
                ..Default::default()
            }],
            ..Default::default()
        };
        let registry = Arc::new(Registry::load_with_vars(&paths, &bundle, &[]));
        let script: Arc<Script> = Arc::new(script);
        let provider = ScriptedProvider::new(move |r| script(r));
        Self {
            dir,
            paths,
            bundle,
            config,
            registry,
            provider,
        }
    }

    /// A fresh engine over the same disk (a new process, as far as the store knows).
    pub fn engine(&self) -> Engine {
        self.engine_with(Vec::new())
    }

    pub fn engine_with(&self, extra_tools: Vec<Arc<dyn Tool>>) -> Engine {
        // A registry that never changes: the receiver keeps the last value.
        let (_tx, rx) = tokio::sync::watch::channel(self.registry.clone());
        self.engine_on(rx, extra_tools)
    }

    /// An engine reading the registry from `registry` (a test may send new ones).
    /// Tool calls that need approval are granted as with `--yes` (policy denials
    /// hold); see [`Fixture::engine_in`] for another mode.
    pub fn engine_on(&self, registry: RegistryHandle, extra_tools: Vec<Arc<dyn Tool>>) -> Engine {
        let hooks = RuntimeHooks {
            provider_factory: Some(self.provider.factory()),
            extra_tools,
        };
        self.engine_in(ApprovalMode::Headless { yes: true }, registry, hooks)
    }

    /// An engine over this project with `hooks` instead of the scripted provider (no
    /// factory: the real provider clients of `config`). Approvals as in
    /// [`Fixture::engine_on`].
    pub fn engine_with_hooks(&self, registry: RegistryHandle, hooks: RuntimeHooks) -> Engine {
        self.engine_in(ApprovalMode::Headless { yes: true }, registry, hooks)
    }

    /// An engine over the fixture's registry and scripted provider answering
    /// approvals in `mode`.
    pub fn engine_mode(&self, mode: ApprovalMode) -> Engine {
        let (_tx, rx) = tokio::sync::watch::channel(self.registry.clone());
        let hooks = RuntimeHooks {
            provider_factory: Some(self.provider.factory()),
            extra_tools: Vec::new(),
        };
        self.engine_in(mode, rx, hooks)
    }

    /// An engine answering approvals in `mode`, with `hooks`.
    pub fn engine_in(
        &self,
        mode: ApprovalMode,
        registry: RegistryHandle,
        hooks: RuntimeHooks,
    ) -> Engine {
        let options = RuntimeOptions {
            paths: self.paths.clone(),
            config: self.config.clone(),
            bundle: self.bundle.clone(),
            registry,
            env: env_of(self.dir.path()),
            bus: EventBus::new(),
            approval_mode: mode,
        };
        Engine::builder(options).hooks(hooks).build()
    }

    /// Writes a user agent file `name` with `instruction`.
    pub fn write_agent(&self, name: &str, instruction: &str) {
        write_agent(self.dir.path(), name, instruction);
    }

    /// The registry as it is on disk now.
    pub fn load_registry(&self) -> Arc<Registry> {
        Arc::new(Registry::load_with_vars(&self.paths, &self.bundle, &[]))
    }

    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.paths.sessions_dir().join(id)
    }

    pub fn lines(&self, id: &str, file: &str) -> Vec<Value> {
        std::fs::read_to_string(self.session_dir(id).join(file))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub fn transcript(&self, id: &str) -> Vec<Value> {
        self.lines(id, "transcript.jsonl")
    }

    pub fn logged_events(&self, id: &str) -> Vec<String> {
        self.lines(id, "events.jsonl")
            .iter()
            .map(|e| e["event"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn metadata(&self, id: &str) -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(self.session_dir(id).join("metadata.json")).unwrap(),
        )
        .unwrap()
    }

    /// Every file of every session, concatenated (for secret scans).
    pub fn all_session_text(&self) -> String {
        let mut out = String::new();
        for dir in std::fs::read_dir(self.paths.sessions_dir()).unwrap() {
            for file in std::fs::read_dir(dir.unwrap().path()).unwrap() {
                out.push_str(&std::fs::read_to_string(file.unwrap().path()).unwrap_or_default());
            }
        }
        out
    }
}

fn write_agent(root: &Path, name: &str, instruction: &str) {
    let text = format!(
        "---\nmeta:\n  name: {name}\n  description: The {name} agent.\n---\n{instruction}\n"
    );
    std::fs::write(root.join(format!("amp/agents/{name}.md")), text).unwrap();
}

pub fn env_of(root: &Path) -> Env {
    let root = root.to_path_buf();
    Arc::new(move |k: &str| match k {
        "HOME" => Some(root.join("home").display().to_string()),
        "AMPLIFIER_HOME" => Some(root.join("amp").display().to_string()),
        "ARBOR_CONFIG" => Some(root.join("config.yaml").display().to_string()),
        _ => None,
    })
}

pub fn drain(rx: &mut UnboundedReceiver<Arc<Event>>) -> Vec<Arc<Event>> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// The event's `data` as `--output-format jsonl` writes it (its wire keys).
pub fn data(event: &Event) -> Value {
    serde_json::to_value(event).unwrap()["data"].take()
}

pub fn find<'a>(events: &'a [Arc<Event>], name: &str, session: &str) -> Vec<&'a Arc<Event>> {
    events
        .iter()
        .filter(|e| e.msg.name() == name && e.session_id == session)
        .collect()
}

pub fn position(events: &[Arc<Event>], name: &str, session: &str) -> usize {
    events
        .iter()
        .position(|e| e.msg.name() == name && e.session_id == session)
        .unwrap_or_else(|| panic!("no {name} on {session}"))
}

pub fn is_root(r: &ChatRequest) -> bool {
    r.system == ROOT
}

pub fn tool_names(r: &ChatRequest) -> Vec<String> {
    r.tools.iter().map(|t| t.name.clone()).collect()
}

/// Root delegates `args` once, then answers `root done`; the helper answers `helper`.
pub fn delegating(
    args: Value,
    helper: Vec<Step>,
) -> impl Fn(&ChatRequest) -> Vec<Step> + Send + Sync {
    move |r| {
        if is_root(r) {
            if after_tool_results(r) {
                vec![Step::text("root done")]
            } else {
                vec![Step::call("t1", "task", args.clone())]
            }
        } else {
            helper.clone()
        }
    }
}

/// Two `task` calls in one message: `t1` and `t2`, both to `helper`, with the
/// instructions `one` and `two`.
pub fn two_helper_calls() -> Vec<Step> {
    vec![
        Step::call(
            "t1",
            "task",
            json!({"agent": "helper", "instruction": "one"}),
        ),
        Step::call(
            "t2",
            "task",
            json!({"agent": "helper", "instruction": "two"}),
        ),
    ]
}

pub fn tool_result(transcript: &[Value], call_id: &str) -> Value {
    transcript
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .cloned()
        .unwrap()
}

/// The result JSON of task call `call_id` in `transcript` (`{response, session_id,
/// agent, status, turn_count, error?}`).
pub fn task_result(transcript: &[Value], call_id: &str) -> Value {
    serde_json::from_str(
        tool_result(transcript, call_id)["content"]
            .as_str()
            .unwrap(),
    )
    .unwrap()
}
