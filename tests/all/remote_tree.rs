//! A remote child's own sub-sessions (issue 38 item 7), through the real binaries: a
//! NATS server, a real `arbor worker` whose model makes the child delegate three
//! parts to `scout` (an agent only the worker has), and a headless root (`arbor run`)
//! whose config allows three sessions per tree.
//!
//! Checked: the root's limit holds on the worker (root + child + one scout; the two
//! other spawns are refused with the root's own text, which the child's model reads);
//! the scout that ran is in the root's store under the child — metadata (`parent_id`,
//! `ran_on`, its usage), transcript and events — so `arbor session show` finds it and
//! `arbor session tree` counts it in the root's subtree.
//!
//! And with a person at the root (an interactive engine in this process, the same real
//! worker): a scout's `bash` call waits for the root's person in the scout's own
//! session, and the answer reaches the scout's turn on the worker.

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::remote_faults::{finish, root_session_of, spawn_arbor, spawn_run, wait_until};
use crate::support::nats::NatsServer;
use crate::support::worker_proc::WorkerProc;
use crate::support::*;

/// The root's remote agent: it may delegate (depth 2), to any agent.
const HELPER: &str = "tree-helper";
/// The worker's own agent the helper delegates to.
const SCOUT: &str = "scout";
/// What a scout answers.
const FOUND: &str = "scout found it";
/// The text of a spawn the root's limit refused (its `SessionsPerTree`).
const REFUSED: &str = "max_sessions_per_tree is 3";

/// The root: one `task` call to the helper, then "parent saw: <its answer>".
fn root_model() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        let reply = delegating_reply(&body, HELPER, "Find it");
        Box::pin(async move { reply })
    }))
}

/// The worker's model: a scout answers [`FOUND`]; the helper delegates three parts to
/// scouts, then answers "child saw: " and every result it got.
fn worker_model() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        let system = content_text(&body["messages"][0]);
        let reply = if system.contains("You are scout.") {
            Reply::Sse(sse_text(FOUND))
        } else if last_role(&body) == "tool" {
            let results: Vec<String> = body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m["role"] == "tool")
                .map(content_text)
                .collect();
            Reply::Sse(sse_text(&format!("child saw: {}", results.join(" | "))))
        } else {
            let calls: Vec<(String, Value)> = (1..=3)
                .map(|i| {
                    (
                        format!("s{i}"),
                        json!({"agent": SCOUT, "instruction": format!("Look in place {i}")}),
                    )
                })
                .collect();
            Reply::Sse(sse_task_calls(&calls))
        };
        Box::pin(async move { reply })
    }))
}

fn write_agent(dir: &std::path::Path, name: &str, frontmatter: &str) {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join(format!("{name}.md")),
        format!(
            "---\nmeta:\n  name: {name}\n  description: {name}.\n{frontmatter}---\nYou are {name}.\n"
        ),
    )
    .unwrap();
}

fn metadata(dir: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("metadata.json")).unwrap()).unwrap()
}

