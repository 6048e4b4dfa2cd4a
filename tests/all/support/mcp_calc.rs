//! The MCP test server's tools (rmcp's server feature), shared by the stdio server
//! (`examples/mcp_test_server.rs`) and the in-process streamable-HTTP server of
//! the `mcp` tests (`tests/all/mcp.rs`).
//!
//! Tools: `add {a, b}`; `fail {message}` (a tool error); `slow {seconds}` (writes
//! `started-slow` into `$MCP_TEST_DIR`, waits, and on a cancel writes `cancelled-slow`); `crash` (the process
//! exits); `picture` (a PNG image); `env {name}` (an environment variable's value);
//! `big {bytes}` (a text result of that many bytes, `START…END`);
//! `write {path, text}` (writes a file: `wrote PATH` or the error) and `read {path}`
//! (a file's text or the error), `connect {path}` (a TCP connection to
//! `host:port`: `connected` or the error), to test the sandbox a server runs in.
//! Each start of the process appends a line to `$MCP_TEST_DIR/starts`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};
use tokio_util::sync::CancellationToken;

/// The `picture` tool's image: a 1×1 PNG, base64.
pub const PICTURE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// The left number.
    pub a: i64,
    /// The right number.
    pub b: i64,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct FailArgs {
    pub message: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SlowArgs {
    pub seconds: u64,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct BigArgs {
    pub bytes: usize,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EnvArgs {
    pub name: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct WriteArgs {
    pub path: String,
    pub text: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct PathArgs {
    pub path: String,
}

#[derive(Debug, Clone)]
pub struct Calc {
    tool_router: ToolRouter<Self>,
}

impl Default for Calc {
    fn default() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }
}

fn marker(name: &str) {
    if let Ok(dir) = std::env::var("MCP_TEST_DIR") {
        let _ = std::fs::write(std::path::Path::new(&dir).join(name), "1");
    }
}

/// Appends one line to `$MCP_TEST_DIR/starts` (one per process start).
pub fn record_start() {
    use std::io::Write;
    if let Ok(dir) = std::env::var("MCP_TEST_DIR") {
        let path = std::path::Path::new(&dir).join("starts");
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{}", std::process::id());
        }
    }
}

#[tool_router]
impl Calc {
    #[tool(description = "Adds two integers")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Always fails with the given message")]
    fn fail(&self, Parameters(FailArgs { message }): Parameters<FailArgs>) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(message)])
    }

    #[tool(description = "Waits the given number of seconds")]
    async fn slow(
        &self,
        Parameters(SlowArgs { seconds }): Parameters<SlowArgs>,
        ct: CancellationToken,
    ) -> String {
        marker("started-slow");
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(seconds)) => format!("slept {seconds}s"),
            () = ct.cancelled() => {
                marker("cancelled-slow");
                "cancelled".to_string()
            }
        }
    }

    #[tool(description = "Exits the server process")]
    fn crash(&self) -> String {
        std::process::exit(3)
    }

    #[tool(description = "Returns a small PNG image")]
    fn picture(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::image(PICTURE, "image/png")])
    }

    #[tool(description = "Returns a text of the given number of bytes")]
    fn big(&self, Parameters(BigArgs { bytes }): Parameters<BigArgs>) -> String {
        let middle = bytes.saturating_sub(8);
        format!("START{}END", "x".repeat(middle))
    }

    #[tool(description = "Returns an environment variable of the server")]
    fn env(&self, Parameters(EnvArgs { name }): Parameters<EnvArgs>) -> String {
        std::env::var(&name).unwrap_or_else(|_| format!("{name} is not set"))
    }

    #[tool(description = "Writes text to a file")]
    fn write(&self, Parameters(WriteArgs { path, text }): Parameters<WriteArgs>) -> String {
        match std::fs::write(&path, text) {
            Ok(()) => format!("wrote {path}"),
            Err(e) => format!("cannot write {path}: {e}"),
        }
    }

    #[tool(description = "Opens a TCP connection to host:port")]
    fn connect(&self, Parameters(PathArgs { path }): Parameters<PathArgs>) -> String {
        match std::net::TcpStream::connect(&path) {
            Ok(_) => "connected".to_string(),
            Err(e) => format!("cannot connect to {path}: {e}"),
        }
    }

    #[tool(description = "Reads a file")]
    fn read(&self, Parameters(PathArgs { path }): Parameters<PathArgs>) -> String {
        std::fs::read_to_string(&path).unwrap_or_else(|e| format!("cannot read {path}: {e}"))
    }
}

#[tool_handler]
impl ServerHandler for Calc {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}
