//! `arbor worker` (issue 27) against a real NATS server (`scripts/nats-server`, on
//! loopback ports 14300–14399): the test plays the root — it publishes a `Job` with the
//! transport's own types, reads the worker's `WorkerMsg` stream from `ARBOR_OUT`, and
//! bumps the session's lease as another worker would — while the real binary runs the
//! job with a loopback OpenAI-compatible stub configured in the WORKER's config.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arbor::config::MountPlan;
use arbor::remote::Remote;
use arbor::remote::payload::Payload;
use arbor::remote::wire::{
    Control, EPOCH_HEADER, JOB_VERSION, JOBS_STREAM, Job, JobFiles, LEASES_BUCKET, Lease,
    OUT_STREAM, RanOn, SyncReply, WORKER_HEADER, WireDecision, WireScope, ctl_subject, job_subject,
    out_subject, sync_subject, token,
};
use arbor::session::{Message, Metadata, SessionId};
use async_nats::jetstream::consumer;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::*;

const SESSION: &str = "0123456789abcdef-fedcba9876543210_helper";
const PARENT: &str = "01234567-89ab-4def-8123-456789abcdef";
const WORKER_KEY: &str = "sk-worker-own-key-0123456789";

/// A NATS server with JetStream started by `scripts/nats-server`, killed on drop.
struct Nats {
    child: Child,
    url: String,
}

impl Nats {
    fn start(port: u16, store: &Path) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/nats-server");
        let log = std::fs::File::create(store.with_extension("log")).unwrap();
        let child = Command::new(script)
            .args(["--port", &port.to_string(), "--store"])
            .arg(store)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("scripts/nats-server starts");
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "NATS did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("nats://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The real `arbor worker`, killed on drop.
struct Worker {
    child: Child,
    first_line: String,
    stderr: PathBuf,
}

impl Worker {
    fn start(env: &TestEnv, nats: &Nats, pool: &str) -> Self {
        Self::start_with(env, nats, pool, &[])
    }

    fn start_with(env: &TestEnv, nats: &Nats, pool: &str, extra: &[&str]) -> Self {
        let mut worker = Self::spawn(env, &nats.url, pool, extra);
        worker.read_first_line();
        worker
    }