#[test]
fn a_remote_childs_own_sub_sessions_are_counted_and_kept_at_the_root() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let model = root_model();
    let root = TestEnv::new();
    root.use_openai(&model.base_url, "sk-root-tree");
    root.append_config(&format!(
        "remote:\n  nats_url: \"{}\"\n  pool: tree\n  agents: [{HELPER}]\n  ack_wait: 5\nlimits:\n  max_sessions_per_tree: 3\n",
        nats.url
    ));
    write_agent(
        &root.amplifier_home,
        HELPER,
        "tools:\n  - module: tool-task\n    config: {max_recursion_depth: 2, max_parallel: 3}\nagents: all\n",
    );
    let worker_llm = worker_model();
    let worker = scout_worker(&nats.url, &worker_llm.base_url, "tree");

    let run = spawn_run(&root, "Delegate it");
    let out = finish(run, 120, || worker.output());
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let context = format!(
        "stdout:\n{stdout}\nstderr:\n{stderr}\nworker:\n{}",
        worker.output()
    );
    assert!(out.status.success(), "{context}");
    // The child's model read one scout's answer and two refusals with the root's limit.
    assert!(stdout.starts_with("parent saw: "), "{context}");
    assert!(stdout.contains("child saw: "), "{context}");
    assert_eq!(stdout.matches(FOUND).count(), 1, "{context}");
    assert_eq!(stdout.matches(REFUSED).count(), 2, "{context}");
    let scouts_asked = worker_llm
        .requests()
        .iter()
        .filter(|b| content_text(&b["messages"][0]).contains("You are scout."))
        .count();
    assert_eq!(scouts_asked, 1, "{context}");

    // The scout is in the root's store, under the child.
    let helpers = root.session_dirs(HELPER);
    let scouts: Vec<_> = root
        .session_dirs(SCOUT)
        .into_iter()
        .filter(|d| !helpers.contains(d))
        .collect();
    assert_eq!(helpers.len(), 1, "{context}");
    assert_eq!(scouts.len(), 1, "{scouts:?}\n{context}");
    let (child, scout) = (metadata(&helpers[0]), metadata(&scouts[0]));
    assert_eq!(scout["parent_id"], child["session_id"], "{scout}");
    assert_eq!(scout["status"], "completed", "{scout}");
    assert_eq!(scout["depth"], 2, "{scout}");
    assert!(scout["ran_on"]["worker"].as_str().is_some(), "{scout}");
    assert_eq!(scout["working_dir"], child["working_dir"], "{scout}");
    let tokens = |m: &Value| {
        m["usage"]["input_tokens"].as_u64().unwrap_or(0)
            + m["usage"]["output_tokens"].as_u64().unwrap_or(0)
    };
    assert!(tokens(&scout) > 0, "the scout's usage is kept: {scout}");
    let transcript = std::fs::read_to_string(scouts[0].join("transcript.jsonl")).unwrap();
    assert!(transcript.contains(FOUND), "{transcript}");
    let events = std::fs::read_to_string(scouts[0].join("events.jsonl")).unwrap();
    assert!(events.contains("\"session:fork\""), "{events}");
    assert!(events.contains("\"provider:response\""), "{events}");

    // `session show` finds it; `session tree` counts it in the root's subtree.
    let id = scout["session_id"].as_str().unwrap();
    let show = root
        .std_cmd()
        .args(["session", "show", id, "--transcript"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout).to_string();
    assert!(
        show.status.success(),
        "{shown}{}",
        String::from_utf8_lossy(&show.stderr)
    );
    assert!(shown.contains(FOUND), "{shown}");
    let tree = root.std_cmd().args(["session", "tree"]).output().unwrap();
    let tree = String::from_utf8_lossy(&tree.stdout).to_string();
    assert!(tree.contains(SCOUT), "{tree}");
}

