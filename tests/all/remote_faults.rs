//! Remote sub-sessions when the NATS server fails them (issue 38 items 3, 9), through
//! the real binaries: a NATS server (`support::nats`), real `arbor worker`s
//! (`support::worker_proc`) and headless roots (`arbor run`).
//!
//! `cluster`: a 3-node cluster at three replicas whose lease stream leader is killed
//! and another node frozen mid-run; every child completes, no current holder refused.
//!
//! `dead_root`: a root killed with its children queued — their instructions are in
//! its store, `session continue --tree` runs each on its own, and no worker runs the
//! dead root's jobs.
//!
//! `stale_clone`: a worker whose clone lacks the commit hands its jobs back; the
//! pool's up-to-date worker runs them.
//!
//! `lost_store`: the server restarted on an empty store (replaced, or a fresh volume)
//! — a running child fails with an error that says so and `arbor run` ends; a queued
//! child's job is published again and runs; the same worker takes the next run's jobs.

mod cluster;
mod dead_root;
mod lost_store;
mod stale_clone;

use std::process::{Child, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// The agent the roots delegate to, marked remote in their config.
pub(crate) const AGENT: &str = "fault-helper";

/// A root model: a `task` call to [`AGENT`], then "parent saw: <tool result>".
pub(crate) fn root_model() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        let reply = delegating_reply(&body, AGENT, "Answer the question");
        Box::pin(async move { reply })
    }))
}

/// A root model: `n` `task` calls to [`AGENT`] in one message (`Part 1` … `Part n`),
/// then `summary` once their results are in.
pub(crate) fn parts_model(n: usize, summary: &'static str) -> ScriptedServer {
    ScriptedServer::start(Arc::new(move |body: Value| {
        let reply = if last_role(&body) == "tool" {
            Reply::Sse(sse_text(summary))
        } else {
            let args: Vec<(String, Value)> = (1..=n)
                .map(|i| {
                    (
                        format!("t{i}"),
                        json!({"agent": AGENT, "instruction": format!("Part {i}")}),
                    )
                })
                .collect();
            Reply::Sse(sse_task_calls(&args))
        };
        Box::pin(async move { reply })
    }))
}

/// A worker's model that answers `answer`, each answer waiting until `gate` is open.
pub(crate) fn gated_model(answer: &'static str, gate: Arc<AtomicBool>) -> ScriptedServer {
    ScriptedServer::start(Arc::new(move |_body: Value| {
        let gate = gate.clone();
        Box::pin(async move {
            let deadline = Instant::now() + Duration::from_secs(90);
            while !gate.load(Ordering::SeqCst) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Reply::Sse(sse_text(answer))
        })
    }))
}

/// A root's environment: provider at `base_url`, `remote:` at `url`, pool `pool`, for
/// [`AGENT`] (ack wait 5 s).
pub(crate) fn root_env(base_url: &str, url: &str, pool: &str) -> TestEnv {
    let env = TestEnv::new();
    env.use_openai(base_url, "sk-root-faults");
    env.append_config(&format!(
        "remote:\n  nats_url: \"{url}\"\n  pool: {pool}\n  agents: [{AGENT}]\n  ack_wait: 5\n"
    ));
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join(format!("{AGENT}.md")),
        format!("---\nmeta:\n  name: {AGENT}\n  description: Answers.\n---\nYou are {AGENT}.\n"),
    )
    .unwrap();
    env
}

/// `arbor run --yes PROMPT` started in the background, output piped.
pub(crate) fn spawn_run(env: &TestEnv, prompt: &str) -> Child {
    spawn_arbor(env, &["run", "--yes", prompt])
}

/// `arbor ARGS` started in the background, output piped.
pub(crate) fn spawn_arbor(env: &TestEnv, args: &[&str]) -> Child {
    env.std_cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits up to `secs` for `run` to exit (killing it past that, and failing with
/// `context`); its output.
pub(crate) fn finish(mut run: Child, secs: u64, context: impl Fn() -> String) -> Output {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while run.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = run.kill();
            let out = run.wait_with_output().unwrap();
            panic!(
                "the root did not end within {secs} s:\nstdout:\n{}\nstderr:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                context()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    run.wait_with_output().unwrap()
}

/// Waits up to `secs` until `ready()`; fails with `what` and `context()` otherwise.
pub(crate) fn wait_until(
    secs: u64,
    what: &str,
    context: impl Fn() -> String,
    ready: impl Fn() -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ready() {
        assert!(Instant::now() < deadline, "{what}:\n{}", context());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The id of the one root session (no `parent_id`) in `env`'s store.
pub(crate) fn root_session_of(env: &TestEnv) -> String {
    env.session_dirs("")
        .into_iter()
        .filter_map(|dir| {
            let meta: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("metadata.json")).ok()?)
                    .ok()?;
            meta["parent_id"]
                .is_null()
                .then(|| meta["session_id"].as_str().map(str::to_string))?
        })
        .next()
        .expect("the root session")
}

/// An `arbor` process's log (`$HOME/.local/state/arbor/arbor.log`).
pub(crate) fn log_of(env: &TestEnv) -> String {
    std::fs::read_to_string(env.home.join(".local/state/arbor/arbor.log")).unwrap_or_default()
}
