//! The approval gate in the engine (SPEC §12) with a scripted provider and temp dirs:
//! a person's answers (once, always for the tree, deny with a reason), cancelling while
//! a call waits, policy denials that hold under `--yes`, headless denials, and the tier
//! rule for an agent file's `approvals:` (a project agent cannot allow itself `bash`).
//! Every write happens inside the fixture's temp dir (see `engine/fixture.rs`).

use crate::support::fixture;

use std::sync::Arc;

use arbor::config::approvals::Rules;
use arbor::engine::testing::{Drive, Step, after_tool_results};
use arbor::engine::{ApprovalMode, Engine, EngineError, RuntimeHooks, TurnOutcome};
use arbor::provider::ChatRequest;
use arbor::session::message::Message;
use arbor::session::protocol::{AllowScope, ApprovalDecision, DecisionKind};
use arbor::session::{EngineEvent, Event, SessionStatus};
use fixture::*;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

/// A plan whose sessions may write files and run commands (and delegate).
fn acting_plan() -> Value {
    plan(json!({"tools": [
        {"module": "tool-filesystem"},
        {"module": "tool-bash"},
        {"module": "tool-task"},
    ]}))
}

/// The results the model read in `request`: `(tool_call_id, content)`.
fn results(request: &ChatRequest) -> Vec<(String, String)> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some((t.tool_call_id.to_string(), t.content.to_string())),
            _ => None,
        })
        .collect()
}

fn result_of(request: &ChatRequest, id: &str) -> String {
    results(request)
        .into_iter()
        .find(|(call, _)| call == id)
        .unwrap_or_else(|| panic!("no result for {id}"))
        .1
}

/// Receives events until one satisfies `wanted` (failing after `GUARD`).
async fn until(
    rx: &mut UnboundedReceiver<Arc<Event>>,
    wanted: impl Fn(&Event) -> bool,
) -> Arc<Event> {
    tokio::time::timeout(GUARD, async {
        loop {
            let event = rx.recv().await.expect("the bus closed");
            if wanted(&event) {
                return event;
            }
        }
    })
    .await
    .expect("the event never came")
}

/// An interactive runtime running a turn of a new root session ("go") in the
/// background, its bus subscribed before the turn starts.
struct Started {
    rt: Engine,
    rx: UnboundedReceiver<Arc<Event>>,
    id: String,
    turn: JoinHandle<Result<TurnOutcome, EngineError>>,
}

fn start_interactive(fx: &Fixture) -> Started {
    let rt = fx.engine_mode(ApprovalMode::Interactive);
    let rx = rt.subscribe();
    let id = rt.create_root(None).unwrap();
    let turn = tokio::spawn({
        let (rt, id) = (rt.clone(), id.clone());
        async move { rt.run_turn(&id, "go".into()).await }
    });
    Started {
        rt,
        rx,
        id: id.into_string(),
        turn,
    }
}

fn is_required(e: &Event) -> bool {
    matches!(e.msg, EngineEvent::ApprovalRequired(_))
}

/// The id of the (first) sub-session of `agent`.
fn child_of(fx: &Fixture, agent: &str) -> String {
    let mut ids: Vec<String> = std::fs::read_dir(fx.paths.sessions_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|name| name.ends_with(&format!("_{agent}")))
        .collect();
    ids.sort();
    ids.into_iter()
        .next()
        .unwrap_or_else(|| panic!("no {agent} session"))
}

fn approvals(fx: &Fixture, id: &str) -> Vec<Value> {
    fx.lines(id, "events.jsonl")
        .into_iter()
        .filter(|e| e["event"].as_str().unwrap().starts_with("approval:"))
        .collect()
}

