//! Turns a PERSON starts in a remote sub-session (issue 27): a `Submit` to an idle
//! remote child (`arbor session resume`), `arbor session continue`, a steer or queued
//! message while it is idle — each runs on a worker (the one played by hand in the
//! parent module) as a task call's run does: a job of the next run carrying the
//! person's text, the worker's events and `Done` landing in the child's transcript.
//! NATS unreachable fails such a turn naming the URL; the child never runs here.

use std::process::Output;
use std::time::Duration;

use arbor::engine::testing::Drive;
use arbor::remote::Payload;
use arbor::remote::wire::{self, Job, WorkerMsg};
use arbor::session::{EngineEvent, Message, SessionStatus};
use async_nats::jetstream::{self, AckKind};

use super::{
    EXPLORER, HELPER, HandWorker, NatsServer, assistant, child_dir, finished, next_control,
    remote_fixture, root_model, spawn_run, write_config, write_explorer,
};
use crate::support::*;

/// `arbor session resume ID INSTRUCTION --yes --output-format json` (a person's
/// `Submit` to that session) started in the background.
fn spawn_resume(env: &TestEnv, id: &str, instruction: &str) -> std::thread::JoinHandle<Output> {
    let mut cmd = env.std_cmd();
    cmd.args([
        "session",
        "resume",
        id,
        instruction,
        "--yes",
        "--output-format",
        "json",
    ]);
    std::thread::spawn(move || cmd.output().unwrap())
}

/// Plays one run of `job` on `worker`: started, the user message, the answer, done.
pub(super) async fn play_run(
    worker: &HandWorker,
    job: &Job,
    message: jetstream::Message,
    answer: &str,
) {
    let epoch = worker.lease(&job.session_id).await.epoch();
    worker.started(job, epoch, 1).await;
    finish_run(worker, job, message, answer, epoch).await;
}

/// The rest of [`play_run`] once started under `epoch`.
async fn finish_run(
    worker: &HandWorker,
    job: &Job,
    message: jetstream::Message,
    answer: &str,
    epoch: u64,
) {
    // The root stored the instruction before publishing the job (`continues`).
    worker
        .event(job, epoch, EngineEvent::appended(assistant(answer)))
        .await;
    worker
        .event(job, epoch, EngineEvent::status(SessionStatus::Completed))
        .await;
    worker.done(job, epoch, answer, None).await;
    message.ack_with(AckKind::Ack).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_turn_in_an_idle_remote_child_runs_on_a_worker() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let server = root_model();
    let env = TestEnv::new();
    write_config(&env, &server.base_url, &nats.url, "rt7");
    write_explorer(&env);
    let worker = HandWorker::connect(&nats.url, 7).await;

    // Run 1: the parent's task call.
    let run = spawn_run(&env, "Explore for me");
    let (job, message) = worker.take_job("rt7").await;
    assert_eq!(job.run, 1);
    play_run(&worker, &job, message, "found app.py").await;
    let result = finished(run);
    assert!(
        result["response"]
            .as_str()
            .is_some_and(|r| r.contains("found app.py")),
        "{result}"
    );
    let session = job.session_id.to_string();

    // Run 2: a person types in the child's thread (`Submit` to it, idle, from disk).
    let resume = spawn_resume(&env, &session, "Look again, closer");
    let (job, message) = worker.take_job("rt7").await;
    assert_eq!(job.session_id.as_str(), session);
    assert_eq!(job.run, 2);
    assert_eq!(job.instruction, "Look again, closer");
    let Payload::Inline(before) = &job.transcript else {
        panic!("no inline transcript");
    };
    let texts: Vec<String> = before.iter().map(Message::text).collect();
    // Run 1's transcript, and the new instruction stored before the job went out.
    assert_eq!(
        texts,
        ["Look around", "found app.py", "Look again, closer"],
        "run 1's transcript"
    );
    play_run(&worker, &job, message, "looked closer").await;
    let result = finished(resume);
    let response = result["response"].as_str().unwrap_or_default();
    assert!(response.contains("looked closer"), "{result}");
    assert!(!response.contains("RAN LOCALLY"), "{result}");

    // Run 3 cannot run on the worker (it says so): the child stops `failed`.
    let broken = spawn_resume(&env, &session, "Break it");
    let (job, message) = worker.take_job("rt7").await;
    assert_eq!(job.run, 3);
    let epoch = worker.lease(&job.session_id).await.epoch();
    worker.started(&job, epoch, 1).await;
    let failed = WorkerMsg::Failed {
        run: 3,
        error: "no provider here".into(),
    };
    worker.send(&job.session_id, epoch, &failed).await;
    message.ack_with(AckKind::Ack).await.unwrap();
    let out = broken.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(stdout.contains("no provider here"), "{stdout}");
    assert_eq!(env.metadata(&session)["status"], "failed");

    // Run 4: `arbor session continue` of the stopped child goes there too.
    let mut cmd = env.std_cmd();
    cmd.args([
        "session",
        "continue",
        &session,
        "--yes",
        "--output-format",
        "json",
    ]);
    let cont = std::thread::spawn(move || cmd.output().unwrap());
    let (job, message) = worker.take_job("rt7").await;
    assert_eq!(job.run, 4);
    assert_eq!(job.instruction, "Continue.");
    assert!(job.continues, "a continue, not a message to submit");
    play_run(&worker, &job, message, "continued there").await;
    let out = cont.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(stdout.contains("continued there"), "{stdout}");

    let dir = env.sessions_dir().join(&session);
    let transcript = read_jsonl(&dir.join("transcript.jsonl"));
    let texts: Vec<String> = transcript.iter().map(content_text).collect();
    assert_eq!(
        texts,
        [
            "Look around",
            "found app.py",
            "Look again, closer",
            "looked closer",
            // Run 3's instruction was stored before its job went out; run 4 continues
            // from it (it never got an answer), so no "Continue." is sent.
            "Break it",
            "continued there"
        ],
        "{transcript:?}"
    );
    let metadata = env.metadata(&session);
    assert_eq!(metadata["status"], "completed", "{metadata}");
    assert_eq!(metadata["ran_on"]["worker"], "w-test0007", "{metadata}");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !content_text(&r["messages"][0]).contains(EXPLORER)),
        "the explorer ran locally"
    );
}

