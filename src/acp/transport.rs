//! JSON-RPC 2.0 over newline-delimited stdio for `arbor acp` (ACP "Transports": one
//! JSON object a line, UTF-8, no embedded newlines).
//!
//! Owns: reading messages ([`Incoming`]), writing them (one writer task, so lines
//! never interleave), numbering the agent's own requests to the client and matching
//! their responses ([`Connection::request`]). Does not own: what a method does
//! (`agent`) or the ACP payload types (the `agent-client-protocol-schema` crate).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::AcpError;

/// The JSON-RPC error object and codes, shared with arbor's ACP client side
/// (`acp_client::rpc`, JSON-RPC 2.0 §5.1).
pub use crate::acp_client::rpc::{RpcError, code};

/// One message read from the client.
#[derive(Debug)]
pub enum Incoming {
    /// A request (`id` set): must be answered.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification (no `id`): never answered.
    Notification { method: String, params: Value },
    /// The answer to one of the agent's requests (handled by [`Connection`]).
    Response,
    /// A line that is no JSON-RPC message: answered with a parse error.
    Invalid(String),
}

/// What the writer task gets: a line to write, or a request to say when every line
/// before it was written.
enum Out {
    Line(String),
    Flush(oneshot::Sender<()>),
}

/// The agent's requests waiting for the client's answer, by id.
type Pending = HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>;

/// The writing half of the connection, shared by every task: responses,
/// notifications and the agent's own requests.
#[derive(Clone)]
pub struct Connection {
    lines: mpsc::UnboundedSender<Out>,
    next_id: Arc<AtomicI64>,
    pending: Arc<Mutex<Pending>>,
}

impl Connection {
    /// A connection writing its lines to `out` from a task of the current runtime;
    /// the task ends when every clone of the connection is dropped.
    pub fn new(mut out: impl AsyncWrite + Unpin + Send + 'static) -> Self {
        let (lines, mut rx) = mpsc::unbounded_channel::<Out>();
        tokio::spawn(async move {
            let mut open = true;
            while let Some(item) = rx.recv().await {
                match item {
                    Out::Line(mut line) if open => {
                        line.push('\n');
                        if out.write_all(line.as_bytes()).await.is_err()
                            || out.flush().await.is_err()
                        {
                            tracing::debug!("acp: the client closed stdout");
                            open = false;
                        }
                    }
                    Out::Line(_) => {}
                    Out::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Self {
            lines,
            next_id: Arc::new(AtomicI64::new(0)),
            pending: Arc::default(),
        }
    }

    fn write(&self, message: &Value) {
        if self.lines.send(Out::Line(message.to_string())).is_err() {
            tracing::debug!("acp: writer gone; message dropped");
        }
    }

    /// Sends the notification `method` with `params`.
    pub fn notify(&self, method: &str, params: &impl Serialize) {
        match serde_json::to_value(params) {
            Ok(params) => {
                self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            }
            Err(e) => tracing::warn!("acp: cannot encode {method}: {e}"),
        }
    }

    /// Answers request `id` with `result` or its error.
    pub fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message}})
            }
        };
        self.write(&message);
    }

    /// Sends the request `method` to the client and waits for its answer.
    ///
    /// Errors: [`AcpError::Client`] with the client's error object;
    /// [`AcpError::Closed`] when the connection ended first.
    pub async fn request(&self, method: &str, params: &impl Serialize) -> Result<Value, AcpError> {
        let params = serde_json::to_value(params).map_err(AcpError::Encode)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending_map().insert(id, tx);
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        match rx.await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(AcpError::Client(e)),
            Err(_) => Err(AcpError::Closed),
        }
    }

    fn pending_map(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until every message sent so far was written (or stdout closed).
    pub async fn flushed(&self) {
        let (tx, rx) = oneshot::channel();
        if self.lines.send(Out::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Ends every request still waiting for the client (its connection closed).
    pub fn close(&self) {
        self.pending_map().clear();
    }

    /// Parses one line; a response is handed to the request waiting for it.
    pub fn parse(&self, line: &str) -> Incoming {
        let message: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return Incoming::Invalid(format!("not JSON: {e}")),
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (
            message.get("id"),
            message.get("method").and_then(Value::as_str),
        ) {
            (Some(id), Some(method)) => Incoming::Request {
                id: id.clone(),
                method: method.to_string(),
                params,
            },
            (None, Some(method)) => Incoming::Notification {
                method: method.to_string(),
                params,
            },
            (Some(id), None) => {
                let answer = match message.get("error") {
                    Some(error) => Err(RpcError::from_wire(error)),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let waiting = id.as_i64().and_then(|id| self.pending_map().remove(&id));
                match waiting {
                    Some(tx) => {
                        let _ = tx.send(answer);
                    }
                    None => tracing::debug!("acp: response to no request: {id}"),
                }
                Incoming::Response
            }
            (None, None) => Incoming::Invalid("neither a request nor a response".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_response_reaches_the_request_that_waits_for_it() {
        let (out, _read) = tokio::io::duplex(4096);
        let conn = Connection::new(out);
        let waiting = {
            let conn = conn.clone();
            tokio::spawn(
                async move { conn.request("session/request_permission", &json!({})).await },
            )
        };
        tokio::task::yield_now().await;
        while conn.pending_map().is_empty() {
            tokio::task::yield_now().await;
        }
        assert!(matches!(
            conn.parse(r#"{"jsonrpc":"2.0","id":0,"result":{"ok":true}}"#),
            Incoming::Response
        ));
        let answer = waiting.await.unwrap().unwrap();
        assert_eq!(answer, json!({"ok": true}));
        assert!(matches!(conn.parse("{nope"), Incoming::Invalid(_)));
        assert!(matches!(
            conn.parse(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#),
            Incoming::Notification { .. }
        ));
    }
}