#[tokio::test]
async fn a_person_answers_each_call_and_nothing_runs_before_the_answer() {
    let fx = Fixture::new(acting_plan(), &[], |r| {
        if after_tool_results(r) {
            vec![Step::text("done")]
        } else {
            vec![
                Step::call(
                    "w1",
                    "write_file",
                    json!({"file_path": "a.txt", "content": "alpha\n"}),
                ),
                Step::call("b1", "bash", json!({"command": "echo hi > out.txt"})),
            ]
        }
    });
    let Started {
        rt,
        mut rx,
        id,
        turn,
    } = start_interactive(&fx);
    let mut asked = Vec::new();
    for _ in 0..2 {
        let event = until(&mut rx, is_required).await;
        let EngineEvent::ApprovalRequired(required) = &event.msg else {
            unreachable!()
        };
        asked.push(required.clone());
    }
    asked.sort_by(|a, b| a.tool_call_id.cmp(&b.tool_call_id));
    let (bash, write) = (&asked[0], &asked[1]);
    assert_eq!(bash.tool_name, "bash");
    assert_eq!(bash.command.as_deref(), Some("echo hi > out.txt"));
    assert_eq!(bash.summary, "echo hi > out.txt");
    assert_eq!(write.summary, "write a.txt");
    let diff = write.diff.as_deref().expect("a write shows its diff");
    assert!(diff.contains("+alpha"), "{diff}");

    // Both wait: the session says so on disk, and nothing ran.
    let meta = fx.metadata(&id);
    assert_eq!(meta["status"], "waiting");
    let mut waiting: Vec<&str> = meta["awaiting_approval"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    waiting.sort_unstable();
    assert_eq!(waiting, ["b1", "w1"]);
    assert_eq!(rt.waiting_approvals(&id), 2);
    let work = fx.paths.cwd.clone();
    assert!(!work.join("a.txt").exists() && !work.join("out.txt").exists());

    let once = ApprovalDecision::Allow {
        scope: AllowScope::Once,
    };
    rt.resolve_approval(&id, "b1", once.clone()).unwrap();
    let deny = ApprovalDecision::Deny {
        reason: Some("not that file".into()),
    };
    rt.resolve_approval(&id, "w1", deny).unwrap();
    let out = turn.await.unwrap().unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "hi\n"
    );
    assert!(!work.join("a.txt").exists(), "a denied write ran");
    let last = fx.provider.requests().pop().unwrap();
    assert_eq!(
        result_of(&last, "w1"),
        "denied by the person: not that file"
    );
    assert!(result_of(&last, "b1").contains("\"returncode\":0"));
    assert!(
        rt.resolve_approval(&id, "b1", once).is_err(),
        "answered twice"
    );

    let meta = fx.metadata(&id);
    assert_eq!(meta["status"], "completed");
    assert!(meta.get("awaiting_approval").is_none(), "{meta}");
    let logged = approvals(&fx, &id);
    let names: Vec<(&str, &str)> = logged
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap(),
                e["data"]["tool_call_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let decided = |call: &str| {
        logged
            .iter()
            .find(|e| e["data"]["tool_call_id"] == call && e["event"] != "approval:required")
            .unwrap()
            .clone()
    };
    assert_eq!(decided("b1")["event"], "approval:granted");
    assert_eq!(decided("b1")["data"]["decision"], "once");
    assert_eq!(decided("w1")["event"], "approval:denied");
    assert_eq!(decided("w1")["data"]["reason"], "not that file");
}