/// The worker's model for [`a_person_at_the_root_answers_a_remote_grandchilds_approval`]:
/// the helper delegates to a scout, the scout runs `echo scout-was-here` (a `bash`
/// call the job's approvals ask a person about), then each answers what it saw.
fn asking_model() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        let system = content_text(&body["messages"][0]);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().map(content_text).unwrap_or_default();
        let reply = match (
            system.contains("You are scout."),
            last_role(&body) == "tool",
        ) {
            (true, false) => Reply::Sse(sse_tool_calls(&[(
                "b1",
                "bash",
                json!({"command": "echo scout-was-here"}),
            )])),
            (true, true) => Reply::Sse(sse_text(&format!("scout ran: {last}"))),
            (false, false) => Reply::Sse(sse_tool_calls(&[(
                "s1",
                "task",
                json!({"agent": SCOUT, "instruction": "Run it"}),
            )])),
            (false, true) => Reply::Sse(sse_text(&format!("helper saw: {last}"))),
        };
        Box::pin(async move { reply })
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_at_the_root_answers_a_remote_grandchilds_approval() {
    use crate::support::fixture::{Fixture, HELPER, delegating, plan};
    use arbor::config::remote::{RemoteAgents, RemoteConfig};
    use arbor::engine::ApprovalMode;
    use arbor::engine::testing::{Drive, Step};
    use arbor::session::protocol::{AllowScope, ApprovalDecision};

    let Some(nats) = NatsServer::start() else {
        return;
    };
    let mut fixture = Fixture::new(
        plan(json!({"tools": [
            {"module": "tool-bash"},
            {"module": "tool-task", "config": {"max_recursion_depth": 2}}
        ]})),
        &[("helper", HELPER)],
        delegating(
            json!({"agent": "helper", "instruction": "do it"}),
            vec![Step::text("RAN LOCALLY")],
        ),
    );
    fixture.config.remote = Some(RemoteConfig {
        nats_url: nats.url.clone(),
        pool: "tree-ask".into(),
        agents: RemoteAgents::All,
        ack_wait: std::time::Duration::from_secs(5),
    });
    let llm = asking_model();
    let _worker = scout_worker(&nats.url, &llm.base_url, "tree-ask");
    let engine = fixture.engine_mode(ApprovalMode::Interactive);
    let root = engine.create_root(None).unwrap();
    let turn = {
        let (engine, root) = (engine.clone(), root.clone());
        tokio::spawn(async move { engine.run_turn(&root, "go".into()).await })
    };
    // The scout's `bash` waits for the person at the root, in the scout's own session.
    let sessions = fixture.paths.sessions_dir();
    let scout_id = || {
        std::fs::read_dir(&sessions)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .find(|name| name.ends_with("_scout"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let scout = loop {
        if let Some(id) = scout_id().filter(|id| engine.waiting_approvals(id) == 1) {
            break id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no approval of the scout at the root: {:?}",
            llm.requests().len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    engine
        .resolve_approval(
            &scout,
            "b1",
            ApprovalDecision::Allow {
                scope: AllowScope::Once,
            },
        )
        .unwrap();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(60), turn)
        .await
        .expect("the root's turn did not end")
        .unwrap()
        .unwrap();
    assert_eq!(outcome.response, "root done");
    // The command ran on the worker once the root said yes, and the answers came home.
    let transcript =
        std::fs::read_to_string(sessions.join(&scout).join("transcript.jsonl")).unwrap();
    assert!(
        transcript.contains(r#"\"stdout\":\"scout-was-here\\n\""#),
        "{transcript}"
    );
    assert!(transcript.contains("scout ran: "), "{transcript}");
    let helper_asked = llm.requests().iter().any(|b| {
        content_text(b["messages"].as_array().unwrap().last().unwrap()).contains("scout ran: ")
    });
    assert!(helper_asked, "the helper read the scout's answer");
}

/// The `session_id` in the `metadata.json` of session directory `dir`.
fn session_id_in(dir: &Path) -> String {
    metadata(dir)["session_id"].as_str().unwrap().to_string()
}

/// A finished command's stdout, and, for assertion messages, its stdout and stderr
/// with the worker's output.
fn said(out: &Output, worker: &str) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let context = format!(
        "stdout:\n{stdout}\nstderr:\n{}\nworker:\n{worker}",
        String::from_utf8_lossy(&out.stderr)
    );
    (stdout, context)
}

/// A root (`arbor run`, its model at `base_url`) whose [`HELPER`] (which may delegate,
/// depth 2) runs on a worker of `pool` at `url` (ack wait 5 s).
fn tree_root(base_url: &str, url: &str, pool: &str) -> TestEnv {
    let root = TestEnv::new();
    root.use_openai(base_url, "sk-root-tree");
    root.append_config(&format!(
        "remote:\n  nats_url: \"{url}\"\n  pool: {pool}\n  agents: [{HELPER}]\n  ack_wait: 5\n"
    ));
    write_agent(
        &root.amplifier_home,
        HELPER,
        "tools:\n  - module: tool-task\n    config: {max_recursion_depth: 2}\nagents: all\n",
    );
    root
}

/// An `arbor worker` of `pool` at `url` whose model is at `base_url` and which has
/// the [`SCOUT`] agent.
fn scout_worker(url: &str, base_url: &str, pool: &str) -> WorkerProc {
    WorkerProc::start_with(url, base_url, &["--pool", pool], |env| {
        write_agent(&env.amplifier_home, SCOUT, "");
    })
}

/// The session directories of `root` whose name ends with `_<agent>`.
fn dirs_of(root: &TestEnv, agent: &str) -> Vec<std::path::PathBuf> {
    let suffix = format!("_{agent}");
    root.session_dirs(&suffix)
        .into_iter()
        .filter(|d| d.to_string_lossy().ends_with(&suffix))
        .collect()
}

/// A root and its worker killed while a remote child's scout waits for its model, then
/// `arbor session continue --tree` with another worker: the scout continues on a worker
/// (where it ran, as its own remote run — not in the root's process, which lacks the
/// worker's agent), the child's call to it is answered at the root with the scout's
/// answer (the worker's scratch store has no scout), and the answers reach the root.
#[test]
fn continue_tree_runs_a_remote_childs_interrupted_sub_session_on_a_worker() {
    let Some(tree) = Stalled::start("tree-dead", 0) else {
        return;
    };
    let root = &tree.root;
    let scout_dir = || dirs_of(root, SCOUT).pop();
    let helper_dir = || dirs_of(root, HELPER).pop();
    tree.killed_mid_scout();

    let second = tree.worker();
    let root_id = root_session_of(root);
    let out = spawn_arbor(root, &["session", "continue", &root_id, "--tree", "--yes"]);
    let out = finish(out, 120, || second.output());
    let (stdout, context) = said(&out, &second.output());
    assert!(out.status.success(), "{context}");
    // The root read the child's answer, which quotes the scout's.
    assert!(stdout.starts_with("parent saw: "), "{context}");
    assert!(stdout.contains("child saw: "), "{context}");
    assert!(
        stdout.contains(&format!(r#"\"response\":\"{FOUND}\""#)),
        "{context}"
    );
    // The scout ran again on the worker, never on the root's model.
    assert_eq!(
        tree.scouts.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "{context}"
    );
    let root_asked_a_scout = tree
        .model
        .requests()
        .iter()
        .any(|b| content_text(&b["messages"][0]).contains("You are scout."));
    assert!(!root_asked_a_scout, "{context}");
    let scout = metadata(&scout_dir().unwrap());
    assert_eq!(scout["status"], "completed", "{scout}");
    assert_eq!(
        scout["remote_runs"], 1,
        "continued as its own remote run: {scout}"
    );
    assert!(scout["ran_on"]["worker"].as_str().is_some(), "{scout}");
    // The child's call to the scout was answered at the root with the scout's answer.
    let helper = helper_dir().unwrap();
    let transcript = read_jsonl(&helper.join("transcript.jsonl"));
    let result = transcript
        .iter()
        .find(|m| m["role"] == "tool")
        .map(content_text)
        .unwrap_or_default();
    assert!(result.contains(FOUND), "{transcript:?}");
    assert_eq!(metadata(&helper)["remote_runs"], 2, "{context}");
}

/// A root and its worker killed while a remote child's scout waits for its model, then
/// `arbor session continue` of the child alone with another worker: the repair of the
/// child's unanswered call (at the root, before its turn is dispatched) names the
/// interrupted scout and how to continue it, so the child's model, on the worker,
/// resumes that scout by id instead of starting another, and its answer reaches the
/// root.
#[test]
fn continuing_a_remote_child_alone_names_its_interrupted_scout_to_resume() {
    let Some(tree) = Stalled::start("tree-alone", 0) else {
        return;
    };
    let root = &tree.root;
    tree.killed_mid_scout();
    let helper_id = session_id_in(&dirs_of(root, HELPER).pop().expect("the helper"));
    let scout_dir = dirs_of(root, SCOUT).pop().expect("the scout");
    let scout_id = session_id_in(&scout_dir);

    let second = tree.worker();
    let out = spawn_arbor(root, &["session", "continue", &helper_id, "--yes"]);
    let out = finish(out, 120, || second.output());
    let (stdout, context) = said(&out, &second.output());
    assert!(out.status.success(), "{context}");
    let repaired = tree.results_of("s1");
    assert!(
        repaired
            .iter()
            .any(|t| t.contains(&format!("session_id \"{scout_id}\" to continue it"))),
        "{repaired:?}\n{context}"
    );
    // The child resumed that scout (no second one) and its answer came back.
    assert!(stdout.contains(AGAIN), "{context}");
    let scouts = dirs_of(root, SCOUT);
    assert_eq!(scouts, std::slice::from_ref(&scout_dir), "{context}");
    let scout = metadata(&scout_dir);
    assert_eq!(scout["status"], "completed", "{scout}");
}

/// What a scout answers when asked a second time.
const AGAIN: &str = "scout found it again";

/// The worker's model for [`a_later_remote_run_resumes_its_scout_by_id`]: the helper
/// delegates to a scout; asked to "ask the scout again", it resumes that scout by the
/// `session_id` its first result named; a scout answers [`FOUND`], then [`AGAIN`].
fn resuming_model() -> ScriptedServer {
    ScriptedServer::start(Arc::new(|body: Value| {
        let reply = resuming_reply(&body);
        Box::pin(async move { reply })
    }))
}

/// [`resuming_model`]'s answer to `body`.
fn resuming_reply(body: &Value) -> Reply {
    let system = content_text(&body["messages"][0]);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().map(content_text).unwrap_or_default();
    if system.contains("You are scout.") {
        let asked = messages.iter().filter(|m| m["role"] == "user").count();
        Reply::Sse(sse_text(if asked > 1 { AGAIN } else { FOUND }))
    } else if last_role(body) == "tool" {
        Reply::Sse(sse_text(&format!("child saw: {last}")))
    } else if last.contains("again") {
        let scout = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .find_map(|m| named_session(&content_text(m)))
            .unwrap_or_default();
        Reply::Sse(sse_task_calls(&[(
            "s2".to_string(),
            json!({"session_id": scout, "instruction": "Look again"}),
        )]))
    } else {
        Reply::Sse(sse_task_calls(&[(
            "s1".to_string(),
            json!({"agent": SCOUT, "instruction": "Look"}),
        )]))
    }
}

/// The sub-session a task result names: its `session_id` key, or the id in a
/// repaired call's `… session_id "<id>" to continue it`.
fn named_session(result: &str) -> Option<String> {
    if let Ok(result) = serde_json::from_str::<Value>(result) {
        return result["session_id"].as_str().map(str::to_string);
    }
    let (_, rest) = result.split_once("session_id \"")?;
    rest.split_once('"').map(|(id, _)| id.to_string())
}

/// A remote tree whose scouts stall (`stalling_model`): a server, a root of pool
/// `pool` with its model, and the workers' model, which counts the scouts' requests.
struct Stalled {
    nats: NatsServer,
    model: ScriptedServer,
    root: TestEnv,
    scouts: Arc<std::sync::atomic::AtomicUsize>,
    worker_llm: ScriptedServer,
    pool: &'static str,
}

impl Stalled {
    /// Starts the server and both models, and sets up the root; `None` when the NATS
    /// server cannot be had outside CI (`NatsServer::start`).
    fn start(pool: &'static str, stall: usize) -> Option<Self> {
        let nats = NatsServer::start()?;
        let model = root_model();
        let root = tree_root(&model.base_url, &nats.url, pool);
        let scouts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let worker_llm = stalling_model(scouts.clone(), stall);
        Some(Self {
            nats,
            model,
            root,
            scouts,
            worker_llm,
            pool,
        })
    }

    /// A worker of the pool with the scout agent.
    fn worker(&self) -> WorkerProc {
        scout_worker(&self.nats.url, &self.worker_llm.base_url, self.pool)
    }

    /// Runs "Delegate it" on a worker of the pool and kills the root and that worker
    /// while the (first, stalling) scout waits for its model, stored `running`.
    fn killed_mid_scout(&self) {
        let first = self.worker();
        let mut run = spawn_run(&self.root, "Delegate it");
        wait_until(
            60,
            "the scout never reached its model",
            || first.output(),
            || {
                self.scouts.load(std::sync::atomic::Ordering::SeqCst) == 1
                    && dirs_of(&self.root, SCOUT)
                        .pop()
                        .is_some_and(|d| metadata(&d)["status"] == "running")
            },
        );
        run.kill().unwrap();
        run.wait().unwrap();
    }

    /// The contents of the tool results the workers' model was sent for call `call`.
    fn results_of(&self, call: &str) -> Vec<String> {
        self.worker_llm
            .requests()
            .iter()
            .flat_map(|b| b["messages"].as_array().cloned().unwrap_or_default())
            .filter(|m| m["role"] == "tool" && m["tool_call_id"] == call)
            .map(|m| content_text(&m))
            .collect()
    }
}

/// [`resuming_model`], with the scout request number `stall` (0 the first) never
/// answered (its worker is killed meanwhile); its helper also resumes the scout when
/// its call to it got no result (its worker was lost), by the id the repaired result
/// names or else the one its first result named. `scouts` counts the scout
/// requests.
fn stalling_model(scouts: Arc<std::sync::atomic::AtomicUsize>, stall: usize) -> ScriptedServer {
    ScriptedServer::start(Arc::new(move |body: Value| {
        let system = content_text(&body["messages"][0]);
        let nth = system
            .contains("You are scout.")
            .then(|| scouts.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(content_text)
            .unwrap_or_default();
        let reply = match nth {
            None if last.contains("no result was recorded") || last.contains("to continue it") => {
                let mut asked = body.clone();
                let messages = asked["messages"].as_array_mut().unwrap();
                messages.push(json!({"role": "user", "content": "again"}));
                resuming_reply(&asked)
            }
            _ => resuming_reply(&body),
        };
        Box::pin(async move {
            if nth == Some(stall) {
                tokio::time::sleep(std::time::Duration::from_secs(600)).await;
            }
            reply
        })
    }))
}

/// A later run of a remote child resumes, by id, the scout its first run made: the
/// job carries the child's stored sub-sessions to the worker, whose engine resumes the
/// scout there, and the scout's second turn lands in its session at the root (no new
/// session, both answers in its transcript).
#[test]
fn a_later_remote_run_resumes_its_scout_by_id() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let model = root_model();
    let root = tree_root(&model.base_url, &nats.url, "tree-again");
    let worker_llm = resuming_model();
    let worker = scout_worker(&nats.url, &worker_llm.base_url, "tree-again");
    let first = finish(spawn_run(&root, "Delegate it"), 120, || worker.output());
    assert!(
        first.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&first.stderr),
        worker.output()
    );
    let helper = dirs_of(&root, HELPER).pop().expect("the helper");
    let helper_id = session_id_in(&helper);

    let again = spawn_arbor(
        &root,
        &[
            "session",
            "resume",
            &helper_id,
            "Ask the scout again",
            "--yes",
        ],
    );
    let out = finish(again, 120, || worker.output());
    let (stdout, context) = said(&out, &worker.output());
    assert!(out.status.success(), "{context}");
    assert!(stdout.contains(AGAIN), "{context}");
    let scouts = dirs_of(&root, SCOUT);
    assert_eq!(
        scouts.len(),
        1,
        "resumed, not made again: {scouts:?}\n{context}"
    );
    let scout = metadata(&scouts[0]);
    assert_eq!(scout["turn_count"], 2, "{scout}");
    assert_eq!(scout["status"], "completed", "{scout}");
    let texts: Vec<String> = read_jsonl(&scouts[0].join("transcript.jsonl"))
        .iter()
        .map(content_text)
        .collect();
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert_eq!(texts[1], FOUND, "{texts:?}");
    assert_eq!(texts[3], AGAIN, "{texts:?}");
}

/// A worker killed while a later run of a remote child waits for the scout it resumed,
/// then the job redelivered to another worker: that worker starts from the root's
/// scout as it is now (its resumed turn unanswered), not the job's older copy (which
/// had completed with the first answer), so the child's call to it is answered
/// "interrupted, continue it" instead of with the first run's answer.
#[test]
fn a_redelivered_run_resumes_from_the_roots_sub_sessions_as_they_are_now() {
    let Some(tree) = Stalled::start("tree-lost", 1) else {
        return;
    };
    let (root, worker_llm) = (&tree.root, &tree.worker_llm);
    let start_worker = || tree.worker();
    let first = start_worker();
    let run = finish(spawn_run(root, "Delegate it"), 120, || first.output());
    assert!(run.status.success(), "{}", first.output());
    let helper = dirs_of(root, HELPER).pop().expect("the helper");
    let helper_id = session_id_in(&helper);
    let scout_dir = dirs_of(root, SCOUT).pop().expect("the scout");

    let again = spawn_arbor(
        root,
        &[
            "session",
            "resume",
            &helper_id,
            "Ask the scout again",
            "--yes",
        ],
    );
    let transcript = || read_jsonl(&scout_dir.join("transcript.jsonl"));
    wait_until(
        60,
        "the resumed scout's turn never reached the root",
        || first.output(),
        || tree.scouts.load(std::sync::atomic::Ordering::SeqCst) == 2 && transcript().len() == 3,
    );
    drop(first);
    let second = start_worker();
    let out = finish(again, 120, || second.output());
    let (stdout, context) = said(&out, &second.output());
    assert!(out.status.success(), "{context}");
    assert!(stdout.contains(AGAIN), "{context}");
    // The new worker's scout read the lost worker's "Look again" too: it resumed the
    // scout as the root stores it now, not as the job carried it.
    let asked = worker_llm
        .requests()
        .into_iter()
        .rev()
        .find(|b| content_text(&b["messages"][0]).contains("You are scout."))
        .expect("the scout asked");
    let users = user_texts(&asked);
    assert_eq!(users.len(), 3, "{users:?}\n{context}");
    assert_eq!(transcript().len(), 5, "{:?}", transcript());
    // The new worker's repair linked the helper's unanswered call to the scout it
    // resumed (the root's task calls came with the sync answer): the result names the
    // scout and how to continue it, as a repair at the root would.
    let scout_id = session_id_in(&scout_dir);
    let repaired = tree.results_of("s2");
    assert!(
        repaired.iter().any(|t| t.contains("no result was recorded")
            && t.contains(&format!("session_id \"{scout_id}\" to continue it"))),
        "{repaired:?}\n{context}"
    );
}
