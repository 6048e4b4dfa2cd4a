//! Forged jobs against the real `arbor worker` (issue 34 item 7, "the wire"): anyone
//! allowed to publish on `arbor.jobs.*` can write a job, so nothing in it may widen
//! what the worker's own config allows, and nothing it names may make the worker read
//! without bound.
//!
//! Checked: a job's `allowed_write_paths` of `/`, `~`, an absolute directory outside
//! and `..` give neither its bash (kernel sandbox, the worker's config) nor its
//! `write_file` anything outside the job's worktree, while writing inside it still
//! works; a transcript payload object larger than its declared size fails the job
//! with a clear error instead of being read whole.

use arbor::remote::payload::Payload;
use serde_json::{Value, json};

use super::harness::*;
use crate::support::*;

/// The tool results of `messages` (the `message:appended` events of tool messages),
/// as text, in order.
fn tool_results(messages: &[Sent]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.body["event"]["event"] == "message:appended")
        .map(|m| &m.body["event"]["data"]["message"])
        .filter(|msg| msg["role"] == "tool")
        .map(content_text)
        .collect()
}

/// A job of `session` whose plan mounts bash and the filesystem tools with
/// `allowed_write_paths: write_paths`, every call allowed by its `approvals:`.
fn forged(base_url: &str, session: &str, write_paths: Value) -> arbor::remote::Job {
    let mut plan = plan(base_url);
    plan["tools"] = json!([
        {"module": "tool-bash"},
        {"module": "tool-filesystem", "config": {"allowed_write_paths": write_paths}},
    ]);
    let mut job = job_of(session, plan, "write where you are told");
    job.approvals = json!({"bash": "allow", "write_file": "allow"});
    job
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_jobs_write_paths_give_nothing_outside_its_worktree() {
    const ROOT_PATHS: &str = "0123456789abcdef-0000111122223333_helper";
    const HOME_PATHS: &str = "0123456789abcdef-4444555566667777_helper";
    let env = TestEnv::new();
    let bashrc = env.home.join(".bashrc");
    let profile = env.home.join(".profile");
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let planted = outside.join("planted.sh");
    let server = ScriptedServer::sequence(vec![
        // Job 1, `allowed_write_paths: ["/"]`: the worker's ~/.bashrc by bash and
        // ~/.profile by write_file; a file inside its own directory.
        Reply::Sse(sse_tool_calls(&[
            (
                "b1",
                "bash",
                json!({"command": format!("echo pwned >> {}", bashrc.display())}),
            ),
            (
                "w1",
                "write_file",
                json!({"file_path": profile.display().to_string(), "content": "pwned\n"}),
            ),
            (
                "b2",
                "bash",
                json!({"command": "echo inside > inside.txt && cat inside.txt"}),
            ),
        ])),
        Reply::Sse(sse_text("done one")),
        // Job 2, `["~", "<outside>", "../../.."]`: the same by other names.
        Reply::Sse(sse_tool_calls(&[
            (
                "b3",
                "bash",
                json!({"command": format!("echo pwned >> ~/.bashrc; echo pwned > {}", planted.display())}),
            ),
            (
                "w2",
                "write_file",
                json!({"file_path": planted.display().to_string(), "content": "pwned\n"}),
            ),
        ])),
        Reply::Sse(sse_text("done two")),
    ]);
    env.use_openai(&server.base_url, WORKER_KEY);
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
    let worker = Worker::start(&env, &nats, "roots");

    publish(
        &remote,
        "roots",
        &forged(&server.base_url, ROOT_PATHS, json!(["/"])),
    )
    .await;
    let one = wait_until_ended(&remote, ROOT_PATHS, &worker, 60).await;
    let results = tool_results(&one);
    assert_eq!(results.len(), 3, "{results:?}\n{}", worker.stderr());
    assert!(
        results[1].contains("Access denied"),
        "write_file outside the worktree: {results:?}"
    );
    assert!(
        results[2].contains("inside"),
        "writing inside still works: {results:?}"
    );
    assert_eq!(one.last().unwrap().body["response"], "done one");

    let outside_text = outside.display().to_string();
    publish(
        &remote,
        "roots",
        &forged(
            &server.base_url,
            HOME_PATHS,
            json!(["~", outside_text, "../../.."]),
        ),
    )
    .await;
    let two = wait_until_ended(&remote, HOME_PATHS, &worker, 60).await;
    let results = tool_results(&two);
    assert_eq!(results.len(), 2, "{results:?}\n{}", worker.stderr());
    assert!(results[1].contains("Access denied"), "{results:?}");
    assert_eq!(two.last().unwrap().body["response"], "done two");

    assert!(
        !bashrc.exists(),
        "the worker's ~/.bashrc was written: {:?}",
        std::fs::read_to_string(&bashrc)
    );
    assert!(!profile.exists(), "the worker's ~/.profile was written");
    assert!(!planted.exists(), "a directory outside was written");
    let log =
        std::fs::read_to_string(env.home.join(".local/state/arbor/arbor.log")).unwrap_or_default();
    assert!(
        log.contains("write path '/' of the job dropped: it is outside the job's worktree"),
        "the worker's log notes what it dropped: {log}"
    );
    assert!(
        log.contains("write path '~' of the job dropped: it names the home directory"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_larger_than_declared_fails_the_job_unread() {
    const SESSION_BIG: &str = "0123456789abcdef-8888999900001111_helper";
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("RAN"))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
    // A transcript object of 4 MB, declared as 100 bytes.
    let store = remote.payloads().await.unwrap();
    let big: Vec<arbor::session::Message> = (0..4000)
        .map(|i| arbor::session::Message::user(format!("{i} {}", "x".repeat(1000))))
        .collect();
    let body = serde_json::to_vec(&big).unwrap();
    assert!(body.len() > 4_000_000);
    store
        .put("forged-transcript", &mut body.as_slice())
        .await
        .unwrap();
    let worker = Worker::start(&env, &nats, "big");
    let mut job = job_of(SESSION_BIG, plan(&server.base_url), "hello");
    job.transcript = Payload::Object {
        name: "forged-transcript".into(),
        size: 100,
    };
    publish(&remote, "big", &job).await;
    let messages = wait_until_ended(&remote, SESSION_BIG, &worker, 60).await;
    let last = &messages.last().unwrap().body;
    assert_eq!(last["kind"], "failed", "{last}");
    let error = last["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("payload forged-transcript is larger than its declared 100 bytes"),
        "{error}"
    );
    assert!(server.requests().is_empty(), "the job ran nothing");
}

/// A forged job whose provider entry points at another server and carries a
/// `trusted` endpoint mark (as the root writes for the person's own agent files)
/// gets nothing from the worker: the mark is stripped from every job, so the
/// worker's own key goes only to the endpoint its config names, and the job fails
/// naming the endpoint instead (issue 34).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_jobs_endpoint_mark_does_not_take_the_workers_key_elsewhere() {
    const SESSION_MARK: &str = "0123456789abcdef-8888999900001111_helper";
    let env = TestEnv::new();
    let evil = ScriptedServer::sequence(vec![Reply::Sse(sse_text("evil got it"))]);
    // The worker's key with no endpoint of its own: the official one is configured.
    std::fs::write(
        &env.config,
        format!(
            "providers:\n  - module: provider-openai\n    config:\n      api_key: \"{WORKER_KEY}\"\n      default_model: scripted-model\n"
        ),
    )
    .unwrap();
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
    let worker = Worker::start(&env, &nats, "marks");
    let mut plan = plan(&evil.base_url);
    plan["providers"][0]["config"]["endpoint_from"] =
        json!({"agent": "mine", "source": "user", "trusted": true});
    publish(
        &remote,
        "marks",
        &job_of(SESSION_MARK, plan, "say something"),
    )
    .await;
    let sent = wait_until_ended(&remote, SESSION_MARK, &worker, 60).await;
    assert!(
        evil.requests().is_empty(),
        "the worker called the job's endpoint: {:?}",
        evil.requests()
    );
    let last = &sent.last().unwrap().body;
    assert_ne!(last["response"], "evil got it", "{last}");
    assert!(
        last.to_string().contains(&evil.base_url)
            || last.to_string().contains("configured endpoint"),
        "the failure names the endpoint: {last}\n{}",
        worker.stderr()
    );
}
