//! Remote sub-sessions (issue 27) against local ones on the same machine, with the same
//! loopback stub provider: one root `Engine` in this process delegating through the
//! task tool, its children run either here (`local`) or by two real `arbor worker`
//! processes (`remote`, default slots = cores) through a NATS server started from
//! `scripts/nats-server` on loopback.
//!
//! Measured, each turn a new root session in a temp `AMPLIFIER_HOME`, turns started at
//! random gaps (uniform 0–20 ms, seed printed):
//! - spawn latency, both, one task call per turn: task calls handed out by the stub →
//!   the child's first model request at the stub (the same measure as
//!   `benches/spawn.rs`), p50/p95; for remote children split at the job's publish and
//!   the worker's lease, both seen by a core-NATS subscriber in this process
//!   (`arbor.jobs.>`, `$KV.arbor_leases.>`): root side, dispatch latency (publish →
//!   the worker took the session's lease: its fetch, the root's alive answer, the
//!   lease), worker side (its job setup up to the model request; its `Started` rides
//!   in the first pack, after the request);
//! - throughput, both: `THROUGHPUT_TASKS` trivial sub-sessions in one message, jobs/s
//!   from the task calls handed out to the root's request with all their results
//!   (median of the turns), and remote / local, with the CPU time (user + system,
//!   `/proc/<pid>/stat`) per job of this process (the root and the stub model), the
//!   workers and the NATS server over those turns; remote twice: with the workers'
//!   default slots, and with as many slots as children (local runs them all at once).
//!   The three are measured in rounds, one turn of each per round in a shuffled order
//!   (`jobs_per_sec`), so that each meets the same state of the machine and its file
//!   system;
//! - long answers, remote only (issue 38 item 8): `LONG_TASKS` sub-sessions in one
//!   message, each answering `LONG_WORDS` words streamed one word per SSE chunk with
//!   random gaps (uniform 0–`LONG_GAP_MS` ms), run by two workers of `LONG_SLOTS` slots
//!   (all at once): the lag from the stub writing a child's last chunk to the root's
//!   bus carrying that child's answer (`message:appended`), p50/p95/max over every
//!   child of `LONG_TURNS` turns, and the messages each child's worker published on
//!   `arbor.out.<child>` (median, max).
//!
//! The throughput rounds start after a pause ([`SETTLE`]), with nothing the bench made
//! deleted before its end (`Kept`: on this machine's ext4 without a journal, inodes
//! deleted minutes ago still slow every new file down), and run without the core-NATS
//! subscriber of the other two (a deployment has none; it would cost every job a parse
//! here and the server three more deliveries).
//!
//! Run: `cargo bench --bench remote` (installs the pinned NATS server into `target/`
//! on first use). Prints the figures as Markdown tables. With `REMOTE_BENCH_SPLIT=1`
//! this process (the root and the stub model) keeps core 0 and the NATS server and
//! workers get core 1 (`taskset`), as if the workers ran on other machines: local and
//! remote then both measure what one core of a root does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "remote/processes.rs"]
mod processes;
#[path = "common/server.rs"]
mod server;
#[path = "common/stats.rs"]
mod stats;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbor::agent::{Bundle, Registry};
use arbor::config::limits::Limits;
use arbor::config::remote::RemoteConfig;
use arbor::config::{ArborConfig, ModuleEntry, MountPlan};
use arbor::engine::providers::Env;
use arbor::engine::testing::Drive;
use arbor::engine::{ApprovalMode, Engine, RuntimeOptions};
use arbor::paths::Paths;
use arbor::session::{EngineEvent, EventBus, Message, SessionStatus};
use futures::StreamExt;
use processes::{Nats, Worker, cpu_of, pids_of, split};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

