//! Session locks that match use (issue 35 item 4), through the real binary: a
//! session's lock is held while a turn runs in it, so `session rewind` from a shell is
//! refused during another process's turn, naming it, and works once the turn ends.

use crate::isolation::{git_project, run_json};
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arbor::engine::testing::Drive;
use serde_json::Value;
use support::*;

/// A model that answers at once, except to a prompt containing `slow`, which it
/// answers only once `release` is set.
fn held_model(release: Arc<AtomicBool>) -> ScriptedServer {
    ScriptedServer::start(Arc::new(move |body: Value| {
        let slow = body.to_string().contains("slow");
        let release = release.clone();
        Box::pin(async move {
            while slow && !release.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Reply::Sse(sse_text("Done."))
        })
    }))
}

/// Waits until `server` has seen `n` requests (a turn is then mid-request).
fn wait_for_requests(server: &ScriptedServer, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().len() < n {
        assert!(Instant::now() < deadline, "the model was never asked");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn rewind_is_refused_while_another_process_runs_a_turn_and_works_after() {
    let release = Arc::new(AtomicBool::new(false));
    let server = held_model(release.clone());
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-locks");
    git_project(&env);
    let first = run_json(&env, "first", &[]);
    let id = first["session_id"].as_str().unwrap().to_string();

    let mut turn = env
        .std_cmd()
        .args(["session", "resume", &id, "slow", "--yes"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_requests(&server, 2);
    let refused = env
        .cmd()
        .args(["session", "rewind", &id, "--to-turn", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "session {id} is running a turn in another process (pid {}); rewind refused",
            turn.id()
        )),
        "{stderr}"
    );

    release.store(true, Ordering::SeqCst);
    assert!(turn.wait().unwrap().success());
    let done = env
        .cmd()
        .args(["session", "rewind", &id, "--to-turn", "0"])
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

/// A runtime (as behind the TUI) holds a session's lock only while a turn runs: once
/// the turn ends, another writer can open the idle session (what `session resume`,
/// `merge`, `discard` and `rewind` from a shell do). The runtime's next turn takes
/// the lock again; when that other writer added to the transcript meanwhile, the
/// turn fails clearly and writes nothing.
#[tokio::test]
async fn an_idle_session_of_a_runtime_can_be_opened_elsewhere() {
    use arbor::engine::testing::{Drive, Step};
    use arbor::session::{Message, SessionStore};
    use support::fixture::{Fixture, plan};

    let fx = Fixture::new(plan(serde_json::json!({})), &[], |_| {
        vec![Step::text("Hello")]
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "hi".into()).await.unwrap();

    let store = SessionStore::new(fx.paths.sessions_dir());
    {
        // Idle: free to open, and a turn of the runtime meanwhile is refused.
        let _other = store.open(&id).expect("an idle session is not locked");
        let err = rt.run_turn(&id, "again".into()).await.unwrap_err();
        assert!(
            err.to_string().contains("is open in another process"),
            "{err}"
        );
    }
    // Released again: the runtime continues as before.
    rt.run_turn(&id, "again".into()).await.unwrap();

    let before = std::fs::read(fx.session_dir(&id).join("transcript.jsonl")).unwrap();
    {
        let mut other = store.open(&id).unwrap();
        other
            .append_message(&Message::user("from a shell"))
            .unwrap();
        other.sync().unwrap();
    }
    let after = std::fs::read(fx.session_dir(&id).join("transcript.jsonl")).unwrap();
    assert!(after.len() > before.len());
    let err = rt.run_turn(&id, "stale".into()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("was continued by another process while idle here"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(fx.session_dir(&id).join("transcript.jsonl")).unwrap(),
        after,
        "nothing written by the stale copy"
    );
}

/// Issue 35's done-when through the real TUI in a pty: a root delegates a writing
/// child (`merge: manual`, so its branch stays); once the turn is over and the TUI
/// sits idle, a shell `session merge` of that child and a `session resume` of the
/// root both work — the TUI holds no lock on idle sessions.
#[test]
fn a_tui_sitting_idle_lets_a_shell_merge_and_resume_its_sessions() {
    let server = ScriptedServer::start(Arc::new(|body: Value| {
        let reply = if last_role(&body) == "tool" {
            Reply::Sse(sse_text("All done here."))
        } else if last_user_text(&body).contains("Change VALUE") {
            Reply::Sse(sse_tool_calls(&[(
                "w1",
                "write_file",
                serde_json::json!({"file_path": "app.py", "content": "VALUE = 2\n"}),
            )]))
        } else if last_user_text(&body).contains("once more") {
            Reply::Sse(sse_text("resumed from the shell"))
        } else {
            Reply::Sse(sse_tool_calls(&[(
                "t1",
                "task",
                serde_json::json!({"agent": "implementer", "instruction": "Change VALUE"}),
            )]))
        };
        Box::pin(async move { reply })
    }));
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-test-locks");
    env.append_config("isolation: {merge: manual}\napprovals: {write_file: allow}\n");
    git_project(&env);
    let tui = env.tui();
    tui.send(b"fix the value\r");
    assert!(
        tui.wait_text("All done here.", Duration::from_secs(60))
            .is_some(),
        "{}",
        tui.screen()
    );
    std::thread::sleep(Duration::from_millis(500));
    let child = crate::isolation::child_with(&env, "Change VALUE");
    let merged = env
        .cmd()
        .args(["session", "merge", &child])
        .output()
        .unwrap();
    assert!(
        merged.status.success(),
        "merge refused while the TUI sits idle: {}",
        String::from_utf8_lossy(&merged.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(env.project.join("app.py")).unwrap(),
        "VALUE = 2\n"
    );
    let list = env
        .cmd()
        .args(["session", "list", "--json"])
        .output()
        .unwrap();
    let sessions: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let root = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["parent_id"].is_null())
        .and_then(|s| s["session_id"].as_str())
        .unwrap()
        .to_string();
    let resumed = env
        .cmd()
        .args(["session", "resume", &root, "once more"])
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "resume refused while the TUI sits idle: {}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| last_user_text(r).contains("once more")),
        "the resumed turn reached the model"
    );
    drop(tui);
}

/// A session another runtime (another process) loads without running a turn in it —
/// here renamed in place after a model switch loaded it — holds no lock: a shell can
/// open it at once. A write of that idle copy while the shell holds the session is
/// refused and writes nothing; once the shell lets go, the next write lands.
#[tokio::test]
async fn a_session_loaded_but_never_run_holds_no_lock_and_its_idle_writes_wait_their_turn() {
    use arbor::engine::testing::Step;
    use arbor::session::SessionStore;
    use support::fixture::{Fixture, plan};

    let fx = Fixture::new(plan(serde_json::json!({})), &[], |_| {
        vec![Step::text("Hello")]
    });
    let id = {
        let rt = fx.engine();
        let id = rt.create_root(None).unwrap();
        rt.run_turn(&id, "hi".into()).await.unwrap();
        id
    };
    let other = fx.engine();
    // Loads the stored session (whatever the model switch decides).
    let _ = other.set_model(&id, "scripted-model").await;
    let store = SessionStore::new(fx.paths.sessions_dir());
    let metadata = || fx.metadata(&id);
    {
        let _shell = store
            .open(&id)
            .expect("a session loaded and never run is not locked");
        other.rename(&id, "while the shell holds it").await.unwrap();
        assert_ne!(metadata()["name"], "while the shell holds it");
    }
    other.rename(&id, "after the shell").await.unwrap();
    assert_eq!(metadata()["name"], "after the shell");
    // Still free: the idle write took the lock for itself alone.
    drop(store.open(&id).expect("free after an idle write"));
}
