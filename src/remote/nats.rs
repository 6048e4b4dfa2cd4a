//! Connecting to NATS and making sure the streams, consumer and buckets of remote
//! sub-sessions exist, with arbor's own settings (issue 27), so a server with default
//! configuration works.
//!
//! Owns: [`Remote`] (a connected client and its JetStream context, with the URL it
//! names in errors, redacted),
//! [`Remote::connect`] (one attempt, bounded by a timeout), [`Remote::connect_retrying`]
//! (backoff until it connects, saying so), [`Remote::ensure`] (the streams and buckets)
//! and [`Remote::ensure_pool`] (a pool's durable pull consumer). Does not own: what the
//! messages mean (`wire`), leases (`lease`), running or dispatching jobs.
//!
//! Settings: [`JOBS_STREAM`] work queue (a job lives until a worker acks it), file
//! storage, a 2-minute duplicate window (a job republished with the same message id is
//! dropped); [`OUT_STREAM`] limits retention, file storage, a day and at most 1 GiB
//! (the oldest messages dropped first; issue 38 item 8: it used to keep everything for
//! 7 days), a 2-minute duplicate window (a worker's publish retried after a lost
//! acknowledgement is dropped); the leases bucket
//! keeps one revision per key; the workers bucket forgets an entry after
//! [`PRESENCE_TTL_SECS`]; payloads live 7 days. One replica each when created: on a
//! 3-node cluster raise them by editing the streams with the `nats` CLI (README
//! "Running on more machines"); [`Remote::ensure`] keeps the replicas an existing
//! stream or bucket has.

use std::time::Duration;

use async_nats::jetstream::{self, consumer, kv, object_store, stream};

use super::RemoteError;
use super::auth::{RemoteAuth, Scrub, install_crypto_provider, redact_url};
use super::wire::{
    JOBS_STREAM, LEASES_BUCKET, OUT_STREAM, PAYLOADS_BUCKET, PRESENCE_TTL_SECS, WORKERS_BUCKET,
    WorkerInfo, consumer_name, job_subject,
};

/// How long a connection attempt may take before it counts as failed.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long payloads are kept: 7 days.
const KEEP: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long the out stream keeps a worker's message: a day (a root reads a run's
/// messages while it runs; a crashed root's continue reads its own store).
pub const OUT_KEEP: Duration = Duration::from_secs(24 * 3600);
/// The most the out stream holds, in bytes (1 GiB); the oldest messages go first. A
/// server with less room for it (JetStream reserves a file stream's cap against its
/// `max_file_store`) gets half as much, again and again down to [`OUT_MIN_BYTES`].
pub const OUT_MAX_BYTES: i64 = 1 << 30;
/// The smallest cap the out stream is made with on a server short of room (64 MiB).
pub const OUT_MIN_BYTES: i64 = 64 << 20;
/// The out stream's duplicate window: a message id seen within it is stored once.
pub const OUT_DUPLICATES: Duration = Duration::from_secs(120);

/// What [`Remote::jobs_stream`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamState {
    /// The stream exists; `created` is its creation time as the server reports it.
    Present { created: String },
    /// The server answered that it has no such stream.
    Missing,
    /// No answer (the reason): the server is down or unreachable.
    Unreachable(String),
}

/// A connection to a NATS server with JetStream.
#[derive(Clone)]
pub struct Remote {
    client: async_nats::Client,
    js: jetstream::Context,
    url: String,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("url", &self.url).finish()
    }
}

impl Remote {
    /// Connects to `url` (`nats://host:4222`, `tls://…`; several comma-separated for a
    /// cluster) once, as client `name`, within [`CONNECT_TIMEOUT`]. After it connects,
    /// the client reconnects by itself when the connection drops.
    ///
    /// Errors: [`RemoteError::Connect`] naming `url` (unreachable, refused, bad
    /// credentials, unreadable credentials file).
    pub async fn connect(url: &str, name: &str, auth: &RemoteAuth) -> Result<Self, RemoteError> {
        install_crypto_provider();
        let scrub = Scrub::new(url, auth);
        let refused = |reason: String| RemoteError::Connect {
            url: redact_url(url),
            reason: scrub.text(&reason),
        };
        // A cluster's servers, comma-separated: the client takes them as a list (one
        // string with commas is one malformed URL to it).
        let (options, servers) = auth
            .connect_plan(url)
            .await
            .map_err(|e| refused(e.to_string()))?;
        let options = options
            .name(name)
            .connection_timeout(CONNECT_TIMEOUT)
            .max_reconnects(None);
        let client = tokio::time::timeout(CONNECT_TIMEOUT * 2, options.connect(servers))
            .await
            .map_err(|_| refused("timed out".into()))?
            .map_err(|e| refused(e.to_string()))?;
        let js = jetstream::new(client.clone());
        Ok(Self {
            client,
            js,
            url: redact_url(url),
        })
    }

