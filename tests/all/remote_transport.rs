//! The transport of remote sub-sessions (issue 27) against a real NATS server
//! (`support::nats`: `scripts/nats-server` on loopback): arbor's streams and buckets on a server with
//! default settings, the out stream's age and size limits (issue 38 item 8), the
//! compare-and-set lease and its epoch fence, large payloads through the object store.

use std::net::TcpListener;
use std::time::Duration;

use async_nats::jetstream::stream;

use arbor::remote::lease::{self, Fence, Verdict};
use arbor::remote::wire::{JOBS_STREAM, OUT_STREAM};
use arbor::remote::{Payload, RanOn, Remote, RemoteAuth, RemoteError};

use crate::support::nats::NatsServer;

fn worker(n: u32) -> RanOn {
    RanOn {
        worker: format!("w-0000000{n}"),
        host: "test".into(),
        pid: n,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_server_gets_arbors_streams_and_the_lease_fences_a_stale_holder() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let remote = Remote::connect(&server.url, "test", &RemoteAuth::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    remote.ensure().await.expect("ensure is idempotent");
    for name in [JOBS_STREAM, OUT_STREAM] {
        remote.js().get_stream(name).await.unwrap();
    }
    let consumer = remote
        .ensure_pool("default", Duration::from_secs(3))
        .await
        .unwrap();
    drop(consumer);

    let leases = remote.leases().await.unwrap();
    let session = "0123456789abcdef-fedcba9876543210_foundation:explorer";
    assert_eq!(lease::current(&leases, session).await.unwrap(), None);
    let terms = ("", Duration::from_secs(3));
    // A first run's first delivery creates epoch 1 without reading the bucket.
    let mut first = lease::acquire(&leases, session, &worker(1), (1, true), terms)
        .await
        .unwrap();
    assert_eq!(first.epoch(), 1);
    first.renew(&leases).await.expect("the holder renews");
    // Said unleased while a lease is there: lost like a race, never overwritten.
    let raced = lease::acquire(&leases, session, &worker(3), (1, true), terms)
        .await
        .unwrap_err();
    assert!(
        matches!(raced, RemoteError::LeaseLost { held: 1, .. }),
        "{raced}"
    );
    let second = lease::acquire(&leases, session, &worker(2), (1, false), terms)
        .await
        .unwrap();
    assert_eq!(second.epoch(), 2, "a takeover bumps the epoch");
    let lost = first.renew(&leases).await.unwrap_err();
    assert!(
        matches!(lost, RemoteError::LeaseLost { held: 1, .. }),
        "{lost}"
    );

    let mut fence = Fence::default();
    assert_eq!(
        fence.check(&leases, session, 2).await.unwrap(),
        Verdict::Current
    );
    assert_eq!(
        fence.check(&leases, session, 1).await.unwrap(),
        Verdict::Stale {
            stale: 1,
            current: 2
        }
    );
    // A holder the fence has not yet seen superseded is still checked against the
    // bucket: a fresh fence refuses epoch 1 too.
    assert_eq!(
        Fence::default().check(&leases, session, 1).await.unwrap(),
        Verdict::Stale {
            stale: 1,
            current: 2
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_out_stream_keeps_a_day_and_a_gib_at_most_even_when_an_older_arbor_made_it() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let remote = Remote::connect(&server.url, "test", &RemoteAuth::default())
        .await
        .unwrap();
    // As an arbor before issue 38 made it: 7 days, no size cap.
    remote
        .js()
        .create_stream(stream::Config {
            name: OUT_STREAM.into(),
            subjects: vec!["arbor.out.>".into()],
            storage: stream::StorageType::File,
            max_age: Duration::from_secs(7 * 24 * 3600),
            ..Default::default()
        })
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    let mut out = remote.js().get_stream(OUT_STREAM).await.unwrap();
    let config = out.info().await.unwrap().config.clone();
    assert_eq!(config.max_age, Duration::from_secs(24 * 3600));
    assert_eq!(config.max_bytes, 1 << 30);
    assert_eq!(config.discard, stream::DiscardPolicy::Old);
    assert_eq!(config.duplicate_window, Duration::from_secs(120));
    assert_eq!(config.retention, stream::RetentionPolicy::Limits);
}

/// A server with less room than the out stream's 1 GiB cap (JetStream reserves a file
/// stream's cap against `max_file_store`): the stream gets the largest halving that
/// fits, halved once more so the buckets still fit; an operator's smaller cap is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_out_stream_fits_a_server_short_of_room_and_leaves_the_buckets_theirs() {
    let Some(server) = NatsServer::start_with_jetstream("  max_file_store: 300MB\n") else {
        return;
    };
    let remote = Remote::connect(&server.url, "test", &RemoteAuth::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    let cap = |remote: Remote| async move {
        let mut out = remote.js().get_stream(OUT_STREAM).await.unwrap();
        out.info().await.unwrap().config.max_bytes
    };
    // 1 GiB and 512 MiB do not fit in 300 MB, 256 MiB does: half of it is kept.
    assert_eq!(cap(remote.clone()).await, 128 << 20);
    remote.leases().await.unwrap();
    remote.payloads().await.unwrap();
    // An operator's smaller cap stays.
    let mut config = remote
        .js()
        .get_stream(OUT_STREAM)
        .await
        .unwrap()
        .cached_info()
        .config
        .clone();
    config.max_bytes = 96 << 20;
    remote.js().update_stream(config).await.unwrap();
    remote.ensure().await.unwrap();
    assert_eq!(cap(remote.clone()).await, 96 << 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_payloads_go_through_the_object_store_and_small_ones_inline() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let remote = Remote::connect(&server.url, "test", &RemoteAuth::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    let store = remote.payloads().await.unwrap();
    let small = Payload::pack(&store, "small", vec!["a".to_string()])
        .await
        .unwrap();
    assert!(small.is_inline());
    let big: Vec<String> = (0..4000)
        .map(|i| format!("line {i} {}", "x".repeat(100)))
        .collect();
    let packed = Payload::pack(&store, "big", big.clone()).await.unwrap();
    assert!(!packed.is_inline(), "a 400 KB body is not inline");
    let json = serde_json::to_string(&packed).unwrap();
    assert!(
        json.len() < 200,
        "the message carries only the name: {json}"
    );
    let back: Payload<Vec<String>> = serde_json::from_str(&json).unwrap();
    assert_eq!(back.unpack(&store).await.unwrap(), big);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_an_error_naming_its_url() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let err = Remote::connect(&url, "test", &RemoteAuth::default())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("cannot reach NATS at {url}")),
        "{text}"
    );
}

/// Issue 34 item 7: a payload object is read only up to its declared size (and never
/// past `OBJECT_MAX`): a larger object, or one declared over the limit, is refused
/// with an error naming it, not read whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_object_is_read_only_within_its_declared_size() {
    use arbor::remote::payload::{OBJECT_MAX, read_bounded};
    let Some(server) = NatsServer::start() else {
        return;
    };
    let remote = Remote::connect(&server.url, "test", &RemoteAuth::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    let store = remote.payloads().await.unwrap();
    let big: Vec<String> = (0..3000)
        .map(|i| format!("{i} {}", "y".repeat(300)))
        .collect();
    let packed = Payload::pack(&store, "sized", big.clone()).await.unwrap();
    let Payload::Object { name, size } = packed.clone() else {
        panic!("not an object: {packed:?}");
    };
    assert_eq!(
        packed.unpack(&store).await.unwrap(),
        big,
        "the true size reads"
    );

    let understated: Payload<Vec<String>> = Payload::Object {
        name: name.clone(),
        size: size - 1,
    };
    let err = understated.unpack(&store).await.unwrap_err();
    assert!(matches!(err, RemoteError::Payload { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "payload sized is larger than its declared {} bytes",
            size - 1
        )
    );
    let tiny: Payload<Vec<String>> = Payload::Object {
        name: name.clone(),
        size: 2,
    };
    assert!(tiny.unpack(&store).await.is_err());
    let huge: Payload<Vec<String>> = Payload::Object {
        name,
        size: OBJECT_MAX + 1,
    };
    let err = huge.unpack(&store).await.unwrap_err().to_string();
    assert!(err.contains("over the 268435456-byte limit"), "{err}");
    let err = read_bounded(&store, "sized", 10).await.unwrap_err();
    assert!(matches!(err, RemoteError::Payload { .. }), "{err}");
}
