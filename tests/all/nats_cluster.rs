//! arbor's streams and buckets on a 3-node JetStream cluster on loopback (README
//! "Running on more machines"): the comma-separated server list connects, and replicas
//! an operator raised survive `Remote::ensure`, which every root and worker runs when
//! it starts (it used to reset them to one).

use crate::support;

use arbor::remote::wire::{JOBS_STREAM, LEASES_BUCKET, OUT_STREAM};
use arbor::remote::{Remote, RemoteAuth};
use support::nats::NatsCluster;

async fn replicas(remote: &Remote, stream: &str) -> usize {
    let mut stream = remote.js().get_stream(stream).await.unwrap();
    stream.info().await.unwrap().config.num_replicas
}

/// `ensure`, retried while the young cluster still places its first streams.
async fn ensure(remote: &Remote) {
    let mut last = None;
    for _ in 0..50 {
        match remote.ensure().await {
            Ok(()) => return,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("ensure failed on the cluster: {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_raised_on_a_cluster_survive_ensure() {
    let Some(cluster) = tokio::task::block_in_place(NatsCluster::start) else {
        return;
    };
    let remote = Remote::connect(&cluster.url, "test", &RemoteAuth::default())
        .await
        .unwrap();
    ensure(&remote).await;
    let leases = format!("KV_{LEASES_BUCKET}");
    for name in [JOBS_STREAM, leases.as_str()] {
        let mut stream = remote.js().get_stream(name).await.unwrap();
        let mut config = stream.info().await.unwrap().config.clone();
        assert!(config.num_replicas <= 1, "{name}: {}", config.num_replicas);
        config.num_replicas = 3;
        remote.js().update_stream(config).await.unwrap();
    }
    // A root or worker starting later.
    let later = Remote::connect(&cluster.url, "later", &RemoteAuth::default())
        .await
        .unwrap();
    ensure(&later).await;
    assert_eq!(replicas(&later, JOBS_STREAM).await, 3);
    assert_eq!(replicas(&later, &leases).await, 3);
    assert!(replicas(&later, OUT_STREAM).await <= 1, "untouched: one");
}