const ROOT: &str = "You are root.";
/// Turns of the latency measurement (one task call each).
const LATENCY_TURNS: usize = 40;
/// Sub-sessions per turn of the throughput measurement, and turns.
const THROUGHPUT_TASKS: usize = 48;
const THROUGHPUT_TURNS: usize = 10;
/// The pause before each throughput measurement. On an ext4 without a journal (this
/// machine's root file system) a new inode is searched past every inode of its group
/// deleted in the last 60 s, or 300 s while the inode's table block is dirty
/// (`recently_deleted`, `RECENTCY_MIN` / `RECENTCY_DIRTY` in Linux's
/// `fs/ext4/ialloc.c`): the pause lets the writeback (30 s) clean the blocks the turns
/// before dirtied. What those turns *deleted* would still cost the next measurement
/// for minutes, so nothing the bench made is deleted before its end ([`Kept`]); what
/// the measured turns themselves delete, every subject pays for alike (`jobs_per_sec`).
const SETTLE: Duration = Duration::from_secs(35);
/// `arbor worker` processes of the remote runs.
const WORKERS: usize = 2;
/// Sub-sessions per turn of the long-answers measurement, and turns.
const LONG_TASKS: usize = 16;
const LONG_TURNS: usize = 2;
/// Words of each long answer, one per SSE chunk.
const LONG_WORDS: usize = 3000;
/// The gap before each word is uniform in 0..LONG_GAP_MS ms (about 330 words/s).
const LONG_GAP_MS: u64 = 6;
/// Slots of each worker of the long-answers measurement (every child streams at once).
const LONG_SLOTS: usize = 8;

/// What the stub saw, stamped when a request had arrived whole.
#[derive(Default)]
struct Stamps {
    /// The stub handed out the root's task calls.
    calls_out: Option<Instant>,
    /// Each child's first model request.
    child_requests: Vec<Instant>,
    /// The root's request carrying the task results.
    results_in: Option<Instant>,
    /// Long answers: the stub wrote child `i`'s last chunk.
    streamed: HashMap<usize, Instant>,
    /// Long answers: the root's bus carried child `i`'s answer.
    answered: HashMap<usize, Instant>,
}

/// What the stub answers now: the root's task calls (`tasks` of them), and whether a
/// child answers at length.
#[derive(Clone, Copy)]
struct Mode {
    tasks: usize,
    long: bool,
}

type Clock = Arc<Mutex<Stamps>>;

/// What the core-NATS observer saw: job publishes and lease writes, by session, and
/// how many messages each session's worker published.
#[derive(Default)]
struct Wire {
    jobs: Vec<(String, Instant)>,
    leased: Vec<(String, Instant)>,
    published: HashMap<String, usize>,
}

