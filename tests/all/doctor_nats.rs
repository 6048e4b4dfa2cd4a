//! `arbor doctor`'s remote section through the real binary (issue 27 item 6): a real NATS
//! server (`support::nats`) with a job waiting and a worker's presence entry; an
//! unreachable server is a failed check naming the URL; frontmatter `remote: true`
//! without `remote:` config is a warning.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use arbor::remote::wire::{WORKERS_BUCKET, WorkerInfo, job_subject, now_ms};
use arbor::remote::{RanOn, Remote, RemoteAuth};
use futures::FutureExt;
use support::nats::NatsServer;
use support::*;

/// `doctor` with a reachable provider and `extra` config lines: (success, stdout).
fn doctor(env: &TestEnv, server: &ScriptedServer, extra: &str) -> (bool, String) {
    env.use_openai(&server.base_url, "sk-x");
    env.append_config(extra);
    let out = env.cmd().arg("doctor").output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn provider() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|_| {
        async { Reply::Sse(sse_text("unused")) }.boxed()
    }))
}

/// A worker's presence entry as `arbor worker` writes it.
fn worker(id: &str, pool: &str, busy: u32) -> WorkerInfo {
    WorkerInfo {
        ran_on: RanOn {
            worker: id.into(),
            host: "build-1".into(),
            pid: 4242,
        },
        pool: pool.into(),
        slots: 4,
        busy,
        started_ms: now_ms() - 180_000,
        version: "0.1.0".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_reports_the_server_the_pools_jobs_and_its_live_workers() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let provider = provider();
    let env = TestEnv::new();
    let config = format!("remote:\n  nats_url: {}\n  pool: gpu\n", nats.url);

    // A fresh server: nothing made yet, no worker — warnings, not problems.
    let (ok, out) = tokio::task::block_in_place(|| doctor(&env, &provider, &config));
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!("remote    {}, pool gpu", nats.url)),
        "{out}"
    );
    assert!(
        out.contains("server  NATS 2.15.1, JetStream on, max payload 8.0 MiB"),
        "{out}"
    );
    assert!(out.contains("no stream ARBOR_JOBS yet"), "{out}");
    assert!(out.contains("no live worker in pool gpu"), "{out}");

    // Two jobs queued, a worker of the pool and one of another pool present.
    let remote = Remote::connect(&nats.url, "test", &RemoteAuth::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    remote
        .ensure_pool("gpu", Duration::from_secs(30))
        .await
        .unwrap();
    for n in 0..2 {
        remote
            .js()
            .publish(job_subject("gpu").unwrap(), format!("job {n}").into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let bucket = remote.js().get_key_value(WORKERS_BUCKET).await.unwrap();
    for w in [
        worker("w-0000beef", "gpu", 1),
        worker("w-0000cafe", "default", 0),
    ] {
        let body = serde_json::to_vec(&w).unwrap();
        bucket.put(&w.ran_on.worker, body.into()).await.unwrap();
    }

    let (ok, out) = tokio::task::block_in_place(|| doctor(&env, &provider, &config));
    assert!(ok, "{out}");
    assert!(
        out.contains("jobs    consumer arbor-pool-gpu: 2 waiting, 0 taken (not acked yet)"),
        "{out}"
    );
    assert!(
        out.contains("workers 1 live in pool gpu (1 in other pools)"),
        "{out}"
    );
    assert!(
        out.contains("w-0000beef on build-1 pid 4242: 1/4 slots busy, arbor 0.1.0, up 3m"),
        "{out}"
    );
    assert!(!out.contains("w-0000cafe"), "{out}");
    assert!(!out.contains("ack wait"), "{out}");
    assert!(out.contains("no problems found"), "{out}");

    // Workers started with another --ack-wait than the root's remote.ack_wait.
    remote
        .ensure_pool("gpu", Duration::from_secs(5))
        .await
        .unwrap();
    let (ok, out) = tokio::task::block_in_place(|| doctor(&env, &provider, &config));
    assert!(ok, "{out}");
    assert!(
        out.contains(
            "the pool's ack wait is 5 s (the workers' --ack-wait) but remote.ack_wait is 30 s"
        ),
        "{out}"
    );
}

#[test]
fn an_unreachable_server_fails_doctor_naming_its_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let provider = provider();
    let env = TestEnv::new();
    let started = std::time::Instant::now();
    let (ok, out) = doctor(&env, &provider, &format!("remote:\n  nats_url: {url}\n"));
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!("failed  cannot reach NATS at {url}")),
        "{out}"
    );
    assert!(out.contains("problems  1"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(30), "{out}");
}

#[test]
fn frontmatter_remote_without_remote_config_is_a_warning() {
    let provider = provider();
    let env = TestEnv::new();
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("builder.md"),
        "---\nmeta:\n  name: builder\n  description: Builds.\nremote: true\n---\nYou build.\n",
    )
    .unwrap();
    let (ok, out) = doctor(&env, &provider, "");
    assert!(ok, "{out}");
    assert!(out.contains("remote    off"), "{out}");
    assert!(
        out.contains(
            "warning agent builder says `remote: true` but the config has no `remote:` section: it runs here"
        ),
        "{out}"
    );
}

#[test]
fn a_comma_separated_server_list_reaches_the_live_one() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let provider = provider();
    let env = TestEnv::new();
    let list = format!("nats://127.0.0.1:{dead}, {}", nats.url);
    let (ok, out) = doctor(
        &env,
        &provider,
        &format!("remote:\n  nats_url: \"{list}\"\n"),
    );
    assert!(ok, "{out}");
    assert!(out.contains("server  NATS 2.15.1, JetStream on"), "{out}");
}
