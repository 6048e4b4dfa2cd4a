//! A writing job taken over after its first worker was killed -9: the second worker
//! restores the files the first one's answered tool calls wrote (its work in
//! progress in the object store) and never runs those calls again.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arbor::remote::Remote;
use arbor::remote::payload::Payload;
use arbor::remote::wire::{JobFiles, SyncReply, sync_subject, token};
use arbor::session::Message;
use futures::StreamExt;
use serde_json::json;

use super::harness::*;
use crate::support::*;

const WRITER: &str = "0123456789abcdef-9999aaaabbbbcccc_writer";

/// A writing job whose first worker is killed -9 while its model streams after the
/// write's result reached the root, taken over by a second worker; what it published
/// and what keeps the test's world alive.
struct Takeover {
    messages: Vec<Sent>,
    server: ScriptedServer,
    base: String,
    remote: Remote,
    second: Worker,
    _nats: NatsServer,
    _env: TestEnv,
}

/// [`Takeover`] (`None` only outside CI without a NATS server); with `answer`, the root's store holds that final
/// answer after the write's result (the first worker finished, its `Done` was lost).
async fn take_over(answer: Option<&str>) -> Option<Takeover> {
    // Call 1 writes a file; call 2 (after the write's result) streams until the worker
    // dies; call 3 (on the second worker, resumed) answers.
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let tick = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"scripted-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tick \"},\"finish_reason\":null}]}\n\n";
    let server = ScriptedServer::start(Arc::new(move |_| {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            match n {
                0 => Reply::Sse(sse_tool_calls(&[(
                    "w1",
                    "write_file",
                    json!({"file_path": "notes.md", "content": "from the first worker\n"}),
                )])),
                1 => Reply::Endless {
                    chunk: tick.to_string(),
                    every: Duration::from_millis(100),
                },
                _ => Reply::Sse(sse_text("finished after the takeover")),
            }
        })
    }));
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let (clone, base) = clone_of_project(&env);

    let (nats, remote) = server_and_root().await?;
    let repo = clone.display().to_string();
    let mut first = Worker::start_with(&env, &nats, "wip", &["--repo", &repo]);

    let mut plan = plan(&server.base_url);
    plan["tools"] = json!([{"module": "tool-filesystem"}]);
    let mut job = job_of(WRITER, plan, "write the notes, then think");
    job.approvals = json!({"write_file": "allow"});
    job.files = Some(JobFiles {
        base_commit: base.clone(),
        repo_name: "proj".into(),
        relative_dir: "sub".into(),
        writes: true,
    });
    publish(&remote, "wip", &job).await;

    // The write's result reached the root and the next model call streams: kill -9.
    let before = wait_for_session(&remote, WRITER, &first, Duration::from_secs(60), |m| {
        let names = event_names(m);
        names.iter().any(|n| n == "tool:post")
            && names.iter().filter(|n| *n == "content_block:delta").count() >= 2
    })
    .await;
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    // What the root's store holds now: the messages the first worker appended.
    let mut transcript: Vec<Message> = before
        .iter()
        .filter(|m| m.body["kind"] == "event" && m.body["event"]["event"] == "message:appended")
        .map(|m| serde_json::from_value(m.body["event"]["data"]["message"].clone()).unwrap())
        .collect();
    assert!(
        transcript
            .last()
            .is_some_and(|m| serde_json::to_value(m).unwrap()["role"] == "tool"),
        "the write's result is the last message the root holds: {transcript:?}"
    );
    if let Some(answer) = answer {
        let said = json!({"role": "assistant", "content": answer});
        transcript.push(serde_json::from_value(said).unwrap());
    }
    let client = remote.client().clone();
    let mut syncs = client
        .subscribe(sync_subject(WRITER).unwrap())
        .await
        .unwrap();
    let reply = SyncReply {
        metadata: Some(Box::new(job.metadata.clone())),
        transcript: Some(Payload::Inline(transcript)),
        subtree: None,
        task_calls: None,
        error: None,
    };
    tokio::spawn(async move {
        while let Some(request) = syncs.next().await {
            if let Some(to) = request.reply {
                let body = serde_json::to_vec(&reply).unwrap();
                client.publish(to, body.into()).await.unwrap();
            }
        }
    });

    // A second worker takes the redelivery (after the 3 s ack wait).
    let second = Worker::start_with(&env, &nats, "wip", &["--repo", &repo]);
    let messages = wait_until_ended(&remote, WRITER, &second, 60).await;
    Some(Takeover {
        messages,
        server,
        base,
        remote,
        second,
        _nats: nats,
        _env: env,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_writing_job_restores_the_files_of_its_answered_tool_calls() {
    // The fields kept alive by name (`..` would drop the server and NATS at once).
    let Some(Takeover {
        messages,
        server,
        base,
        remote,
        second,
        _nats,
        _env,
    }) = take_over(None).await
    else {
        return;
    };
    let done = &messages.last().unwrap().body;
    assert_eq!(done["kind"], "done", "{done}\n{}", second.stderr());
    assert_eq!(done["response"], "finished after the takeover");
    assert_eq!(messages.last().unwrap().epoch, 2);
    // The first worker's file is in the answer's patch …
    let changes = &done["changes"]["inline"];
    assert_eq!(changes["base_commit"], base.as_str());
    let patch = changes["patch"].as_str().unwrap();
    assert!(patch.contains("+++ b/sub/notes.md"), "{patch}");
    assert!(patch.contains("+from the first worker"), "{patch}");
    // … and the write ran once: one tool:pre in all, three model calls, the last one
    // continuing from the stored result.
    let writes = messages
        .iter()
        .filter(|m| m.body["event"]["event"] == "tool:pre")
        .count();
    assert_eq!(writes, 1, "{:?}", event_names(&messages));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let resumed = requests[2]["messages"].as_array().unwrap();
    let tool_calls: usize = resumed
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .map(Vec::len)
        .sum();
    assert_eq!(tool_calls, 1, "{resumed:?}");
    assert!(resumed.iter().any(|m| m["role"] == "tool"), "{resumed:?}");

    // Acked, and its work in progress deleted.
    let deadline = Instant::now() + Duration::from_secs(10);
    while jobs_left(&remote).await != 0 {
        assert!(Instant::now() < deadline, "the job was never acked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let payloads = remote.payloads().await.unwrap();
    let name = format!("wip-{}-r1", token(WRITER).unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    while payloads.get(&name).await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "the work in progress was not deleted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!second.stderr().contains("panicked"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_in_progress_that_does_not_apply_fails_the_redelivered_job() {
    const BAD: &str = "0123456789abcdef-ddddeeeeffff0000_writer";
    let server = endless_server();
    let env = TestEnv::new();
    env.use_openai(&server.base_url, WORKER_KEY);
    let (clone, base) = clone_of_project(&env);
    let Some((nats, remote)) = server_and_root().await else {
        return;
    };
    // A work in progress made against other files than the base's.
    let wrong = "diff --git a/sub/keep.txt b/sub/keep.txt\n--- a/sub/keep.txt\n+++ b/sub/keep.txt\n@@ -1 +1 @@\n-not what the base has\n+changed\n";
    let name = format!("wip-{}-r1", token(BAD).unwrap());
    let payloads = remote.payloads().await.unwrap();
    payloads
        .put(name.as_str(), &mut wrong.as_bytes())
        .await
        .unwrap();
    let client = remote.client().clone();
    let mut syncs = client.subscribe(sync_subject(BAD).unwrap()).await.unwrap();
    let mut plan = plan(&server.base_url);
    plan["tools"] = json!([{"module": "tool-filesystem"}]);
    let mut job = job_of(BAD, plan, "write");
    job.files = Some(JobFiles {
        base_commit: base,
        repo_name: "proj".into(),
        relative_dir: String::new(),
        writes: true,
    });
    let reply = SyncReply {
        metadata: Some(Box::new(job.metadata.clone())),
        transcript: Some(Payload::Inline(vec![Message::user("write")])),
        subtree: None,
        task_calls: None,
        error: None,
    };
    tokio::spawn(async move {
        while let Some(request) = syncs.next().await {
            if let Some(to) = request.reply {
                let body = serde_json::to_vec(&reply).unwrap();
                client.publish(to, body.into()).await.unwrap();
            }
        }
    });
    let repo = clone.display().to_string();
    let mut first = Worker::start_with(&env, &nats, "bad", &["--repo", &repo]);
    publish(&remote, "bad", &job).await;
    wait_for_session(&remote, BAD, &first, Duration::from_secs(60), |m| {
        event_names(m).iter().any(|n| n == "content_block:delta")
    })
    .await;
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    // The redelivery cannot restore it: Failed naming the object and git's refusal,
    // no model call, and the job acked.
    let second = Worker::start_with(&env, &nats, "bad", &["--repo", &repo]);
    let messages = wait_until_ended(&remote, BAD, &second, 60).await;
    let failed = &messages.last().unwrap().body;
    assert_eq!(failed["kind"], "failed", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains(&format!(
            "cannot restore the previous worker's work in progress ({name})"
        )),
        "{error}"
    );
    assert!(error.contains("keep.txt"), "{error}");
    assert_eq!(
        server.requests().len(),
        1,
        "the second worker ran no model call"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while jobs_left(&remote).await != 0 {
        assert!(Instant::now() < deadline, "the job was never acked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_answered_before_its_worker_died_returns_the_work_in_progress_as_its_changes() {
    let Some(Takeover {
        messages,
        server,
        base,
        remote: _remote,
        second,
        _nats,
        _env,
    }) = take_over(Some("the notes are written")).await
    else {
        return;
    };
    let done = &messages.last().unwrap().body;
    assert_eq!(done["kind"], "done", "{done}\n{}", second.stderr());
    assert_eq!(done["response"], "the notes are written");
    let changes = &done["changes"]["inline"];
    assert_eq!(changes["base_commit"], base.as_str());
    let patch = changes["patch"].as_str().unwrap();
    assert!(patch.contains("+from the first worker"), "{patch}");
    assert_eq!(server.requests().len(), 2, "nothing ran again");
}

/// The worker's clone of the project (`sub/keep.txt`, one commit) and its commit.
fn clone_of_project(env: &TestEnv) -> (PathBuf, String) {
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
    (clone, base)
}
