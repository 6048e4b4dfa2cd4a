//! What the runs on one root connection share (issue 38 item 8): one out consumer and
//! one lease watch per connection, routed by session. Checked through an in-process
//! root and a hand worker: two runs at once each get only their own messages, a
//! message for a run that ended lands nowhere, and ten children leave no consumer of
//! their own on the server.

use super::*;

/// A root whose model delegates `n` tasks to `helper` in one message (the helper
/// would answer "RAN LOCALLY" here), `remote:` putting the helper on `pool` of the
/// server at `nats_url`.
fn fan_out(nats_url: &str, pool: &str, n: usize) -> support::fixture::Fixture {
    use arbor::config::remote::{RemoteAgents, RemoteConfig};
    use arbor::engine::testing::{Step, after_tool_results};
    use support::fixture::{Fixture, is_root, plan};
    let mut fixture = Fixture::new(
        plan(json!({"tools": [{"module": "tool-task", "config": {"max_parallel": n}}]})),
        &[("helper", HELPER)],
        move |r| {
            if !is_root(r) {
                return vec![Step::text("RAN LOCALLY")];
            }
            if after_tool_results(r) {
                return vec![Step::text("root done")];
            }
            (0..n)
                .map(|i| {
                    let args = json!({"agent": "helper", "instruction": format!("part {i}")});
                    Step::call(format!("t{i}"), "task", args)
                })
                .collect()
        },
    );
    fixture.config.remote = Some(RemoteConfig {
        nats_url: nats_url.to_string(),
        pool: pool.into(),
        agents: RemoteAgents::All,
        ack_wait: Duration::from_secs(5),
    });
    fixture
}

/// The next `n` jobs of `pool`, taken by `worker` from one pull (each remembered as
/// the worker's last job only while it is taken: take their leases right here).
async fn take_jobs(
    worker: &HandWorker,
    pool: &str,
    n: usize,
) -> Vec<(Job, jetstream::Message, u64)> {
    let consumer = worker
        .remote
        .ensure_pool(pool, Duration::from_secs(30))
        .await
        .unwrap();
    let mut messages = consumer.messages().await.unwrap();
    let mut taken = Vec::new();
    while taken.len() < n {
        let (job, message) = worker.next_job(&mut messages).await;
        let epoch = worker.lease(&job.session_id).await.epoch();
        taken.push((job, message, epoch));
    }
    taken
}

/// The texts of `session`'s transcript at the root.
fn texts(fixture: &support::fixture::Fixture, session: &str) -> Vec<String> {
    fixture
        .transcript(session)
        .iter()
        .map(content_text)
        .collect()
}

/// How many consumers the server has on `stream`.
async fn consumers(remote: &Remote, stream: &str) -> usize {
    let mut stream = remote.js().get_stream(stream).await.unwrap();
    stream.info().await.unwrap().state.consumer_count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_on_one_connection_get_only_their_own_messages() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let fixture = fan_out(&nats.url, "rt8", 2);
    let runtime = fixture.engine();
    let root = runtime.create_root(None).unwrap();
    let turn = {
        let (runtime, root) = (runtime.clone(), root.clone());
        tokio::spawn(async move { runtime.run_turn(&root, "go".into()).await })
    };
    let worker = HandWorker::connect(&nats.url, 8).await;
    let mut jobs = take_jobs(&worker, "rt8", 2).await;
    let (b, b_msg, b_epoch) = jobs.pop().unwrap();
    let (a, a_msg, a_epoch) = jobs.pop().unwrap();
    assert_ne!(a.session_id, b.session_id);
    worker.started(&a, a_epoch, 1).await;
    worker.started(&b, b_epoch, 1).await;
    // Interleaved on the one out consumer of the root's connection.
    for (job, epoch, text) in [(&a, a_epoch, "from A"), (&b, b_epoch, "from B")] {
        worker
            .event(job, epoch, EngineEvent::appended(assistant(text)))
            .await;
    }
    worker.done(&b, b_epoch, "from B", None).await;
    worker.done(&a, a_epoch, "from A", None).await;
    a_msg.ack_with(AckKind::Ack).await.unwrap();
    b_msg.ack_with(AckKind::Ack).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(30), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, SessionStatus::Completed);
    let (a_id, b_id) = (a.session_id.to_string(), b.session_id.to_string());
    assert_eq!(texts(&fixture, &a_id).last().unwrap(), "from A");
    assert!(!texts(&fixture, &a_id).iter().any(|t| t == "from B"));
    assert_eq!(texts(&fixture, &b_id).last().unwrap(), "from B");
    assert!(!texts(&fixture, &b_id).iter().any(|t| t == "from A"));
    assert_eq!(fixture.metadata(&a_id)["status"], "completed");
    assert_eq!(fixture.metadata(&b_id)["status"], "completed");

    // A's run ended: a message for it (signed, under its epoch) lands nowhere, and is
    // not counted as refused either (nothing follows that session now).
    let before = texts(&fixture, &a_id);
    worker
        .event(
            &a,
            a_epoch,
            EngineEvent::appended(assistant("after the end")),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(texts(&fixture, &a_id), before);
    assert!(!fixture.all_session_text().contains("after the end"));
    assert_eq!(runtime.refused_remote_writes(), 0);
    assert!(!runtime.is_remote(&a_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_children_leave_no_consumer_of_their_own_on_the_server() {
    const CHILDREN: usize = 10;
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let fixture = fan_out(&nats.url, "rt9", CHILDREN);
    let runtime = fixture.engine();
    let root = runtime.create_root(None).unwrap();
    let turn = {
        let (runtime, root) = (runtime.clone(), root.clone());
        tokio::spawn(async move { runtime.run_turn(&root, "go".into()).await })
    };
    let worker = HandWorker::connect(&nats.url, 9).await;
    let mut answered = Vec::new();
    for (job, message, epoch) in take_jobs(&worker, "rt9", CHILDREN).await {
        worker.started(&job, epoch, 1).await;
        let answer = format!("answer of {}", job.instruction);
        worker
            .event(&job, epoch, EngineEvent::appended(assistant(&answer)))
            .await;
        worker.done(&job, epoch, &answer, None).await;
        message.ack_with(AckKind::Ack).await.unwrap();
        answered.push(job.session_id.to_string());
    }
    let outcome = tokio::time::timeout(Duration::from_secs(60), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, SessionStatus::Completed);
    for id in &answered {
        assert_eq!(fixture.metadata(id)["status"], "completed", "{id}");
    }
    // The root's connection keeps one consumer of the out stream and one watch of
    // the leases for all its runs; nothing per child is left (an ended child's
    // consumer used to stay until it expired, and a server refuses a stream's
    // 1,001st).
    assert_eq!(consumers(&worker.remote, wire::OUT_STREAM).await, 1);
    assert_eq!(consumers(&worker.remote, "KV_arbor_leases").await, 1);
    assert_eq!(runtime.refused_remote_writes(), 0);
}
