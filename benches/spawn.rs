//! Spawn overhead and parallel sub-sessions (SPEC §16): one root turn whose first
//! model reply calls `task` N times in one message (`max_parallel` 128), each child
//! answering with text, then the root answering. Each iteration is a new root session
//! in a temp `AMPLIFIER_HOME` (every session written to disk as in real use).
//!
//! Two providers: `scripted` (`engine::testing::ScriptedProvider`: engine, task tool
//! and store cost only) and `stub_server` (the real OpenAI client against a loopback
//! stub server: adds HTTP + SSE). `tasks = 0` is the same turn with no delegation.
//!
//! The divan benches time whole turns. Spawn overhead is measured apart, after them:
//! from the moment the provider hands out the root's reply with the task calls to the
//! moment each sub-session's first model request reaches the provider (task tool,
//! spawn — merged mount plan, session created on disk, events — and the child's
//! request built), `SPAWN_RUNS` turns per case started at random gaps (seed printed),
//! p50/p95 over sub-sessions.
//! Run: `cargo bench --bench spawn`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/server.rs"]
mod server;
#[path = "common/stats.rs"]
mod stats;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbor::agent::Bundle;
use arbor::agent::Registry;
use arbor::config::limits::Limits;
use arbor::config::{ArborConfig, ModuleEntry, MountPlan};
use arbor::engine::providers::Env;
use arbor::engine::testing::{Drive, ScriptedProvider, Step, after_tool_results};
use arbor::engine::{ApprovalMode, Engine, RuntimeHooks, RuntimeOptions};
use arbor::paths::Paths;
use arbor::session::{EventBus, SessionStatus};
use divan::Bencher;
use divan::counter::ItemsCount;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

const ROOT: &str = "You are root.";
const ARGS: [usize; 3] = [0, 1, 100];

/// Turns per case of the spawn-overhead measurement: (sub-sessions, turns).
const SPAWN_RUNS: [(usize, usize); 2] = [(1, 30), (100, 5)];

fn main() {
    divan::main();
    spawn_overhead();
}

/// When the provider handed out the root's task calls, and when each sub-session's
/// first request arrived.
#[derive(Default)]
struct Stamps {
    calls_out: Option<Instant>,
    child_requests: Vec<Instant>,
}

type Clock = Arc<Mutex<Stamps>>;

struct Setup {
    held: Held,
    options: RuntimeOptions,
}

/// What must outlive a runtime built from a [`Setup`].
struct Held {
    _dir: tempfile::TempDir,
    /// Keeps the (never changing) registry channel open.
    _registry: tokio::sync::watch::Sender<Arc<Registry>>,
}

fn env_of(root: &Path) -> Env {
    let root = root.to_path_buf();
    Arc::new(move |k: &str| match k {
        "HOME" => Some(root.join("home").display().to_string()),
        "AMPLIFIER_HOME" => Some(root.join("amp").display().to_string()),
        "ARBOR_CONFIG" => Some(root.join("config.yaml").display().to_string()),
        _ => None,
    })
}

