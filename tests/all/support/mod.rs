//! Test support shared by the integration tests: a scripted OpenAI-compatible loopback
//! server, SSE builders, and an isolated environment (temp AMPLIFIER_HOME, ARBOR_CONFIG,
//! HOME) for running the real `arbor` binary. Its modules are the other shared helpers,
//! compiled once for the whole test crate: `shared` (the `../shared` fixtures; a missing
//! one fails the test under `CI=true`), `fixture` (an in-process runtime over a scripted
//! provider), `harness` (an `App` fed by a real scripted turn), `agent_home`, `mcp` (the
//! MCP test servers), `nats` (a real NATS server through `scripts/nats-server`) and
//! `term` (the real binary in a pseudo-terminal, shared with the benches).
#![allow(dead_code)]

pub mod agent_home;
pub mod fixture;
pub mod harness;
pub mod mcp;
pub mod nats;
pub mod shared;
#[cfg(unix)]
#[path = "../../../benches/common/term.rs"]
pub mod term;
pub mod worker_proc;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};

/// What the scripted server answers to one request.
#[derive(Clone)]
pub enum Reply {
    /// 200 with an SSE body.
    Sse(String),
    /// Any status with a JSON body.
    Status(u16, String),
    /// Any status with extra headers (`name: value`) and a JSON body.
    StatusWithHeaders(u16, Vec<(String, String)>, String),
    /// 200 with an SSE body and no content-length: the connection closes after it, as
    /// when a server dies mid-stream.
    SseCut(String),
    /// 200 with an SSE body sent in `pieces` parts (cut at char boundaries), waiting
    /// `every` before each: a model answering slowly.
    Paced {
        body: String,
        pieces: usize,
        every: std::time::Duration,
    },
    /// 200 and `chunk` again and again, `every` apart, until the client goes away: a
    /// stream that never ends.
    Endless {
        chunk: String,
        every: std::time::Duration,
    },
}

/// Decides the reply from the request body (JSON). May wait (async) — e.g. on a barrier.
pub type Responder = Arc<dyn Fn(Value) -> BoxFuture<'static, Reply> + Send + Sync>;

/// A loopback OpenAI-compatible server (`/v1/chat/completions`, `/v1/models`) that runs
/// on its own thread and records every chat request body, and the request line and
/// headers of every request (model lists too).
pub struct ScriptedServer {
    pub base_url: String,
    pub requests: Arc<Mutex<Vec<Value>>>,
    pub heads: Arc<Mutex<Vec<String>>>,
}

impl ScriptedServer {
    pub fn start(responder: Responder) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        continue;
                    };
                    let responder = responder.clone();
                    let recorded = recorded.clone();
                    let seen = seen.clone();
                    tokio::spawn(async move {
                        let _ = serve(socket, responder, recorded, seen).await;
                    });
                }
            });
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            requests,
            heads,
        }
    }

    /// A server answering its n-th chat request with `replies[n]` (the last one again
    /// once they run out).
    pub fn sequence(replies: Vec<Reply>) -> Self {
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        Self::start(Arc::new(move |_| {
            let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let reply = replies[n.min(replies.len() - 1)].clone();
            Box::pin(async move { reply })
        }))
    }

    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The request line and headers of every request so far, in arrival order.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