    /// Starts the worker without waiting for it to connect.
    fn spawn(env: &TestEnv, url: &str, pool: &str, extra: &[&str]) -> Self {
        let stderr = env.dir.path().join(format!("worker-{pool}.stderr"));
        let child = env
            .std_cmd()
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
    fn read_first_line(&mut self) {
        BufReader::new(self.child.stdout.take().unwrap())
            .read_line(&mut self.first_line)
            .unwrap();
    }

    fn stderr(&self) -> String {
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
fn plan(base_url: &str) -> Value {
    json!({
        "instruction": "You are helper.",
        "providers": [{"module": "provider-openai", "config": {
            "base_url": base_url, "api_key": "[REDACTED]", "default_model": "scripted-model"}}],
        "tools": [],
    })
}

fn job(base_url: &str, instruction: &str) -> Job {
    job_of(SESSION, plan(base_url), instruction)
}

fn job_of(session: &str, plan: Value, instruction: &str) -> Job {
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
        approvals: Value::Null,
        files: None,
        dispatched_at_ms: 0,
    }
}

async fn publish(remote: &Remote, pool: &str, job: &Job) {
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

/// One message the worker published: its epoch and worker headers and its body.
#[derive(Debug, Clone)]
struct Sent {
    epoch: u64,
    worker: String,
    body: Value,
}

/// Everything on `arbor.out.<session>` so far, in order.
async fn sent_of(remote: &Remote, session: &str) -> Vec<Sent> {
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
            body: serde_json::from_slice(&m.payload).unwrap(),
        });
    }
    out
}

/// Waits until `done(&messages)` holds (or fails after `limit`, showing the worker's
/// stderr).
async fn wait_for(
    remote: &Remote,
    worker: &Worker,
    limit: Duration,
    done: impl Fn(&[Sent]) -> bool,
) -> Vec<Sent> {
    wait_for_session(remote, SESSION, worker, limit, done).await
}

/// [`wait_for`] on `session`'s messages.
async fn wait_for_session(
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

fn kinds(messages: &[Sent]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m.body["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn event_names(messages: &[Sent]) -> Vec<String> {
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

async fn jobs_left(remote: &Remote) -> u64 {
    let mut stream = remote.js().get_stream(JOBS_STREAM).await.unwrap();
    stream.info().await.unwrap().state.messages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_the_worker_and_its_answer_events_and_ack_come_back() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("done on the worker"))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let nats = Nats::start(14301, &env.dir.path().join("nats"));
    let remote = Remote::connect(&nats.url, "test root", &Default::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();

    let worker = Worker::start(&env, &nats, "solo");
    let pid = worker.child.id();
    assert!(
        worker.first_line.starts_with("worker w-")
            && worker
                .first_line
                .contains(&format!("pid {pid}: pool solo, 1 slot, nats {}", nats.url)),
        "{}",
        worker.first_line
    );
    publish(&remote, "solo", &job(&server.base_url, "say hi")).await;

    let messages = wait_for(&remote, &worker, Duration::from_secs(60), |m| {
        m.iter()
            .any(|s| s.body["kind"] == "done" || s.body["kind"] == "failed")
    })
    .await;
    let kinds = kinds(&messages);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("started"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("done"), "{kinds:?}");
    let started = &messages[0].body;
    assert_eq!(started["ran_on"]["pid"], pid);
    assert_eq!(started["epoch"], 1);
    assert_eq!(started["attempt"], 1);
    let worker_id = started["ran_on"]["worker"].as_str().unwrap().to_string();
    assert!(worker.first_line.contains(&worker_id));
    assert!(
        messages
            .iter()
            .all(|m| m.epoch == 1 && m.worker == worker_id),
        "every message carries epoch 1 and the worker's id"
    );
    let names = event_names(&messages);
    assert!(names.iter().any(|n| n == "message:appended"), "{names:?}");
    assert!(
        names.iter().any(|n| n == "content_block:delta"),
        "{names:?}"
    );
    let appended: Vec<&Value> = messages
        .iter()
        .filter(|m| m.body["event"]["event"] == "message:appended")
        .map(|m| &m.body["event"])
        .collect();
    assert!(appended.iter().all(|e| e["session_id"] == SESSION));
    let done = &messages.last().unwrap().body;
    assert_eq!(done["run"], 1);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["response"], "done on the worker");
    assert_eq!(done["turn_count"], 1);
    assert_eq!(done["metadata"]["session_id"], SESSION);
    assert_eq!(done["metadata"]["ran_on"]["worker"], worker_id.as_str());
    assert!(done["changes"].is_null(), "no files, no changes");

    // The model call used the worker's own key; the job carried none.
    let heads = server.heads().join("\n").to_lowercase();
    assert!(
        heads.contains(&format!("bearer {}", WORKER_KEY.to_lowercase())),
        "{heads}"
    );

    // Acked after Done was stored: the work queue is empty.
    let deadline = Instant::now() + Duration::from_secs(10);
    while jobs_left(&remote).await != 0 {
        assert!(Instant::now() < deadline, "the job was never acked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Presence: the worker is listed in arbor_workers with its pool and slots.
    let workers = remote.workers().await.unwrap();
    let entry = workers
        .get(&worker_id)
        .await
        .unwrap()
        .expect("presence entry");
    let info: Value = serde_json::from_slice(&entry).unwrap();
    assert_eq!(info["pool"], "solo");
    assert_eq!(info["slots"], 1);
    // The scratch store is gone: nothing of the session stays on the worker.
    assert!(files_containing(&env.amplifier_home, SESSION).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_loses_its_lease_goes_quiet_and_the_redelivery_resumes_from_the_root() {
    // The first model call streams until cancelled; the next one (after the takeover)
    // answers.
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let tick = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"scripted-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tick \"},\"finish_reason\":null}]}\n\n";
    let server = ScriptedServer::start(Arc::new(move |_| {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if n == 0 {
                Reply::Endless {
                    chunk: tick.to_string(),
                    every: Duration::from_millis(100),
                }
            } else {
                Reply::Sse(sse_text("resumed after the takeover"))
            }
        })
    }));
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let nats = Nats::start(14302, &env.dir.path().join("nats"));
    let remote = Remote::connect(&nats.url, "test root", &Default::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    let job = job(&server.base_url, "count forever");

    // The root answers a redelivered job's sync request: the store holds the run's
    // instruction (the first worker got that far).
    let client = remote.client().clone();
    let mut syncs = client
        .subscribe(sync_subject(SESSION).unwrap())
        .await
        .unwrap();
    let reply = SyncReply {
        metadata: Some(Box::new(job.metadata.clone())),
        transcript: Some(Payload::Inline(vec![Message::user("count forever")])),
        error: None,
    };
    let answered = Arc::new(AtomicUsize::new(0));
    let count = answered.clone();
    tokio::spawn(async move {
        while let Some(request) = syncs.next().await {
            count.fetch_add(1, Ordering::SeqCst);
            if let Some(to) = request.reply {
                let body = serde_json::to_vec(&reply).unwrap();
                client.publish(to, body.into()).await.unwrap();
            }
        }
    });

    let worker = Worker::start(&env, &nats, "lease");
    publish(&remote, "lease", &job).await;
    let before = wait_for(&remote, &worker, Duration::from_secs(60), |m| {
        event_names(m)
            .iter()
            .filter(|n| *n == "content_block:delta")
            .count()
            >= 3
    })
    .await;
    let worker_id = before[0].body["ran_on"]["worker"]
        .as_str()
        .unwrap()
        .to_string();

    // Another worker takes the session: epoch 2.
    let leases = remote.js().get_key_value(LEASES_BUCKET).await.unwrap();
    let key = token(SESSION).unwrap();
    let entry = leases.entry(&key).await.unwrap().unwrap();
    let held: Lease = serde_json::from_slice(&entry.value).unwrap();
    assert_eq!(held.epoch, 1);
    let other = Lease {
        epoch: 2,
        ran_on: RanOn {
            worker: "w-0therw0r".into(),
            host: "elsewhere".into(),
            pid: 1,
        },
        ..held
    };
    leases
        .update(
            &key,
            serde_json::to_vec(&other).unwrap().into(),
            entry.revision,
        )
        .await
        .unwrap();

    // It notices at its next renewal (every ack wait / 3 = 1 s), cancels its turn and
    // publishes nothing more: every message of its epoch carries the stale epoch 1, no
    // Done among them. JetStream then redelivers the unacked job (after 3 s): the
    // worker takes it at epoch 3, asks the root for the session and continues it.
    let messages = wait_for(&remote, &worker, Duration::from_secs(60), |m| {
        m.iter()
            .any(|s| s.body["kind"] == "done" || s.body["kind"] == "failed")
    })
    .await;
    let restart = messages
        .iter()
        .position(|m| m.body["kind"] == "started" && m.body["epoch"] != 1)
        .expect("a second start after the redelivery");
    let (first, second) = messages.split_at(restart);
    assert!(first.iter().all(|m| m.epoch == 1 && m.worker == worker_id));
    assert!(
        first
            .iter()
            .all(|m| m.body["kind"] != "done" && m.body["kind"] != "failed"),
        "the run that lost its lease never answered: {:?}",
        kinds(first)
    );
    assert!(
        first.len() >= before.len(),
        "what it sent before the bump is kept"
    );
    assert_eq!(second[0].body["epoch"], 3);
    assert_eq!(second[0].body["attempt"], 2);
    assert!(second.iter().all(|m| m.epoch == 3));
    let done = &second.last().unwrap().body;
    assert_eq!(done["kind"], "done", "{done}");
    assert_eq!(done["response"], "resumed after the takeover");
    assert!(answered.load(Ordering::SeqCst) >= 1, "the root was asked");

    // The resumed call continued the stored run: the instruction once, not re-sent.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one cancelled call, one resumed");
    let users: Vec<String> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(content_text)
        .collect();
    assert_eq!(users, vec!["count forever".to_string()]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while jobs_left(&remote).await != 0 {
        assert!(Instant::now() < deadline, "the job was never acked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stderr = worker.stderr();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writing_job_asks_the_root_for_approval_works_in_a_worktree_and_returns_its_patch() {
    const WRITER: &str = "0123456789abcdef-1111222233334444_writer";
    const MISSING: &str = "0123456789abcdef-5555666677778888_writer";
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "w1",
            "write_file",
            json!({"file_path": "notes.md", "content": "from the worker\n"}),
        )])),
        Reply::Sse(sse_text("wrote it")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    // The worker's clone of the project, at the root's base commit.
    let clone = env.dir.path().join("clone");
    std::fs::create_dir_all(clone.join("sub")).unwrap();
    std::fs::write(clone.join("sub/keep.txt"), "kept\n").unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&clone)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    git(&["init", "--quiet"]);
    git(&["add", "-A"]);
    git(&["commit", "--quiet", "-m", "base"]);
    let base = git(&["rev-parse", "HEAD"]);

    let nats = Nats::start(14303, &env.dir.path().join("nats"));
    let remote = Remote::connect(&nats.url, "test root", &Default::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    let repo = clone.display().to_string();
    let worker = Worker::start_with(&env, &nats, "files", &["--repo", &repo]);

    let mut plan = plan(&server.base_url);
    plan["tools"] = json!([{"module": "tool-filesystem"}]);
    let mut job = job_of(WRITER, plan.clone(), "write the notes");
    job.files = Some(JobFiles {
        base_commit: base.clone(),
        repo_name: "proj".into(),
        relative_dir: "sub".into(),
        writes: true,
    });
    publish(&remote, "files", &job).await;

    // The write waits for the root's answer.
    let asked = wait_for_session(&remote, WRITER, &worker, Duration::from_secs(60), |m| {
        event_names(m).iter().any(|n| n == "approval:required")
    })
    .await;
    let required = asked
        .iter()
        .find(|m| m.body["event"]["event"] == "approval:required")
        .unwrap();
    assert_eq!(required.body["event"]["data"]["tool_call_id"], "w1");
    let answer = Control::Approval {
        tool_call_id: "w1".into(),
        decision: WireDecision::Allow(WireScope::Once),
    };
    remote
        .client()
        .publish(
            ctl_subject(WRITER).unwrap(),
            serde_json::to_vec(&answer).unwrap().into(),
        )
        .await
        .unwrap();

    let messages = wait_for_session(&remote, WRITER, &worker, Duration::from_secs(60), |m| {
        m.iter()
            .any(|s| s.body["kind"] == "done" || s.body["kind"] == "failed")
    })
    .await;
    let names = event_names(&messages);
    assert!(names.iter().any(|n| n == "approval:granted"), "{names:?}");
    let done = &messages.last().unwrap().body;
    assert_eq!(done["kind"], "done", "{done}");
    assert_eq!(done["response"], "wrote it");
    let changes = &done["changes"]["inline"];
    assert_eq!(changes["base_commit"], base.as_str());
    let patch = changes["patch"].as_str().unwrap();
    assert!(patch.contains("+++ b/sub/notes.md"), "{patch}");
    assert!(patch.contains("+from the worker"), "{patch}");
    assert!(!patch.contains("keep.txt"), "{patch}");
    // The patch applies to the base commit; the clone itself was never written.
    std::fs::write(env.dir.path().join("p.diff"), patch).unwrap();
    let p = env.dir.path().join("p.diff").display().to_string();
    git(&["apply", "--check", &p]);
    assert!(!clone.join("sub/notes.md").exists());
    assert_eq!(
        git(&["worktree", "list"]).lines().count(),
        1,
        "worktree removed"
    );

    // A commit the clone lacks: Failed naming it, and the job is acked.
    let mut missing = job_of(MISSING, plan, "write more");
    missing.files = Some(JobFiles {
        base_commit: "0123456789abcdef0123456789abcdef01234567".into(),
        repo_name: "proj".into(),
        relative_dir: String::new(),
        writes: true,
    });
    publish(&remote, "files", &missing).await;
    let failed = wait_for_session(&remote, MISSING, &worker, Duration::from_secs(60), |m| {
        m.iter().any(|s| s.body["kind"] == "failed")
    })
    .await;
    let error = failed.last().unwrap().body["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("lacks commit 0123456789abcdef0123456789abcdef01234567; fetch it"),
        "{error}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while jobs_left(&remote).await != 0 {
        assert!(Instant::now() < deadline, "the jobs were never acked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An OpenAI stream that never ends (a `tick ` every 100 ms) for every request.
fn endless_server() -> ScriptedServer {
    let tick = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"scripted-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tick \"},\"finish_reason\":null}]}\n\n";
    ScriptedServer::sequence(vec![Reply::Endless {
        chunk: tick.to_string(),
        every: Duration::from_millis(100),
    }])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_retries_until_nats_is_up_obeys_cancel_and_hands_its_job_back_on_sigterm() {
    const CANCELLED: &str = "0123456789abcdef-aaaabbbbccccdddd_helper";
    const HANDED_BACK: &str = "0123456789abcdef-eeeeffff00001111_helper";
    let server = endless_server();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let port = 14304;
    let url = format!("nats://127.0.0.1:{port}");

    // No server yet: the worker says so and retries with backoff.
    let mut worker = Worker::spawn(&env, &url, "ctl", &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let retrying = format!("arbor: cannot reach NATS at {url}; retrying in 0.5 s");
    while !worker.stderr().contains(&retrying) {
        assert!(Instant::now() < deadline, "stderr: {}", worker.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let nats = Nats::start(port, &env.dir.path().join("nats"));
    worker.read_first_line();
    assert!(
        worker.first_line.contains("pool ctl"),
        "{}",
        worker.first_line
    );
    let remote = Remote::connect(&nats.url, "test root", &Default::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();

    // Control::Cancel ends the running turn: Done, cancelled, with the partial text.
    publish(
        &remote,
        "ctl",
        &job_of(CANCELLED, plan(&server.base_url), "count"),
    )
    .await;
    let streaming = |m: &[Sent]| {
        event_names(m)
            .iter()
            .filter(|n| *n == "content_block:delta")
            .count()
            >= 2
    };
    wait_for_session(
        &remote,
        CANCELLED,
        &worker,
        Duration::from_secs(60),
        streaming,
    )
    .await;
    remote
        .client()
        .publish(
            ctl_subject(CANCELLED).unwrap(),
            serde_json::to_vec(&Control::Cancel).unwrap().into(),
        )
        .await
        .unwrap();
    let messages = wait_for_session(&remote, CANCELLED, &worker, Duration::from_secs(30), |m| {
        m.iter()
            .any(|s| s.body["kind"] == "done" || s.body["kind"] == "failed")
    })
    .await;
    let done = &messages.last().unwrap().body;
    assert_eq!(done["status"], "cancelled", "{done}");
    assert!(
        done["response"].as_str().unwrap().contains("tick"),
        "{done}"
    );

    // SIGTERM while a job runs: the worker exits 0 without answering, the job stays
    // queued for another worker, and its presence entry is gone.
    publish(
        &remote,
        "ctl",
        &job_of(HANDED_BACK, plan(&server.base_url), "count again"),
    )
    .await;
    let before = wait_for_session(
        &remote,
        HANDED_BACK,
        &worker,
        Duration::from_secs(60),
        streaming,
    )
    .await;
    let worker_id = before[0].body["ran_on"]["worker"]
        .as_str()
        .unwrap()
        .to_string();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(worker.child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = worker.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the worker did not stop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status:?}\n{}", worker.stderr());
    let after = sent_of(&remote, HANDED_BACK).await;
    assert!(
        after
            .iter()
            .all(|m| m.body["kind"] != "done" && m.body["kind"] != "failed"),
        "{:?}",
        kinds(&after)
    );
    assert_eq!(
        jobs_left(&remote).await,
        1,
        "the job is handed back, not acked"
    );
    let workers = remote.workers().await.unwrap();
    assert!(workers.get(&worker_id).await.unwrap().is_none());
}
