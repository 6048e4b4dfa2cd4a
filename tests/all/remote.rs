//! Remote sub-sessions end to end (issue 27, "Done when"), with real processes on
//! loopback: a NATS server (`support::nats`), three `arbor worker`s (`--slots 2
//! --ack-wait 3`, each with its own home and config, its provider a loopback stub) and
//! a headless root (`arbor run`) whose model delegates six sub-sessions in one message
//! to an agent the root's config marks remote (script: `remote/stub.rs`).
//!
//! Each child runs a `bash` command that waits for its gate file, so all six hold a
//! worker slot at once (two per worker, forced by the slots). Worker B's two children
//! then get their gates opened and B starts streaming their answers slowly; B is frozen
//! (SIGSTOP) mid-stream, worker A killed (`kill -9`) and every gate opened. JetStream
//! redelivers A's and B's jobs after the ack wait to the live worker C, which takes
//! their leases and resumes them from the root's store (the `bash` call already has a
//! result — the tool's, or crash repair's — and never runs again). While C's answers
//! to B's children are held back (the root still following those sessions), B gets
//! SIGCONT: the stream it wakes up to makes it send under its lost lease.
//!
//! Asserted: all six complete exactly once (each child's answer reaches the root once,
//! each child transcript has one final answer, given by the worker its metadata's
//! `ran_on` and the lease bucket name); B's late writes are refused (the root's log
//! line names B, no other worker is refused, and no answer B produced is in the store);
//! the work queue ends empty (`ARBOR_JOBS` holds no message, the pool's consumer has
//! nothing pending or unacknowledged); the store reads as Amplifier's
//! (metadata/transcript/events parse, `parent_id` links, the sub-session id form,
//! `ran_on`, tool events with the keys Amplifier's hooks read; `arbor session list`
//! shows the tree); no provider key crossed between root and workers. Waits are
//! bounded only against hangs; nothing is asserted about time.

mod cluster;
mod stub;

use crate::support::*;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::support::nats::NatsServer;
use cluster::{Worker, wait_for};
use stub::{AGENT, ROOT_ANSWER, ROOT_MARK, Script};

const CHILDREN: usize = 6;
const ACK_WAIT_SECS: u64 = 3;
const SLOTS: u32 = 2;

/// The root's bundle: the task tool allowing six calls at once, nothing else.
const BUNDLE: &str = "---
bundle: {name: remote-e2e}
session:
  orchestrator: {module: loop-streaming}
  context: {module: context-simple}
tools:
  - module: tool-task
    config: {max_recursion_depth: 1, max_parallel: 6}
agents: all
---
You are the root of the remote end-to-end test.
";

/// The remote agent: runs commands.
fn agent_file() -> String {
    format!(
        "---\nmeta:\n  name: {AGENT}\n  description: Runs one command and reports.\ntools:\n  - module: tool-bash\n---\nYou are {AGENT}.\n"
    )
}

/// The root's environment: provider at `base_url`, bash allowed, `remote:` naming the
/// agent, the agent file in its Amplifier home, the bundle in its temp dir.
fn root_env(base_url: &str, nats: &str) -> (TestEnv, std::path::PathBuf) {
    let env = TestEnv::new();
    env.use_openai(base_url, "sk-root-e2e");
    env.append_config(&format!(
        "approvals:\n  bash: allow\nremote:\n  nats_url: \"{nats}\"\n  agents: [{AGENT}]\n  ack_wait: {ACK_WAIT_SECS}\n"
    ));
    let agents = env.amplifier_home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join(format!("{AGENT}.md")), agent_file()).unwrap();
    let bundle = env.dir.path().join("bundle.md");
    std::fs::write(&bundle, BUNDLE).unwrap();
    (env, bundle)
}

/// Every worker's output and the tail of its log, for failure messages.
fn outputs(workers: &[Worker]) -> String {
    workers
        .iter()
        .map(|w| format!("--- worker {} (pid {}):\n{}", w.tag, w.pid(), w.output()))
        .collect()
}

