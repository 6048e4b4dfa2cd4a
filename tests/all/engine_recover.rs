//! Recovering sessions through the engine (issue 10 items 2, 3, 5): continuing a
//! stopped session (re-running an unanswered model call, else `Continue.`), an
//! interrupted one repaired with "interrupted" results, every interrupted session of a
//! tree children first, quitting that keeps every sub-session's partial output, and
//! titles. Scripted provider, temp dirs (see `engine/fixture.rs`).

use crate::support::fixture;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arbor::engine::repair::INTERRUPTED_RESULT;
use arbor::engine::testing::{Drive, Step, after_tool_results, last_user_text};
use arbor::engine::turn::CONTINUE_PROMPT;
use arbor::provider::{ProviderError, ProviderErrorKind};
use arbor::session::message::Message;
use arbor::session::{EngineEvent, SessionId, SessionStatus, SessionStore};
use arbor::tui::executor::RuntimeExecutor;
use arbor::tui::runloop::Executor;
use fixture::*;
use serde_json::{Value, json};

/// Rewrites `id`'s stored status, as a process that died mid-turn leaves it.
fn set_stored_status(fx: &Fixture, id: &str, status: &str) {
    let path = fx.session_dir(id).join("metadata.json");
    let mut meta: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    meta["status"] = json!(status);
    std::fs::write(&path, meta.to_string()).unwrap();
}

/// The root delegates `help` to `helper` once, then answers; the helper answers.
fn delegating_to_a_helper() -> Fixture {
    Fixture::new(
        plan(json!({})),
        &[("helper", HELPER)],
        delegating(
            json!({"agent": "helper", "instruction": "help"}),
            vec![Step::text("helped")],
        ),
    )
}

fn roles_and_texts(transcript: &[Value]) -> Vec<(String, String)> {
    transcript
        .iter()
        .map(|m| {
            let message: Message = serde_json::from_value(m.clone()).unwrap();
            (message.role().to_string(), message.text())
        })
        .collect()
}

#[tokio::test]
async fn continue_reruns_an_unanswered_model_call_and_otherwise_sends_continue() {
    let n = AtomicUsize::new(0);
    let fx = Fixture::new(plan(json!({})), &[], move |_| {
        match n.fetch_add(1, Ordering::SeqCst) {
            0 => vec![Step::Fail(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                "scripted",
                "bad request",
            ))],
            1 => vec![Step::text("the answer")],
            _ => vec![Step::text("more")],
        }
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    let failed = rt.run_turn(&id, "hi".into()).await.unwrap();
    assert_eq!(failed.status, SessionStatus::Failed);

    // The model never answered "hi": the same call runs again, no new message.
    let out = rt.continue_turn(&id).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "the answer")
    );
    let requests = fx.provider.requests();
    let texts: Vec<String> = requests[1].messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["hi"]);
    assert_eq!(
        roles_and_texts(&fx.transcript(&id)),
        [
            ("user".to_string(), "hi".to_string()),
            ("assistant".to_string(), "the answer".to_string())
        ]
    );

    // The model had answered: a visible "Continue." message.
    let out = rt.continue_turn(&id).await.unwrap();
    assert_eq!(out.response, "more");
    assert_eq!(last_user_text(&fx.provider.requests()[2]), CONTINUE_PROMPT);
    let t = fx.transcript(&id);
    assert_eq!(t[2]["role"], "user");
    assert_eq!(t[2]["content"], CONTINUE_PROMPT);
    let prompts: Vec<String> = fx
        .lines(&id, "events.jsonl")
        .iter()
        .filter(|e| e["event"] == "prompt:submit")
        .map(|e| e["data"]["prompt"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(prompts, ["hi", CONTINUE_PROMPT]);
}

#[tokio::test]
async fn an_interrupted_session_gets_interrupted_results_and_its_call_runs_again() {
    let fx = Fixture::new(plan(json!({})), &[], |r| {
        if after_tool_results(r) {
            vec![Step::text("picked up")]
        } else {
            vec![Step::text("first answer")]
        }
    });
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "first".into()).await.unwrap();
    drop(rt);
    // A process died while the model's tool call ran: the call has no result and the
    // metadata still says running; nobody holds the lock.
    let orphan = json!({"role": "assistant", "content": [{"type": "tool_call", "id": "c9", "name": "read_file", "input": {"path": "x"}}], "tool_calls": [{"id": "c9", "tool": "read_file", "arguments": {"path": "x"}}]});
    let path = fx.session_dir(&id).join("transcript.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!("{orphan}\n"));
    std::fs::write(&path, text).unwrap();
    set_stored_status(&fx, &id, "running");
    let store = SessionStore::new(fx.paths.sessions_dir());
    assert_eq!(
        store.load(&id).unwrap().metadata.status,
        SessionStatus::Interrupted
    );

    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let out = rt.continue_turn(&id).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "picked up")
    );
    let t = fx.transcript(&id);
    let result = tool_result(&t, "c9");
    assert_eq!(result["content"], INTERRUPTED_RESULT);
    assert_eq!(result["is_error"], true);
    assert!(
        !t.iter().any(|m| m["content"] == CONTINUE_PROMPT),
        "the call is re-run, no message added"
    );
    let resume = find(&drain(&mut rx), "session:resume", &id)
        .first()
        .map(|e| data(e))
        .unwrap();
    assert_eq!(resume["status"], "interrupted");
    assert_eq!(fx.metadata(&id)["status"], "completed");
}

