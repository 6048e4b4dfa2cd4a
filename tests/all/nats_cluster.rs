//! arbor's streams and buckets on a 3-node JetStream cluster on loopback (README
//! "Running on more machines"): the comma-separated server list connects, and replicas
//! an operator raised survive `Remote::ensure`, which every root and worker runs when
//! it starts (it used to reset them to one).
//!
//! Every JetStream API call here is retried for up to 20 s: under the full suite's load
//! a young cluster still places streams and elects their leaders, and a single request
//! can time out (a CI run failed that way on one `unwrap`). A call that never succeeds
//! fails the test with its last error and the nodes' logs.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use crate::support;

use arbor::remote::wire::{JOBS_STREAM, LEASES_BUCKET, OUT_STREAM};
use arbor::remote::{Remote, RemoteAuth};
use support::nats::NatsCluster;

/// `op` until it succeeds: 100 tries 200 ms apart; then a panic naming `what`, the
/// last error and the cluster's logs.
async fn settled<T, E: Debug, Fut: Future<Output = Result<T, E>>>(
    cluster: &NatsCluster,
    what: &str,
    mut op: impl FnMut() -> Fut,
) -> T {
    let mut last = None;
    for _ in 0..100 {
        match op().await {
            Ok(value) => return value,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{what} failed on the cluster: {last:?}\n{}", cluster.logs());
}

/// The stream's configuration as its leader answers it.
async fn config(
    cluster: &NatsCluster,
    remote: &Remote,
    stream: &str,
) -> async_nats::jetstream::stream::Config {
    settled(cluster, &format!("info of {stream}"), || async {
        let mut handle = remote
            .js()
            .get_stream(stream)
            .await
            .map_err(|e| e.to_string())?;
        let info = handle.info().await.map_err(|e| e.to_string())?;
        Ok::<_, String>(info.config.clone())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_raised_on_a_cluster_survive_ensure() {
    let Some(cluster) = tokio::task::block_in_place(NatsCluster::start) else {
        return;
    };
    let connect = |name: &'static str| {
        let url = cluster.url.clone();
        move || {
            let url = url.clone();
            async move { Remote::connect(&url, name, &RemoteAuth::default()).await }
        }
    };
    let remote = settled(&cluster, "connect", connect("test")).await;
    settled(&cluster, "ensure", || remote.ensure()).await;
    let leases = format!("KV_{LEASES_BUCKET}");
    for name in [JOBS_STREAM, leases.as_str()] {
        let mut raised = config(&cluster, &remote, name).await;
        assert!(raised.num_replicas <= 1, "{name}: {}", raised.num_replicas);
        raised.num_replicas = 3;
        settled(&cluster, &format!("raising {name}"), || {
            remote.js().update_stream(raised.clone())
        })
        .await;
    }
    // A root or worker starting later.
    let later = settled(&cluster, "connect later", connect("later")).await;
    settled(&cluster, "ensure later", || later.ensure()).await;
    assert_eq!(config(&cluster, &later, JOBS_STREAM).await.num_replicas, 3);
    assert_eq!(config(&cluster, &later, &leases).await.num_replicas, 3);
    assert!(
        config(&cluster, &later, OUT_STREAM).await.num_replicas <= 1,
        "untouched: one"
    );
}
