//! Delegation through the task tool with a scripted provider and temp dirs: spawn,
//! resume by `session_id`, depth limit, unknown agents, parallel task calls and
//! `max_parallel`, `context_depth`, cancellation cascading to a running child, and
//! `Cancel` stopping exactly the named session's subtree.
//! Nothing touches the real home (see `engine/fixture.rs`).

use crate::support::fixture;

use std::sync::{Arc, Mutex};

use arbor::engine::Engine;
use arbor::engine::testing::{Drive, Step, after_tool_results, last_user_text};
use arbor::session::message::Message;
use arbor::session::{SessionId, SessionStatus};
use fixture::*;
use serde_json::{Value, json};

#[tokio::test]
async fn cancel_cascades_to_a_running_child_and_both_resume() {
    let fx = Fixture::new(plan(json!({})), &[("helper", HELPER)], |r| {
        let again = last_user_text(r) == "again";
        match (is_root(r), again) {
            (true, true) => vec![Step::text("root again")],
            (true, false) if after_tool_results(r) => vec![Step::text("root done")],
            (true, false) => vec![Step::call(
                "t1",
                "task",
                json!({"agent": "helper", "instruction": "work"}),
            )],
            (false, true) => vec![Step::text("helper again")],
            (false, false) => vec![Step::text("working…"), Step::Hang],
        }
    });
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let turn = tokio::spawn({
        let (rt, root) = (rt.clone(), root.clone());
        async move { rt.run_turn(&root, "go".into()).await }
    });
    let child = tokio::time::timeout(GUARD, async {
        loop {
            let e = rx.recv().await.unwrap();
            if e.msg.name() == "content_block:delta"
                && e.parent_id.as_deref() == Some(root.as_str())
            {
                return e.session_id.clone();
            }
        }
    })
    .await
    .unwrap();
    assert!(rt.is_running(&root) && rt.is_running(&child));
    rt.cancel(&root);
    let out = tokio::time::timeout(GUARD, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(out.status, SessionStatus::Cancelled);
    assert!(!rt.is_running(&root) && !rt.is_running(&child));
    for id in [&root, &child] {
        assert_eq!(fx.metadata(id)["status"], "cancelled", "{id}");
        assert!(
            fx.logged_events(id).iter().any(|e| e == "cancel:completed"),
            "{id}"
        );
    }
    assert!(
        fx.logged_events(&root)
            .iter()
            .any(|e| e == "cancel:requested")
    );
    let child_t = fx.transcript(&child);
    assert_eq!(child_t.last().unwrap()["content"][0]["text"], "working…");
    let result: Value = task_result(&fx.transcript(&root), "t1");
    assert_eq!(
        (result["status"].as_str(), result["session_id"].as_str()),
        (Some("cancelled"), Some(child.as_str()))
    );

    let out = rt.run_turn(&child, "again".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "helper again")
    );
    let out = rt.run_turn(&root, "again".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "root again")
    );
}

