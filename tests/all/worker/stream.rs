//! A long streamed answer through the real `arbor worker` and a real NATS server
//! (issue 38 item 8, "Throughput"): the worker joins the model's deltas before
//! publishing, so a 3,000-word answer crosses `ARBOR_OUT` in a few dozen messages
//! instead of one per delta, while what the root applies — the deltas' text, the
//! transcript's answer, `Done` — is the model's text exactly, and the messages keep
//! their order and their sequence numbers (0, 1, 2, … with none missing or repeated).

use std::time::Duration;

use serde_json::Value;

use super::harness::*;
use crate::support::*;

const LONG: &str = "0123456789abcdef-0badc0de0badc0de_helper";
const WORDS: usize = 3000;

/// `WORDS` words, some of them not ASCII.
fn long_answer() -> String {
    const VOCABULARY: [&str; 9] = [
        "the", "worker", "streams", "déjà", "vu", "of", "a", "naïve", "tree",
    ];
    (0..WORDS)
        .map(|i| format!("{}{}", VOCABULARY[i % VOCABULARY.len()], i % 7))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_crosses_in_few_messages_and_arrives_whole_and_in_order() {
    let answer = long_answer();
    // One delta per word (`sse_text`), written over about 1.5 s.
    let server = ScriptedServer::sequence(vec![Reply::Paced {
        body: sse_text(&answer),
        pieces: 100,
        every: Duration::from_millis(15),
    }]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
    let worker = Worker::start(&env, &nats, "long");
    publish(
        &remote,
        "long",
        &job_of(LONG, plan(&server.base_url), "write at length"),
    )
    .await;
    let messages = wait_until_ended(&remote, LONG, &worker, 60).await;

    let done = &messages.last().unwrap().body;
    assert_eq!(done["kind"], "done", "{done}");
    assert_eq!(done["response"], answer.as_str());
    let deltas: Vec<&Value> = messages
        .iter()
        .filter(|m| m.body["event"]["event"] == "content_block:delta")
        .map(|m| &m.body["event"]["data"])
        .collect();
    let streamed: String = deltas
        .iter()
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, answer, "the deltas' text is the answer, whole");
    assert!(deltas.iter().all(|d| d["kind"] == "text"));
    let appended: Vec<String> = messages
        .iter()
        .filter(|m| m.body["event"]["event"] == "message:appended")
        .map(|m| &m.body["event"]["data"]["message"])
        .filter(|m| m["role"] == "assistant")
        .map(content_text)
        .collect();
    assert_eq!(appended, vec![answer.clone()], "the transcript's answer");

    // Far fewer messages than the 3,000 deltas the model streamed.
    assert!(
        messages.len() < 100,
        "{} messages on arbor.out for one answer ({} deltas)",
        messages.len(),
        deltas.len()
    );
    // Stored in the order they were numbered, none missing or repeated.
    let seqs: Vec<u64> = messages.iter().map(|m| m.seq.unwrap()).collect();
    let expected: Vec<u64> = (0..messages.len() as u64).collect();
    assert_eq!(seqs, expected);
    // The deltas came before the answer was appended: the order is the turn's.
    let last_delta = messages
        .iter()
        .rposition(|m| m.body["event"]["event"] == "content_block:delta")
        .unwrap();
    let answer_at = messages
        .iter()
        .position(|m| {
            m.body["event"]["event"] == "message:appended"
                && m.body["event"]["data"]["message"]["role"] == "assistant"
        })
        .unwrap();
    assert!(last_delta < answer_at, "{:?}", kinds(&messages));
}

const SHORT: &str = "0123456789abcdef-5ca1ab1e5ca1ab1e_helper";

/// A job whose root takes packed events (`packed_events`, issue 38 item 8): the events
/// of a short turn cross as one or two `events` messages between `started` and `done`,
/// whole and in order, instead of a message each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_turns_events_cross_packed_in_one_or_two_messages() {
    let Some(messages) = short_run(SHORT, "packed", false).await else {
        return;
    };

    let kinds = kinds(&messages);
    assert_eq!(kinds.first().map(String::as_str), Some("started"));
    assert_eq!(kinds.last().map(String::as_str), Some("done"), "{kinds:?}");
    let packs: Vec<&Vec<Value>> = messages
        .iter()
        .filter_map(|m| m.body["events"].as_array())
        .collect();
    assert!(
        (1..=2).contains(&packs.len()) && kinds.len() == packs.len() + 2,
        "{kinds:?}"
    );
    let events: Vec<&Value> = packs.into_iter().flatten().collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"message:appended"), "{names:?}");
    assert_eq!(streamed(&events), "short and done");
    assert!(events.iter().all(|e| e["session_id"] == SHORT));
}

/// What the real worker published for a short turn ("short and done") of `session`
/// on a pool of its own, the job packing events (and, with `many`, `Started` and the
/// end too); `None` where the harness has no NATS server.
async fn short_run(session: &str, pool: &str, many: bool) -> Option<Vec<Sent>> {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("short and done"))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let (nats, remote) = server_and_root().await?;
    let worker = Worker::start(&env, &nats, pool);
    let mut job = job_of(session, plan(&server.base_url), "answer briefly");
    job.packed_events = true;
    job.packed_many = many;
    publish(&remote, pool, &job).await;
    Some(wait_until_ended(&remote, session, &worker, 60).await)
}

/// The text of the streamed deltas among `events`, in order.
fn streamed(events: &[&Value]) -> String {
    events
        .iter()
        .filter(|e| e["event"] == "content_block:delta")
        .map(|e| e["data"]["delta"].as_str().unwrap())
        .collect()
}

const ONE: &str = "0123456789abcdef-e11dedbe5ca1ab1e_helper";

/// A job whose root takes packs of many (`packed_many`): `started`, the events and
/// `done` of a short turn ride in one or two `many` messages, in that order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_turn_crosses_as_one_or_two_messages_started_to_done() {
    let Some(messages) = short_run(ONE, "many", true).await else {
        return;
    };

    let published = kinds(&messages);
    assert!((1..=2).contains(&published.len()), "{published:?}");
    assert_eq!(published.last().map(String::as_str), Some("many"));
    // Each message's parts, in order: what the root applies one by one.
    let parts: Vec<&Value> = messages
        .iter()
        .flat_map(|m| match m.body["msgs"].as_array() {
            Some(msgs) => msgs.iter().collect::<Vec<_>>(),
            None => vec![&m.body],
        })
        .collect();
    let kinds: Vec<&str> = parts.iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"done"), "{kinds:?}");
    assert!(
        kinds[1..kinds.len() - 1].iter().all(|k| *k == "events"),
        "{kinds:?}"
    );
    assert_eq!(parts.last().unwrap()["response"], "short and done");
    let events: Vec<&Value> = parts
        .iter()
        .filter_map(|p| p["events"].as_array())
        .flatten()
        .collect();
    assert_eq!(streamed(&events), "short and done");
    assert!(events.iter().any(|e| e["event"] == "message:appended"));
}