/// The root's log lines that contain `needle`.
fn log_lines(root: &TestEnv, needle: &str) -> Vec<String> {
    std::fs::read_to_string(cluster::log_file(root))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

#[test]
fn six_remote_children_survive_a_killed_and_a_frozen_worker_exactly_once() {
    let Some(nats) = NatsServer::start() else {
        return; // not installable, outside CI only (support::nats)
    };
    // A is killed, B frozen, C lives on.
    let (a, b, c) = (1, 2, 3);
    let scratch = tempfile::tempdir().unwrap();
    let script = Script::new(scratch.path());
    let root_server = stub::start(0, &script);
    let servers: Vec<ScriptedServer> = (1..=3).map(|tag| stub::start(tag, &script)).collect();
    let mut workers: Vec<Worker> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| Worker::start(i + 1, &nats.url, &s.base_url, SLOTS, ACK_WAIT_SECS))
        .collect();
    let pids: BTreeMap<u32, usize> = workers.iter().map(|w| (w.pid(), w.tag)).collect();

    let (root, bundle) = root_env(&root_server.base_url, &nats.url);
    let run = cluster::Root::spawn(
        root.std_cmd()
            .arg("run")
            .arg("--bundle")
            .arg(&bundle)
            .args(["--yes", "--output-format", "json"])
            .arg(format!("{ROOT_MARK}: delegate the six parts")),
    );
    let progress = |workers: &[Worker]| format!("{:?}\n{}", script.seen(), outputs(workers));

    // All six children hold a slot, blocked on their gates: two per worker.
    let owner: BTreeMap<usize, usize> = wait_for(
        120,
        "six children never all started",
        || progress(&workers),
        || {
            let mut owner = BTreeMap::new();
            for r in script.seen() {
                owner.entry(r.child).or_insert(r.server);
            }
            (owner.len() == CHILDREN).then_some(owner)
        },
    );
    let held = |tag: usize| -> BTreeSet<usize> {
        owner
            .iter()
            .filter(|(_, w)| **w == tag)
            .map(|(ch, _)| *ch)
            .collect()
    };
    for tag in 1..=3 {
        assert_eq!(
            held(tag).len(),
            SLOTS as usize,
            "--slots 2 on each of three workers: {owner:?}"
        );
    }
    // The root has stored every child's `bash` call (the workers streamed it), so a
    // redelivered job resumes after it.
    let stored = |needle: &dyn Fn(usize) -> String, children: &BTreeSet<usize>| {
        let dirs = root.session_dirs(&format!("_{AGENT}"));
        children.iter().all(|ch| {
            dirs.iter().any(|d| {
                std::fs::read_to_string(d.join("transcript.jsonl"))
                    .is_ok_and(|t| t.contains(&needle(*ch)))
            })
        })
    };
    let all: BTreeSet<usize> = (0..CHILDREN).collect();
    wait_for(
        60,
        "the root never stored the six bash calls",
        || progress(&workers),
        || stored(&|ch| format!("\"bash_{ch}_w"), &all).then_some(()),
    );

    // B's children get their `bash` results (stored at the root) and B starts
    // streaming their answers; C's answers to them will wait once C has them.
    script
        .slow
        .lock()
        .unwrap()
        .extend(held(b).into_iter().map(|ch| (b, ch)));
    script
        .held
        .lock()
        .unwrap()
        .extend(held(b).into_iter().map(|ch| (c, ch)));
    for ch in held(b) {
        script.open(ch);
    }
    wait_for(
        60,
        "B never streamed its answers",
        || progress(&workers),
        || {
            let streaming = script
                .seen()
                .iter()
                .filter(|r| r.server == b && r.after_tool)
                .count();
            (streaming == held(b).len() && stored(&|ch| stub::proof(ch, b), &held(b))).then_some(())
        },
    );

    // B freezes mid-stream, A dies, every gate opens.
    workers[b - 1].freeze();
    workers[a - 1].kill_9();
    for ch in 0..CHILDREN {
        script.open(ch);
    }

    // C takes B's jobs over after the ack wait (a request of B's child reaches C's
    // stub only once C holds its lease) and waits there; then B wakes with stale
    // leases and a stream to finish: its late writes reach the root, which refuses
    // them while it still follows those sessions.
    wait_for(
        180,
        "C never took over B's jobs",
        || progress(&workers),
        || {
            let taken: BTreeSet<usize> = script
                .seen()
                .into_iter()
                .filter(|r| r.server == c)
                .map(|r| r.child)
                .collect();
            held(b).is_subset(&taken).then_some(())
        },
    );
    workers[b - 1].thaw();
    let b_id = workers[b - 1].id();
    let refusal = format!("refused a late write from worker {b_id}");
    // Either fence holds: the root refuses the thawed worker's late write, or the
    // worker learns first that its lease is gone and stops its turn unwritten (seen
    // in 1 of 20 runs on a loaded machine); either way nothing of it lands (below).
    wait_for(
        60,
        "the frozen worker's late work was neither refused by the root nor stopped by the worker",
        || {
            format!(
                "{:?}\n{}",
                log_lines(&root, "remote sub-session"),
                progress(&workers)
            )
        },
        || {
            let refused = !log_lines(&root, &refusal).is_empty();
            let stopped = workers[b - 1].output().contains("lease lost");
            (refused || stopped).then_some(())
        },
    );
    script.held.lock().unwrap().clear();

    let out = run.finish(180, || progress(&workers));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let context = format!(
        "root stdout: {stdout}\nroot stderr: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        progress(&workers)
    );
    assert!(out.status.success(), "{context}");
    let result: Value = serde_json::from_str(stdout.trim()).expect(&context);
    assert_eq!(result["status"], "success", "{context}");
    assert_eq!(result["response"], ROOT_ANSWER, "{context}");
    let root_id = result["session_id"].as_str().unwrap().to_string();
    // The four taken-over children say so on the root's stderr (issue 38 item 9).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("took this sub-session over").count(),
        4,
        "{context}"
    );

    // Each child's answer reaches the root once.
    let root_dir = root.sessions_dir().join(&root_id);
    let root_transcript = std::fs::read_to_string(root_dir.join("transcript.jsonl")).unwrap();
    for child in 0..CHILDREN {
        let token = stub::token_prefix(child);
        assert_eq!(
            root_transcript.matches(&token).count(),
            1,
            "{token} in the root's transcript:\n{root_transcript}\n{context}"
        );
    }

    // A taken-over job resumed after its `bash` call (answered by the tool before the
    // freeze, or by crash repair after the kill): the call never ran again.
    for r in script.seen() {
        if r.server != owner[&r.child] {
            assert!(r.after_tool, "{r:?} {context}");
        }
    }

    // Every child: stored as Amplifier's, linked to the root, run to one answer by the
    // worker its `ran_on` names.
    let children = root.session_dirs(&format!("_{AGENT}"));
    assert_eq!(children.len(), CHILDREN, "{children:?}");
    let ids: Vec<String> = children
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    let leases = cluster::leases(&nats.url, &ids);
    let mut answered = BTreeSet::new();
    for (dir, id) in children.iter().zip(&ids) {
        let child = check_child_store(&root, dir, &root_id, &pids, &context);
        answered.insert(child.index);
        // The lease ends with the worker that answered: one takeover for A's and B's
        // jobs, none for C's own.
        let lease = &leases[id];
        assert_eq!(
            pids.get(&lease.ran_on.pid),
            Some(&child.ran_on),
            "{id} {lease:?}"
        );
        let taken_over = owner[&child.index] != c;
        assert_eq!(lease.epoch > 1, taken_over, "{id} {lease:?} {context}");
        // B's jobs finished on C: B held no lease of them once it woke.
        if held(b).contains(&child.index) {
            assert_eq!(child.ran_on, c, "{id} {context}");
        }
        if held(a).contains(&child.index) {
            assert_ne!(child.ran_on, a, "{id} {context}");
        }
    }
    assert_eq!(answered.len(), CHILDREN);

    // arbor reads the tree back: the root with its six children, each at depth 1,
    // completed in one turn.
    let list = root
        .cmd()
        .args(["session", "list", "--json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).expect("session list --json");
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), CHILDREN + 1, "{list:?}");
    let listed = |id: &str| list.iter().find(|s| s["session_id"] == id).unwrap().clone();
    let mut kids: Vec<String> = listed(&root_id)["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    kids.sort();
    assert_eq!(kids, ids);
    for id in &ids {
        let child = listed(id);
        assert_eq!(child["depth"], 1, "{child}");
        assert_eq!(child["status"], "completed", "{child}");
        // One run, counted once, whichever workers took part in it.
        assert_eq!(child["turn_count"], 1, "{child}");
        // `session show` says where it ran, as its metadata does.
        let show = root
            .cmd()
            .args(["session", "show", id.as_str(), "--json"])
            .output()
            .unwrap();
        let show: Value = serde_json::from_slice(&show.stdout).expect("session show --json");
        let meta = root.metadata(id);
        assert_eq!(show["ran_on"], meta["ran_on"], "{show}");
        assert!(show["ran_on"]["worker"].is_string(), "{show}");
    }

    // Only B's writes were refused, and nothing B produced after its lease was taken
    // (the answers it streamed on waking) is in the store.
    let refused = log_lines(&root, "refused a late write");
    assert!(refused.iter().all(|l| l.contains(&refusal)), "{refused:#?}");
    // The root saw A's and B's leases lost, never C's (which it never lost).
    let c_id = workers[c - 1].id();
    let lost = log_lines(&root, "lost its lease");
    assert!(!lost.is_empty(), "{context}");
    assert!(!lost.iter().any(|l| l.contains(&c_id)), "{lost:#?}");
    for child in held(b) {
        let stale = format!("{}{b}", stub::token_prefix(child));
        assert_eq!(
            files_containing(&root.amplifier_home, &stale),
            Vec::<std::path::PathBuf>::new(),
            "{stale}: {context}"
        );
    }

    // No key crossed: a job carries none of the root's, and no worker's reached the
    // root's store.
    for w in &workers {
        assert_eq!(
            files_containing(w.env.dir.path(), "sk-root-e2e"),
            Vec::<std::path::PathBuf>::new(),
            "worker {}",
            w.tag
        );
    }
    for secret in ["sk-root-e2e", "sk-worker-"] {
        assert_eq!(
            files_containing(&root.amplifier_home, secret),
            Vec::<std::path::PathBuf>::new(),
            "{secret}"
        );
    }

    // The work queue ends empty (the last acks may trail the root's exit).
    let nats_url = nats.url.clone();
    wait_for(
        60,
        "the work queue never emptied",
        || format!("{:?}\n{context}", cluster::queue_state(&nats_url)),
        || {
            let state = cluster::queue_state(&nats_url);
            (state.messages == 0 && state.pending == 0 && state.ack_pending == 0).then_some(())
        },
    );
    drop(workers);
}

