//! Remote sub-sessions on a 3-node JetStream cluster with every stream at three
//! replicas (issue 38 item 5), through the real root and workers: while four children
//! run, the leader of the lease bucket's stream is killed and another node frozen for
//! a few seconds, then woken. Every child completes, and the root refuses no message
//! of a current lease holder (it reads leases from the stream leader, retries a read
//! that fails during the election, and its fence never refuses the current holder).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arbor::remote::wire::{
    JOBS_STREAM, LEASES_BUCKET, OUT_STREAM, PAYLOADS_BUCKET, WORKERS_BUCKET,
};
use arbor::remote::{Remote, RemoteAuth};
use serde_json::Value;

use super::*;
use crate::support::nats::NatsCluster;
use crate::support::worker_proc::WorkerProc;

const CHILDREN: usize = 4;
/// The ack wait of root and workers: a deployment's default (30 s), well above an
/// election and the freeze (with 5 s, and at 15 s on a loaded CI machine, a job's
/// progress acks can fail long enough during the election that JetStream hands the job
/// to another worker — a takeover the root cannot tell from a stolen lease).
const ACK_WAIT: &str = "30";

/// Makes arbor's streams and raises each to three replicas, as an operator does
/// (README "Running on more machines").
async fn three_replicas(url: &str) {
    let remote = Remote::connect(url, "operator", &RemoteAuth::default())
        .await
        .unwrap();
    let mut last = None;
    for _ in 0..100 {
        match remote.ensure().await {
            Ok(()) => {
                last = None;
                break;
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(last.is_none(), "ensure on the cluster: {last:?}");
    for name in [
        JOBS_STREAM.to_string(),
        OUT_STREAM.to_string(),
        format!("KV_{LEASES_BUCKET}"),
        format!("KV_{WORKERS_BUCKET}"),
        format!("OBJ_{PAYLOADS_BUCKET}"),
    ] {
        let mut stream = remote.js().get_stream(&name).await.unwrap();
        let mut config = stream.info().await.unwrap().config.clone();
        config.num_replicas = 3;
        remote.js().update_stream(config).await.unwrap();
    }
}

/// The node (0–2) leading the lease bucket's stream now.
async fn lease_leader(url: &str) -> usize {
    let remote = Remote::connect(url, "operator", &RemoteAuth::default())
        .await
        .unwrap();
    let mut stream = remote
        .js()
        .get_stream(format!("KV_{LEASES_BUCKET}"))
        .await
        .unwrap();
    let info = stream.info().await.unwrap();
    let leader = info
        .cluster
        .as_ref()
        .and_then(|c| c.leader.clone())
        .expect("a stream leader");
    leader.trim_start_matches('n').parse().unwrap()
}

// Run alone: `.ci/run` runs it after the suite (`cargo test --test all -- --ignored
// remote_faults::cluster`). Inside the full suite on 2 cores a child failed in 2 of 4
// runs — not diagnosed yet (the reason is in the failure message); alone it passed
// every run (10 of 10).
#[ignore = "timing-sensitive on a loaded machine: run alone (.ci/run does)"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_stream_leader_and_a_frozen_node_refuse_no_current_holder() {
    let Some(mut cluster) = NatsCluster::start() else {
        return;
    };
    let url = cluster.url.clone();
    three_replicas(&url).await;
    let gate = Arc::new(AtomicBool::new(false));
    let worker_model = gated_model("ANSWER-HA", gate.clone());
    let workers: Vec<WorkerProc> = (0..2)
        .map(|_| {
            WorkerProc::start(
                &url,
                &worker_model.base_url,
                &["--pool", "ha", "--ack-wait", ACK_WAIT],
            )
        })
        .collect();
    let model = parts_model(CHILDREN, "parts done");
    let root = root_env(&model.base_url, &url, "ha");
    let config = std::fs::read_to_string(&root.config).unwrap();
    std::fs::write(
        &root.config,
        config.replace("ack_wait: 5", &format!("ack_wait: {ACK_WAIT}")),
    )
    .unwrap();
    let run = spawn_run(&root, "Delegate four parts");
    let outputs = || {
        workers
            .iter()
            .map(WorkerProc::output)
            .collect::<Vec<_>>()
            .join("\n---\n")
    };
    wait_until(60, "two children never started", outputs, || {
        worker_model.requests().len() >= 2
    });

    let leader = lease_leader(&url).await;
    cluster.kill_node(leader);
    let frozen = (leader + 1) % 3;
    cluster.signal_node(frozen, "STOP");
    tokio::time::sleep(Duration::from_secs(3)).await;
    cluster.signal_node(frozen, "CONT");
    gate.store(true, Ordering::SeqCst);

    let out = tokio::task::spawn_blocking(move || finish(run, 180, String::new))
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let log = log_of(&root);
    assert!(
        out.status.success() && stdout.contains("parts done"),
        "{stdout}\n{stderr}\nworkers:\n{}",
        outputs()
    );
    assert!(
        !stderr.contains("failed"),
        "{stderr}\nworkers:\n{}",
        outputs()
    );
    // A holder whose lease expired while the cluster elected (its renewals failed for
    // a whole ack wait) is taken over; what it still sends is refused, rightly. No
    // message under the lease's current epoch is.
    let wrongly: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("forged")
                || (l.contains("refused a late write") && {
                    let epoch = number_after(l, " epoch ");
                    let current = number_after(l, "lease_epoch=");
                    epoch >= current
                })
        })
        .collect();
    assert!(wrongly.is_empty(), "{wrongly:#?}");
    let children = root.session_dirs(AGENT);
    assert_eq!(children.len(), CHILDREN);
    for dir in children {
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("metadata.json")).unwrap())
                .unwrap();
        assert_eq!(meta["status"], "completed", "{meta}");
    }
}

/// The number right after `marker` in `line` (0 when absent).
fn number_after(line: &str, marker: &str) -> u64 {
    line.split_once(marker)
        .map(|(_, rest)| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