    /// Connects to `url`, retrying with exponential backoff (0.5 s doubling to 30 s)
    /// until it succeeds; `on_retry` hears each failure and the delay before the next
    /// attempt (a worker prints it). Never returns an error.
    pub async fn connect_retrying(
        url: &str,
        name: &str,
        auth: &RemoteAuth,
        mut on_retry: impl FnMut(&RemoteError, Duration),
    ) -> Self {
        let mut delay = Duration::from_millis(500);
        loop {
            match Self::connect(url, name, auth).await {
                Ok(remote) => return remote,
                Err(e) => {
                    on_retry(&e, delay);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(30));
                }
            }
        }
    }

    /// The URL this connection was made to, as shown (its password or token replaced
    /// by `***`: [`redact_url`]).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The core NATS client (control and sync subjects).
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// The JetStream context (jobs, the out stream, buckets).
    pub fn js(&self) -> &jetstream::Context {
        &self.js
    }

    /// The server's version, as its INFO says (`2.15.1`).
    pub fn server_version(&self) -> String {
        self.client.server_info().version
    }

    /// Creates, or updates to arbor's settings, [`JOBS_STREAM`], [`OUT_STREAM`] and
    /// the leases, workers and payloads buckets, keeping the replicas an existing one
    /// has (raised by an operator on a cluster). Idempotent; root and workers both call
    /// it before anything else.
    ///
    /// Errors: [`RemoteError::Nats`] naming the stream or bucket (JetStream disabled on
    /// the server, a stream of that name with incompatible settings, …).
    pub async fn ensure(&self) -> Result<(), RemoteError> {
        let jobs = stream::Config {
            name: JOBS_STREAM.into(),
            subjects: vec!["arbor.jobs.>".into()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        };
        self.stream(jobs).await?;
        let out = stream::Config {
            name: OUT_STREAM.into(),
            subjects: vec!["arbor.out.>".into()],
            retention: stream::RetentionPolicy::Limits,
            storage: stream::StorageType::File,
            max_age: OUT_KEEP,
            max_bytes: OUT_MAX_BYTES,
            discard: stream::DiscardPolicy::Old,
            duplicate_window: OUT_DUPLICATES,
            ..Default::default()
        };
        self.out_stream(out).await?;
        self.bucket(kv::Config {
            bucket: LEASES_BUCKET.into(),
            history: 1,
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await?;
        self.bucket(kv::Config {
            bucket: WORKERS_BUCKET.into(),
            history: 1,
            max_age: Duration::from_secs(PRESENCE_TTL_SECS),
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await?;
        self.payloads().await.map(drop)
    }

    async fn stream(&self, mut config: stream::Config) -> Result<(), RemoteError> {
        let name = config.name.clone();
        config.num_replicas = self.replicas_of(&name).await?;
        self.js
            .create_or_update_stream(config)
            .await
            .map(drop)
            .map_err(|e| RemoteError::nats(format!("cannot create stream {name}"), e))
    }

    /// [`OUT_STREAM`] with `config`, its cap halved while the server says it has no
    /// room for it, then once more (the cap that fits took all the room left, and the
    /// buckets need some; each step logged); an operator's smaller cap on the
    /// existing stream is kept.
    async fn out_stream(&self, mut config: stream::Config) -> Result<(), RemoteError> {
        let (replicas, cap) = match self.js.get_stream(OUT_STREAM).await {
            Ok(stream) => {
                let current = &stream.cached_info().config;
                (current.num_replicas, current.max_bytes)
            }
            Err(e) if stream_not_found(&e) => (0, -1),
            Err(e) => {
                return Err(RemoteError::nats(
                    format!("cannot read stream {OUT_STREAM}"),
                    e,
                ));
            }
        };
        config.num_replicas = replicas;
        if cap > 0 && cap < config.max_bytes {
            config.max_bytes = cap;
        }
        let mut shrunk = false;
        loop {
            match self.js.create_or_update_stream(config.clone()).await {
                // The largest cap that fits took whatever room was left: half of it
                // leaves the buckets theirs.
                Ok(_) if shrunk && config.max_bytes / 2 >= OUT_MIN_BYTES => {
                    config.max_bytes /= 2;
                    shrunk = false;
                    tracing::warn!(
                        "{OUT_STREAM} keeps at most {} MiB on this NATS server",
                        config.max_bytes >> 20
                    );
                }
                Ok(_) => return Ok(()),
                Err(e) if short_of_room(&e) && config.max_bytes / 2 >= OUT_MIN_BYTES => {
                    config.max_bytes /= 2;
                    shrunk = true;
                    tracing::warn!(
                        "the NATS server has no room for a {} MiB {OUT_STREAM} stream; trying \
                         {} MiB (raise its jetstream max_file_store for more)",
                        (config.max_bytes * 2) >> 20,
                        config.max_bytes >> 20
                    );
                }
                Err(e) => {
                    return Err(RemoteError::nats(
                        format!("cannot create stream {OUT_STREAM}"),
                        e,
                    ));
                }
            }
        }
    }

    async fn bucket(&self, mut config: kv::Config) -> Result<kv::Store, RemoteError> {
        let name = config.bucket.clone();
        config.num_replicas = self.replicas_of(&format!("KV_{name}")).await?;
        self.js
            .create_or_update_key_value(config)
            .await
            .map_err(|e| RemoteError::nats(format!("cannot create bucket {name}"), e))
    }

    /// The replicas stream `name` has now, so an update keeps them (an operator raises
    /// them on a cluster, README "Running on more machines"); 0 (the server's default,
    /// one) when the server says it does not exist. An update never lowers them.
    ///
    /// Errors: [`RemoteError::Nats`] when the stream cannot be read (no answer, an
    /// election under way): guessing would scale an operator's R3 stream down to R1.
    async fn replicas_of(&self, name: &str) -> Result<usize, RemoteError> {
        match self.js.get_stream(name).await {
            Ok(stream) => Ok(stream.cached_info().config.num_replicas),
            Err(e) if stream_not_found(&e) => Ok(0),
            Err(e) => Err(RemoteError::nats(format!("cannot read stream {name}"), e)),
        }
    }

    /// What the server holds of [`JOBS_STREAM`] now, asked within 2 s: present (with
    /// the time it was created, so a stream made again after the server lost its store
    /// tells apart), missing, or no answer. Issue 38 item 3.
    pub async fn jobs_stream(&self) -> StreamState {
        let asked =
            tokio::time::timeout(Duration::from_secs(2), self.js.get_stream(JOBS_STREAM)).await;
        match asked {
            Ok(Ok(stream)) => StreamState::Present {
                created: format!("{:?}", stream.cached_info().created),
            },
            Ok(Err(e)) if stream_not_found(&e) => StreamState::Missing,
            Ok(Err(e)) => StreamState::Unreachable(e.to_string()),
            Err(_) => StreamState::Unreachable("no answer within 2 s".into()),
        }
    }

    /// Whether `pool`'s consumer (or the job stream itself) is gone from the server —
    /// as after a restart on an empty store; `false` when it is there or the server
    /// does not answer (within 2 s).
    pub async fn pool_consumer_missing(&self, pool: &str) -> bool {
        let Ok(name) = consumer_name(pool) else {
            return false;
        };
        let asked = async {
            let stream = match self.js.get_stream(JOBS_STREAM).await {
                Ok(stream) => stream,
                Err(e) => return stream_not_found(&e),
            };
            match stream.consumer_info(&name).await {
                Ok(_) => false,
                Err(e) => {
                    matches!(
                        e.kind(),
                        jetstream::context::ConsumerInfoErrorKind::NotFound
                            | jetstream::context::ConsumerInfoErrorKind::StreamNotFound
                    ) || matches!(e.kind(), jetstream::context::ConsumerInfoErrorKind::JetStream(js)
                        if js.error_code() == jetstream::ErrorCode::CONSUMER_NOT_FOUND)
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(2), asked)
            .await
            .unwrap_or(false)
    }

    /// Creates, or updates, the durable pull consumer of `pool` on [`JOBS_STREAM`]:
    /// explicit acks, `ack_wait` before an unacknowledged job is redelivered, no
    /// delivery limit. Call [`Remote::ensure`] first.
    ///
    /// Errors: [`RemoteError::Nats`] naming the consumer; [`RemoteError::Token`] for an
    /// empty pool.
    pub async fn ensure_pool(
        &self,
        pool: &str,
        ack_wait: Duration,
    ) -> Result<consumer::PullConsumer, RemoteError> {
        let name = consumer_name(pool)?;
        let config = consumer::pull::Config {
            durable_name: Some(name.clone()),
            filter_subject: job_subject(pool)?,
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait,
            max_deliver: -1,
            ..Default::default()
        };
        self.js
            .create_consumer_on_stream(config, JOBS_STREAM)
            .await
            .map_err(|e| RemoteError::nats(format!("cannot create consumer {name}"), e))
    }

    /// The leases bucket ([`LEASES_BUCKET`]).
    ///
    /// Errors: [`RemoteError::Nats`] when it does not exist (call [`Remote::ensure`]).
    pub async fn leases(&self) -> Result<kv::Store, RemoteError> {
        self.kv(LEASES_BUCKET).await
    }

    /// The workers' presence bucket ([`WORKERS_BUCKET`]).
    ///
    /// Errors: [`RemoteError::Nats`] when it does not exist.
    pub async fn workers(&self) -> Result<kv::Store, RemoteError> {
        self.kv(WORKERS_BUCKET).await
    }

    /// Every worker in the presence bucket (entries expire [`PRESENCE_TTL_SECS`] after
    /// a worker's last refresh, so each is a worker alive within that time), sorted
    /// by id; an entry that is not a [`WorkerInfo`] is skipped, and a missing bucket
    /// is no worker.
    ///
    /// Errors: [`RemoteError::Nats`] when the bucket's keys cannot be listed.
    pub async fn live_workers(&self) -> Result<Vec<WorkerInfo>, RemoteError> {
        let Ok(bucket) = self.workers().await else {
            return Ok(Vec::new());
        };
        let mut keys = bucket
            .keys()
            .await
            .map_err(|e| RemoteError::nats(format!("cannot list bucket {WORKERS_BUCKET}"), e))?;
        let mut out = Vec::new();
        while let Some(key) = futures::StreamExt::next(&mut keys).await {
            let key = key.map_err(|e| {
                RemoteError::nats(format!("cannot list bucket {WORKERS_BUCKET}"), e)
            })?;
            if let Ok(Some(bytes)) = bucket.get(&key).await
                && let Ok(info) = serde_json::from_slice::<WorkerInfo>(&bytes)
            {
                out.push(info);
            }
        }
        out.sort_by(|a, b| a.ran_on.worker.cmp(&b.ran_on.worker));
        Ok(out)
    }

    async fn kv(&self, bucket: &str) -> Result<kv::Store, RemoteError> {
        self.js
            .get_key_value(bucket)
            .await
            .map_err(|e| RemoteError::nats(format!("cannot open bucket {bucket}"), e))
    }

    /// The payload object store ([`PAYLOADS_BUCKET`]), created only when the server
    /// says it does not exist (with arbor's settings, one replica); a store that cannot
    /// be read is an error, never a reason to create one with other settings.
    ///
    /// Errors: [`RemoteError::Nats`] when it can be neither read nor created.
    pub async fn payloads(&self) -> Result<object_store::ObjectStore, RemoteError> {
        let stream = format!("OBJ_{PAYLOADS_BUCKET}");
        if self.replicas_of(&stream).await? > 0 {
            return self
                .js
                .get_object_store(PAYLOADS_BUCKET)
                .await
                .map_err(|e| {
                    RemoteError::nats(format!("cannot open object store {PAYLOADS_BUCKET}"), e)
                });
        }
        self.js
            .create_object_store(object_store::Config {
                bucket: PAYLOADS_BUCKET.into(),
                max_age: KEEP,
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                RemoteError::nats(format!("cannot create object store {PAYLOADS_BUCKET}"), e)
            })
    }
}

/// Whether the server answered that the stream does not exist.
fn stream_not_found(e: &jetstream::context::GetStreamError) -> bool {
    matches!(e.kind(), jetstream::context::GetStreamErrorKind::JetStream(js)
        if js.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND)
}

/// Whether the server refused a stream for lack of room for its cap (JetStream error
/// 10047, "insufficient storage resources available").
fn short_of_room(e: &jetstream::context::CreateStreamError) -> bool {
    matches!(e.kind(), jetstream::context::CreateStreamErrorKind::JetStream(js)
        if js.error_code() == jetstream::ErrorCode::STORAGE_RESOURCES_EXCEEDED)
}