#[test]
fn a_persons_turn_in_a_remote_child_fails_naming_the_url_when_nats_is_down() {
    let server = root_model();
    let env = TestEnv::new();
    // Nothing listens on this port.
    let url = "nats://127.0.0.1:14498";
    write_config(&env, &server.base_url, url, "rt8");
    write_explorer(&env);
    let _ = finished(spawn_run(&env, "Explore for me"));
    let child = child_dir(&env);
    let id = child.file_name().unwrap().to_string_lossy().to_string();
    assert_eq!(server.requests().len(), 2, "only the root's model calls");

    for args in [
        vec!["session", "resume", &id, "Look again", "--yes"],
        vec!["session", "continue", &id, "--yes"],
    ] {
        let out = env.cmd().args(&args).output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{args:?}: {all}");
        assert!(
            all.contains(&format!("cannot reach NATS at {url}")),
            "{args:?}: {all}"
        );
        assert!(!all.contains("RAN LOCALLY"), "{args:?}: {all}");
    }
    assert_eq!(server.requests().len(), 2, "the child never ran here");
    assert_eq!(env.metadata(&id)["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_or_queued_message_to_an_idle_remote_child_starts_its_turn_on_a_worker() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let fixture = remote_fixture(&nats.url, "rt9");
    let runtime = fixture.engine();
    let root = runtime.create_root(None).unwrap();
    let turn = {
        let (runtime, root) = (runtime.clone(), root.clone());
        tokio::spawn(async move { runtime.run_turn(&root, "go".into()).await })
    };
    let worker = HandWorker::connect(&nats.url, 9).await;
    let (job, message) = worker.take_job("rt9").await;
    let child = job.session_id.to_string();
    play_run(&worker, &job, message, "did it").await;
    tokio::time::timeout(Duration::from_secs(20), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(!runtime.is_running(&child));

    // The child is idle: a steer starts its next turn, on a worker.
    let steer = {
        let (runtime, child) = (runtime.clone(), child.clone());
        tokio::spawn(async move { runtime.steer(&child, "now this".into()).await })
    };
    let (job, message) = worker.take_job("rt9").await;
    assert_eq!((job.run, job.instruction.as_str()), (2, "now this"));
    assert!(runtime.is_remote(&child));
    // While it runs there, taking back a message queued there goes there too.
    let mut ctl = worker
        .remote
        .client()
        .subscribe(wire::ctl_subject(&child).unwrap())
        .await
        .unwrap();
    worker.remote.client().flush().await.unwrap();
    let epoch = worker.lease(&child).await.epoch();
    worker.started(&job, epoch, 1).await;
    worker
        .event(&job, epoch, EngineEvent::status(SessionStatus::Running))
        .await;
    assert_eq!(runtime.unqueue(&child, 7).unwrap(), "");
    assert_eq!(
        next_control(&mut ctl).await,
        wire::Control::Unqueue { id: 7 }
    );
    finish_run(&worker, &job, message, "did this", epoch).await;
    let outcome = steer.await.unwrap().unwrap().expect("the steer ran a turn");
    assert_eq!(outcome.status, SessionStatus::Completed);
    assert_eq!(outcome.response, "did this");

    // So does a queued message.
    let queue = {
        let (runtime, child) = (runtime.clone(), child.clone());
        tokio::spawn(async move { runtime.queue(&child, "then that".into(), None).await })
    };
    let (job, message) = worker.take_job("rt9").await;
    assert_eq!((job.run, job.instruction.as_str()), (3, "then that"));
    play_run(&worker, &job, message, "did that").await;
    let outcome = queue.await.unwrap().unwrap().expect("the queue ran a turn");
    assert_eq!(outcome.response, "did that");
    let texts: Vec<String> = runtime
        .load_session(&child)
        .await
        .unwrap()
        .transcript
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(
        texts,
        [
            "do it",
            "did it",
            "now this",
            "did this",
            "then that",
            "did that"
        ]
    );
    assert!(
        fixture
            .provider
            .requests()
            .iter()
            .all(|r| !r.system.contains(HELPER)),
        "the helper ran locally"
    );
}
