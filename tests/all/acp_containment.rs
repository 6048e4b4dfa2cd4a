//! Issue 34 item 9 (the "lower" items of ACP), through the real `arbor acp` spoken to
//! over raw JSON-RPC lines: a `resource_link` in `session/prompt` is checked before
//! anything is opened (inside the session's cwd, not a private path, a regular file,
//! size-capped, opened non-blocking), and an editor's MCP server definitions
//! (`session/new`'s `mcpServers`) never get arbor's environment expanded into them.
//!
//! Each attack is one variant run in its own `arbor acp` process with a deadline, so a
//! variant that hangs the agent (a FIFO) or exhausts it (`/dev/zero`) counts as one
//! failure and the others still run.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// How long one request may take before the variant counts as hung.
const DEADLINE: Duration = Duration::from_secs(25);

/// A secret in arbor's environment that no editor-supplied definition may receive.
const SECRET: &str = "acp-env-secret-5150";

/// One `arbor acp` process driven line by line.
struct Acp {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    next: u64,
}

impl Acp {
    /// Starts `arbor acp` in `env` (with [`SECRET`] as `ARBOR_ACP_SECRET`) and
    /// initializes it.
    fn start(env: &TestEnv) -> Self {
        let mut cmd = env.std_cmd();
        cmd.arg("acp")
            .env("ARBOR_ACP_SECRET", SECRET)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && tx.send(value).is_err()
                {
                    break;
                }
            }
        });
        let mut acp = Self {
            child,
            stdin,
            lines,
            next: 0,
        };
        let init = acp
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .expect("initialize answered");
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        acp
    }

    /// Sends a request and waits for its answer (`None`: none within [`DEADLINE`]).
    /// Permission requests met on the way are answered `cancelled`.
    fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let until = std::time::Instant::now() + DEADLINE;
        loop {
            let left = until.checked_duration_since(std::time::Instant::now())?;
            let message = self.lines.recv_timeout(left).ok()?;
            if message["method"] == "session/request_permission" {
                let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "cancelled"}}});
                self.send(&answer);
            } else if message["id"] == id && message.get("method").is_none() {
                return Some(message);
            }
        }
    }

    fn send(&mut self, message: &Value) {
        // A dead agent is seen as a missing answer.
        let _ = writeln!(self.stdin, "{message}");
        let _ = self.stdin.flush();
    }

    /// Opens a session in `cwd` with the editor's `mcp_servers`; its id.
    fn new_session(&mut self, cwd: &Path, mcp_servers: Value) -> String {
        let answer = self
            .request(
                "session/new",
                json!({"cwd": cwd, "mcpServers": mcp_servers}),
            )
            .expect("session/new answered");
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_string()
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `file://` URI of `path`.
fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Every chat request body the model server got, as one string.
fn sent(server: &ScriptedServer) -> String {
    server
        .requests()
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A prompt whose resource link points at a path arbor must not read is answered,
/// and what is behind the link reaches no request: a key file of the home directory
/// when the session's cwd is home (directly and through a symlink), a file outside
/// the cwd through a symlink, `/dev/zero` (directly and through a symlink), and a
/// FIFO. A plain file of the cwd is still attached (the check lets real files in).
#[test]
fn resource_links_are_checked_before_anything_is_read() {
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("noted"))]);
    let env = TestEnv::new();
    env.use_openai(&server.base_url, "sk-acp-links");
    let home = std::fs::canonicalize(&env.home).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "KEYMARK-ssh-private").unwrap();
    std::fs::write(home.join("notes.txt"), "NOTEMARK-plain").unwrap();
    let outside = env.dir.path().join("outside.txt");
    std::fs::write(&outside, "OUTMARK-outside").unwrap();
    std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), home.join("key-link")).unwrap();
    std::os::unix::fs::symlink(&outside, home.join("out-link")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", home.join("zero-link")).unwrap();
    let fifo = home.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());

    let variants: Vec<(&str, String, &str)> = vec![
        (
            "~/.ssh key, cwd home",
            uri(&home.join(".ssh/id_rsa")),
            "KEYMARK",
        ),
        ("symlink to the key", uri(&home.join("key-link")), "KEYMARK"),
        (
            "relative ~/.ssh key",
            "file://.ssh/id_rsa".into(),
            "KEYMARK",
        ),
        (
            "symlink outside cwd",
            uri(&home.join("out-link")),
            "OUTMARK",
        ),
        ("/dev/zero", "file:///dev/zero".into(), "\0"),
        ("symlink to /dev/zero", uri(&home.join("zero-link")), "\0"),
        ("FIFO", uri(&fifo), "FIFOMARK"),
    ];
    let mut failures = Vec::new();
    for (name, link, marker) in &variants {
        let before = server.requests().len();
        let mut acp = Acp::start(&env);
        let session = acp.new_session(&home, json!([]));
        let answer = acp.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "what is in it?"},
                {"type": "resource_link", "uri": link, "name": "f"},
            ]}),
        );
        drop(acp);
        match answer {
            None => failures.push(format!("{name}: no answer within {DEADLINE:?}")),
            Some(a) if a["result"]["stopReason"] != "end_turn" => {
                failures.push(format!("{name}: {a}"))
            }
            Some(_) => {
                let asked: Vec<String> = server.requests()[before..]
                    .iter()
                    .map(last_user_text)
                    .collect();
                if asked.iter().any(|b| b.contains(marker)) {
                    failures.push(format!("{name}: its content reached the model"));
                } else if !asked.iter().any(|b| b.contains("(not attached: ")) {
                    failures.push(format!("{name}: the refusal is not named: {asked:?}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} variants: {failures:#?}",
        failures.len(),
        variants.len()
    );

    // A regular file of the cwd is attached as before.
    let mut acp = Acp::start(&env);
    let session = acp.new_session(&home, json!([]));
    let answer = acp
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "what is in it?"},
                {"type": "resource_link", "uri": uri(&home.join("notes.txt")), "name": "notes.txt"},
            ]}),
        )
        .expect("answered");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(sent(&server).contains("NOTEMARK-plain"));
}