fn main() {
    if split() {
        // Before any thread starts: every thread of this process inherits it.
        let mut core0 = nix::sched::CpuSet::new();
        core0.set(0).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &core0).unwrap();
        eprintln!("remote bench: this process on core 0, NATS and workers on core 1");
    }
    let nats = Nats::start();
    let clock = Clock::default();
    let mode = Arc::new(Mutex::new(Mode {
        tasks: 1,
        long: false,
    }));
    let seed: u64 = rand::random();
    eprintln!(
        "remote bench: gaps between turns uniform 0-20 ms, between long-answer words 0-{LONG_GAP_MS} ms, seed {seed}"
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let stub = stub(clock.clone(), mode.clone(), StdRng::seed_from_u64(seed ^ 1));
    let workers: Vec<Worker> = (0..WORKERS)
        .map(|_| Worker::start(&nats.url, &stub.base_url, None))
        .collect();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let wire = Arc::new(Mutex::new(Wire::default()));

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "\n| one sub-session | turns | task calls out → child's first model request | of which: calls out → job published (root) | job published → worker took its lease (dispatch) | lease → child's first model request (worker) |\n|---|---|---|---|---|---|"
    );
    let mut subjects = Vec::new();
    let mut kept = Kept::default();
    for remote in [false, true] {
        let (held, runtime) = root_runtime(&stub.base_url, remote.then_some(&nats.url[..]), &clock);
        let place = if remote {
            format!("remote ({WORKERS} workers × {cores} slots)")
        } else {
            "local".to_string()
        };
        // Latency: one task call per turn, the wire observed.
        let observer = tokio.block_on(observe(&nats.url, wire.clone()));
        mode.lock().unwrap().tasks = 1;
        run_turn(&tokio, &runtime); // warm-up: caches, first files, the consumer
        let mut spawn = Vec::new();
        let [mut root_side, mut dispatch, mut worker_side] = [(); 3].map(|_| Vec::new());
        for _ in 0..LATENCY_TURNS {
            std::thread::sleep(Duration::from_micros(rng.random_range(0..20_000)));
            *clock.lock().unwrap() = Stamps::default();
            *wire.lock().unwrap() = Wire::default();
            run_turn(&tokio, &runtime);
            let stamps = clock.lock().unwrap();
            let (out, first) = (stamps.calls_out.unwrap(), stamps.child_requests[0]);
            spawn.push(ms(first.duration_since(out)));
            if remote {
                let wire = wire.lock().unwrap();
                let (session, published) = wire.jobs.last().expect("a job published");
                let (_, leased) = wire
                    .leased
                    .iter()
                    .find(|(s, _)| s == session)
                    .expect("the job's lease");
                root_side.push(ms(published.duration_since(out)));
                dispatch.push(ms(leased.duration_since(*published)));
                worker_side.push(ms(first.duration_since(*leased)));
            }
        }
        let cell = |samples: &mut Vec<f64>| {
            if samples.is_empty() {
                return "–".to_string();
            }
            let (p50, p95) = stats::percentiles(samples);
            format!("{p50:.2} / {p95:.2} ms")
        };
        drop(observer);
        println!(
            "| {place} | {LATENCY_TURNS} | {} | {} | {} | {} |",
            cell(&mut spawn),
            cell(&mut root_side),
            cell(&mut dispatch),
            cell(&mut worker_side)
        );

        let pids = if remote {
            pids_of(&nats, &workers)
        } else {
            vec![std::process::id()]
        };
        subjects.push(Subject {
            place,
            runtime,
            pids,
        });
        kept.roots.push(held);
    }
    // The same with as many remote slots as children (local runs them all at once), on
    // a second server and root (its own connection).
    let nats_full = Nats::start();
    let slots = THROUGHPUT_TASKS / WORKERS;
    let workers_full: Vec<Worker> = (0..WORKERS)
        .map(|_| Worker::start(&nats_full.url, &stub.base_url, Some(slots)))
        .collect();
    let (held, runtime) = root_runtime(&stub.base_url, Some(&nats_full.url), &clock);
    kept.roots.push(held);
    mode.lock().unwrap().tasks = 1;
    run_turn(&tokio, &runtime); // warm-up
    subjects.push(Subject {
        place: format!("remote ({WORKERS} workers × {slots} slots)"),
        runtime,
        pids: pids_of(&nats_full, &workers_full),
    });
    // Throughput: THROUGHPUT_TASKS trivial sub-sessions in one message.
    let throughput = jobs_per_sec(&tokio, &subjects, (&clock, &mode), &mut rng);
    drop(subjects);
    kept.stop(workers);
    kept.stop(workers_full);
    drop(nats_full);
    println!(
        "\n| throughput: {THROUGHPUT_TASKS} trivial sub-sessions in one message | turns | jobs/s (median) | remote / local | CPU per job: this process (root, stub model) | workers | NATS server | total |\n|---|---|---|---|---|---|---|---|"
    );
    let local = throughput[0].1;
    for (place, rate, cpu) in &throughput {
        // The local turns ran in this process only: no workers, no server.
        let cpu = if cpu.len() == 1 {
            vec![cpu[0], 0.0, 0.0]
        } else {
            cpu.clone()
        };
        let (root, workers, nats) = (
            cpu[0],
            cpu[1..cpu.len() - 1].iter().sum::<f64>(),
            cpu[cpu.len() - 1],
        );
        println!(
            "| {place} | {THROUGHPUT_TURNS} | {rate:.1} | {:.2} | {root:.1} ms | {workers:.1} ms | {nats:.1} ms | {:.1} ms |",
            rate / local,
            root + workers + nats
        );
    }

    let _observer = tokio.block_on(observe(&nats.url, wire.clone()));
    long_answers(
        &tokio,
        (&nats.url, &stub.base_url),
        (&clock, &mode, &wire),
        &mut rng,
    );
}

/// One subject of the throughput measurement: a root and the processes whose CPU its
/// turns cost (this one first, then its workers and its NATS server).
struct Subject {
    place: String,
    runtime: Engine,
    pids: Vec<u32>,
}

