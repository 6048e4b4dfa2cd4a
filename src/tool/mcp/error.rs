//! Why an MCP server is not available ([`McpError`]).
//!
//! Owns: the failure kinds of registering and starting a server, worded as `doctor`,
//! the MCP view and a failed call show them. Does not own: a configured entry's
//! problems (`config::mcp::McpConfigError`, carried whole) or how one call on a
//! running server ends (`server::CallEnd`).

use crate::config::mcp::McpConfigError;

/// A server that cannot be registered or started. `Clone`: a failed start is kept and
/// answered again to every later call (see `Server::connection`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The name is taken by a server configured differently (its origin's text).
    #[error("the name is already used by the server from {0}")]
    NameTaken(String),
    /// The entry's `${VAR}`s cannot be expanded.
    #[error(transparent)]
    Config(#[from] McpConfigError),
    /// The process could not be spawned, or the program does not exist.
    #[error("cannot start '{command}': {reason}")]
    Spawn {
        /// The configured command.
        command: String,
        /// The OS error, or `no such program in PATH`.
        reason: String,
    },
    /// A stdio server did not complete `initialize`.
    #[error("initialize failed: {0}")]
    Initialize(String),
    /// An HTTP server did not complete `initialize` at `url`.
    #[error("initialize failed at {url}: {reason}")]
    InitializeAt {
        /// The server's URL.
        url: String,
        /// The client's error.
        reason: String,
    },
    /// A configured header is not a valid HTTP name.
    #[error("header '{0}' is not a valid name")]
    HeaderName(String),
    /// A configured header's value is not valid (the header's name; never the value).
    #[error("header '{0}' has an invalid value")]
    HeaderValue(String),
    /// The shared HTTP client could not be built.
    #[error("cannot create the HTTP client: {0}")]
    HttpClient(String),
    /// `tools/list` failed.
    #[error("tools/list failed: {0}")]
    ListTools(String),
    /// No `initialize` answer within the timeout (`30s`).
    #[error("no answer to initialize within {0}")]
    InitTimeout(String),
    /// The sandbox could not be set up (the decision task, the temp dir).
    #[error("cannot set up the sandbox: {0}")]
    SandboxSetup(String),
    /// `cannot create the sandbox's temp dir: …`.
    #[error("cannot create the sandbox's temp dir: {0}")]
    SandboxTemp(String),
    /// The sandbox refused the server (`sandbox.required` and the kernel cannot).
    #[error("not started: {0}")]
    Refused(String),
    /// The `arbor __sandbox` helper is missing.
    #[error("the sandbox helper is missing")]
    NoHelper,
    /// A failed start, its text with the server's stderr tail added and secrets
    /// scrubbed: what is kept and reported from then on.
    #[error("{0}")]
    Failed(String),
}
