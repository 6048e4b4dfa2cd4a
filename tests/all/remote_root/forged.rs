//! Forging on the wire against a real root (`arbor run`, issue 34 item 7): a peer on
//! the bus — an async-nats client here, reading what anyone subscribed can read —
//! tries to write into a remote child's run while the worker played by hand in the
//! parent module holds its lease and signs what it sends.
//!
//! Checked: forged events and a forged final answer carrying the lease's current
//! epoch (unsigned, signed with another key, a signed message replayed, a body
//! changed under a copied signature) are refused, logged and counted, and the
//! holder's answer is the one that lands; a peer that bumps the epoch while the holder
//! is alive does not take the run over (the run fails naming it: denied, not forged);
//! `arbor.sync.<session>` answers only the holder's signed request.

use std::time::Duration;

use arbor::remote::lease;
use arbor::remote::seal::{self, Signer};
use arbor::remote::wire::{self, Lease, RanOn, SyncReply, WorkerMsg};
use arbor::remote::{Payload, Remote, RemoteAuth};
use arbor::session::{EngineEvent, Event, SessionStatus};
use async_nats::HeaderMap;
use async_nats::jetstream::AckKind;

use super::{
    HandWorker, NatsServer, assistant, child_dir, finished, log_text, publish_raw, root_model,
    spawn_run, until, write_config, write_explorer,
};
use crate::support::*;

/// The phrase of the root's log line for a refused forgery.
const FORGED: &str = "refused a message not signed by the lease holder";

/// A peer on the bus: its own connection, identity and key.
async fn peer(url: &str) -> (Remote, RanOn, Signer) {
    let remote = Remote::connect(url, "peer", &RemoteAuth::default())
        .await
        .unwrap();
    let ran_on = RanOn {
        worker: "w-peer0000".into(),
        host: "peer".into(),
        pid: 6666,
    };
    (remote, ran_on, Signer::generate().unwrap())
}

/// The event message appending `text` as an assistant message to `session`.
fn appended(session: &str, text: &str) -> Vec<u8> {
    let event = Event::new(session, None, EngineEvent::appended(assistant(text)));
    serde_json::to_vec(&WorkerMsg::Event {
        event: Box::new(event),
    })
    .unwrap()
}

/// A `Done` of run 1 answering `text`.
fn done(job: &wire::Job, text: &str) -> Vec<u8> {
    let mut metadata = job.metadata.clone();
    metadata.status = SessionStatus::Completed;
    serde_json::to_vec(&WorkerMsg::Done {
        run: job.run,
        status: SessionStatus::Completed,
        response: text.into(),
        turn_count: 1,
        error: None,
        metadata: Box::new(metadata),
        changes: None,
    })
    .unwrap()
}