/// For each of `subjects`, its name, its jobs per second over [`THROUGHPUT_TURNS`]
/// turns of [`THROUGHPUT_TASKS`] trivial sub-sessions in one message (the median of
/// its turns), and the CPU time (user + system) each of its pids spent per job over
/// its turns, in ms (clock ticks of 10 ms, read around each turn: within about 5% over
/// the turns).
///
/// The turns run in rounds, one of each subject per round in an order shuffled per
/// round, each after a random gap: every subject meets the same state of the machine
/// and file system, and each pays for the others' files as they pay for its own.
fn jobs_per_sec(
    tokio: &tokio::runtime::Runtime,
    subjects: &[Subject],
    (clock, mode): (&Clock, &Arc<Mutex<Mode>>),
    rng: &mut StdRng,
) -> Vec<(String, f64, Vec<f64>)> {
    mode.lock().unwrap().tasks = THROUGHPUT_TASKS;
    std::thread::sleep(SETTLE);
    let mut rates = vec![Vec::new(); subjects.len()];
    let mut spent: Vec<Vec<Duration>> = subjects
        .iter()
        .map(|s| vec![Duration::ZERO; s.pids.len()])
        .collect();
    let mut order: Vec<usize> = (0..subjects.len()).collect();
    for _ in 0..THROUGHPUT_TURNS {
        order.shuffle(rng);
        for &i in &order {
            let subject = &subjects[i];
            std::thread::sleep(Duration::from_micros(rng.random_range(0..20_000)));
            *clock.lock().unwrap() = Stamps::default();
            let before: Vec<Duration> = subject.pids.iter().map(|p| cpu_of(*p)).collect();
            run_turn(tokio, &subject.runtime);
            for ((spent, pid), before) in spent[i].iter_mut().zip(&subject.pids).zip(before) {
                *spent += cpu_of(*pid).saturating_sub(before);
            }
            let stamps = clock.lock().unwrap();
            assert_eq!(stamps.child_requests.len(), THROUGHPUT_TASKS);
            let took = stamps
                .results_in
                .unwrap()
                .duration_since(stamps.calls_out.unwrap());
            rates[i].push(THROUGHPUT_TASKS as f64 / took.as_secs_f64());
        }
    }
    let jobs = (THROUGHPUT_TASKS * THROUGHPUT_TURNS) as f64;
    subjects
        .iter()
        .zip(rates)
        .zip(spent)
        .map(|((subject, mut rates), spent)| {
            let per_job = spent.iter().map(|d| ms(*d) / jobs).collect();
            (
                subject.place.clone(),
                stats::percentiles(&mut rates).0,
                per_job,
            )
        })
        .collect()
}

