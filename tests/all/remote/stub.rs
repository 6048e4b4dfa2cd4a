//! The loopback model of the remote end-to-end test: one scripted OpenAI-compatible
//! server per process (the root and each worker), all answering from one script and
//! recording which server saw which child's request.
//!
//! The script: the root (its first user message has [`ROOT_MARK`]) calls `task` six
//! times in one message, then answers [`ROOT_ANSWER`] once the results are in. A child
//! (its first user message has `E2E-CHILD-<i>`) first calls `bash` with a command that
//! waits for the gate file `<gates>/<i>` and then prints `proof-42-<i>-w<server>` (the
//! number computed by the shell, so the command text itself never contains the
//! output); once its last message is a tool result it answers
//! `E2E-TOKEN-<i>-w<server>`. `<server>` is the server's tag: 0 the root, 1–3 the
//! workers, so every piece of text says which process produced it.

use crate::support::*;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use serde_json::{Value, json};

/// In the root's prompt.
pub const ROOT_MARK: &str = "E2E-ROOT";
/// The root's final answer.
pub const ROOT_ANSWER: &str = "All six parts answered.";
/// The agent the root delegates to (marked remote in the root's config).
pub const AGENT: &str = "remote-helper";

/// One child's model request as a server saw it.
#[derive(Clone, Debug)]
pub struct ChildRequest {
    /// The child's index (0–5).
    pub child: usize,
    /// The server's tag (1–3: the worker whose config points at it).
    pub server: usize,
    /// The role of the request's last message (`user` or `tool`).
    pub last_role: String,
}

/// Every child request of every server, in arrival order.
pub type Seen = Arc<Mutex<Vec<ChildRequest>>>;

/// The text `bash` prints for child `child` run by the worker behind `server`.
pub fn proof(child: usize, server: usize) -> String {
    format!("proof-42-{child}-w{server}")
}

/// The answer prefix of child `child` (the worker's tag follows).
pub fn token_prefix(child: usize) -> String {
    format!("E2E-TOKEN-{child}-w")
}

/// The instruction of the root's `child`-th task call.
pub fn instruction(child: usize) -> String {
    format!("E2E-CHILD-{child}: run the gated command and report")
}

/// A server tagged `server` answering the script (see the module docs); child requests
/// go to `seen`.
pub fn start(server: usize, gates: &Path, seen: Seen) -> ScriptedServer {
    let gates = gates.to_path_buf();
    ScriptedServer::start(Arc::new(move |body: Value| {
        let reply = answer(server, &gates, &seen, &body);
        async move { reply }.boxed()
    }))
}

fn answer(server: usize, gates: &Path, seen: &Seen, body: &Value) -> Reply {
    let users: Vec<String> = body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "user")
                .map(content_text)
                .collect()
        })
        .unwrap_or_default();
    let last_role = last_role(body);
    if let Some(child) = users.iter().find_map(|u| child_of(u)) {
        seen.lock().unwrap().push(ChildRequest {
            child,
            server,
            last_role: last_role.clone(),
        });
        if last_role == "tool" {
            return Reply::Sse(sse_text(&format!("{}{server}", token_prefix(child))));
        }
        let command = gated_command(&gates.join(child.to_string()), child, server);
        return Reply::Sse(sse_tool_calls(&[(
            &format!("bash_{child}_w{server}"),
            "bash",
            json!({ "command": command }),
        )]));
    }
    if users.iter().any(|u| u.contains(ROOT_MARK)) {
        if last_role == "tool" {
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

/// `bash` waiting for `gate` to exist, then printing [`proof`] (computed by the shell).
fn gated_command(gate: &Path, child: usize, server: usize) -> String {
    format!(
        "until [ -e '{}' ]; do sleep 0.05; done; echo proof-$((6*7))-{child}-w{server}",
        gate.display()
    )
}

/// The gate files' directory of a test.
pub fn gates_dir(root: &Path) -> PathBuf {
    let dir = root.join("gates");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