/// Headers naming `epoch` and `worker`, with no signature (the wire before issue 34).
fn unsigned(epoch: u64, worker: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(wire::EPOCH_HEADER, epoch.to_string().as_str());
    headers.insert(wire::WORKER_HEADER, worker);
    headers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_events_and_answers_with_the_current_epoch_are_refused() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let server = root_model();
    let env = TestEnv::new();
    write_config(&env, &server.base_url, &nats.url, "fg1");
    write_explorer(&env);
    let run = spawn_run(&env, "Explore for me");
    let worker = HandWorker::connect(&nats.url, 1).await;
    let (job, message) = worker.take_job("fg1").await;
    let session = job.session_id.to_string();
    let epoch = worker.lease(&session).await.epoch();
    worker.started(&job, epoch, 1).await;

    // The peer reads the lease (anyone on the bus can) and writes under its epoch,
    // naming the holder.
    let (remote, _, key) = peer(&nats.url).await;
    let leases = remote.leases().await.unwrap();
    let current = lease::current(&leases, &session).await.unwrap().unwrap();
    assert_eq!(current.epoch, epoch);
    let holder = worker.ran_on.worker.as_str();
    // 1. Unsigned, as the wire was.
    let body = appended(&session, "FORGED UNSIGNED");
    publish_raw(&remote, &session, unsigned(epoch, holder), body).await;
    // 2. Signed with the peer's own key.
    let body = appended(&session, "FORGED OTHER KEY");
    let headers = seal::headers(&key, (&session, epoch, 50), holder, &body);
    publish_raw(&remote, &session, headers, body).await;
    // 3. The holder's signed message, replayed.
    let body = appended(&session, "the holder's note");
    let seq = worker.seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let headers = seal::headers(&worker.signer, (&session, epoch, seq), holder, &body);
    publish_raw(&remote, &session, headers.clone(), body.clone()).await;
    publish_raw(&remote, &session, headers.clone(), body).await;
    // 4. Another body under a copied signature.
    let body = appended(&session, "FORGED COPIED SIGNATURE");
    publish_raw(&remote, &session, headers, body).await;
    // 5. A forged final answer, unsigned and with the peer's key.
    publish_raw(
        &remote,
        &session,
        unsigned(epoch, holder),
        done(&job, "FORGED ANSWER"),
    )
    .await;
    let body = done(&job, "FORGED SIGNED ANSWER");
    let headers = seal::headers(&key, (&session, epoch, 60), holder, &body);
    publish_raw(&remote, &session, headers, body).await;

    // The holder answers.
    worker
        .event(
            &job,
            epoch,
            EngineEvent::appended(assistant("the real answer")),
        )
        .await;
    worker.done(&job, epoch, "the real answer", None).await;
    message.ack_with(AckKind::Ack).await.unwrap();

    let result = finished(run);
    let response = result["response"].as_str().unwrap_or_default();
    assert!(response.contains("the real answer"), "{result}");
    assert!(!response.contains("FORGED"), "{result}");
    let transcript = std::fs::read_to_string(child_dir(&env).join("transcript.jsonl")).unwrap();
    assert!(!transcript.contains("FORGED"), "{transcript}");
    assert_eq!(
        transcript.matches("the holder's note").count(),
        1,
        "a replay is applied once: {transcript}"
    );
    let log = log_text(&env);
    assert_eq!(
        log.matches(FORGED).count(),
        6,
        "unsigned, other key, replay, copied signature, two answers: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_bumps_the_epoch_does_not_take_the_run_over() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let server = root_model();
    let env = TestEnv::new();
    write_config(&env, &server.base_url, &nats.url, "fg2");
    write_explorer(&env);
    let run = spawn_run(&env, "Explore for me");
    let worker = HandWorker::connect(&nats.url, 2).await;
    let (job, message) = worker.take_job("fg2").await;
    let session = job.session_id.to_string();
    let mut held = worker.lease(&session).await;
    let epoch = held.epoch();
    worker.started(&job, epoch, 1).await;
    worker
        .event(&job, epoch, EngineEvent::status(SessionStatus::Running))
        .await;
    // The holder is alive: it renews its lease every 200 ms (a third of its ack wait
    // or less), as `arbor worker`'s heartbeat does, until it finds the lease taken.
    let leases = worker.remote.leases().await.unwrap();
    let renewing = tokio::spawn(async move {
        while held.renew(&leases).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    tokio::time::sleep(Duration::from_millis(700)).await;

    // The peer takes the lease by compare-and-set with its own key (epoch + 1) and
    // sends, signed with that key, a start and a final answer.
    let (remote, ran_on, key) = peer(&nats.url).await;
    let leases = remote.leases().await.unwrap();
    let taken = lease::acquire(
        &leases,
        &session,
        &ran_on,
        (current_job_seq(&leases, &session).await, false),
        (key.public_key(), Duration::from_secs(30)),
    )
    .await
    .unwrap();
    assert_eq!(taken.epoch(), epoch + 1);
    let two = taken.epoch();
    let started = serde_json::to_vec(&WorkerMsg::Started {
        ran_on: ran_on.clone(),
        epoch: two,
        attempt: 2,
    })
    .unwrap();
    let headers = seal::headers(&key, (&session, two, 0), &ran_on.worker, &started);
    publish_raw(&remote, &session, headers, started).await;
    let body = appended(&session, "TAKEN OVER");
    let headers = seal::headers(&key, (&session, two, 1), &ran_on.worker, &body);
    publish_raw(&remote, &session, headers, body).await;
    let body = done(&job, "TAKEN OVER");
    let headers = seal::headers(&key, (&session, two, 2), &ran_on.worker, &body);
    publish_raw(&remote, &session, headers, body).await;

    let result = finished(run);
    renewing.abort();
    let _ = message.ack_with(AckKind::Ack).await;
    let response = result["response"].as_str().unwrap_or_default();
    assert!(!response.contains("TAKEN OVER"), "{result}");
    let metadata = env.metadata(&session);
    assert_eq!(metadata["status"], "failed", "{metadata}");
    assert_eq!(metadata["ran_on"]["worker"], worker.ran_on.worker.as_str());
    let events = std::fs::read_to_string(child_dir(&env).join("events.jsonl")).unwrap();
    assert!(
        events.contains("worker w-peer0000 took the lease (epoch 2) while worker w-test0002's (epoch 1) was live"),
        "the run fails naming the usurper: {events}"
    );
    let transcript =
        std::fs::read_to_string(child_dir(&env).join("transcript.jsonl")).unwrap_or_default();
    assert!(!transcript.contains("TAKEN OVER"), "{transcript}");
}

/// The job sequence the session's lease records now.
async fn current_job_seq(leases: &async_nats::jetstream::kv::Store, session: &str) -> u64 {
    let lease: Lease = lease::current(leases, session).await.unwrap().unwrap();
    lease.job_seq
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_answers_only_the_lease_holder() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let server = root_model();
    let env = TestEnv::new();
    write_config(&env, &server.base_url, &nats.url, "fg3");
    write_explorer(&env);
    let run = spawn_run(&env, "Explore for me");
    let worker = HandWorker::connect(&nats.url, 3).await;
    let (job, message) = worker.take_job("fg3").await;
    let session = job.session_id.to_string();
    let epoch = worker.lease(&session).await.epoch();
    worker.started(&job, epoch, 1).await;
    worker
        .event(
            &job,
            epoch,
            EngineEvent::appended(assistant("the private transcript")),
        )
        .await;
    let dir = env.sessions_dir().join(&session);
    until("the holder's events applied", || {
        std::fs::read_to_string(dir.join("transcript.jsonl"))
            .is_ok_and(|t| t.contains("the private transcript"))
    })
    .await;

    let (remote, _, key) = peer(&nats.url).await;
    let subject = wire::sync_subject(&session).unwrap();
    let ask = |reply: async_nats::Message| -> SyncReply {
        serde_json::from_slice(&reply.payload).unwrap()
    };
    // Unsigned, as anyone could ask before.
    let plain = remote
        .client()
        .request(subject.clone(), "".into())
        .await
        .unwrap();
    let plain = ask(plain);
    assert!(plain.transcript.is_none(), "{plain:?}");
    assert!(
        plain
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("refused")),
        "{plain:?}"
    );
    // Signed with the peer's own key under the current epoch.
    let other = seal::request_sync(
        remote.client(),
        subject.clone(),
        (&session, epoch),
        &key,
        Duration::from_secs(20),
    )
    .await
    .unwrap();
    let other = ask(other);
    assert!(other.transcript.is_none(), "{other:?}");
    // The holder's own signature over its reply inbox, replayed to the peer's inbox.
    let stolen = worker.signer.sign_sync(&session, epoch, "_INBOX.holder");
    let inbox = remote.client().new_inbox();
    let mut answers = remote.client().subscribe(inbox.clone()).await.unwrap();
    let mut headers = HeaderMap::new();
    headers.insert(wire::EPOCH_HEADER, epoch.to_string().as_str());
    headers.insert(seal::SIG_HEADER, stolen.as_str());
    remote
        .client()
        .publish_with_reply_and_headers(subject.clone(), inbox, headers, "".into())
        .await
        .unwrap();
    let replayed = tokio::time::timeout(
        Duration::from_secs(20),
        futures::StreamExt::next(&mut answers),
    )
    .await
    .unwrap()
    .unwrap();
    let replayed = ask(replayed);
    assert!(replayed.transcript.is_none(), "{replayed:?}");

    // The holder itself is answered with the transcript.
    let mine = seal::request_sync(
        worker.remote.client(),
        subject,
        (&session, epoch),
        &worker.signer,
        Duration::from_secs(20),
    )
    .await
    .unwrap();
    let mine = ask(mine);
    assert_eq!(mine.error, None);
    let Some(Payload::Inline(transcript)) = mine.transcript else {
        panic!("no inline transcript: {mine:?}");
    };
    assert!(
        transcript
            .iter()
            .any(|m| m.text() == "the private transcript"),
        "{transcript:?}"
    );
    assert_ne!(
        mine.metadata.unwrap().status,
        SessionStatus::Interrupted,
        "the holder asking is no takeover"
    );

    worker.done(&job, epoch, "done", None).await;
    message.ack_with(AckKind::Ack).await.unwrap();
    let result = finished(run);
    assert!(
        result["response"]
            .as_str()
            .unwrap_or_default()
            .contains("done"),
        "{result}"
    );
    assert_eq!(
        log_text(&env).matches(FORGED).count(),
        3,
        "{}",
        log_text(&env)
    );
}
