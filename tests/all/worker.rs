//! `arbor worker` (issue 27) against a real NATS server (`support::nats`:
//! `scripts/nats-server` on a free loopback port): the test plays the root — it publishes a `Job` with the
//! transport's own types, reads the worker's `WorkerMsg` stream from `ARBOR_OUT`, and
//! bumps the session's lease as another worker would — while the real binary runs the
//! job with a loopback OpenAI-compatible stub configured in the WORKER's config.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arbor::remote::payload::Payload;
use arbor::remote::wire::{
    Control, JobFiles, LEASES_BUCKET, Lease, RanOn, SyncReply, WireDecision, WireScope,
    sync_subject, token,
};
use arbor::session::Message;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::*;

mod controls;
mod harness;
mod stream;
mod wip;
mod wire;

use harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_the_worker_and_its_answer_events_and_ack_come_back() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("done on the worker"))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };

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
    assert!(
        worker
            .stderr()
            .contains("is not a git repository: jobs that work on files will fail"),
        "the project dir is no clone: {}",
        worker.stderr()
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
    assert!(files_containing(&run_dir(&env), SESSION).is_empty());
    // The worker's own memory-backed directory lives as long as the worker.
    let memory = run_dir(&env).join("arbor/workers").join(&worker_id);
    assert!(memory.join("pid").is_file(), "{}", memory.display());
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
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
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
        subtree: None,
        task_calls: None,
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
    // While it runs, the job's scratch copy of the session is in the worker's
    // directory of the runtime directory (memory-backed), not in the Amplifier home.
    let memory = run_dir(&env).join("arbor/workers").join(&worker_id);
    assert!(
        !files_containing(&memory.join("projects"), SESSION).is_empty(),
        "no scratch store in {}",
        memory.display()
    );
    assert!(files_containing(&env.amplifier_home.join("projects"), SESSION).is_empty());

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
    let users = user_texts(&requests[1]);
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

    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
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
    control(&remote, WRITER, &answer).await;

    let messages = wait_until_ended(&remote, WRITER, &worker, 60).await;
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

    // A commit the clone lacks: the job is handed back for another worker of the pool
    // (said on stderr), not failed and not acked (issue 38 item 6).
    let mut missing = job_of(MISSING, plan, "write more");
    missing.files = Some(JobFiles {
        base_commit: "0123456789abcdef0123456789abcdef01234567".into(),
        repo_name: "proj".into(),
        relative_dir: String::new(),
        writes: true,
    });
    publish(&remote, "files", &missing).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !worker
        .stderr()
        .contains("handed back the job of sub-session")
    {
        assert!(
            Instant::now() < deadline,
            "never handed back:\n{}",
            worker.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let said = worker.stderr();
    assert!(
        said.contains("lacks commit 0123456789abcdef0123456789abcdef01234567; fetch it"),
        "{said}"
    );
    assert!(sent_of(&remote, MISSING).await.is_empty(), "it ran: {said}");
    assert_eq!(jobs_left(&remote).await, 1, "the job left the queue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_retries_until_nats_is_up_obeys_cancel_and_hands_its_job_back_on_sigterm() {
    const CANCELLED: &str = "0123456789abcdef-aaaabbbbccccdddd_helper";
    const HANDED_BACK: &str = "0123456789abcdef-eeeeffff00001111_helper";
    let server = endless_server();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    // A server whose port is known, down until the worker has tried it.
    let Some(mut nats) = NatsServer::start() else {
        return;
    };
    nats.kill_9();
    let url = nats.url.clone();

    // No server yet: the worker says so and retries with backoff.
    let mut worker = Worker::spawn(&env, &url, "ctl", &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let retrying = format!("arbor: cannot reach NATS at {url}; retrying in 0.5 s");
    while !worker.stderr().contains(&retrying) {
        assert!(Instant::now() < deadline, "stderr: {}", worker.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    nats.restart();
    worker.read_first_line();
    assert!(
        worker.first_line.contains("pool ctl"),
        "{}",
        worker.first_line
    );
    let remote = root_of(&nats).await;

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
    control(&remote, CANCELLED, &Control::Cancel).await;
    let messages = wait_until_ended(&remote, CANCELLED, &worker, 30).await;
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
    let own = env.home.join(".local/state/arbor/worker");
    assert_eq!(
        std::fs::read_dir(&own).unwrap().count(),
        0,
        "the worker's directory (its jobs' worktrees) goes with it"
    );
    assert!(files_containing(&env.amplifier_home, HANDED_BACK).is_empty());
    let workers = remote.workers().await.unwrap();
    assert!(workers.get(&worker_id).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_says_when_nats_goes_away_and_takes_jobs_again_once_it_is_back() {
    const AFTER: &str = "0123456789abcdef-2222333344445555_helper";
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("after the restart"))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let Some(mut nats) = NatsServer::start() else {
        return;
    };
    let worker = Worker::start(&env, &nats, "restart");
    let url = nats.url.clone();

    // The server dies (kill -9); the worker says so within a presence refresh (5 s).
    nats.kill_9();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !worker.stderr().contains(&format!("lost NATS at {url}")) {
        assert!(Instant::now() < deadline, "stderr: {}", worker.stderr());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Back on the same port and store: the worker reconnects and takes a new job.
    nats.restart();
    let remote = root_of(&nats).await;
    publish(
        &remote,
        "restart",
        &job_of(AFTER, plan(&server.base_url), "hello again"),
    )
    .await;
    let messages = wait_until_ended(&remote, AFTER, &worker, 60).await;
    assert_eq!(
        messages.last().unwrap().body["response"],
        "after the restart"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !worker
        .stderr()
        .contains(&format!("reconnected to NATS at {url}"))
    {
        assert!(Instant::now() < deadline, "stderr: {}", worker.stderr());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_own_sub_sessions_run_on_the_worker_even_when_its_config_has_remote() {
    const NESTING: &str = "0123456789abcdef-abcdabcdabcdabcd_helper";
    let server = ScriptedServer::sequence(vec![
        Reply::Sse(sse_tool_calls(&[(
            "t1",
            "task",
            json!({"agent": "researcher", "instruction": "look it up"}),
        )])),
        Reply::Sse(sse_text("found it")),
        Reply::Sse(sse_text("the child is done")),
    ]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
    // This machine's config would send every sub-session to the pool the worker
    // itself serves with its single slot.
    env.append_config(&format!(
        "remote:\n  nats_url: \"{}\"\n  pool: nest\n  agents: all\n",
        nats.url
    ));
    let worker = Worker::start(&env, &nats, "nest");
    let mut plan = plan(&server.base_url);
    plan["tools"] = json!([{"module": "tool-task", "config": {"max_recursion_depth": 2}}]);
    plan["agents"] = json!("all");
    publish(&remote, "nest", &job_of(NESTING, plan, "delegate it")).await;
    let messages = wait_until_ended(&remote, NESTING, &worker, 60).await;
    let done = &messages.last().unwrap().body;
    let tools: Vec<&Value> = messages
        .iter()
        .filter(|m| {
            m.body["event"]["event"]
                .as_str()
                .is_some_and(|n| n.starts_with("tool:"))
        })
        .map(|m| &m.body["event"]["data"])
        .collect();
    assert_eq!(done["response"], "the child is done", "{tools:#?}");
    assert_eq!(server.requests().len(), 3, "the grandchild ran here");
    assert_eq!(jobs_left(&remote).await, 0, "nothing was dispatched again");
}

/// A worker whose NATS server went away stops promptly on SIGTERM: it no longer waits
/// out requests the server cannot answer (its fetch, its consumer check, the removal
/// of its presence entry) — 5–7 s before. Stopped 1 s and 4 s after the server died: in its
/// fetch, and in the consumer check a failed fetch leads to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_server_is_gone_stops_within_three_seconds_of_sigterm() {
    for after in [1, 4] {
        let env = TestEnv::new();
        let Some(mut nats) = NatsServer::start() else {
            return;
        };
        let mut worker = Worker::start(&env, &nats, "gone");
        nats.kill_9();
        tokio::time::sleep(Duration::from_secs(after)).await;
        let asked = Instant::now();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(worker.child.id()).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let status = loop {
            if let Some(status) = worker.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                asked.elapsed() < Duration::from_secs(3),
                "still running 3 s after SIGTERM ({after} s after the server died): {}",
                worker.stderr()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(status.success(), "{status:?}\n{}", worker.stderr());
    }
}
