//! JSON-RPC 2.0 over an ACP agent's stdio, client side (ACP v1 "Transports": one JSON
//! object a line, UTF-8).
//!
//! Owns: the one writer task (lines never interleave), numbering arbor's requests and
//! matching their responses ([`Connection::request`]), handing the agent's own
//! requests and notifications out in arrival order ([`Incoming`]), and failing every
//! waiting request once the agent's stdout closes. Does not own: starting the process
//! or its stderr (`process`), what a method means (`handshake`, `engine::hosted`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::AcpClientError;

/// JSON-RPC error codes (JSON-RPC 2.0 §5.1), arbor's answers on both sides of ACP:
/// to a hosted agent (`acp_client`) and to an editor (`acp::transport`).
pub mod code {
    /// The line is not JSON (`-32700`).
    pub const PARSE: i64 = -32700;
    /// No such method (`-32601`).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The request's params do not fit the method (`-32602`).
    pub const INVALID_PARAMS: i64 = -32602;
    /// arbor failed or refused while answering (`-32603`).
    pub const INTERNAL: i64 = -32603;
}

/// A JSON-RPC error object `{code, message}`: one the other side answered, or one
/// arbor answers with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (JSON-RPC error {code})")]
pub struct RpcError {
    /// The JSON-RPC error code (see [`code`]).
    pub code: i64,
    /// For people: the other side's own text, or arbor's.
    pub message: String,
}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The `error` object of a JSON-RPC 2.0 response (`{"code": …, "message": …}`);
    /// a missing code is `INTERNAL`, a missing message says so.
    pub fn from_wire(error: &Value) -> Self {
        Self::new(
            error
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(code::INTERNAL),
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("error without a message"),
        )
    }
}

/// A message the agent sent arbor (never a response: those go to their request).
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request (`id` set): answer it with [`Connection::respond`].
    Request {
        /// The agent's id, echoed in the answer.
        id: Value,
        /// `session/request_permission`, `fs/read_text_file`, `terminal/create`, ….
        method: String,
        /// The params object (`null` when absent).
        params: Value,
    },
    /// A notification (`session/update`, …): never answered.
    Notification {
        /// The method name.
        method: String,
        /// The params object.
        params: Value,
    },
}

type Pending = Arc<Mutex<Option<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>>>;

/// The client end of one agent's stdio: requests out, responses matched, the
/// agent's messages handed to [`Connection::start`]'s receiver. Cheap to clone.
#[derive(Clone)]
pub struct Connection {
    out: mpsc::UnboundedSender<String>,
    next: Arc<AtomicI64>,
    /// `None` once the agent's stdout closed: no request can be answered any more.
    pending: Pending,
}

impl Connection {
    /// Starts the reader and writer tasks over `reader` (the agent's stdout) and
    /// `writer` (its stdin). The receiver yields the agent's requests and
    /// notifications in order and ends when its stdout closes.
    pub fn start(
        reader: impl AsyncRead + Unpin + Send + 'static,
        mut writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> (Self, mpsc::UnboundedReceiver<Incoming>) {
        let (out, mut lines) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(line) = lines.recv().await {
                let written = async {
                    writer.write_all(line.as_bytes()).await?;
                    writer.write_all(b"\n").await?;
                    writer.flush().await
                };
                if written.await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let (tx, rx) = mpsc::unbounded_channel();
        let answers = pending.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(reader).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(incoming) = route(&line, &answers) {
                    // The receiver may be gone (the node ended): keep answering
                    // responses until the process closes its stdout.
                    let _ = tx.send(incoming);
                }
            }
            // Dropping the senders fails every waiting request (`Closed`).
            lock(&answers).take();
        });
        let next = Arc::new(AtomicI64::new(1));
        (Self { out, next, pending }, rx)
    }

    /// Sends request `method` with `params` and waits for its result, read as `T`.
    ///
    /// Errors: [`AcpClientError::Closed`] when the agent's stdout closed first (it
    /// exited), [`AcpClientError::Rpc`] with the agent's error object,
    /// [`AcpClientError::Protocol`] when the result does not read as `T`.
    pub async fn request<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<T, AcpClientError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match lock(&self.pending).as_mut() {
            Some(map) => map.insert(id, tx),
            None => return Err(AcpClientError::Closed),
        };
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.out.send(message.to_string()).is_err() {
            return Err(AcpClientError::Closed);
        }
        let value = rx
            .await
            .map_err(|_| AcpClientError::Closed)?
            .map_err(AcpClientError::Rpc)?;
        serde_json::from_value(value).map_err(|e| AcpClientError::Protocol {
            method: method.to_string(),
            reason: e.to_string(),
        })
    }

    /// Sends notification `method` (`session/cancel`); lost when the agent is gone.
    pub fn notify(&self, method: &str, params: &impl Serialize) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let _ = self.out.send(message.to_string());
    }

    /// Answers the agent's request `id` with a result or an error object.
    pub fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": e.code, "message": e.message},
            }),
        };
        let _ = self.out.send(message.to_string());
    }
}

/// Reads one line: a response goes to its waiting request (`None` back), anything
/// else comes back as [`Incoming`]. A line that is no JSON-RPC message is logged and
/// skipped (an agent printing logs to stdout must not end the node).
fn route(line: &str, pending: &Pending) -> Option<Incoming> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(line) else {
        tracing::warn!("ACP agent wrote a line that is no JSON-RPC message: {line:.200}");
        return None;
    };
    let params = message.remove("params").unwrap_or(Value::Null);
    match (message.remove("method"), message.remove("id")) {
        (Some(Value::String(method)), Some(id)) => Some(Incoming::Request { id, method, params }),
        (Some(Value::String(method)), None) => Some(Incoming::Notification { method, params }),
        (_, Some(id)) => {
            let result = match message.remove("error") {
                Some(error) => Err(RpcError::from_wire(&error)),
                None => Ok(message.remove("result").unwrap_or(Value::Null)),
            };
            let waiting = id
                .as_i64()
                .and_then(|id| lock(pending).as_mut().and_then(|m| m.remove(&id)));
            if let Some(tx) = waiting {
                let _ = tx.send(result);
            }
            None
        }
        _ => {
            tracing::warn!("ACP agent wrote a message without method or id: {line:.200}");
            None
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_get_their_answers_and_the_agents_messages_come_out_in_order() {
        let (client_io, agent_io) = tokio::io::duplex(4096);
        let (read, write) = tokio::io::split(client_io);
        let (conn, mut incoming) = Connection::start(read, write);
        let (agent_read, mut agent_write) = tokio::io::split(agent_io);
        let asked = tokio::spawn({
            let conn = conn.clone();
            async move { conn.request::<Value>("initialize", &json!({})).await }
        });
        let mut lines = BufReader::new(agent_read).lines();
        let sent: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(sent["method"], "initialize");
        let id = sent["id"].clone();
        let reply = format!(
            "{}\n{}\n",
            json!({"jsonrpc":"2.0","method":"session/update","params":{"x":1}}),
            json!({"jsonrpc":"2.0","id":id,"result":{"ok":true}})
        );
        agent_write.write_all(reply.as_bytes()).await.unwrap();
        assert_eq!(asked.await.unwrap().unwrap(), json!({"ok": true}));
        assert!(
            matches!(incoming.recv().await, Some(Incoming::Notification { method, .. }) if method == "session/update")
        );
        drop(agent_write);
        drop(lines);
        assert!(incoming.recv().await.is_none());
        assert!(matches!(
            conn.request::<Value>("x", &json!({})).await,
            Err(AcpClientError::Closed)
        ));
    }
}