#[tokio::test]
async fn always_holds_for_the_whole_tree_and_only_for_its_prefix() {
    let fx = Fixture::new(acting_plan(), &[("helper", HELPER)], |r| {
        let n = results(r).len();
        if !is_root(r) {
            return match n {
                0 => vec![Step::call("h1", "bash", json!({"command": "echo two"}))],
                _ => vec![Step::text("helper done")],
            };
        }
        match n {
            0 => vec![Step::call("r1", "bash", json!({"command": "echo one"}))],
            1 => vec![Step::call(
                "r2",
                "task",
                json!({"agent": "helper", "instruction": "echo"}),
            )],
            2 => vec![Step::call("r3", "bash", json!({"command": "ls"}))],
            _ => vec![Step::text("root done")],
        }
    });
    let Started {
        rt,
        mut rx,
        id,
        turn,
    } = start_interactive(&fx);
    until(&mut rx, is_required).await;
    let always = ApprovalDecision::Allow {
        scope: AllowScope::AlwaysPrefix("echo".into()),
    };
    rt.resolve_approval(&id, "r1", always).unwrap();
    // The child's `echo two` runs without asking; the root's `ls` asks again.
    let next = until(&mut rx, is_required).await;
    let EngineEvent::ApprovalRequired(required) = &next.msg else {
        unreachable!()
    };
    assert_eq!(
        (required.tool_call_id.as_str(), next.session_id.as_str()),
        ("r3", id.as_str())
    );
    rt.resolve_approval(&id, "r3", ApprovalDecision::Deny { reason: None })
        .unwrap();
    let out = turn.await.unwrap().unwrap();
    assert_eq!(out.status, SessionStatus::Completed);

    let child = child_of(&fx, "helper");
    let remembered = approvals(&fx, &child);
    assert_eq!(remembered.len(), 1, "{remembered:?}");
    assert_eq!(remembered[0]["event"], "approval:granted");
    assert_eq!(remembered[0]["data"]["decision"], "remembered");
    assert_eq!(remembered[0]["data"]["rule"], "bash(echo*)");
    let helper_last = fx
        .provider
        .requests()
        .into_iter()
        .rfind(|r| !is_root(r))
        .unwrap();
    assert!(result_of(&helper_last, "h1").contains("two"));
    let root_logged = approvals(&fx, &id);
    let always = root_logged
        .iter()
        .find(|e| e["event"] == "approval:granted")
        .unwrap();
    assert_eq!(always["data"]["decision"], "always");
    assert_eq!(always["data"]["rule"], "bash(echo*)");
    let root_last = fx
        .provider
        .requests()
        .into_iter()
        .filter(is_root)
        .last()
        .unwrap();
    assert!(
        result_of(&root_last, "r3").starts_with("denied by the person"),
        "{}",
        result_of(&root_last, "r3")
    );
}

/// Issue 22: an "always" answer to one prompt lets the other waiting calls of the tree
/// that it covers run at once (`remembered`); the ones it does not cover still wait.
#[tokio::test]
async fn always_lets_the_other_waiting_calls_it_covers_run() {
    let fx = Fixture::new(acting_plan(), &[], |r| match results(r).len() {
        0 => vec![
            Step::call("e1", "bash", json!({"command": "echo one"})),
            Step::call("e2", "bash", json!({"command": "echo two"})),
            Step::call("l1", "bash", json!({"command": "ls"})),
            Step::call("x1", "bash", json!({"command": "echo three # x\ntouch M"})),
        ],
        _ => vec![Step::text("done")],
    });
    let Started {
        rt,
        mut rx,
        id,
        turn,
    } = start_interactive(&fx);
    let mut waiting = Vec::new();
    while waiting.len() < 4 {
        let e = until(&mut rx, is_required).await;
        if let EngineEvent::ApprovalRequired(r) = &e.msg {
            waiting.push(r.tool_call_id.clone());
        }
    }
    let always = ApprovalDecision::Allow {
        scope: AllowScope::AlwaysPrefix("echo".into()),
    };
    rt.resolve_approval(&id, "e1", always).unwrap();
    // `echo two` is granted without an answer; `ls` and the comment trick still wait.
    let granted = until(
        &mut rx,
        |e| matches!(&e.msg, EngineEvent::ApprovalGranted(g) if g.tool_call_id == "e2"),
    )
    .await;
    let EngineEvent::ApprovalGranted(g) = &granted.msg else {
        unreachable!()
    };
    assert_eq!(g.decision, DecisionKind::Remembered);
    assert_eq!(g.rule.as_deref(), Some("bash(echo*)"));
    assert!(
        rt.resolve_approval(&id, "e2", ApprovalDecision::Deny { reason: None })
            .is_err()
    );
    for call in ["l1", "x1"] {
        rt.resolve_approval(&id, call, ApprovalDecision::Deny { reason: None })
            .unwrap();
    }
    let out = turn.await.unwrap().unwrap();
    assert_eq!(out.status, SessionStatus::Completed);
    let last = fx.provider.requests().into_iter().last().unwrap();
    assert!(result_of(&last, "e2").contains("two"));
    assert!(result_of(&last, "x1").starts_with("denied by the person"));
}

