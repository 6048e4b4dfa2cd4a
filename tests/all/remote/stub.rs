//! The loopback model of the remote end-to-end test: one scripted OpenAI-compatible
//! server per process (the root and each worker), all answering from one [`Script`]
//! and recording which server saw which child's request.
//!
//! The script: the root (its first user message has [`ROOT_MARK`]) calls `task` six
//! times in one message, then answers [`ROOT_ANSWER`] once the results are in. A child
//! (its first user message has `E2E-CHILD-<i>`) first calls `bash` with a command that
//! waits for the gate file `<gates>/<i>` and then prints `proof-42-<i>-w<server>` (the
//! number computed by the shell); once its conversation has a tool result it answers
//! `E2E-TOKEN-<i>-w<server>`. `<server>` is the server's tag: 0 the root, 1–3 the
//! workers, so every answer says which worker produced it. An answer in
//! [`Script::slow`] streams slowly (numbered words first, one every 10 ms), so a worker
//! frozen then has a stream in flight; one in [`Script::held`] waits until the test
//! takes it out, so the run that asked is still going.

use crate::support::*;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};

/// In the root's prompt.
pub const ROOT_MARK: &str = "E2E-ROOT";
/// The root's final answer.
pub const ROOT_ANSWER: &str = "All six parts answered.";
/// The agent the root delegates to (marked remote in the root's config).
pub const AGENT: &str = "remote-helper";
/// Words a slow answer streams before the token, one every 10 ms: long enough to be
/// in flight whenever the test freezes its worker, even on a loaded machine.
const SLOW_WORDS: usize = 1000;

/// One child's model request as a server saw it.
#[derive(Clone, Debug)]
pub struct ChildRequest {
    /// The child's index (0–5).
    pub child: usize,
    /// The server's tag (1–3: the worker whose config points at it).
    pub server: usize,
    /// Whether the conversation sent already had a tool result (the `bash` call was
    /// answered, by the tool or by crash repair).
    pub after_tool: bool,
}

/// What the servers share.
pub struct Script {
    pub gates: PathBuf,
    /// Every child request of every server, in arrival order.
    pub seen: Mutex<Vec<ChildRequest>>,
    /// `(server, child)` answers streamed slowly.
    pub slow: Mutex<BTreeSet<(usize, usize)>>,
    /// `(server, child)` answers that wait until removed.
    pub held: Mutex<BTreeSet<(usize, usize)>>,
}

impl Script {
    /// A script with its gates under `root`.
    pub fn new(root: &Path) -> Arc<Self> {
        let gates = root.join("gates");
        std::fs::create_dir_all(&gates).unwrap();
        Arc::new(Self {
            gates,
            seen: Mutex::new(Vec::new()),
            slow: Mutex::new(BTreeSet::new()),
            held: Mutex::new(BTreeSet::new()),
        })
    }

    pub fn seen(&self) -> Vec<ChildRequest> {
        self.seen.lock().unwrap().clone()
    }

    /// Opens child `child`'s gate: its `bash` command ends.
    pub fn open(&self, child: usize) {
        std::fs::write(self.gates.join(child.to_string()), "").unwrap();
    }
}

/// The answer prefix of child `child` (the worker's tag follows).
pub fn token_prefix(child: usize) -> String {
    format!("E2E-TOKEN-{child}-w")
}

/// What `bash` prints for child `child` run by the worker behind `server`.
pub fn proof(child: usize, server: usize) -> String {
    format!("proof-42-{child}-w{server}")
}

/// The instruction of the root's `child`-th task call.
pub fn instruction(child: usize) -> String {
    format!("E2E-CHILD-{child}: run the gated command and report")
}

/// A server tagged `server` answering `script` (see the module docs).
pub fn start(server: usize, script: &Arc<Script>) -> ScriptedServer {
    let script = script.clone();
    ScriptedServer::start(Arc::new(move |body: Value| {
        let script = script.clone();
        async move { answer(server, &script, &body).await }.boxed()
    }))
}

async fn answer(server: usize, script: &Script, body: &Value) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let users = user_texts(body);
    let after_tool = messages.iter().any(|m| m["role"] == "tool");
    if let Some(child) = users.iter().find_map(|u| child_of(u)) {
        script.seen.lock().unwrap().push(ChildRequest {
            child,
            server,
            after_tool,
        });
        if !after_tool {
            let command = gated_command(&script.gates.join(child.to_string()), child, server);
            return Reply::Sse(sse_tool_calls(&[(
                &format!("bash_{child}_w{server}"),
                "bash",
                json!({ "command": command }),
            )]));
        }
        while script.held.lock().unwrap().contains(&(server, child)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let token = format!("{}{server}", token_prefix(child));
        if !script.slow.lock().unwrap().contains(&(server, child)) {
            return Reply::Sse(sse_text(&token));
        }
        let words: Vec<String> = (0..SLOW_WORDS).map(|n| format!("s{n}")).collect();
        return Reply::Paced {
            body: sse_text(&format!("{} {token}", words.join(" "))),
            pieces: SLOW_WORDS,
            every: Duration::from_millis(10),
        };
    }
    if users.iter().any(|u| u.contains(ROOT_MARK)) {
        if last_role(body) == "tool" {
            return Reply::Sse(sse_text(ROOT_ANSWER));
        }
        let calls: Vec<(String, Value)> = (0..6)
            .map(|i| {
                (
                    format!("task_{i}"),
                    json!({"agent": AGENT, "instruction": instruction(i)}),
                )
            })
            .collect();
        let calls: Vec<(&str, &str, Value)> = calls
            .iter()
            .map(|(id, args)| (id.as_str(), "task", args.clone()))
            .collect();
        return Reply::Sse(sse_tool_calls(&calls));
    }
    Reply::Status(
        400,
        json!({"error": {"message": "unscripted request"}}).to_string(),
    )
}

/// The child index named in a user message (`E2E-CHILD-<i>`).
fn child_of(text: &str) -> Option<usize> {
    let rest = &text[text.find("E2E-CHILD-")? + "E2E-CHILD-".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `bash` waiting for `gate` to exist, then printing [`proof`] (computed by the shell,
/// so the command's text never contains it).
fn gated_command(gate: &Path, child: usize, server: usize) -> String {
    format!(
        "until [ -e '{}' ]; do sleep 0.05; done; echo proof-$((6*7))-{child}-w{server}",
        gate.display()
    )
}
