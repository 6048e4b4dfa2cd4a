//! `arbor acp`: arbor as an Agent Client Protocol agent (issue 28) — JSON-RPC 2.0 on
//! stdin/stdout, protocol version 1, wire types from the official schema crate
//! (`agent-client-protocol-schema` 1.20, where subagents are stable).
//!
//! Owns: the ACP front end, the stable v1 surface — the transport (`transport`), the
//! methods (`agent`: `initialize`, `session/new` creating a stored arbor root whose
//! id is the ACP id, `session/load` replayed as updates, `session/resume`,
//! `session/close`, `session/set_config_option`, `session/cancel`; `turns`:
//! `session/prompt` ending with a `stopReason`), one ACP session's engine connection
//! and forwarding (`session`), `session/list` (`listing`), the config options
//! (`options`: model, agent, approvals), slash commands and
//! `available_commands_update` (`commands`), prompts as arbor prompts (`prompt`; the
//! file behind a resource link is checked, then read, by `attach`), events as
//! `session/update`s (`updates`: also `usage_update` and `session_info_update`), the
//! tree as subagent sessions (`tree`), approvals as `session/request_permission`
//! (`permission`).
//!
//! Does not own: building a runtime for a session (the caller's [`Factory`]: `cli`
//! mounts the client's MCP servers, never with `${VAR}` expanded), or any turn
//! logic: every ACP session drives its own [`Engine`] through `execute` and its
//! event bus, as `arbor run` and the TUI do. Sessions made here are ordinary stored
//! arbor sessions.
//!
//! Layer: beside `cli` and `tui` (a front end, above `engine`); `cli` starts it.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

use crate::engine::Engine;

mod agent;
pub mod attach;
pub mod commands;
pub mod listing;
pub mod options;
pub mod permission;
mod prompt;
mod session;
pub mod transport;
pub mod tree;
mod turns;
pub mod updates;

pub use transport::RpcError;

/// What a new or loaded ACP session runs in: its working directory and the MCP
/// servers the client gave, in `config.yaml`'s `mcp_servers:` form (`name →
/// {command, args, env}` or `{url, headers}`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSetup {
    /// The session's working directory (absolute, as the client sent it).
    pub cwd: PathBuf,
    /// The client's MCP servers, mounted beside config ones but never with `${VAR}`
    /// expanded (`config::mcp::McpOrigin::Client`).
    pub mcp_servers: Map<String, Value>,
}

/// Builds the engine of one ACP session (its own runtime over `setup`: interactive
/// approvals, the client's MCP servers). Errors: why no runtime could be built
/// (config, bundle), sent to the client as the request's error.
pub type Factory = Arc<
    dyn Fn(SessionSetup) -> Result<Engine, Box<dyn std::error::Error + Send + Sync>> + Send + Sync,
>;

/// Errors of the ACP front end.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// Reading stdin failed.
    #[error("cannot read from the client: {0}")]
    Read(#[source] std::io::Error),
    /// A message could not be encoded as JSON.
    #[error("cannot encode a message: {0}")]
    Encode(#[source] serde_json::Error),
    /// The client answered one of the agent's requests with an error.
    #[error("the client refused: {0}")]
    Client(#[source] RpcError),
    /// The connection closed before the client answered.
    #[error("the client closed the connection")]
    Closed,
}

/// Serves ACP on `input` / `output` until the client closes `input`; each session's
/// engine comes from `factory`, and new sessions run `agent` (`None`: the bundle's
/// root agent). At the end of `input`, running turns are cancelled and every request
/// read is answered (waiting at most 5 s) before it returns.
///
/// Errors: [`AcpError::Read`] when `input` fails (not at its end).
pub async fn serve(
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
    factory: Factory,
    agent: Option<String>,
) -> Result<(), AcpError> {
    let conn = transport::Connection::new(output);
    let agent = Arc::new(agent::Agent::new(conn.clone(), factory, agent));
    let mut lines = BufReader::new(input).lines();
    let mut answering = tokio::task::JoinSet::new();
    while let Some(line) = lines.next_line().await.map_err(AcpError::Read)? {
        if line.trim().is_empty() {
            continue;
        }
        match conn.parse(&line) {
            transport::Incoming::Request { id, method, params } => {
                let agent = agent.clone();
                let conn = conn.clone();
                answering.spawn(async move {
                    let (result, then) = agent.request(&method, params).await;
                    conn.respond(id, result);
                    agent.answered(then);
                });
            }
            transport::Incoming::Notification { method, params } => {
                agent.notification(&method, params);
            }
            transport::Incoming::Response => {}
            transport::Incoming::Invalid(why) => {
                conn.respond(Value::Null, Err(RpcError::new(transport::code::PARSE, why)))
            }
        }
    }
    // The client is gone: its pending permission requests are denied, running turns
    // are cancelled, and every request already read is still answered (a turn ends
    // `cancelled`) before the process exits.
    conn.close();
    agent.shutdown().await;
    let answered = async { while answering.join_next().await.is_some() {} };
    if tokio::time::timeout(std::time::Duration::from_secs(5), answered)
        .await
        .is_err()
    {
        tracing::warn!("acp: requests still unanswered at exit");
    }
    conn.flushed().await;
    Ok(())
}