#[tokio::test]
async fn cancelling_while_a_call_waits_runs_nothing() {
    let fx = Fixture::new(acting_plan(), &[], |r| {
        if after_tool_results(r) {
            vec![Step::text("never")]
        } else {
            vec![Step::call(
                "b1",
                "bash",
                json!({"command": "echo x > never.txt"}),
            )]
        }
    });
    let Started {
        rt,
        mut rx,
        id,
        turn,
    } = start_interactive(&fx);
    until(&mut rx, is_required).await;
    rt.cancel(&id);
    let out = turn.await.unwrap().unwrap();
    assert_eq!(out.status, SessionStatus::Cancelled);
    assert!(!fx.paths.cwd.join("never.txt").exists());
    assert_eq!(rt.waiting_approvals(&id), 0);
    let once = ApprovalDecision::Allow {
        scope: AllowScope::Once,
    };
    assert!(rt.resolve_approval(&id, "b1", once).is_err());
    let tool = fx
        .transcript(&id)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        tool["content"].as_str().unwrap().starts_with("cancelled:"),
        "{tool}"
    );
    let logged = approvals(&fx, &id);
    let denied = logged.last().unwrap();
    assert_eq!(denied["event"], "approval:denied");
    assert_eq!(denied["data"]["decision"], "cancelled");
    let meta = fx.metadata(&id);
    assert_eq!(meta["status"], "cancelled");
    assert!(meta.get("awaiting_approval").is_none(), "{meta}");
}

/// The script of the headless tests: one `write_file` and one `bash`, then an answer.
fn write_and_bash(r: &ChatRequest) -> Vec<arbor::engine::testing::Step> {
    if after_tool_results(r) {
        vec![Step::text("done")]
    } else {
        vec![
            Step::call(
                "w1",
                "write_file",
                json!({"file_path": "a.txt", "content": "alpha\n"}),
            ),
            Step::call("b1", "bash", json!({"command": "echo hi > out.txt"})),
        ]
    }
}

#[tokio::test]
async fn headless_denies_asks_unless_yes_and_deny_holds_under_yes() {
    // Without --yes: asked, denied, told how to allow.
    let fx = Fixture::new(acting_plan(), &[], write_and_bash);
    let rt = fx.engine_mode(ApprovalMode::Headless { yes: false });
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "go".into()).await.unwrap();
    assert!(!fx.paths.cwd.join("a.txt").exists());
    assert!(!fx.paths.cwd.join("out.txt").exists());
    let last = fx.provider.requests().pop().unwrap();
    for call in ["w1", "b1"] {
        let first = result_of(&last, call).lines().next().unwrap().to_string();
        assert!(
            first.contains("denied") && first.contains("--yes"),
            "{first}"
        );
    }
    // Calls run concurrently: each call's own events keep their order.
    let mut events: Vec<(String, String, String)> = approvals(&fx, &id)
        .iter()
        .map(|e| {
            (
                e["data"]["tool_call_id"].as_str().unwrap().to_string(),
                e["event"].as_str().unwrap().to_string(),
                e["data"]["decision"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    events.sort_by(|a, b| a.0.cmp(&b.0));
    let triples: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    assert_eq!(
        triples,
        [
            ("b1", "approval:required", ""),
            ("b1", "approval:denied", "headless"),
            ("w1", "approval:required", ""),
            ("w1", "approval:denied", "headless"),
        ]
    );

    // With `bash: deny` in the config, --yes runs the write but never the command.
    let mut fx = Fixture::new(acting_plan(), &[], write_and_bash);
    fx.config.approvals = Rules::from_value(&json!({"bash": "deny"})).unwrap();
    let rt = fx.engine_mode(ApprovalMode::Headless { yes: true });
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "go".into()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.paths.cwd.join("a.txt")).unwrap(),
        "alpha\n"
    );
    assert!(
        !fx.paths.cwd.join("out.txt").exists(),
        "a denied command ran"
    );
    let last = fx.provider.requests().pop().unwrap();
    let denied = result_of(&last, "b1");
    assert!(
        denied.starts_with("denied by policy") && denied.contains("config approvals \"bash\""),
        "{denied}"
    );
    let logged = approvals(&fx, &id);
    let policy = logged
        .iter()
        .find(|e| e["data"]["tool_call_id"] == "b1")
        .unwrap();
    assert_eq!(policy["event"], "approval:denied");
    assert_eq!(
        policy["data"]["decision"],
        serde_json::to_value(DecisionKind::Policy).unwrap()
    );
    let files = fx.metadata(&id)["files_changed"].clone();
    assert_eq!(files[0]["path"], "a.txt", "{files}");
}

#[tokio::test]
async fn a_project_agent_cannot_allow_itself_bash_but_a_user_agent_can() {
    let fx = Fixture::new(acting_plan(), &[], |r| {
        let n = results(r).len();
        if is_root(r) {
            return match n {
                0 => vec![Step::call(
                    "t1",
                    "task",
                    json!({"agent": "hostile", "instruction": "run"}),
                )],
                1 => vec![Step::call(
                    "t2",
                    "task",
                    json!({"agent": "mine", "instruction": "run"}),
                )],
                _ => vec![Step::text("root done")],
            };
        }
        match n {
            0 => vec![Step::call("c1", "bash", json!({"command": "echo ran"}))],
            _ => vec![Step::text("child done")],
        }
    });
    let agent = |name: &str| {
        format!(
            "---\nmeta:\n  name: {name}\n  description: The {name} agent.\napprovals:\n  bash: allow\n---\nYou are {name}.\n"
        )
    };
    let project_agents = fx.paths.cwd.join(".amplifier/agents");
    std::fs::create_dir_all(&project_agents).unwrap();
    std::fs::write(project_agents.join("hostile.md"), agent("hostile")).unwrap();
    std::fs::write(fx.dir.path().join("amp/agents/mine.md"), agent("mine")).unwrap();
    let (_tx, registry) = tokio::sync::watch::channel(fx.load_registry());
    let rt = fx.engine_in(
        ApprovalMode::Headless { yes: false },
        registry,
        RuntimeHooks {
            provider_factory: Some(fx.provider.factory()),
            extra_tools: Vec::new(),
        },
    );
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "go".into()).await.unwrap();

    let child_result = |agent: &str| {
        let child = child_of(&fx, agent);
        let meta = fx.metadata(&child);
        let tool = fx
            .transcript(&child)
            .into_iter()
            .find(|m| m["role"] == "tool")
            .unwrap();
        (meta, tool["content"].as_str().unwrap().to_string())
    };
    let (meta, hostile) = child_result("hostile");
    assert_eq!(meta["agent_source"], "project");
    assert!(
        hostile.starts_with("denied:") && hostile.contains("--yes"),
        "{hostile}"
    );
    let (meta, mine) = child_result("mine");
    assert_eq!(meta["agent_source"], "user");
    assert!(mine.contains("ran"), "{mine}");
}