#[tokio::test]
async fn continue_interrupted_runs_children_before_their_parent() {
    let fx = delegating_to_a_helper();
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    rt.run_turn(&root, "delegate".into()).await.unwrap();
    let child = task_result(&fx.transcript(&root), "t1")["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    drop(rt);
    set_stored_status(&fx, &root, "running");
    set_stored_status(&fx, &child, "waiting");
    let before = fx.provider.requests().len();

    let rt = fx.engine();
    let turns = rt.continue_interrupted(&root).await;
    let ids: Vec<SessionId> = turns.into_iter().map(|t| t.unwrap().session_id).collect();
    assert_eq!(ids, [child.as_str(), root.as_str()], "children first");
    // The child's model call came first; the root's continuation (its model had
    // answered: "Continue.") then delegated again.
    let requests = fx.provider.requests();
    let first_two: Vec<(String, String)> = requests[before..before + 2]
        .iter()
        .map(|r| (r.system.clone(), last_user_text(r)))
        .collect();
    assert_eq!(
        first_two,
        [
            (HELPER.to_string(), CONTINUE_PROMPT.to_string()),
            (ROOT.to_string(), CONTINUE_PROMPT.to_string())
        ]
    );
    for id in [root.as_str(), child.as_str()] {
        assert_eq!(fx.metadata(id)["status"], "completed", "{id}");
    }
    // Nothing interrupted any more: nothing to do.
    assert!(rt.continue_interrupted(&root).await.is_empty());
}

/// Keeps the first `keep` lines of `id`'s transcript, as a process killed then leaves
/// it (what came after was never written).
fn cut_transcript(fx: &Fixture, id: &str, keep: usize) {
    let path = fx.session_dir(id).join("transcript.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text.lines().take(keep).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, kept).unwrap();
}

#[tokio::test]
async fn a_continued_childs_answer_becomes_its_parents_task_result() {
    // The root delegates `one` and `two` to helpers; after the "crash" the helper that
    // re-runs answers differently, so the root's request shows which answer it got.
    let again = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let later = again.clone();
    let fx = Fixture::new(plan(json!({})), &[("helper", HELPER)], move |r| {
        if is_root(r) {
            if after_tool_results(r) {
                vec![Step::text("root done")]
            } else {
                two_helper_calls()
            }
        } else {
            let asked = last_user_text(r);
            let suffix = if later.load(Ordering::SeqCst) {
                " (continued)"
            } else {
                ""
            };
            vec![Step::text(format!("answer {asked}{suffix}"))]
        }
    });
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    rt.run_turn(&root, "delegate".into()).await.unwrap();
    let t = fx.transcript(&root);
    let one = task_result(&t, "t1")["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let two = task_result(&t, "t2")["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    drop(rt);
    // Killed while `two` waited for its model and the root for both task calls: `one`
    // had finished, `two` holds only its instruction, the root only its calls.
    cut_transcript(&fx, &root, 2);
    cut_transcript(&fx, &two, 1);
    set_stored_status(&fx, &root, "running");
    set_stored_status(&fx, &two, "running");
    again.store(true, Ordering::SeqCst);
    let before = fx.provider.requests().len();

    let rt = fx.engine();
    let turns = rt.continue_interrupted(&root).await;
    let ids: Vec<SessionId> = turns.into_iter().map(|t| t.unwrap().session_id).collect();
    assert_eq!(ids, [two.as_str(), root.as_str()], "children first");

    // The root's model call got both sub-sessions' answers as its task results.
    let requests = fx.provider.requests();
    let root_request = requests[before..].iter().find(|r| is_root(r)).unwrap();
    let results: Vec<(String, Value)> = root_request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some((
                t.tool_call_id.to_string(),
                serde_json::from_str(&m.text()).unwrap_or(Value::Null),
            )),
            _ => None,
        })
        .collect();
    let got: Vec<(&str, &str, &str, &str)> = results
        .iter()
        .map(|(id, v)| {
            (
                id.as_str(),
                v["response"].as_str().unwrap_or("?"),
                v["session_id"].as_str().unwrap_or("?"),
                v["status"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("t1", "answer one", one.as_str(), "completed"),
            ("t2", "answer two (continued)", two.as_str(), "completed"),
        ]
    );
    let roles: Vec<&str> = root_request.messages.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "tool"],
        "one result per call"
    );
    assert_eq!(fx.metadata(&root)["status"], "completed");
    let stored = tool_result(&fx.transcript(&root), "t2");
    assert_ne!(stored["is_error"], true);
    assert_eq!(stored["metadata"]["recovered_from"], two.as_str());
}

#[tokio::test]
async fn shutdown_keeps_every_sub_sessions_partial_output() {
    let fx = Fixture::new(plan(json!({})), &[("helper", HELPER)], |r| {
        if is_root(r) {
            two_helper_calls()
        } else {
            vec![
                Step::text(format!("partial from {}", last_user_text(r))),
                Step::Hang,
            ]
        }
    });
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    let mut rx = rt.subscribe();
    let turn = {
        let rt = rt.clone();
        let root = root.clone();
        tokio::spawn(async move { rt.run_turn(&root, "split it".into()).await })
    };
    // Both sub-sessions have streamed their text and hang.
    let mut streamed = std::collections::HashSet::new();
    while streamed.len() < 2 {
        let event = tokio::time::timeout(GUARD, rx.recv())
            .await
            .unwrap()
            .unwrap();
        if let EngineEvent::ContentBlockDelta(_) = &event.msg
            && event.parent_id.as_deref() == Some(root.as_str())
        {
            streamed.insert(event.session_id.clone());
        }
    }

    // The TUI quitting (Ctrl+C twice): its run loop awaits the executor's shutdown.
    let (executor, _stream) = RuntimeExecutor::connect(&rt);
    executor.shutdown().await;
    assert!(rt.live_session_ids().iter().all(|id| !rt.is_running(id)));
    let out = tokio::time::timeout(GUARD, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(out.status, SessionStatus::Cancelled);
    for child in &streamed {
        let t = fx.transcript(child);
        let last = t.last().unwrap();
        assert_eq!(last["role"], "assistant", "{child}: {t:?}");
        assert_eq!(last["metadata"]["partial"], true);
        let text = last["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with("partial from "), "{text}");
        assert_eq!(fx.metadata(child)["status"], "cancelled");
    }
    assert_eq!(fx.metadata(&root)["status"], "cancelled");
    assert!(!rt.is_running(&root));
}

#[tokio::test]
async fn a_root_is_titled_by_its_first_prompt_and_can_be_renamed() {
    let fx = delegating_to_a_helper();
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let prompt = format!(
        "  Refactor the {} store\nthen run the tests",
        "very ".repeat(12)
    );
    rt.run_turn(&root, prompt).await.unwrap();
    let title = fx.metadata(&root)["name"].as_str().unwrap().to_string();
    assert_eq!(title.chars().count(), 60);
    assert!(title.starts_with("Refactor the very very"), "{title}");
    assert!(title.ends_with('…'), "{title}");
    let events = drain(&mut rx);
    let renamed = find(&events, "session:renamed", &root);
    assert_eq!(renamed.len(), 1);
    assert_eq!(data(renamed[0])["name"], title.as_str());
    // Sub-sessions get no title from their instruction; a second prompt keeps it.
    let child = task_result(&fx.transcript(&root), "t1")["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(fx.metadata(&child)["name"], Value::Null);
    rt.run_turn(&root, "another topic".into()).await.unwrap();
    assert_eq!(fx.metadata(&root)["name"], title.as_str());

    // Renamed while live, then while stored (a new process).
    assert_eq!(
        rt.rename(&root, "Store refactor\nignored").await.unwrap(),
        "Store refactor"
    );
    assert_eq!(fx.metadata(&root)["name"], "Store refactor");
    drop(rt);
    let rt = fx.engine();
    let updated = fx.metadata(&child)["last_updated"].clone();
    assert_eq!(rt.rename(&child, "helper run").await.unwrap(), "helper run");
    assert_eq!(fx.metadata(&child)["name"], "helper run");
    assert_eq!(fx.metadata(&child)["last_updated"], updated);
    assert!(
        fx.logged_events(&child)
            .iter()
            .any(|e| e == "session:renamed")
    );
    let err = rt.rename(&child, " \n ").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "a session title needs at least one visible character"
    );
    assert_eq!(fx.metadata(&child)["name"], "helper run");
}