async fn serve(
    socket: tokio::net::TcpStream,
    responder: Responder,
    recorded: Arc<Mutex<Vec<Value>>>,
    seen: Arc<Mutex<Vec<String>>>,
) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = socket;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    seen.lock().unwrap().push(head.clone());
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let request_line = head.lines().next().unwrap_or_default().to_string();
    let mut extra_headers = String::new();
    let mut sized = true;
    let (status, content_type, body) = if request_line.starts_with("GET")
        && request_line.contains("/models")
    {
        (
            200,
            "application/json",
            json!({"object":"list","data":[{"id":"scripted-model","object":"model"}]}).to_string(),
        )
    } else {
        let body: Value = serde_json::from_slice(&buf[header_end..]).unwrap_or(Value::Null);
        recorded.lock().unwrap().push(body.clone());
        match responder(body).await {
            Reply::Sse(s) => (200, "text/event-stream", s),
            Reply::Status(code, s) => (code, "application/json", s),
            Reply::StatusWithHeaders(code, headers, s) => {
                for (k, v) in headers {
                    extra_headers += &format!("{k}: {v}\r\n");
                }
                (code, "application/json", s)
            }
            Reply::SseCut(s) => {
                sized = false;
                (200, "text/event-stream", s)
            }
            Reply::Paced {
                body,
                pieces,
                every,
            } => {
                write_head(&mut socket, "").await?;
                let pieces = split_in(&body, pieces.max(1));
                for piece in pieces {
                    tokio::time::sleep(every).await;
                    socket.write_all(piece.as_bytes()).await?;
                }
                return socket.shutdown().await;
            }
            Reply::Endless { chunk, every } => {
                write_head(&mut socket, "").await?;
                loop {
                    socket.write_all(chunk.as_bytes()).await?;
                    tokio::time::sleep(every).await;
                }
            }
        }
    };
    let length = if sized {
        format!("content-length: {}\r\n", body.len())
    } else {
        String::new()
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\n{length}{extra_headers}connection: close\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await?;
    socket.shutdown().await
}

/// The head of a 200 SSE response with `length` (a `content-length` line, or empty
/// for a body that ends when the connection closes).
async fn write_head(socket: &mut tokio::net::TcpStream, length: &str) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let head = format!(
        "HTTP/1.1 200 X\r\ncontent-type: text/event-stream\r\n{length}connection: close\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await
}

/// `text` in `n` nearly equal parts, cut at char boundaries.
fn split_in(text: &str, n: usize) -> Vec<&str> {
    let size = text.len().div_ceil(n).max(1);
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (a, b) = rest.split_at(cut);
        parts.push(a);
        rest = b;
    }
    parts
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "scripted-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {c}\n\n")
}

fn usage_chunk(prompt: u64, completion: u64) -> String {
    let c = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "scripted-model",
        "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    });
    format!("data: {c}\n\n")
}

/// An OpenAI Chat Completions stream answering `text` (split at spaces into deltas).
pub fn sse_text(text: &str) -> String {
    let mut out = chunk(json!({"role": "assistant", "content": ""}), None);
    for (i, word) in text.split(' ').enumerate() {
        let piece = if i == 0 {
            word.to_string()
        } else {
            format!(" {word}")
        };
        out += &chunk(json!({"content": piece}), None);
    }
    out += &chunk(json!({}), Some("stop"));
    out += &usage_chunk(12, 7);
    out += "data: [DONE]\n\n";
    out
}

/// An OpenAI stream of parallel `task` calls, one per `(call id, arguments)`.
pub fn sse_task_calls(calls: &[(String, Value)]) -> String {
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "task", args.clone()))
        .collect();
    sse_tool_calls(&calls)
}

/// An OpenAI stream calling tools: `(id, name, arguments)`; arguments split in two deltas.
pub fn sse_tool_calls(calls: &[(&str, &str, Value)]) -> String {
    let mut out = chunk(json!({"role": "assistant", "content": null}), None);
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let args = args.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        out += &chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            None,
        );
        out += &chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": a}}]}),
            None,
        );
        out += &chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": b}}]}),
            None,
        );
    }
    out += &chunk(json!({}), Some("tool_calls"));
    out += &usage_chunk(20, 9);
    out += "data: [DONE]\n\n";
    out
}

/// The text of the last user message in a chat request body.
pub fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(content_text)
        .unwrap_or_default()
}

/// The role of the last message in a chat request body.
pub fn last_role(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["role"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The reply of a root model that delegates once (an OpenAI chat request `body`): a
/// `task` call to `agent` with `instruction`, then, once the last message is the tool
/// result, "parent saw: <that result>".
pub fn delegating_reply(body: &Value, agent: &str, instruction: &str) -> Reply {
    if last_role(body) == "tool" {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let result = messages.last().map(content_text).unwrap_or_default();
        Reply::Sse(sse_text(&format!("parent saw: {result}")))
    } else {
        Reply::Sse(sse_tool_calls(&[(
            "t1",
            "task",
            json!({"agent": agent, "instruction": instruction}),
        )]))
    }
}

/// A message's content as text (string or content parts).
pub fn content_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The texts of the user messages of a model request body (`messages`, OpenAI
/// chat-completions shape), in order.
pub fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "user")
                .map(content_text)
                .collect()
        })
        .unwrap_or_default()
}

