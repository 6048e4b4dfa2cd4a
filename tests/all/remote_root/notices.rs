//! What a remote sub-session tells the person beyond its transcript (issue 35 item
//! 5): the parent's uncommitted changes the worker cannot see, and a pool with no
//! live worker — each as `session:notice` on the child (its thread in the TUI,
//! `events.jsonl`) and on `arbor run`'s stderr, not only in `arbor.log`.

use super::person::play_run;
use super::{HandWorker, NatsServer, child_dir, repo_root, root_model};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_child_says_what_its_worker_cannot_see_and_that_no_worker_is_live() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let server = root_model();
    let (env, head) = repo_root(&server, &nats, "rt9");
    // Not committed: the child's worktree has it, a worker's clone cannot.
    std::fs::write(env.project.join("app.py"), "VALUE = 1\n").unwrap();

    let mut cmd = env.std_cmd();
    cmd.args(["run", "--yes", "Explore for me"]);
    let run = std::thread::spawn(move || cmd.output().unwrap());
    // A hand worker writes no presence entry: the pool has no live worker.
    let worker = HandWorker::connect(&nats.url, 1).await;
    let (job, message) = worker.take_job("rt9").await;
    assert_eq!(
        job.files.as_ref().map(|f| f.base_commit.clone()),
        Some(head.clone())
    );
    play_run(&worker, &job, message, "found app.py").await;
    let out = run.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");

    let short = job.session_id.short();
    let unseen = format!(
        "#{short}: the parent's uncommitted changes are not seen by this remote \
         sub-session: its worker starts from commit {}",
        &head[..8]
    );
    assert!(stderr.contains(&unseen), "{stderr}");
    let idle = format!(
        "#{short}: no live worker in pool rt9: this sub-session waits until one joins \
         (`arbor worker --pool rt9`)"
    );
    assert!(stderr.contains(&idle), "{stderr}");
    let events = read_jsonl(&child_dir(&env).join("events.jsonl"));
    let notices: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "session:notice")
        .map(|e| {
            e["data"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices[0].contains("uncommitted changes"), "{notices:?}");
    assert!(
        notices[1].starts_with("no live worker in pool rt9"),
        "{notices:?}"
    );
}
