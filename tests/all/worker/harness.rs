//! The worker tests' harness: a NATS server (`support::nats`) and the root's
//! connection, the real `arbor worker`, jobs built with the transport's types, and reading what the worker
//! published on `ARBOR_OUT`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use arbor::config::MountPlan;
use arbor::remote::Remote;
use arbor::remote::payload::Payload;
use arbor::remote::seal::SEQ_HEADER;
use arbor::remote::wire::{
    AliveReply, Control, EPOCH_HEADER, JOB_VERSION, JOBS_STREAM, Job, OUT_STREAM, WORKER_HEADER,
    alive_subject, ctl_subject, job_subject, out_subject,
};
use arbor::session::{Metadata, SessionId};
use async_nats::jetstream::consumer;
use futures::StreamExt;
use serde_json::{Value, json};

pub(super) use crate::support::nats::NatsServer;
use crate::support::*;

pub(super) const SESSION: &str = "0123456789abcdef-fedcba9876543210_helper";
pub(super) const PARENT: &str = "01234567-89ab-4def-8123-456789abcdef";
pub(super) const WORKER_KEY: &str = "sk-worker-own-key-0123456789";

/// A NATS server of this test (`support::nats`: a free loopback port, a temp store)
/// and the root's connection to it, with arbor's streams and buckets made; `None`
/// only outside CI when the server cannot be installed (the test is skipped).
pub(super) async fn server_and_root() -> Option<(NatsServer, Remote)> {
    let nats = NatsServer::start()?;
    let remote = root_of(&nats).await;
    Some((nats, remote))
}