/// The long-answers measurement (see the module doc), on two workers of
/// [`LONG_SLOTS`] slots started for it.
fn long_answers(
    tokio: &tokio::runtime::Runtime,
    (nats, base_url): (&str, &str),
    (clock, mode, wire): (&Clock, &Arc<Mutex<Mode>>, &Arc<Mutex<Wire>>),
    rng: &mut StdRng,
) {
    let workers: Vec<Worker> = (0..WORKERS)
        .map(|_| Worker::start(nats, base_url, Some(LONG_SLOTS)))
        .collect();
    let (_held, runtime) = root_runtime(base_url, Some(nats), clock);
    *mode.lock().unwrap() = Mode {
        tasks: LONG_TASKS,
        long: true,
    };
    let (mut lags, mut published) = (Vec::new(), Vec::new());
    for _ in 0..LONG_TURNS {
        std::thread::sleep(Duration::from_micros(rng.random_range(0..20_000)));
        *clock.lock().unwrap() = Stamps::default();
        *wire.lock().unwrap() = Wire::default();
        run_turn(tokio, &runtime);
        let stamps = clock.lock().unwrap();
        for i in 0..LONG_TASKS {
            let (streamed, answered) = (stamps.streamed[&i], stamps.answered[&i]);
            lags.push(ms(answered.saturating_duration_since(streamed)));
        }
        let wire = wire.lock().unwrap();
        let mut counts: Vec<f64> = wire.published.values().map(|n| *n as f64).collect();
        assert_eq!(counts.len(), LONG_TASKS, "one out subject per child");
        published.append(&mut counts);
    }
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let (lag_max, published_max) = (max(&lags), max(&published));
    let (p50, p95) = stats::percentiles(&mut lags);
    let (published_median, _) = stats::percentiles(&mut published);
    println!(
        "\n| long answers: {LONG_TASKS} remote sub-sessions × {LONG_WORDS} words ({WORKERS} workers × {LONG_SLOTS} slots) | turns | model finished → answer at the root p50 / p95 / max | messages per answer on arbor.out (median / max) |\n|---|---|---|---|"
    );
    println!(
        "| remote | {LONG_TURNS} | {p50:.1} / {p95:.1} / {lag_max:.1} ms | {published_median:.0} / {published_max:.0} |"
    );
    drop(workers);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Words of the long answers.
const VOCABULARY: [&str; 12] = [
    "tree", "session", "worker", "stream", "delta", "root", "answer", "lease", "epoch", "branch",
    "model", "turn",
];

/// The index `i` of a child's instruction `part <i>` in its chat request `body`.
fn part_of(body: &[u8]) -> usize {
    let text = String::from_utf8_lossy(body);
    let at = text
        .rfind("part ")
        .expect("a child's instruction names its part")
        + 5;
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// The stub provider: the root (system prompt [`ROOT`]) gets `mode.tasks` task calls,
/// then answers once the results are in; a child answers at once, or in long mode
/// streams `answer <i>:` and [`LONG_WORDS`] words with random gaps (from `rng`).
/// Stamps go to `clock`.
fn stub(clock: Clock, mode: Arc<Mutex<Mode>>, rng: StdRng) -> server::Server {
    let rng = Arc::new(Mutex::new(rng));
    server::Server::start(Arc::new(move |body| {
        let (system, last) = server::system_and_last_role(body);
        let mode = *mode.lock().unwrap();
        let mut stamps = clock.lock().unwrap();
        let reply = if !system.starts_with(ROOT) {
            stamps.child_requests.push(Instant::now());
            if mode.long {
                return long_answer(part_of(body), &clock, &mut rng.lock().unwrap());
            }
            server::text_body("child answer")
        } else if last == "tool" {
            stamps.results_in = Some(Instant::now());
            server::text_body("root done")
        } else {
            let calls: Vec<(String, String, Value)> = (0..mode.tasks)
                .map(|i| {
                    let args = json!({"agent": "helper", "instruction": format!("part {i}")});
                    (format!("t{i}"), "task".to_string(), args)
                })
                .collect();
            let body = server::tool_calls_body(&calls);
            stamps.calls_out = Some(Instant::now());
            body
        };
        server::Reply::whole(reply)
    }))
}

/// Child `i`'s long answer: one word per chunk after a random gap; its last chunk
/// written is stamped in `clock`.
fn long_answer(i: usize, clock: &Clock, rng: &mut StdRng) -> server::Reply {
    let words = (0..LONG_WORDS).map(|k| match k {
        0 => format!("answer {i}:"),
        _ => format!(" {}", VOCABULARY[k % VOCABULARY.len()]),
    });
    let chunks = server::text_pieces(words);
    let gaps = (0..chunks.len())
        .map(|_| Duration::from_micros(rng.random_range(0..LONG_GAP_MS * 1000)))
        .collect();
    let clock = clock.clone();
    server::Reply {
        chunks,
        gaps,
        finished: Some(Box::new(move || {
            clock.lock().unwrap().streamed.insert(i, Instant::now());
        })),
        ..Default::default()
    }
}

/// The index of a long answer (`answer <i>: …`).
fn answer_of(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("answer ")?;
    rest.split(':').next()?.parse().ok()
}

/// The bench's own core-NATS subscriber (see [`observe`]): its subscriptions end when
/// it is dropped, so that throughput measurements pay nothing for it (a deployment has
/// no such subscriber: it would cost the NATS server a delivery and this process a
/// parse of every job, lease and worker message).
struct Observer(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Observer {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Subscribes (core NATS) to job publishes, lease writes and workers' messages,
/// stamping each arrival, until the [`Observer`] is dropped.
async fn observe(url: &str, wire: Arc<Mutex<Wire>>) -> Observer {
    let client = async_nats::connect(url).await.unwrap();
    let mut jobs = client.subscribe("arbor.jobs.>").await.unwrap();
    let mut out = client.subscribe("arbor.out.>").await.unwrap();
    let mut leases = client.subscribe("$KV.arbor_leases.>").await.unwrap();
    let w = wire.clone();
    let l = wire.clone();
    let leased = tokio::spawn(async move {
        while let Some(msg) = leases.next().await {
            let at = Instant::now();
            let session = msg.subject.as_str().trim_start_matches("$KV.arbor_leases.");
            l.lock().unwrap().leased.push((session.to_string(), at));
        }
    });
    let published = tokio::spawn(async move {
        while let Some(msg) = jobs.next().await {
            let at = Instant::now();
            let job: Value = serde_json::from_slice(&msg.payload).unwrap_or(Value::Null);
            let session = job["session_id"].as_str().unwrap_or_default().to_string();
            w.lock().unwrap().jobs.push((session, at));
        }
    });
    let outs = tokio::spawn(async move {
        while let Some(msg) = out.next().await {
            let session = msg.subject.as_str().trim_start_matches("arbor.out.");
            let mut wire = wire.lock().unwrap();
            *wire.published.entry(session.to_string()).or_default() += 1;
        }
    });
    // The subscriptions are registered once the server has answered a round trip.
    client.flush().await.unwrap();
    // The connection lives as long as the subscriptions (each holds a handle of it).
    drop(client);
    Observer(vec![leased, published, outs])
}

/// What must outlive a runtime built by [`root_runtime`].
struct Held {
    _dir: tempfile::TempDir,
    _registry: tokio::sync::watch::Sender<Arc<Registry>>,
}

/// What the bench made, deleted only at its end (see [`SETTLE`]): the roots' homes
/// and stores, and the stopped workers' directories.
#[derive(Default)]
struct Kept {
    roots: Vec<Held>,
    workers: Vec<tempfile::TempDir>,
}

impl Kept {
    /// Kills `workers` (as dropping them does) and keeps their directories.
    fn stop(&mut self, workers: Vec<Worker>) {
        self.workers.extend(workers.into_iter().map(Worker::stop));
    }
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

/// A root runtime in a temp project: the user agent `helper`, a task tool allowing
/// `THROUGHPUT_TASKS` parallel calls, `provider-openai` at `base_url`, and with `nats`
/// config `remote: {agents: all}` (every child runs on a worker). A long answer on its
/// bus (`message:appended`) is stamped in `clock`.
fn root_runtime(base_url: &str, nats: Option<&str>, clock: &Clock) -> (Held, Engine) {
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
            "tools": [{"module": "tool-task", "config": {"max_parallel": THROUGHPUT_TASKS, "max_recursion_depth": 1}}],
            "agents": "all",
        })),
        agent_files: Vec::new(),
        warnings: Vec::new(),
    };
    let registry = Arc::new(Registry::load_with_vars(&paths, &bundle, &[]));
    let remote = nats.map(|url| {
        serde_json::from_value::<RemoteConfig>(json!({"nats_url": url, "agents": "all"})).unwrap()
    });
    let config = ArborConfig {
        providers: vec![ModuleEntry {
            module: "provider-openai".into(),
            config: json!({"api_key": "local", "base_url": base_url, "default_model": "scripted-model"}),
            ..Default::default()
        }],
        limits: Limits {
            max_sessions_per_tree: 10_000,
            max_concurrent_sub_sessions: 1000,
        },
        remote,
        ..Default::default()
    };
    let (tx, rx) = tokio::sync::watch::channel(registry);
    let bus = EventBus::new();
    let clock = clock.clone();
    bus.subscribe_with(move |event| {
        if let EngineEvent::MessageAppended(appended) = &event.msg
            && let Message::Assistant(answer) = &appended.message
            && let Some(i) = answer_of(&answer.text())
        {
            clock.lock().unwrap().answered.insert(i, Instant::now());
        }
        true
    });
    let options = RuntimeOptions {
        paths,
        config,
        bundle,
        registry: rx,
        env,
        bus,
        approval_mode: ApprovalMode::Headless { yes: false },
    };
    let held = Held {
        _dir: dir,
        _registry: tx,
    };
    (held, Engine::builder(options).build())
}

/// Runs one root turn on `runtime` and checks it completed.
fn run_turn(tokio: &tokio::runtime::Runtime, runtime: &Engine) {
    tokio.block_on(async {
        let id = runtime.create_root(None).unwrap();
        let out = runtime.run_turn(&id, "go".into()).await.unwrap();
        assert_eq!(out.status, SessionStatus::Completed, "{:?}", out.error);
    });
}