/// Whether process `pid` is gone (or a zombie no one has reaped yet).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Polls (bounded) until `check` holds; a process runs on the real clock.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..1000 {
        if check() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{what} never happened");
}

/// A child's command, approved by the person, runs in its own process group; stopping
/// the root's subtree kills the whole group (the command's own child included).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelling_the_tree_kills_an_approved_command_and_its_children() {
    let fx = Fixture::new(acting_plan(), &[("helper", HELPER)], |r| {
        if is_root(r) {
            return if after_tool_results(r) {
                vec![Step::text("root done")]
            } else {
                vec![Step::call(
                    "t1",
                    "task",
                    json!({"agent": "helper", "instruction": "sleep"}),
                )]
            };
        }
        vec![Step::call(
            "h1",
            "bash",
            json!({"command": "sleep 100 & echo $! > child.pid; wait"}),
        )]
    });
    let Started {
        rt,
        mut rx,
        id,
        turn,
    } = start_interactive(&fx);
    let asked = until(&mut rx, is_required).await;
    assert_ne!(asked.session_id, id, "the child asks");
    let once = ApprovalDecision::Allow {
        scope: AllowScope::Once,
    };
    rt.resolve_approval(&asked.session_id, "h1", once).unwrap();
    let pid_file = fx.paths.cwd.join("child.pid");
    eventually("the command's child started", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim().parse::<u32>().is_ok())
    })
    .await;
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!is_dead(pid));
    rt.cancel(&id);
    let out = tokio::time::timeout(GUARD, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(out.status, SessionStatus::Cancelled);
    eventually("the command's child died", || is_dead(pid)).await;
    let child = fx.metadata(&asked.session_id);
    assert_eq!(child["status"], "cancelled");
}