/// An isolated environment for the binary: temp home, Amplifier home, config, project dir.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub amplifier_home: PathBuf,
    pub config: PathBuf,
    pub project: PathBuf,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let amplifier_home = dir.path().join("amplifier");
        let project = dir.path().join("project");
        for d in [&home, &amplifier_home, &project] {
            std::fs::create_dir_all(d).unwrap();
        }
        let config = dir.path().join("config.yaml");
        Self {
            home,
            amplifier_home,
            config,
            project: std::fs::canonicalize(&project).unwrap(),
            dir,
        }
    }

    /// `arbor` with the environment cleared of provider variables and pointed here.
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::from_std(self.std_cmd());
        cmd.timeout(std::time::Duration::from_secs(60));
        cmd
    }

    /// The real TUI (`arbor` with no arguments) in a pseudo-terminal, in the project
    /// directory with this environment's home, Amplifier home and config, once its
    /// composer is drawn (panics with the screen after 60 s).
    #[cfg(unix)]
    pub fn tui(&self) -> term::Pty {
        let term_env = term::Env {
            home: &self.home,
            amplifier_home: &self.amplifier_home,
            config: &self.config,
            cwd: &self.project,
        };
        let tui = term::Pty::spawn(env!("CARGO_BIN_EXE_arbor"), &[], &term_env);
        assert!(
            tui.wait_text("Message…", std::time::Duration::from_secs(60))
                .is_some(),
            "the TUI did not start: {}",
            tui.screen()
        );
        tui
    }

    /// The same as a plain `std::process::Command`, for tests that signal the process.
    pub fn std_cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("arbor"));
        for var in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OPENAI_MODEL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_MODEL",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "XDG_DATA_HOME",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &self.home)
            .env("AMPLIFIER_HOME", &self.amplifier_home)
            .env("ARBOR_CONFIG", &self.config)
            .env("NO_COLOR", "1")
            // Never a local model server of this machine (issue 15 item 7).
            .env("ARBOR_LOCAL_SERVERS", "")
            // `arbor run` reads a stdin that is not a terminal: never the test runner's.
            .stdin(std::process::Stdio::null())
            .current_dir(&self.project);
        cmd
    }

    /// Writes a config file pointing `provider-openai` at `base_url` with `api_key`.
    pub fn use_openai(&self, base_url: &str, api_key: &str) {
        let yaml = format!(
            "providers:\n  - module: provider-openai\n    config:\n      base_url: \"{base_url}\"\n      api_key: \"{api_key}\"\n      default_model: scripted-model\n"
        );
        std::fs::write(&self.config, yaml).unwrap();
    }

    /// Appends `yaml` (top-level keys) to the config file.
    pub fn append_config(&self, yaml: &str) {
        let mut config = std::fs::read_to_string(&self.config).unwrap();
        config.push_str(yaml);
        std::fs::write(&self.config, config).unwrap();
    }

    /// This project's sessions directory.
    pub fn sessions_dir(&self) -> PathBuf {
        self.amplifier_home
            .join("projects")
            .join(arbor::paths::project_slug(&self.project))
            .join("sessions")
    }

    /// A session's `metadata.json`, parsed.
    pub fn metadata(&self, id: &str) -> Value {
        let path = self.sessions_dir().join(id).join("metadata.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Session directories whose name contains `needle`.
    pub fn session_dirs(&self, needle: &str) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(self.sessions_dir())
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.file_name().unwrap().to_string_lossy().contains(needle))
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
}

/// The lines of `--output-format jsonl` output (`stdout`), parsed.
pub fn jsonl_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Reads a JSONL file into values (panics on a bad line: these are our own files).
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every file under `dir` whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let mut bytes = Vec::new();
                if std::fs::File::open(&p)
                    .and_then(|mut f| f.read_to_end(&mut bytes))
                    .is_ok()
                    && find(&bytes, needle.as_bytes()).is_some()
                {
                    hits.push(p);
                }
            }
        }
    }
    hits
}
