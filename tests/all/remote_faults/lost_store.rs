//! A server restarted on an empty store, mid-run (issue 38 item 3).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use crate::support::nats::NatsServer;
use crate::support::worker_proc::WorkerProc;

#[test]
fn a_server_that_lost_its_store_fails_the_running_child_republishes_the_queued_one_and_keeps_its_workers()
 {
    let Some(mut nats) = NatsServer::start() else {
        return;
    };
    let gate = Arc::new(AtomicBool::new(false));
    let worker_model = gated_model("ANSWER-FROM-W1", gate.clone());
    let mut w1 = WorkerProc::start(&nats.url, &worker_model.base_url, &[]);

    // 1. A child running on w1 when the store is lost: it fails, saying so, and the
    //    root ends.
    let model = root_model();
    let root = root_env(&model.base_url, &nats.url, "default");
    let run = spawn_run(&root, "Delegate once");
    wait_until(
        60,
        "the worker's model was never asked",
        || w1.output(),
        || !worker_model.requests().is_empty(),
    );
    nats.restart_empty();
    gate.store(true, Ordering::SeqCst);
    let out = finish(run, 90, || {
        format!("worker:\n{}\nroot log:\n{}", w1.output(), log_of(&root))
    });
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let told: String = model.requests().iter().map(|r| r.to_string()).collect();
    assert!(
        told.contains("lost its store"),
        "the parent was not told: {told}\nstderr:\n{stderr}"
    );
    assert!(stderr.contains("lost its store"), "{stderr}");

    // 2. The same worker takes the next run's job.
    w1.wait_for("recreated", 30);
    let next_model = root_model();
    let second_env = root_env(&next_model.base_url, &nats.url, "default");
    let out = finish(spawn_run(&second_env, "Delegate again"), 90, || {
        format!(
            "worker:\n{}\nroot log:\n{}",
            w1.output(),
            log_of(&second_env)
        )
    });
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        stdout.contains("ANSWER-FROM-W1"),
        "{stdout}\n{}\nworker:\n{}",
        String::from_utf8_lossy(&out.stderr),
        w1.output()
    );

    // 3. A child still queued when the store is lost: its job is published again and
    //    a worker that joins later runs it.
    let queued_model = root_model();
    let third = root_env(&queued_model.base_url, &nats.url, "later");
    let run = spawn_run(&third, "Delegate to a pool with no worker yet");
    wait_until(
        60,
        "the job was never dispatched",
        || log_of(&third),
        || log_of(&third).contains("remote sub-session dispatched"),
    );
    nats.restart_empty();
    let w2_model = gated_model("ANSWER-FROM-W2", Arc::new(AtomicBool::new(true)));
    let w2 = WorkerProc::start(&nats.url, &w2_model.base_url, &["--pool", "later"]);
    let out = finish(run, 90, || {
        format!("worker 2:\n{}\nroot log:\n{}", w2.output(), log_of(&third))
    });
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        stdout.contains("ANSWER-FROM-W2"),
        "{stdout}\n{stderr}\nworker 2:\n{}",
        w2.output()
    );
    assert!(stderr.contains("published again"), "{stderr}");
}