#[tokio::test]
async fn task_spawns_a_persisted_sub_session() {
    let args = json!({"agent": "helper", "instruction": "say hi", "model_role": "fast", "provider_preferences": [{"provider": "openai", "model": "gpt-4o"}]});
    let fx = Fixture::new(
        plan(json!({})),
        &[("helper", HELPER), ("other", "You are other.")],
        delegating(args, vec![Step::text("hi from helper")]),
    );
    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let root = rt.create_root(None).unwrap();
    let out = rt.run_turn(&root, "delegate".into()).await.unwrap();
    assert_eq!(
        (out.status, out.response.as_str()),
        (SessionStatus::Completed, "root done")
    );

    let mut result: Value = task_result(&fx.transcript(&root), "t1");
    let child = result["session_id"].as_str().unwrap().to_string();
    // Outside git a writing child shares the directory, and the first result says so
    // (issue 25).
    let note = result.as_object_mut().unwrap().remove("isolation");
    assert!(
        note.as_ref()
            .and_then(Value::as_str)
            .is_some_and(|n| n.contains("is not in a git repository")),
        "{note:?}"
    );
    assert_eq!(
        result,
        json!({"response": "hi from helper", "session_id": child, "agent": "helper", "status": "completed", "turn_count": 1})
    );
    let span = root.replace('-', "")[..16].to_string();
    let (prefix, agent) = child.split_once('_').unwrap();
    assert_eq!(agent, "helper");
    let (parent_span, child_span) = prefix.split_once('-').unwrap();
    assert_eq!(parent_span, span);
    assert!(child_span.len() == 16 && child_span.chars().all(|c| c.is_ascii_hexdigit()));

    assert!(fx.session_dir(&child).is_dir());
    let m = fx.metadata(&child);
    assert_eq!(
        (
            m["parent_id"].as_str(),
            m["agent_name"].as_str(),
            m["depth"].as_u64()
        ),
        (Some(root.as_str()), Some("helper"), Some(1))
    );
    assert_eq!(m["config"]["instruction"], HELPER);
    assert!(m["config"]["providers"].is_array());
    assert_eq!(m["model_role"], "fast");
    assert_eq!(m["provider_preferences"][0]["model"], "gpt-4o");
    assert_eq!(m["status"], "completed");
    assert!(!fx.all_session_text().contains(SECRET));
    assert_eq!(fx.transcript(&child).len(), 2);
    assert!(fx.logged_events(&child).iter().any(|e| e == "session:fork"));

    let bus = drain(&mut rx);
    let fork = find(&bus, "session:fork", &child)[0];
    assert_eq!(
        (data(fork)["parent"].as_str(), fork.parent_id.as_deref()),
        (Some(root.as_str()), Some(root.as_str()))
    );
    let spawned = find(&bus, "task:agent_spawned", &root)[0];
    assert_eq!(data(spawned)["sub_session_id"], child.as_str());
    for name in ["tool:pre", "tool:post"] {
        let e = data(find(&bus, name, &root)[0]);
        assert_eq!(e["tool_name"], "task");
        assert_eq!(e["sub_session_id"], child.as_str(), "{name}");
        assert_eq!(e["parent_session_id"], root.as_str(), "{name}");
        assert_eq!(e["depth"], 1, "{name}");
    }
    assert!(position(&bus, "tool:pre", &root) < position(&bus, "session:fork", &child));
    assert!(position(&bus, "task:agent_completed", &root) < position(&bus, "tool:post", &root));

    let child_req = fx
        .provider
        .requests()
        .into_iter()
        .find(|r| r.system == HELPER)
        .unwrap();
    assert_eq!(last_user_text(&child_req), "say hi");
    assert!(
        !tool_names(&child_req).contains(&"task".to_string()),
        "depth 1 has no task tool"
    );
    let root_req = &fx.provider.requests()[0];
    let task = root_req.tools.iter().find(|t| t.name == "task").unwrap();
    assert!(
        task.description.ends_with(
            "Available agents:\n- helper: The helper agent.\n- other: The other agent.\n"
        ),
        "{}",
        task.description
    );
}