/// What one child's store says.
struct StoredChild {
    index: usize,
    /// The tag of the worker its metadata's `ran_on` names.
    ran_on: usize,
}

/// Checks one child's directory as Amplifier reads it and returns its index and the
/// worker that ran it (see the module docs).
fn check_child_store(
    root: &TestEnv,
    dir: &std::path::Path,
    root_id: &str,
    pids: &BTreeMap<u32, usize>,
    context: &str,
) -> StoredChild {
    let id = dir.file_name().unwrap().to_string_lossy().to_string();
    // Amplifier's sub-session id: `<16 hex of the parent>-<16 hex>_<agent>`.
    let (span, agent) = id.split_once('_').unwrap();
    assert_eq!(agent, AGENT);
    assert!(
        span.len() == 33 && span.as_bytes()[16] == b'-',
        "an Amplifier sub-session id: {id}"
    );
    assert!(
        id.starts_with(&root_id.replace('-', "")[..16]),
        "lineage: {id}"
    );

    let meta = root.metadata(&id);
    assert_eq!(meta["session_id"], id.as_str());
    assert_eq!(meta["parent_id"], root_id, "{meta}");
    assert_eq!(meta["agent_name"], AGENT);
    assert_eq!(meta["depth"], 1);
    let ran_on = &meta["ran_on"];
    assert!(
        ran_on["worker"]
            .as_str()
            .unwrap_or_default()
            .starts_with("w-"),
        "{meta}"
    );
    assert!(
        !ran_on["host"].as_str().unwrap_or_default().is_empty(),
        "{meta}"
    );
    let pid = ran_on["pid"].as_u64().expect("ran_on.pid") as u32;
    let worker = *pids
        .get(&pid)
        .unwrap_or_else(|| panic!("pid {pid} is no worker: {meta}"));

    let transcript = read_jsonl(&dir.join("transcript.jsonl"));
    let first = content_text(&transcript[0]);
    let index: usize = (0..CHILDREN)
        .find(|i| first.contains(&stub::instruction(*i)))
        .unwrap_or_else(|| panic!("{id}: first message {first}"));
    let answers: Vec<String> = transcript
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(content_text)
        .filter(|t| t.contains("E2E-TOKEN-"))
        .collect();
    let token = format!("{}{worker}", stub::token_prefix(index));
    assert!(
        answers.len() == 1 && answers[0].ends_with(&token),
        "{id}: one final answer, {token} by the worker in ran_on: {transcript:?}\n{context}"
    );
    assert_eq!(
        content_text(transcript.last().unwrap()),
        answers[0],
        "{id}: the answer is last"
    );

    let calls: usize = transcript
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .map(Vec::len)
        .sum();
    assert_eq!(
        calls, 1,
        "{id}: one bash call, never repeated: {transcript:?}"
    );

    let events = read_jsonl(&dir.join("events.jsonl"));
    assert!(events.iter().all(|e| e["event"].is_string()), "{id}");
    let pre = events
        .iter()
        .find(|e| e["event"] == "tool:pre")
        .unwrap_or_else(|| panic!("{id}: no tool:pre in {events:?}"));
    assert_eq!(pre["data"]["tool_name"], "bash", "{pre}");
    assert!(pre["data"]["tool_input"]["command"].is_string(), "{pre}");
    StoredChild {
        index,
        ran_on: worker,
    }
}
