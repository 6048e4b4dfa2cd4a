//! A loopback OpenAI-compatible stub server for the benchmarks: answers
//! `GET /v1/models` and `POST /v1/chat/completions` with an SSE body chosen by a
//! responder, written all at once or paced (one chunk per interval, chunked encoding).
//!
//! Owns: the HTTP framing of those two routes only. Does not own: what the replies say
//! (each bench's responder).
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A streamed reply: `chunks` written one per `interval` (zero: all at once), or, when
/// `gaps` is not empty, chunk `i` after waiting `gaps[i]`; `finished` is called once
/// the last chunk is written.
#[derive(Default)]
pub struct Reply {
    pub chunks: Vec<String>,
    pub interval: Duration,
    pub gaps: Vec<Duration>,
    pub finished: Option<Box<dyn FnOnce() + Send>>,
}

impl Reply {
    /// The whole SSE body in one write.
    pub fn whole(body: String) -> Self {
        Self {
            chunks: vec![body],
            ..Default::default()
        }
    }
}

/// Chooses the reply from the raw chat request body (JSON; parse only when needed: a
/// long session's request is tens of MB).
pub type Responder = Arc<dyn Fn(&[u8]) -> Reply + Send + Sync>;

/// A running server; it lives until the process exits.
pub struct Server {
    /// `http://127.0.0.1:<port>/v1`.
    pub base_url: String,
}

impl Server {
    /// Binds a loopback port and serves on its own thread (a 1-worker runtime).
    pub fn start(responder: Responder) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                while let Ok((socket, _)) = listener.accept().await {
                    let responder = responder.clone();
                    tokio::spawn(async move {
                        let _ = serve(socket, responder).await;
                    });
                }
            });
        });
        Self {
            base_url: format!("http://{addr}/v1"),
        }
    }
}

/// One request per connection (`connection: close`).
async fn serve(mut socket: TcpStream, responder: Responder) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    if head.starts_with("GET") {
        let body = json!({"object": "list", "data": [{"id": "scripted-model", "object": "model"}]})
            .to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        socket.write_all(head.as_bytes()).await?;
        socket.write_all(body.as_bytes()).await?;
        return socket.shutdown().await;
    }
    let mut reply = responder(&buf[head_end..]);
    socket
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        )
        .await?;
    let mut ticker = tokio::time::interval(reply.interval.max(Duration::from_micros(1)));
    for (i, piece) in reply.chunks.iter().enumerate() {
        if let Some(gap) = reply.gaps.get(i) {
            tokio::time::sleep(*gap).await;
        } else if !reply.interval.is_zero() {
            ticker.tick().await;
        }
        let framed = format!("{:x}\r\n{piece}\r\n", piece.len());
        socket.write_all(framed.as_bytes()).await?;
    }
    socket.write_all(b"0\r\n\r\n").await?;
    if let Some(finished) = reply.finished.take() {
        finished();
    }
    socket.shutdown().await
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "scripted-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {c}\n\n")
}

fn end(finish: &str) -> String {
    let usage = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "scripted-model",
        "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
    });
    format!(
        "{}data: {usage}\n\ndata: [DONE]\n\n",
        chunk(json!({}), Some(finish))
    )
}

/// SSE pieces answering with `deltas` as content deltas (first piece: the role chunk;
/// last: finish, usage and `[DONE]`).
pub fn text_pieces<I: IntoIterator<Item = String>>(deltas: I) -> Vec<String> {
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    out.extend(
        deltas
            .into_iter()
            .map(|d| chunk(json!({"content": d}), None)),
    );
    out.push(end("stop"));
    out
}

/// A whole SSE body answering `text`.
pub fn text_body(text: &str) -> String {
    text_pieces([text.to_string()]).concat()
}

/// A whole SSE body calling tools `(id, name, arguments)`.
pub fn tool_calls_body(calls: &[(String, String, Value)]) -> String {
    let mut out = chunk(json!({"role": "assistant", "content": null}), None);
    for (index, (id, name, args)) in calls.iter().enumerate() {
        out += &chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}),
            None,
        );
    }
    out + &end("tool_calls")
}

/// The system prompt and the role of the last message of a chat request body.
pub fn system_and_last_role(body: &[u8]) -> (String, String) {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .unwrap_or_default();
    let last = messages
        .last()
        .and_then(|m| m["role"].as_str())
        .unwrap_or_default()
        .to_string();
    (system, last)
}
