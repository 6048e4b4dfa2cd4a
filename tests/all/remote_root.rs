//! The root side of remote sub-sessions (issue 27) through the real binary: `arbor
//! run` with a loopback model that makes one `task` call to an agent marked `remote:
//! true`, a real NATS server (`scripts/nats-server`), and the WORKER played by hand
//! here with async-nats — take the job from the pool's consumer, take the lease,
//! publish `Started` / events / `Done` under the lease's epoch.
//!
//! Checked: the child's transcript, events and metadata `ran_on` land in the root's
//! store and its answer reaches the parent; the worker's patch is committed on the
//! child's branch so `session merge` works; a worker that lost its lease is shut out
//! (its late write is refused, logged and absent from the store; the session was
//! marked interrupted and the new holder's sync answer carries the partial text);
//! NATS unreachable fails the child with an error naming the URL, never a local run.
//! Turns a person starts in a remote child: `person`.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arbor::engine::testing::Drive;
use arbor::remote::lease;
use arbor::remote::seal::{self, Signer};
use arbor::remote::wire::{self, Changes, Job, RanOn, SyncReply, WorkerMsg};
use arbor::remote::{Payload, Remote, RemoteAuth};
use arbor::session::{EngineEvent, Event, Message, SessionStatus};
use async_nats::HeaderMap;
use async_nats::jetstream::{self, AckKind};
use futures::StreamExt;
use serde_json::{Value, json};
use support::fixture::HELPER;
use support::nats::NatsServer;
use support::*;

const EXPLORER: &str = "You are explorer.";

/// `git -C dir ARGS` with a test identity; its trimmed stdout (panics on failure).
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The config: the loopback model and `remote:` at `nats_url`, pool `pool`; children's
/// branches stay unmerged (`merge: manual`) so the tests can look at them.
fn write_config(env: &TestEnv, base_url: &str, nats_url: &str, pool: &str) {
    let yaml = format!(
        "providers:\n  - module: provider-openai\n    config:\n      base_url: \"{base_url}\"\n      api_key: sk-test-remote\n      default_model: scripted-model\nremote:\n  nats_url: \"{nats_url}\"\n  pool: {pool}\n  ack_wait: 5\nisolation: {{merge: manual}}\n"
    );
    std::fs::write(&env.config, yaml).unwrap();
}

/// Agent `explorer`, marked `remote: true`.
fn write_explorer(env: &TestEnv) {
    let dir = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("explorer.md"),
        format!(
            "---\nmeta:\n  name: explorer\n  description: Explores.\nremote: true\n---\n{EXPLORER}\n"
        ),
    )
    .unwrap();
}

/// The root's model: a `task` call to `explorer`, then "parent saw: <tool result>".
/// Any request of the explorer itself (a local run) is answered "RAN LOCALLY".
fn root_model() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        let system = content_text(&body["messages"][0]);
        let reply = if system.contains(EXPLORER) {
            Reply::Sse(sse_text("RAN LOCALLY"))
        } else {
            delegating_reply(&body, "explorer", "Look around")
        };
        Box::pin(async move { reply })
    }))
}

/// `arbor run --yes --output-format json PROMPT` started in the background.
fn spawn_run(env: &TestEnv, prompt: &str) -> std::thread::JoinHandle<Output> {
    let mut cmd = env.std_cmd();
    cmd.args(["run", "--yes", "--output-format", "json", prompt]);
    std::thread::spawn(move || cmd.output().unwrap())
}