/// A temp project with the user agent `helper`, a bundle whose task tool allows 128
/// parallel calls, `provider-openai` at `base_url`, and tree limits raised so a root
/// with 100 sub-sessions, all running at once, is allowed (the defaults are 100
/// sessions per tree, root included, and 32 running sub-sessions).
fn setup(base_url: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["home", "amp/agents", "work"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(
        root.join("amp/agents/helper.md"),
        "---\nmeta:\n  name: helper\n  description: Answers briefly.\n---\nYou are helper.\n",
    )
    .unwrap();
    let env = env_of(root);
    let paths = Paths::from_env_map(&*env, root.join("work"));
    let bundle = Bundle {
        name: "bench".into(),
        version: None,
        description: None,
        path: None,
        mount_plan: MountPlan::from_value(json!({
            "instruction": ROOT,
            "tools": [{"module": "tool-task", "config": {"max_parallel": 128, "max_recursion_depth": 1}}],
            "agents": "all",
        })),
        agent_files: Vec::new(),
        warnings: Vec::new(),
    };
    let registry = Arc::new(Registry::load_with_vars(&paths, &bundle, &[]));
    assert!(registry.agents().iter().any(|a| a.name == "helper"));
    let config = ArborConfig {
        providers: vec![ModuleEntry {
            module: "provider-openai".into(),
            config: json!({"api_key": "local", "base_url": base_url, "default_model": "scripted-model"}),
            ..Default::default()
        }],
        limits: Limits {
            max_sessions_per_tree: 1000,
            max_concurrent_sub_sessions: 1000,
        },
        ..Default::default()
    };
    let (tx, rx) = tokio::sync::watch::channel(registry);
    Setup {
        options: RuntimeOptions {
            paths,
            config,
            bundle,
            registry: rx,
            env,
            bus: EventBus::new(),
            approval_mode: ApprovalMode::Headless { yes: false },
        },
        held: Held {
            _dir: dir,
            _registry: tx,
        },
    }
}

fn task_calls(n: usize) -> Vec<(String, String, serde_json::Value)> {
    (0..n)
        .map(|i| {
            let args = json!({"agent": "helper", "instruction": format!("part {i}")});
            (format!("t{i}"), "task".to_string(), args)
        })
        .collect()
}

/// Runs one root turn on `runtime` in `tokio` and checks it completed.
fn run_turn(tokio: &tokio::runtime::Runtime, runtime: &Engine) {
    tokio.block_on(async {
        let id = runtime.create_root(None).unwrap();
        let out = runtime.run_turn(&id, "go".into()).await.unwrap();
        assert_eq!(out.status, SessionStatus::Completed, "{:?}", out.error);
    });
}

/// Counts sub-sessions (so divan also reports them per second) when there are any.
fn per_task<'a, 'b>(bencher: Bencher<'a, 'b>, tasks: usize) -> Bencher<'a, 'b> {
    if tasks == 0 {
        bencher
    } else {
        bencher.counter(ItemsCount::new(tasks))
    }
}

fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A runtime on the scripted provider (engine cost only: it answers at once) whose
/// root delegates `tasks` calls; stamps go to `clock`. Keep the [`Held`] alive while
/// the runtime runs.
fn scripted_runtime(tasks: usize, clock: Clock) -> (Held, Engine) {
    let calls = task_calls(tasks);
    let provider = ScriptedProvider::new(move |r| {
        let mut stamps = clock.lock().unwrap();
        if r.system != ROOT {
            stamps.child_requests.push(Instant::now());
            vec![Step::text("child answer")]
        } else if after_tool_results(r) || calls.is_empty() {
            vec![Step::text("root done")]
        } else {
            stamps.calls_out = Some(Instant::now());
            calls
                .iter()
                .map(|(id, name, args)| Step::call(id.clone(), name.clone(), args.clone()))
                .collect()
        }
    });
    let setup = setup("http://127.0.0.1:9/v1");
    let hooks = RuntimeHooks {
        provider_factory: Some(provider.factory()),
        extra_tools: Vec::new(),
    };
    (
        setup.held,
        Engine::builder(setup.options).hooks(hooks).build(),
    )
}

/// A runtime on the real OpenAI client against a loopback stub server (HTTP + SSE
/// included) whose root delegates `tasks` calls; stamps go to `clock` (taken when a
/// request has arrived whole and when the reply is handed to the socket).
fn stub_server_runtime(tasks: usize, clock: Clock) -> (Held, Engine) {
    let calls = task_calls(tasks);
    let server = server::Server::start(Arc::new(move |body| {
        let (system, last) = server::system_and_last_role(body);
        let mut stamps = clock.lock().unwrap();
        let reply = if !system.starts_with(ROOT) {
            stamps.child_requests.push(Instant::now());
            server::text_body("child answer")
        } else if last == "tool" || calls.is_empty() {
            server::text_body("root done")
        } else {
            let body = server::tool_calls_body(&calls);
            stamps.calls_out = Some(Instant::now());
            body
        };
        server::Reply::whole(reply)
    }));
    let setup = setup(&server.base_url);
    (setup.held, Engine::builder(setup.options).build())
}

/// Engine cost only: the scripted provider answers at once.
#[divan::bench(args = ARGS, sample_count = 10)]
fn scripted(bencher: Bencher, tasks: usize) {
    let (_held, runtime) = scripted_runtime(tasks, Clock::default());
    let tokio = tokio_rt();
    per_task(bencher, tasks).bench_local(|| run_turn(&tokio, &runtime));
}

/// The real OpenAI client against a loopback stub server (HTTP + SSE included).
#[divan::bench(args = ARGS, sample_count = 10)]
fn stub_server(bencher: Bencher, tasks: usize) {
    let (_held, runtime) = stub_server_runtime(tasks, Clock::default());
    let tokio = tokio_rt();
    per_task(bencher, tasks).bench_local(|| run_turn(&tokio, &runtime));
}

/// Spawn overhead apart from the turn (see the module docs), printed as a table.
fn spawn_overhead() {
    type Build = fn(usize, Clock) -> (Held, Engine);
    let providers: [(&str, Build); 2] = [
        ("scripted", scripted_runtime),
        ("stub_server", stub_server_runtime),
    ];
    println!(
        "\n| spawn overhead: task calls handed out → sub-session's first model request | sub-sessions | turns | p50 | p95 | last one started (median) |\n|---|---|---|---|---|---|"
    );
    let tokio = tokio_rt();
    // Turns start at random gaps (uniform 0–20 ms), not back to back: a spawn right
    // after the previous turn's files would find the disk's caches warm.
    let seed: u64 = rand::random();
    eprintln!("spawn overhead: gaps between turns uniform 0-20 ms, seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    for (name, build) in providers {
        for (tasks, turns) in SPAWN_RUNS {
            let clock = Clock::default();
            let (_held, runtime) = build(tasks, clock.clone());
            run_turn(&tokio, &runtime); // warm-up: caches, first files
            let mut each = Vec::new();
            let mut last = Vec::new();
            for _ in 0..turns {
                std::thread::sleep(Duration::from_micros(rng.random_range(0..20_000)));
                *clock.lock().unwrap() = Stamps::default();
                run_turn(&tokio, &runtime);
                let stamps = clock.lock().unwrap();
                let out = stamps.calls_out.unwrap();
                assert_eq!(stamps.child_requests.len(), tasks);
                let ms: Vec<f64> = stamps
                    .child_requests
                    .iter()
                    .map(|t| t.duration_since(out).as_secs_f64() * 1e3)
                    .collect();
                last.push(ms.iter().copied().fold(0.0, f64::max));
                each.extend(ms);
            }
            let (p50, p95) = stats::percentiles(&mut each);
            let (last, _) = stats::percentiles(&mut last);
            println!("| {name} | {tasks} | {turns} | {p50:.2} ms | {p95:.2} ms | {last:.2} ms |");
        }
    }
}