/// The test root's connection to `nats`, with arbor's streams and buckets made.
pub(super) async fn root_of(nats: &NatsServer) -> Remote {
    let remote = Remote::connect(&nats.url, "test root", &Default::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    remote
}

/// The real `arbor worker`, killed on drop.
pub(super) struct Worker {
    pub(super) child: Child,
    pub(super) first_line: String,
    stderr: PathBuf,
}

/// The workers' runtime directory (`XDG_RUNTIME_DIR`) of `env`: memory-backed
/// storage for their jobs' scratch stores.
pub(super) fn run_dir(env: &TestEnv) -> std::path::PathBuf {
    env.dir.path().join("run")
}

impl Worker {
    pub(super) fn start(env: &TestEnv, nats: &NatsServer, pool: &str) -> Self {
        Self::start_with(env, nats, pool, &[])
    }

    pub(super) fn start_with(env: &TestEnv, nats: &NatsServer, pool: &str, extra: &[&str]) -> Self {
        let mut worker = Self::spawn(env, &nats.url, pool, extra);
        worker.read_first_line();
        worker
    }

    /// Starts the worker without waiting for it to connect.
    pub(super) fn spawn(env: &TestEnv, url: &str, pool: &str, extra: &[&str]) -> Self {
        let stderr = env.dir.path().join(format!("worker-{pool}.stderr"));
        std::fs::create_dir_all(run_dir(env)).unwrap();
        let child = env
            .std_cmd()
            // The jobs' scratch stores go to `<run dir>/arbor/workers/<worker id>`.
            .env("XDG_RUNTIME_DIR", run_dir(env))
            .args(["worker", "--nats", url, "--pool", pool])
            .args(["--slots", "1", "--ack-wait", "3"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Self {
            child,
            first_line: String::new(),
            stderr,
        }
    }

    /// Reads the start line (printed once connected).
    pub(super) fn read_first_line(&mut self) {
        BufReader::new(self.child.stdout.take().unwrap())
            .read_line(&mut self.first_line)
            .unwrap();
    }

    pub(super) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The job's plan: the helper's instruction and an OpenAI-compatible provider whose key
/// is redacted (the worker's own config has it).
pub(super) fn plan(base_url: &str) -> Value {
    json!({
        "instruction": "You are helper.",
        "providers": [{"module": "provider-openai", "config": {
            "base_url": base_url, "api_key": "[REDACTED]", "default_model": "scripted-model"}}],
        "tools": [],
    })
}

pub(super) fn job(base_url: &str, instruction: &str) -> Job {
    job_of(SESSION, plan(base_url), instruction)
}

pub(super) fn job_of(session: &str, plan: Value, instruction: &str) -> Job {
    Job {
        version: JOB_VERSION,
        session_id: SessionId::new_unchecked(session),
        run: 1,
        metadata: Metadata {
            session_id: SessionId::new_unchecked(session),
            parent_id: Some(SessionId::new_unchecked(PARENT)),
            agent_name: Some("helper".into()),
            depth: 1,
            config: Some(plan.clone()),
            ..Default::default()
        },
        plan: MountPlan::from_value(plan),
        transcript: Payload::Inline(Vec::new()),
        instruction: instruction.into(),
        continues: false,
        approvals: Value::Null,
        files: None,
        dispatched_at_ms: 0,
        // The root played here does not answer `Reserve`: a job's own sub-sessions
        // count against the worker's limits.
        limits_at_root: false,
        packed_events: false,
        packed_many: false,
        subtree: None,
    }
}

pub(super) async fn publish(remote: &Remote, pool: &str, job: &Job) {
    answer_alive(remote, job).await;
    remote
        .js()
        .publish(
            job_subject(pool).unwrap(),
            serde_json::to_vec(job).unwrap().into(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
}

/// The runs the test root follows now, by session (the latest job published).
static FOLLOWED: std::sync::Mutex<Vec<(String, u64)>> = std::sync::Mutex::new(Vec::new());

/// Plays the root's part of `arbor.alive.<session>` for `job`, as a real root does
/// while it follows a run: a worker asks before it runs a job, and drops one whose root
/// is gone. Answers with the latest run published for the session.
async fn answer_alive(remote: &Remote, job: &Job) {
    let session = job.session_id.to_string();
    {
        let mut followed = FOLLOWED.lock().unwrap();
        followed.retain(|(s, _)| *s != session);
        followed.push((session.clone(), job.run));
    }
    let mut asked = remote
        .client()
        .subscribe(alive_subject(&session).unwrap())
        .await
        .unwrap();
    let client = remote.client().clone();
    tokio::spawn(async move {
        while let Some(request) = asked.next().await {
            let run = FOLLOWED
                .lock()
                .unwrap()
                .iter()
                .find(|(s, _)| *s == session)
                .map_or(0, |(_, run)| *run);
            if let Some(reply) = request.reply {
                let body = serde_json::to_vec(&AliveReply { run }).unwrap();
                let _ = client.publish(reply, body.into()).await;
            }
        }
    });
}

/// One message the worker published: its epoch, worker and sequence headers and its
/// body.
#[derive(Debug, Clone)]
pub(super) struct Sent {
    pub(super) epoch: u64,
    pub(super) worker: String,
    pub(super) seq: Option<u64>,
    pub(super) body: Value,
}

/// Everything on `arbor.out.<session>` so far, in order.
pub(super) async fn sent_of(remote: &Remote, session: &str) -> Vec<Sent> {
    let mut stream = remote.js().get_stream(OUT_STREAM).await.unwrap();
    let messages = stream.info().await.unwrap().state.messages;
    if messages == 0 {
        return Vec::new();
    }
    let reader = stream
        .create_consumer(consumer::pull::Config {
            filter_subject: out_subject(session).unwrap(),
            deliver_policy: consumer::DeliverPolicy::All,
            ack_policy: consumer::AckPolicy::None,
            inactive_threshold: Duration::from_secs(5),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut batch = reader
        .fetch()
        .max_messages(100_000)
        .messages()
        .await
        .unwrap();
    let mut out = Vec::new();
    while let Some(Ok(m)) = batch.next().await {
        let headers = m.headers.clone().unwrap_or_default();
        out.push(Sent {
            epoch: headers
                .get(EPOCH_HEADER)
                .map(|v| v.as_str().parse().unwrap())
                .unwrap_or(0),
            worker: headers
                .get(WORKER_HEADER)
                .map(|v| v.as_str().to_string())
                .unwrap_or_default(),
            seq: headers.get(SEQ_HEADER).map(|v| v.as_str().parse().unwrap()),
            body: serde_json::from_slice(&m.payload).unwrap(),
        });
    }
    out
}

/// Waits until `done(&messages)` holds (or fails after `limit`, showing the worker's
/// stderr).
pub(super) async fn wait_for(
    remote: &Remote,
    worker: &Worker,
    limit: Duration,
    done: impl Fn(&[Sent]) -> bool,
) -> Vec<Sent> {
    wait_for_session(remote, SESSION, worker, limit, done).await
}

/// [`wait_for`] on `session`'s messages.
pub(super) async fn wait_for_session(
    remote: &Remote,
    session: &str,
    worker: &Worker,
    limit: Duration,
    done: impl Fn(&[Sent]) -> bool,
) -> Vec<Sent> {
    let deadline = Instant::now() + limit;
    loop {
        let messages = sent_of(remote, session).await;
        if done(&messages) {
            return messages;
        }
        assert!(
            Instant::now() < deadline,
            "timed out; sent so far: {:#?}\nworker stderr:\n{}",
            messages.iter().map(|m| &m.body["kind"]).collect::<Vec<_>>(),
            worker.stderr()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What `session`'s worker sent until its run ended (`done` or `failed`), waiting at
/// most `secs` seconds (see [`wait_for_session`]).
pub(super) async fn wait_until_ended(
    remote: &Remote,
    session: &str,
    worker: &Worker,
    secs: u64,
) -> Vec<Sent> {
    wait_for_session(remote, session, worker, Duration::from_secs(secs), |m| {
        m.iter().any(|s| {
            let end = match s.body["kind"].as_str() {
                Some("many") => {
                    &s.body["msgs"][s.body["msgs"]
                        .as_array()
                        .map_or(0, Vec::len)
                        .saturating_sub(1)]["kind"]
                }
                _ => &s.body["kind"],
            };
            end == "done" || end == "failed"
        })
    })
    .await
}

/// Sends `control` to the worker running `session`, as the root does (core NATS on
/// `arbor.ctl.<session>`).
pub(super) async fn control(remote: &Remote, session: &str, control: &Control) {
    remote
        .client()
        .publish(
            ctl_subject(session).unwrap(),
            serde_json::to_vec(control).unwrap().into(),
        )
        .await
        .unwrap();
}

pub(super) fn kinds(messages: &[Sent]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m.body["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

pub(super) fn event_names(messages: &[Sent]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.body["kind"] == "event")
        .map(|m| {
            m.body["event"]["event"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

pub(super) async fn jobs_left(remote: &Remote) -> u64 {
    let mut stream = remote.js().get_stream(JOBS_STREAM).await.unwrap();
    stream.info().await.unwrap().state.messages
}

/// An OpenAI stream that never ends (a `tick ` every 100 ms) for every request.
pub(super) fn endless_server() -> ScriptedServer {
    let tick = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"scripted-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tick \"},\"finish_reason\":null}]}\n\n";
    ScriptedServer::sequence(vec![Reply::Endless {
        chunk: tick.to_string(),
        every: Duration::from_millis(100),
    }])
}