#[tokio::test]
async fn task_resume_sends_the_child_history_and_appends_to_it() {
    let child_id = Arc::new(Mutex::new(String::new()));
    let cid = child_id.clone();
    let fx = Fixture::new(plan(json!({})), &[("helper", HELPER)], move |r| {
        let resume = last_user_text(r) == "continue";
        match (is_root(r), after_tool_results(r)) {
            (true, true) => vec![Step::text("root done")],
            (true, false) if resume => vec![Step::call(
                "t2",
                "task",
                json!({"session_id": cid.lock().unwrap().clone(), "instruction": "more"}),
            )],
            (true, false) => vec![Step::call(
                "t1",
                "task",
                json!({"agent": "helper", "instruction": "say hi"}),
            )],
            (false, _) if last_user_text(r) == "more" => vec![Step::text("more from helper")],
            (false, _) => vec![Step::text("hi from helper")],
        }
    });
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    rt.run_turn(&root, "delegate".into()).await.unwrap();
    let first: Value = task_result(&fx.transcript(&root), "t1");
    let child = first["session_id"].as_str().unwrap().to_string();
    *child_id.lock().unwrap() = child.clone();
    drop(rt);

    let rt = fx.engine();
    let mut rx = rt.subscribe();
    let out = rt.run_turn(&root, "continue".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    let req = fx
        .provider
        .requests()
        .into_iter()
        .rfind(|r| r.system == HELPER)
        .unwrap();
    let texts: Vec<String> = req.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["say hi", "hi from helper", "more"]);
    let result: Value = task_result(&fx.transcript(&root), "t2");
    assert_eq!(
        (
            result["session_id"].as_str(),
            result["turn_count"].as_u64(),
            result["response"].as_str()
        ),
        (Some(child.as_str()), Some(2), Some("more from helper"))
    );
    assert_eq!(fx.transcript(&child).len(), 4);
    assert_eq!(fx.metadata(&child)["turn_count"], 2);
    let bus = drain(&mut rx);
    assert_eq!(
        data(find(&bus, "task:agent_resumed", &root)[0])["sub_session_id"],
        child.as_str()
    );
    assert_eq!(find(&bus, "session:resume", &child).len(), 1);
    assert_eq!(
        data(find(&bus, "tool:pre", &root)[0])["sub_session_id"],
        child.as_str()
    );
}

#[tokio::test]
async fn depth_limit_and_unknown_agent_come_back_as_tool_errors() {
    let fx = Fixture::new(
        plan(json!({})),
        &[("helper", HELPER), ("other", "You are other.")],
        |r| match (is_root(r), after_tool_results(r)) {
            (_, true) => vec![Step::text("ok")],
            (true, false) => vec![
                Step::call(
                    "t1",
                    "task",
                    json!({"agent": "helper", "instruction": "nest"}),
                ),
                Step::call("t2", "task", json!({"agent": "nope", "instruction": "x"})),
            ],
            (false, false) => vec![Step::call(
                "n1",
                "task",
                json!({"agent": "helper", "instruction": "deeper"}),
            )],
        },
    );
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    rt.run_turn(&root, "go".into()).await.unwrap();
    let t = fx.transcript(&root);
    let unknown = tool_result(&t, "t2");
    assert_eq!(unknown["is_error"], true);
    assert_eq!(
        unknown["content"],
        "Unknown agent 'nope'. Valid agents: helper, other"
    );
    let child = serde_json::from_str::<Value>(tool_result(&t, "t1")["content"].as_str().unwrap())
        .unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let nested = tool_result(&fx.transcript(&child), "n1");
    assert_eq!(nested["is_error"], true);
    assert!(
        nested["content"]
            .as_str()
            .unwrap()
            .contains("max_recursion_depth is 1"),
        "{nested}"
    );
    assert_eq!(
        std::fs::read_dir(fx.paths.sessions_dir()).unwrap().count(),
        2,
        "no grandchild was created"
    );
}