fn finished(handle: std::thread::JoinHandle<Output>) -> Value {
    let out = handle.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "stdout {stdout}\nstderr {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

/// How long a hand worker's lease lives without a renewal (it records this ack wait;
/// the root counts it expired after two thirds of it without a renewal seen).
const HAND_ACK_WAIT: Duration = Duration::from_millis(900);

/// A worker played by hand: its identity, the connection, its key (its public half in
/// the leases it takes; every message signed with it, as `arbor worker` does), the
/// next sequence number, and the stream sequence of the job it took last.
struct HandWorker {
    remote: Remote,
    ran_on: RanOn,
    signer: Signer,
    seq: AtomicU64,
    job_seq: AtomicU64,
}

impl HandWorker {
    async fn connect(url: &str, n: u32) -> Self {
        let remote = Remote::connect(url, "hand worker", &RemoteAuth::default())
            .await
            .unwrap();
        remote.ensure().await.unwrap();
        Self {
            remote,
            ran_on: RanOn {
                worker: format!("w-test000{n}"),
                host: "hand".into(),
                pid: 4000 + n,
            },
            signer: Signer::generate().unwrap(),
            seq: AtomicU64::new(0),
            job_seq: AtomicU64::new(0),
        }
    }

    /// The next job of `pool` (waits for the root to publish it).
    async fn take_job(&self, pool: &str) -> (Job, jetstream::Message) {
        let consumer = self
            .remote
            .ensure_pool(pool, Duration::from_secs(30))
            .await
            .unwrap();
        let mut messages = consumer.messages().await.unwrap();
        self.next_job(&mut messages).await
    }

    /// The next job of `messages` (waits up to 60 s), remembered as the one taken last.
    async fn next_job(
        &self,
        messages: &mut jetstream::consumer::pull::Stream,
    ) -> (Job, jetstream::Message) {
        let message = tokio::time::timeout(Duration::from_secs(60), messages.next())
            .await
            .expect("no job within 60 s")
            .unwrap()
            .unwrap();
        let job: Job = serde_json::from_slice(&message.payload).unwrap();
        let seq = message.info().unwrap().stream_sequence;
        self.job_seq.store(seq, Ordering::SeqCst);
        (job, message)
    }

    /// Takes `session`'s lease for the job taken last, with this worker's key.
    async fn lease(&self, session: &str) -> lease::Held {
        let leases = self.remote.leases().await.unwrap();
        let job_seq = self.job_seq.load(Ordering::SeqCst);
        let terms = (self.signer.public_key(), HAND_ACK_WAIT);
        lease::acquire(&leases, session, &self.ran_on, (job_seq, false), terms)
            .await
            .unwrap()
    }

    /// Publishes `msg` about `session` under `epoch` (JetStream, acked), signed with
    /// the next sequence number.
    async fn send(&self, session: &str, epoch: u64, msg: &WorkerMsg) {
        let body = serde_json::to_vec(msg).unwrap();
        let seq = self.seq.fetch_add(1, Ordering::SeqCst);
        let headers = seal::headers(
            &self.signer,
            (session, epoch, seq),
            &self.ran_on.worker,
            &body,
        );
        publish_raw(&self.remote, session, headers, body).await;
    }

    async fn event(&self, job: &Job, epoch: u64, msg: EngineEvent) {
        let event = Event::new(&job.session_id, job.metadata.parent_id.as_deref(), msg);
        let event = WorkerMsg::Event {
            event: Box::new(event),
        };
        self.send(&job.session_id, epoch, &event).await;
    }

    async fn started(&self, job: &Job, epoch: u64, attempt: u32) {
        let started = WorkerMsg::Started {
            ran_on: self.ran_on.clone(),
            epoch,
            attempt,
        };
        self.send(&job.session_id, epoch, &started).await;
    }

    async fn done(&self, job: &Job, epoch: u64, response: &str, changes: Option<Changes>) {
        let mut metadata = job.metadata.clone();
        metadata.turn_count += 1;
        metadata.status = SessionStatus::Completed;
        let done = WorkerMsg::Done {
            run: job.run,
            status: SessionStatus::Completed,
            response: response.into(),
            turn_count: 1,
            error: None,
            metadata: Box::new(metadata),
            changes: changes.map(Payload::Inline),
        };
        self.send(&job.session_id, epoch, &done).await;
    }
}

/// Publishes `body` with `headers` on `session`'s out subject (JetStream, acked).
async fn publish_raw(remote: &Remote, session: &str, headers: HeaderMap, body: Vec<u8>) {
    remote
        .js()
        .publish_with_headers(wire::out_subject(session).unwrap(), headers, body.into())
        .await
        .unwrap()
        .await
        .unwrap();
}

fn assistant(text: &str) -> Message {
    serde_json::from_value(json!({"role": "assistant", "content": text})).unwrap()
}

/// Waits (up to 20 s) until `check` holds.
async fn until(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn child_dir(env: &TestEnv) -> PathBuf {
    let dirs = env.session_dirs("_explorer");
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// A root whose config puts `explorer` on `pool` of `nats`, in a git project with one
/// commit (`app.py`: `VALUE = 0`); returns it with that commit.
fn repo_root(server: &ScriptedServer, nats: &NatsServer, pool: &str) -> (TestEnv, String) {
    let env = TestEnv::new();
    write_config(&env, &server.base_url, &nats.url, pool);
    write_explorer(&env);
    git(&env.project, &["init", "--quiet"]);
    std::fs::write(env.project.join("app.py"), "VALUE = 0\n").unwrap();
    git(&env.project, &["add", "app.py"]);
    git(&env.project, &["commit", "--quiet", "-m", "init"]);
    let head = git(&env.project, &["rev-parse", "HEAD"]);
    (env, head)
}

fn log_text(env: &TestEnv) -> String {
    std::fs::read_to_string(env.home.join(".local/state/arbor/arbor.log")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_child_runs_on_a_worker_and_its_work_lands_at_the_root() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let server = root_model();
    let (env, head) = repo_root(&server, &nats, "rt1");

    let run = spawn_run(&env, "Explore for me");
    let worker = HandWorker::connect(&nats.url, 1).await;
    let (job, message) = worker.take_job("rt1").await;
    // The job: the child created at the root, a redacted plan, the instruction, the
    // commit to start from, no secret.
    assert_eq!(job.run, 1);
    assert!(job.session_id.ends_with("_explorer"), "{}", job.session_id);
    assert_eq!(job.instruction, "Look around");
    let files = job.files.clone().expect("a repository job");
    assert_eq!(files.base_commit, head);
    assert!(files.writes);
    let body = String::from_utf8_lossy(&message.payload).to_string();
    assert!(!body.contains("sk-test-remote"), "the job carries a key");
    let dir = env.sessions_dir().join(job.session_id.as_str());
    until("the child queued", || {
        std::fs::read_to_string(dir.join("metadata.json")).is_ok_and(|m| m.contains("queued"))
    })
    .await;

    let held = worker.lease(&job.session_id).await;
    let epoch = held.epoch();
    worker.started(&job, epoch, 1).await;
    worker
        .event(&job, epoch, EngineEvent::status(SessionStatus::Running))
        .await;
    worker
        .event(
            &job,
            epoch,
            EngineEvent::appended(assistant("found app.py")),
        )
        .await;
    // Its work: a new file, diffed against the job's commit in a clone.
    let clone = tempfile::tempdir().unwrap();
    let c = clone.path().join("c");
    git(
        clone.path(),
        &["clone", "--quiet", &env.project.display().to_string(), "c"],
    );
    git(&c, &["checkout", "--quiet", &files.base_commit]);
    std::fs::write(c.join("notes.md"), "explored\n").unwrap();
    git(&c, &["add", "--all"]);
    let patch = git(&c, &["diff", "--cached", "--binary", &files.base_commit]) + "\n";
    worker
        .event(&job, epoch, EngineEvent::status(SessionStatus::Completed))
        .await;
    worker
        .done(
            &job,
            epoch,
            "found app.py",
            Some(Changes {
                base_commit: files.base_commit.clone(),
                patch,
            }),
        )
        .await;
    message.ack_with(AckKind::Ack).await.unwrap();

    let result = finished(run);
    let response = result["response"].as_str().unwrap_or_default();
    assert!(response.contains("found app.py"), "{result}");
    assert!(!response.contains("RAN LOCALLY"), "{result}");
    let child = child_dir(&env);
    let transcript = read_jsonl(&child.join("transcript.jsonl"));
    let texts: Vec<String> = transcript.iter().map(content_text).collect();
    assert_eq!(texts, ["Look around", "found app.py"], "{transcript:?}");
    let metadata = env.metadata(job.session_id.as_str());
    assert_eq!(metadata["ran_on"]["worker"], "w-test0001", "{metadata}");
    assert_eq!(metadata["ran_on"]["host"], "hand");
    assert_eq!(metadata["ran_on"]["pid"], 4001);
    assert_eq!(metadata["status"], "completed");
    assert_eq!(metadata["turn_count"], 1);
    let events = std::fs::read_to_string(child.join("events.jsonl")).unwrap();
    assert!(events.contains("\"session:status\""), "{events}");
    // The patch is committed on the child's branch: `session merge` brings it in.
    let short = job.session_id.short();
    assert_eq!(
        git(&env.project, &["show", &format!("arbor/{short}:notes.md")]),
        "explored"
    );
    let merged = env
        .cmd()
        .args(["session", "merge", job.session_id.as_str()])
        .output()
        .unwrap();
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(env.project.join("notes.md")).unwrap(),
        "explored\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_lost_its_lease_cannot_write_again() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let server = root_model();
    let env = TestEnv::new();
    write_config(&env, &server.base_url, &nats.url, "rt2");
    write_explorer(&env);

    let run = spawn_run(&env, "Explore for me");
    let first = HandWorker::connect(&nats.url, 1).await;
    let (job, message) = first.take_job("rt2").await;
    let session = job.session_id.to_string();
    let dir = env.sessions_dir().join(&session);
    let one = first.lease(&session).await.epoch();
    first.started(&job, one, 1).await;
    first
        .event(
            &job,
            one,
            EngineEvent::delta(arbor::session::protocol::DeltaKind::Text, "half an ans"),
        )
        .await;
    first
        .event(&job, one, EngineEvent::status(SessionStatus::Waiting))
        .await;
    until("the first worker's events applied", || {
        std::fs::read_to_string(dir.join("metadata.json")).is_ok_and(|m| m.contains("waiting"))
    })
    .await;

    // The first worker freezes (no renewal for longer than its lease lives); its job
    // is redelivered to a second, which takes the lease over, says it started, and
    // asks the root for the session as stored.
    tokio::time::sleep(HAND_ACK_WAIT + Duration::from_millis(300)).await;
    let second = HandWorker::connect(&nats.url, 2).await;
    second
        .job_seq
        .store(first.job_seq.load(Ordering::SeqCst), Ordering::SeqCst);
    let two = second.lease(&session).await.epoch();
    assert_eq!(two, one + 1);
    let mut ctl = second
        .remote
        .client()
        .subscribe(wire::ctl_subject(&session).unwrap())
        .await
        .unwrap();
    second.remote.client().flush().await.unwrap();
    second.started(&job, two, 2).await;
    let reply = seal::request_sync(
        second.remote.client(),
        wire::sync_subject(&session).unwrap(),
        (&session, two),
        &second.signer,
        Duration::from_secs(20),
    )
    .await
    .unwrap();
    let sync: SyncReply = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(sync.error, None);
    let stored = sync.metadata.unwrap();
    assert_eq!(stored.status, SessionStatus::Interrupted);
    let Some(Payload::Inline(transcript)) = sync.transcript else {
        panic!("no inline transcript");
    };
    let texts: Vec<String> = transcript.iter().map(Message::text).collect();
    assert_eq!(texts, ["Look around", "half an ans"], "the partial is kept");
    // The new holder is heard: the root (headless, --yes) answers its approval.
    second
        .event(
            &job,
            two,
            EngineEvent::ApprovalRequired(arbor::session::protocol::ApprovalRequiredEvent {
                tool_call_id: "c7".into(),
                tool_name: "bash".into(),
                ..Default::default()
            }),
        )
        .await;
    let wire::Control::Approval { tool_call_id, .. } = next_control(&mut ctl).await else {
        panic!("not an approval");
    };
    assert_eq!(tool_call_id, "c7");
    // The first worker wakes up and writes with its old epoch: refused.
    first
        .event(&job, one, EngineEvent::appended(assistant("LATE WRITE")))
        .await;
    first.done(&job, one, "LATE ANSWER", None).await;
    second
        .event(
            &job,
            two,
            EngineEvent::appended(assistant("second worker's answer")),
        )
        .await;
    second.done(&job, two, "second worker's answer", None).await;
    message.ack_with(AckKind::Ack).await.unwrap();

    let result = finished(run);
    let response = result["response"].as_str().unwrap_or_default();
    assert!(response.contains("second worker's answer"), "{result}");
    assert!(!response.contains("LATE"), "{result}");
    let transcript = std::fs::read_to_string(dir.join("transcript.jsonl")).unwrap();
    assert!(!transcript.contains("LATE WRITE"), "{transcript}");
    let lines = read_jsonl(&dir.join("transcript.jsonl"));
    let partial = &lines[1];
    assert_eq!(content_text(partial), "half an ans");
    assert_eq!(partial["metadata"]["partial"], true, "{partial}");
    assert!(transcript.contains("second worker's answer"));
    let metadata = env.metadata(&session);
    assert_eq!(metadata["ran_on"]["worker"], "w-test0002");
    assert_eq!(metadata["status"], "completed");
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(events.contains("\"interrupted\""), "{events}");
    let log = log_text(&env);
    assert!(
        log.contains("refused a late write from worker w-test0001 epoch 1"),
        "{log}"
    );
    assert_eq!(
        log.matches("refused a late write from worker").count(),
        2,
        "the late event and the late Done: {log}"
    );
}

#[test]
fn nats_unreachable_fails_the_child_naming_the_url_and_never_runs_it_here() {
    let server = root_model();
    let env = TestEnv::new();
    // Nothing listens on this port.
    let url = "nats://127.0.0.1:14499";
    write_config(&env, &server.base_url, url, "rt3");
    write_explorer(&env);
    let result = finished(spawn_run(&env, "Explore for me"));
    let response = result["response"].as_str().unwrap_or_default();
    assert!(
        response.contains(&format!("cannot reach NATS at {url}")),
        "{result}"
    );
    assert!(!response.contains("RAN LOCALLY"), "{result}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "only the root's model calls");
    let child = child_dir(&env);
    let id = child.file_name().unwrap().to_string_lossy().to_string();
    let metadata = env.metadata(&id);
    assert_eq!(metadata["status"], "failed", "{metadata}");
    let events = std::fs::read_to_string(child.join("events.jsonl")).unwrap();
    assert!(events.contains(url), "{events}");
}

/// An in-process root whose model delegates "do it" to `helper`, which `remote:`
/// puts on `pool` of the server at `nats_url` (ack wait 5 s); a helper that ran here
/// would answer "RAN LOCALLY".
fn remote_fixture(nats_url: &str, pool: &str) -> support::fixture::Fixture {
    use arbor::config::remote::{RemoteAgents, RemoteConfig};
    use support::fixture::{Fixture, delegating, plan};
    let mut fixture = Fixture::new(
        plan(json!({})),
        &[("helper", HELPER)],
        delegating(
            json!({"agent": "helper", "instruction": "do it"}),
            vec![arbor::engine::testing::Step::text("RAN LOCALLY")],
        ),
    );
    fixture.config.remote = Some(RemoteConfig {
        nats_url: nats_url.to_string(),
        pool: pool.into(),
        agents: RemoteAgents::All,
        ack_wait: Duration::from_secs(5),
    });
    fixture
}

/// The next control on `ctl` (waits up to 20 s).
async fn next_control(ctl: &mut async_nats::Subscriber) -> wire::Control {
    let message = tokio::time::timeout(Duration::from_secs(20), ctl.next())
        .await
        .expect("no control within 20 s")
        .unwrap();
    serde_json::from_slice(&message.payload).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_steers_queued_messages_and_an_ancestors_cancel_reach_the_worker() {
    use arbor::engine::ApprovalMode;
    use arbor::session::protocol::{AllowScope, ApprovalDecision, ApprovalRequiredEvent};

    let Some(nats) = NatsServer::start() else {
        return;
    };
    let fixture = remote_fixture(&nats.url, "rt4");
    let runtime = fixture.engine_mode(ApprovalMode::Interactive);
    let root = runtime.create_root(None).unwrap();
    let turn = {
        let (runtime, root) = (runtime.clone(), root.clone());
        tokio::spawn(async move { runtime.run_turn(&root, "go".into()).await })
    };
    let worker = HandWorker::connect(&nats.url, 5).await;
    let (job, message) = worker.take_job("rt4").await;
    let child = job.session_id.to_string();
    let mut ctl = worker
        .remote
        .client()
        .subscribe(wire::ctl_subject(&child).unwrap())
        .await
        .unwrap();
    worker.remote.client().flush().await.unwrap();
    assert!(runtime.is_remote(&child));
    // A steer while the job waits in the queue is held until a worker starts it.
    assert_eq!(
        runtime
            .steer(&child, "before the start".into())
            .await
            .unwrap(),
        None
    );
    let epoch = worker.lease(&child).await.epoch();
    worker.started(&job, epoch, 1).await;
    // (A worker listens for controls once its engine publishes its first event.)
    worker
        .event(&job, epoch, EngineEvent::status(SessionStatus::Running))
        .await;
    assert_eq!(
        next_control(&mut ctl).await,
        wire::Control::Steer {
            text: "before the start".into()
        }
    );

    // The worker's gate asks; the person answers at the root; the answer travels.
    worker
        .event(
            &job,
            epoch,
            EngineEvent::ApprovalRequired(ApprovalRequiredEvent {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                agent: "helper".into(),
                summary: "cargo test".into(),
                ..Default::default()
            }),
        )
        .await;
    until("the approval registered at the root", || {
        runtime.waiting_approvals(&child) == 1
    })
    .await;
    runtime
        .resolve_approval(
            &child,
            "c1",
            ApprovalDecision::Allow {
                scope: AllowScope::Once,
            },
        )
        .unwrap();
    let wire::Control::Approval {
        tool_call_id,
        decision,
    } = next_control(&mut ctl).await
    else {
        panic!("not an approval");
    };
    assert_eq!(tool_call_id, "c1");
    assert_eq!(
        ApprovalDecision::from(decision),
        ApprovalDecision::Allow {
            scope: AllowScope::Once
        }
    );

    // Steer and queue go to the worker, not into the root's inbox.
    assert_eq!(
        runtime
            .steer(&child, "use the fast path".into())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        next_control(&mut ctl).await,
        wire::Control::Steer {
            text: "use the fast path".into()
        }
    );
    assert_eq!(
        runtime
            .queue(&child, "then tidy up".into(), None)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        next_control(&mut ctl).await,
        wire::Control::Queue {
            text: "then tidy up".into()
        }
    );

    // Cancelling the root (an ancestor) reaches the remote child's worker.
    runtime.cancel(&root);
    assert_eq!(next_control(&mut ctl).await, wire::Control::Cancel);
    let mut metadata = job.metadata.clone();
    metadata.status = SessionStatus::Cancelled;
    let done = WorkerMsg::Done {
        run: job.run,
        status: SessionStatus::Cancelled,
        response: String::new(),
        turn_count: 1,
        error: None,
        metadata: Box::new(metadata),
        changes: None,
    };
    worker.send(&child, epoch, &done).await;
    message.ack_with(AckKind::Ack).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(30), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, SessionStatus::Cancelled);
    assert!(!runtime.is_remote(&child));
    assert_eq!(fixture.metadata(&child)["status"], "cancelled");
    assert_eq!(runtime.refused_remote_writes(), 0);

    let requests = fixture.provider.requests();
    assert!(
        requests.iter().all(|r| !r.system.contains(HELPER)),
        "the helper ran locally"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_before_any_worker_started_takes_the_job_out_of_the_queue() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let fixture = remote_fixture(&nats.url, "rt6");
    let runtime = fixture.engine();
    let root = runtime.create_root(None).unwrap();
    let turn = {
        let (runtime, root) = (runtime.clone(), root.clone());
        tokio::spawn(async move { runtime.run_turn(&root, "go".into()).await })
    };
    let watcher = HandWorker::connect(&nats.url, 6).await;
    let mut jobs = watcher
        .remote
        .js()
        .get_stream(wire::JOBS_STREAM)
        .await
        .unwrap();
    let subject = wire::job_subject("rt6").unwrap();
    let queued = || async {
        // `info` is cached per handle: ask the server each time.
        let mut jobs = watcher
            .remote
            .js()
            .get_stream(wire::JOBS_STREAM)
            .await
            .unwrap();
        jobs.info().await.unwrap().state.messages
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while queued().await == 0 {
        assert!(Instant::now() < deadline, "no job was queued on {subject}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let child = runtime
        .live_session_ids()
        .into_iter()
        .find(|id| id.ends_with("_helper"))
        .unwrap()
        .to_string();
    assert!(runtime.is_remote(&child));
    runtime.cancel(&root);
    let outcome = tokio::time::timeout(Duration::from_secs(20), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, SessionStatus::Cancelled);
    assert_eq!(fixture.metadata(&child)["status"], "cancelled");
    assert_eq!(queued().await, 0, "the work queue ends empty");
    assert_eq!(jobs.info().await.unwrap().state.messages, 0);
    assert!(
        fixture
            .provider
            .requests()
            .iter()
            .all(|r| !r.system.contains(HELPER)),
        "the helper ran locally"
    );
}

mod forged;
mod hub;
mod notices;
mod person;
