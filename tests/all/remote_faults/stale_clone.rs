//! A worker whose clone lacks the job's commit (issue 38 item 6): it hands each job
//! back for another worker of the pool, saying so, instead of failing it; the pool's
//! up-to-date worker runs them all.

use serde_json::Value;

use super::*;
use crate::support::nats::NatsServer;
use crate::support::worker_proc::WorkerProc;

const CHILDREN: usize = 4;

#[test]
fn a_worker_with_a_stale_clone_hands_its_jobs_to_one_that_has_the_commit() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let model = parts_model(CHILDREN, "parts done");
    let root = root_env(&model.base_url, &nats.url, "mixed");
    let git = |dir: &std::path::Path, args: &[&str]| {
        crate::remote_root::git(dir, args);
    };
    git(&root.project, &["init", "-q", "-b", "main"]);
    std::fs::write(root.project.join("app.py"), "VALUE = 1\n").unwrap();
    git(&root.project, &["add", "."]);
    git(&root.project, &["commit", "-qm", "one"]);
    let clones = tempfile::tempdir().unwrap();
    let (stale, fresh) = (clones.path().join("stale"), clones.path().join("fresh"));
    let project = root.project.display().to_string();
    git(clones.path(), &["clone", "-q", &project, "stale"]);
    std::fs::write(root.project.join("app.py"), "VALUE = 2\n").unwrap();
    git(&root.project, &["commit", "-qam", "two"]);
    git(clones.path(), &["clone", "-q", &project, "fresh"]);

    let stale_model = ScriptedServer::sequence(vec![Reply::Sse(sse_text("FROM-STALE"))]);
    let stale_worker = WorkerProc::start(
        &nats.url,
        &stale_model.base_url,
        &["--pool", "mixed", "--repo", &stale.display().to_string()],
    );
    let fresh_model = ScriptedServer::sequence(vec![Reply::Sse(sse_text("FROM-FRESH"))]);
    let fresh_worker = WorkerProc::start(
        &nats.url,
        &fresh_model.base_url,
        &["--pool", "mixed", "--repo", &fresh.display().to_string()],
    );
    let run = spawn_run(&root, "Delegate four parts");
    let out = finish(run, 180, || {
        format!(
            "stale:\n{}\nfresh:\n{}",
            stale_worker.output(),
            fresh_worker.output()
        )
    });
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("failed"), "a child failed:\n{stderr}");
    assert!(
        stale_model.requests().is_empty(),
        "the stale worker ran a job"
    );
    assert_eq!(
        fresh_model.requests().len(),
        CHILDREN,
        "{}",
        fresh_worker.output()
    );
    let said = stale_worker.output();
    assert!(
        said.contains("handed back the job of sub-session"),
        "{said}"
    );
    assert!(said.contains("lacks commit"), "{said}");
    for dir in root.session_dirs(AGENT) {
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("metadata.json")).unwrap())
                .unwrap();
        assert_eq!(meta["status"], "completed", "{meta}");
    }
}