/// An editor's MCP server definitions reach the server as written or not at all:
/// `${ARBOR_ACP_SECRET}` in a stdio server's args or env, or an HTTP server's URL or
/// headers, never becomes the value of arbor's environment. Such a definition is
/// refused as a project's `.mcp.json` would be (the server is not started, the
/// variable named in `mcp:server_failed`), and a plain definition still starts.
#[test]
fn an_editors_mcp_servers_get_no_environment_expanded() {
    let model = ScriptedServer::sequence(vec![Reply::Sse(sse_text("done"))]);
    let endpoint = ScriptedServer::sequence(vec![Reply::Status(404, String::new())]);
    let env = TestEnv::new();
    env.use_openai(&model.base_url, "sk-acp-mcp");
    let record = |name: &str| env.project.join(format!("{name}.rec"));
    // A stdio "server" that records its first argument and `$TOKEN`, then exits.
    let stdio = |name: &str, arg: &str, vars: Value| {
        let script = format!(
            "printf '%s|%s' \"$0\" \"$TOKEN\" > '{}'",
            record(name).display()
        );
        json!({"name": name, "command": "/bin/sh", "args": ["-c", script, arg], "env": vars})
    };
    let secret_ref = "${ARBOR_ACP_SECRET}";
    let endpoint_url = endpoint.base_url.trim_end_matches("/v1").to_string();
    let servers = json!([
        stdio("args", secret_ref, json!([])),
        stdio("envvar", "plain", json!([{"name": "TOKEN", "value": secret_ref}])),
        {"type": "http", "name": "url", "url": format!("{endpoint_url}/u/{secret_ref}"), "headers": []},
        {"type": "http", "name": "header", "url": format!("{endpoint_url}/h"),
         "headers": [{"name": "X-Key", "value": secret_ref}]},
        stdio("plain", "literal", json!([{"name": "TOKEN", "value": "fixed"}])),
    ]);
    let mut acp = Acp::start(&env);
    let session = acp.new_session(&env.project, servers);
    let answer = acp
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .expect("answered");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    drop(acp);

    let mut leaks = Vec::new();
    for name in ["args", "envvar"] {
        let got = std::fs::read_to_string(record(name)).unwrap_or_default();
        if got.contains(SECRET) {
            leaks.push(format!("{name}: {got}"));
        }
    }
    for head in endpoint.heads() {
        if head.contains(SECRET) {
            leaks.push(format!("http: {head}"));
        }
    }
    assert!(leaks.is_empty(), "{} of 4 leaked: {leaks:#?}", leaks.len());
    // Refused and named, as `.mcp.json`'s would be; the plain one started.
    let dir = env
        .sessions_dir()
        .read_dir()
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("events.jsonl").exists())
        .unwrap();
    let failed: Vec<String> = read_jsonl(&dir.join("events.jsonl"))
        .into_iter()
        .filter(|e| e["event"] == "mcp:server_failed")
        .map(|e| e["data"].to_string())
        .collect();
    for name in ["args", "envvar", "url", "header"] {
        assert!(
            failed
                .iter()
                .any(|f| f.contains(&format!("\"{name}\"")) && f.contains("${ARBOR_ACP_SECRET}")),
            "{name}: {failed:#?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(record("plain")).unwrap(),
        "literal|fixed"
    );
}
