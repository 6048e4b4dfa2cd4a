//! A tiny loopback HTTP/1.1 server for replaying captured provider responses.
//!
//! Each connection: read one request (headers + `Content-Length` body), record it,
//! answer with the reply the handler picks, close. Replies are written whole, in
//! random-sized HTTP chunks (seeded), or cut short (a `Content-Length` larger than
//! the bytes sent, then close) to simulate a dropped connection.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How the body goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One write, `Content-Length`.
    Whole,
    /// `Transfer-Encoding: chunked`, pieces of 1..=max bytes from a seeded RNG, each
    /// flushed on its own.
    Rechunked { seed: u64, max: usize },
    /// Declares the full length but sends only `sent` bytes, then closes.
    Truncated { sent: usize },
}

/// One canned response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub mode: Mode,
}

impl Reply {
    /// 200 with an SSE content type.
    pub fn sse(body: Vec<u8>, mode: Mode) -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), "text/event-stream".into())],
            body,
            mode,
        }
    }

    /// `status` with a JSON body.
    pub fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
            mode: Mode::Whole,
        }
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

type Handler = Arc<dyn Fn(&Captured) -> Reply + Send + Sync>;

/// A running server; stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<Captured>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Starts serving on 127.0.0.1 with `handler` choosing each reply.
    pub async fn start(handler: impl Fn(&Captured) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let log = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let handler = Arc::clone(&handler);
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let _ = serve_one(stream, handler, log).await;
                });
            }
        });
        Self {
            addr,
            requests,
            task,
        }
    }

    /// Always answers with `reply`.
    pub async fn always(reply: Reply) -> Self {
        Self::start(move |_| reply.clone()).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn captured(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve_one(
    mut stream: TcpStream,
    handler: Handler,
    log: Arc<Mutex<Vec<Captured>>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    let captured = Captured {
        method,
        path,
        headers,
        body,
    };
    let reply = handler(&captured);
    log.lock().unwrap().push(captured);
    write_reply(&mut stream, &reply).await
}

async fn write_reply(stream: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match reply.mode {
        Mode::Whole => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", reply.body.len()));
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&reply.body).await?;
        }
        Mode::Truncated { sent } => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", reply.body.len()));
            stream.write_all(head.as_bytes()).await?;
            stream
                .write_all(&reply.body[..sent.min(reply.body.len())])
                .await?;
        }
        Mode::Rechunked { seed, max } => {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
            stream.write_all(head.as_bytes()).await?;
            let mut rng = StdRng::seed_from_u64(seed);
            let mut rest = &reply.body[..];
            while !rest.is_empty() {
                let n = rng.random_range(1..=max.max(1)).min(rest.len());
                let (piece, tail) = rest.split_at(n);
                stream.write_all(format!("{n:x}\r\n").as_bytes()).await?;
                stream.write_all(piece).await?;
                stream.write_all(b"\r\n").await?;
                stream.flush().await?;
                rest = tail;
            }
            stream.write_all(b"0\r\n\r\n").await?;
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}
