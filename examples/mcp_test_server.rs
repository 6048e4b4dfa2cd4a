//! A stdio MCP server for arbor's tests (built by `cargo test`, as every example is):
//! the tools of `tests/all/support/mcp_calc.rs`. With `--hang` it reads its input and never
//! answers, to test the `initialize` timeout.
//!
//! `cargo build --example mcp_test_server` builds it for a focused test run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/all/support/mcp_calc.rs"]
mod mcp_calc;

use rmcp::ServiceExt;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    mcp_calc::record_start();
    if std::env::args().any(|a| a == "--hang") {
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
        return;
    }
    let service = mcp_calc::Calc::default()
        .serve(rmcp::transport::stdio())
        .await
        .expect("the stdio transport starts");
    let _ = service.waiting().await;
}