#[tokio::test]
async fn parallel_task_calls_run_at_once_and_max_parallel_serializes_them() {
    for max_parallel in [4, 1] {
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let helper = if max_parallel == 4 {
            vec![Step::Barrier(barrier), Step::text("done")]
        } else {
            vec![Step::text("done")]
        };
        let fx = Fixture::new(
            plan(
                json!({"tools": [{"module": "tool-task", "config": {"max_parallel": max_parallel}}]}),
            ),
            &[("helper", HELPER)],
            move |r| match (is_root(r), after_tool_results(r)) {
                (true, false) => two_helper_calls(),
                (true, true) => vec![Step::text("both done")],
                (false, _) => helper.clone(),
            },
        );
        let rt = fx.engine();
        let mut rx = rt.subscribe();
        let root = rt.create_root(None).unwrap();
        let out = tokio::time::timeout(GUARD, rt.run_turn(&root, "go".into()))
            .await
            .expect("task calls did not overlap")
            .unwrap();
        assert_eq!(out.status, SessionStatus::Completed);
        let bus = drain(&mut rx);
        let forks: Vec<SessionId> = bus
            .iter()
            .filter(|e| e.msg.name() == "session:fork")
            .map(|e| e.session_id.clone())
            .collect();
        assert_eq!(forks.len(), 2);
        let first_done = position(&bus, "orchestrator:complete", &forks[0]);
        let second_running = bus
            .iter()
            .position(|e| {
                e.msg.name() == "session:status"
                    && e.session_id == forks[1]
                    && data(e)["status"] == "running"
            })
            .unwrap();
        if max_parallel == 4 {
            assert!(
                second_running < first_done,
                "both children show running together"
            );
        } else {
            assert!(
                first_done < position(&bus, "session:fork", &forks[1]),
                "max_parallel 1 runs one child at a time"
            );
        }
    }
}

#[tokio::test]
async fn context_depth_recent_quotes_the_last_parent_turns() {
    let fx = Fixture::new(plan(json!({})), &[("helper", HELPER)], |r| {
        if !is_root(r) {
            return vec![Step::text("hello")];
        }
        match (last_user_text(r).as_str(), after_tool_results(r)) {
            ("My name is Zed", _) => vec![Step::text("Hi Zed")],
            (_, false) => vec![Step::call(
                "t1",
                "task",
                json!({"agent": "helper", "instruction": "greet", "context_depth": "recent", "context_turns": 1}),
            )],
            (_, true) => vec![Step::text("done")],
        }
    });
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    rt.run_turn(&root, "My name is Zed".into()).await.unwrap();
    rt.run_turn(&root, "please delegate".into()).await.unwrap();
    let req = fx
        .provider
        .requests()
        .into_iter()
        .find(|r| r.system == HELPER)
        .unwrap();
    let first = last_user_text(&req);
    assert!(
        first
            .starts_with("Context from the parent session (last turn):\n\n> user: please delegate"),
        "{first}"
    );
    assert!(first.ends_with("\n\nYour task:\ngreet"), "{first}");
    assert!(!first.contains("Zed"), "{first}");
}

#[tokio::test]
async fn registry_reload_reaches_the_task_description_and_new_spawns() {
    let fx = Fixture::new(
        plan(json!({})),
        &[("helper", HELPER)],
        delegating(
            json!({"agent": "newbie", "instruction": "x"}),
            vec![Step::text("hi from newbie")],
        ),
    );
    let (tx, rx) = tokio::sync::watch::channel(fx.registry.clone());
    let rt = fx.engine_on(rx, Vec::new());
    let root = rt.create_root(None).unwrap();
    rt.run_turn(&root, "first".into()).await.unwrap();
    let t = fx.transcript(&root);
    assert_eq!(
        tool_result(&t, "t1")["content"],
        "Unknown agent 'newbie'. Valid agents: helper"
    );

    fx.write_agent("newbie", "You are newbie.");
    tx.send(fx.load_registry()).unwrap();
    rt.run_turn(&root, "second".into()).await.unwrap();
    let last_root = fx.provider.requests().into_iter().rfind(is_root).unwrap();
    let task = last_root.tools.iter().find(|t| t.name == "task").unwrap();
    assert!(
        task.description.contains("- newbie: The newbie agent."),
        "{}",
        task.description
    );
    let result = fx
        .transcript(&root)
        .into_iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap();
    let result: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        (result["agent"].as_str(), result["status"].as_str()),
        (Some("newbie"), Some("completed"))
    );
}

/// Runs a turn of `id` with `prompt` in its own task.
fn spawn_turn(
    rt: &Engine,
    id: &str,
    prompt: &str,
) -> tokio::task::JoinHandle<Result<arbor::engine::TurnOutcome, arbor::engine::EngineError>> {
    let (rt, id, prompt) = (rt.clone(), id.to_string(), prompt.to_string());
    tokio::spawn(async move { rt.run_turn(&id, prompt).await })
}

