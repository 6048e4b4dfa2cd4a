//! What the root tells a running job (`Control` on `arbor.ctl.<session>`) and how a
//! job starts: a cancel sent the moment the worker starts, a queued message taken back
//! before the turn sends it, and a continue job that re-runs the unanswered model call
//! instead of sending a new message. The real `arbor worker` against a real NATS server
//! (the harness of `worker`).

use std::time::Duration;

use arbor::remote::payload::Payload;
use arbor::remote::wire::Control;
use arbor::session::Message;
use futures::StreamExt;
use serde_json::Value;

use super::harness::*;
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_sent_as_soon_as_the_worker_starts_reaches_the_turn() {
    const EARLY: &str = "0123456789abcdef-6666777788889999_helper";
    let server = endless_server();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
    let worker = Worker::start(&env, &nats, "early");
    // The root hears `Started` (live, on the subject) and cancels at once, while the
    // worker is still setting the job up.
    let mut live = remote
        .client()
        .subscribe(arbor::remote::wire::out_subject(EARLY).unwrap())
        .await
        .unwrap();
    publish(
        &remote,
        "early",
        &job_of(EARLY, plan(&server.base_url), "count"),
    )
    .await;
    let first = tokio::time::timeout(Duration::from_secs(60), live.next())
        .await
        .unwrap()
        .unwrap();
    let first: Value = serde_json::from_slice(&first.payload).unwrap();
    assert_eq!(first["kind"], "started");
    control(&remote, EARLY, &Control::Cancel).await;
    let messages = wait_until_ended(&remote, EARLY, &worker, 30).await;
    assert_eq!(messages.last().unwrap().body["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_message_the_root_takes_back_never_reaches_the_remote_turn() {
    const QUEUED: &str = "0123456789abcdef-1212343456567878_helper";
    let server = endless_server();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
    let worker = Worker::start(&env, &nats, "unqueue");
    publish(
        &remote,
        "unqueue",
        &job_of(QUEUED, plan(&server.base_url), "count"),
    )
    .await;
    let event =
        |s: &Sent, name: &str| s.body["kind"] == "event" && s.body["event"]["event"] == name;
    // The turn streams; a queued message waits for it and is then taken back.
    wait_for_session(&remote, QUEUED, &worker, Duration::from_secs(60), |m| {
        m.iter().any(|s| event(s, "content_block:delta"))
    })
    .await;
    control(
        &remote,
        QUEUED,
        &Control::Queue {
            text: "and then this".into(),
        },
    )
    .await;
    let queued = wait_for_session(&remote, QUEUED, &worker, Duration::from_secs(30), |m| {
        m.iter().any(|s| event(s, "prompt:queued"))
    })
    .await;
    let id = queued
        .iter()
        .find(|s| event(s, "prompt:queued"))
        .unwrap()
        .body["event"]["data"]["id"]
        .as_u64()
        .unwrap();
    control(&remote, QUEUED, &Control::Unqueue { id }).await;
    wait_for_session(&remote, QUEUED, &worker, Duration::from_secs(30), |m| {
        m.iter().any(|s| event(s, "prompt:unqueued"))
    })
    .await;
    control(&remote, QUEUED, &Control::Cancel).await;
    let messages = wait_until_ended(&remote, QUEUED, &worker, 30).await;
    assert_eq!(messages.last().unwrap().body["status"], "cancelled");
    let unqueued = messages
        .iter()
        .find(|s| event(s, "prompt:unqueued"))
        .unwrap();
    assert_eq!(unqueued.body["event"]["data"]["id"], id);
    assert_eq!(unqueued.body["event"]["data"]["prompt"], "and then this");
    assert!(
        !messages.iter().any(|s| event(s, "prompt:sent")
            || event(s, "prompt:submit")
                && s.body["event"]["data"]
                    .to_string()
                    .contains("and then this")),
        "the taken-back message was never sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continue_job_reruns_the_unanswered_model_call_without_a_new_message() {
    const CONT: &str = "0123456789abcdef-9898767654543232_helper";
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("one, two, three"))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
    let worker = Worker::start(&env, &nats, "cont");
    // The model never answered the last message (the root stopped mid-call): a
    // continue runs that call again, as a local `session continue` does.
    let mut job = job_of(CONT, plan(&server.base_url), "Continue.");
    job.transcript = Payload::Inline(vec![Message::user("count to three")]);
    job.continues = true;
    publish(&remote, "cont", &job).await;
    let messages = wait_until_ended(&remote, CONT, &worker, 60).await;
    let done = messages.last().unwrap();
    assert_eq!(done.body["kind"], "done", "{}", done.body);
    assert!(
        done.body["response"]
            .as_str()
            .unwrap_or_default()
            .contains("one, two, three"),
        "{}",
        done.body
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = requests[0]["messages"].to_string();
    assert!(sent.contains("count to three"), "{sent}");
    assert!(!sent.contains("Continue."), "no new message: {sent}");
}
