//! arbor as the ACP **client** of an external agent (issue 37 item 3): Codex, Claude
//! Code, opencode or goose run as the engine of one node of arbor's tree, over
//! JSON-RPC 2.0 on the child's stdio (ACP v1, wire types from
//! `agent-client-protocol-schema` 1.20).
//!
//! Owns: the wire side only — starting the agent's process from an agent file's
//! `acp:` (`process`), the JSON-RPC connection (`rpc`), and the handshake
//! (`handshake`: `initialize` with arbor's client capabilities, `authenticate`,
//! `session/new`). Does not own: what the agent's updates and requests do to the
//! node (`engine::hosted`: transcript, events, approvals, confined fs and terminals),
//! the `acp:` frontmatter (`config::acp_agent`), arbor's own ACP *server*
//! (`acp`). Sits beside `provider` in the layers: it uses only `config`.

pub mod handshake;
pub mod process;
pub mod rpc;

pub use handshake::{Opened, choose_auth, client_capabilities, open};
pub use process::{AgentProcess, Hosted, HostedAgents};
pub use rpc::{Connection, Incoming, RpcError};

/// Why talking to a hosted ACP agent failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AcpClientError {
    /// The program could not be started (`command`: `acp.command`).
    #[error("cannot start ACP agent `{command}`: {reason}")]
    Start {
        /// `acp.command`.
        command: String,
        /// The OS error text.
        reason: String,
    },
    /// The agent's stdout closed before it answered (it exited or crashed).
    #[error("the ACP agent exited")]
    Closed,
    /// The agent answered a request with a JSON-RPC error (its own message).
    #[error("{0}")]
    Rpc(RpcError),
    /// The agent's answer to `method` does not read as ACP v1 says.
    #[error("the ACP agent's answer to {method} is not ACP v1: {reason}")]
    Protocol {
        /// The request answered.
        method: String,
        /// What did not fit.
        reason: String,
    },
    /// The agent did not answer in time (the text says what and how long).
    #[error("the ACP agent did not answer {0}")]
    NoAnswer(String),
    /// No usable auth method (the text says which and what the agent offers).
    #[error("{0}")]
    Auth(String),
}