fn child_of(transcript: &[Value], call_id: &str) -> String {
    task_result(transcript, call_id)["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn cancel_stops_exactly_the_subtree_of_the_session_it_names() {
    // root → alpha → gamma, and root → beta.
    let plan = plan(json!({
        "tools": [{"module": "tool-task", "config": {"max_recursion_depth": 2}}],
    }));
    let agents = [
        ("alpha", "You are alpha."),
        ("beta", "You are beta."),
        ("gamma", "You are gamma."),
    ];
    let fx = Fixture::new(plan, &agents, |r| {
        if last_user_text(r) == "hang" {
            return vec![Step::text("hanging"), Step::Hang];
        }
        let task = |id: &str, agent: &str| {
            Step::call(id, "task", json!({"agent": agent, "instruction": "work"}))
        };
        match r.system.as_str() {
            _ if after_tool_results(r) => vec![Step::text("done")],
            ROOT => vec![task("t1", "alpha"), task("t2", "beta")],
            "You are alpha." => vec![task("g1", "gamma")],
            _ => vec![Step::text("leaf done")],
        }
    });
    let rt = fx.engine();
    let root = rt.create_root(None).unwrap();
    let out = rt.run_turn(&root, "build the tree".into()).await.unwrap();
    assert_eq!(out.status, SessionStatus::Completed, "{:?}", out.error);
    let alpha = child_of(&fx.transcript(&root), "t1");
    let beta = child_of(&fx.transcript(&root), "t2");
    let gamma = child_of(&fx.transcript(&alpha), "g1");
    assert_eq!(fx.metadata(&gamma)["parent_id"], json!(alpha));

    // Every session runs a turn of its own (resumed directly, as from the TUI), so no
    // turn's token is a child of another's: only the runtime's tree walk links them.
    let mut rx = rt.subscribe();
    let ids: [&str; 4] = [&root, &alpha, &beta, &gamma];
    let [root_turn, alpha_turn, beta_turn, gamma_turn] = ids.map(|id| spawn_turn(&rt, id, "hang"));
    tokio::time::timeout(GUARD, async {
        let mut streaming = std::collections::HashSet::new();
        while streaming.len() < ids.len() {
            let e = rx.recv().await.unwrap();
            if e.msg.name() == "content_block:delta" {
                streaming.insert(e.session_id.clone());
            }
        }
    })
    .await
    .unwrap();
    assert!(ids.iter().all(|id| rt.is_running(id)));

    rt.cancel(&alpha);
    for (id, turn) in [(&alpha, alpha_turn), (&gamma, gamma_turn)] {
        let out = tokio::time::timeout(GUARD, turn).await.unwrap().unwrap();
        assert_eq!(out.unwrap().status, SessionStatus::Cancelled, "{id}");
        assert_eq!(fx.metadata(id)["status"], "cancelled", "{id}");
    }
    // The rest of the tree is untouched: still running, nothing cancelled.
    for id in [root.as_str(), beta.as_str()] {
        assert!(rt.is_running(id), "{id} stopped");
        assert_eq!(fx.metadata(id)["status"], "running", "{id}");
        let logged = fx.logged_events(id);
        assert!(
            !logged.iter().any(|e| e.starts_with("cancel:")),
            "{id}: {logged:?}"
        );
    }
    assert!(
        fx.logged_events(&alpha)
            .contains(&"cancel:requested".to_string())
    );
    assert!(
        !fx.logged_events(&gamma)
            .contains(&"cancel:requested".to_string())
    );

    // Cancelling the root stops the rest.
    rt.cancel(&root);
    for turn in [root_turn, beta_turn] {
        let out = tokio::time::timeout(GUARD, turn).await.unwrap().unwrap();
        assert_eq!(out.unwrap().status, SessionStatus::Cancelled);
    }
}
