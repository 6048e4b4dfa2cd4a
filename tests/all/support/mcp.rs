//! Helpers for the MCP tests: where the stdio test server is, and an in-process
//! streamable-HTTP server with the same tools.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

#[path = "mcp_calc.rs"]
pub mod mcp_calc;

/// The stdio MCP test server (`examples/mcp_test_server.rs`). `cargo test` builds
/// every example; a focused run needs `cargo build --example mcp_test_server` first.
pub fn mcp_test_server() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.parent().unwrap().parent().unwrap();
    let path = target.join("examples").join("mcp_test_server");
    assert!(
        path.is_file(),
        "{} is missing: `cargo test` builds it; before a focused run, `cargo build --example mcp_test_server`",
        path.display()
    );
    path
}

/// A streamable-HTTP MCP server on 127.0.0.1 serving the test tools at `/mcp`,
/// recording each request's `Authorization` header. Stops when dropped.
pub struct HttpMcpServer {
    pub url: String,
    pub authorizations: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpMcpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HttpMcpServer {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let service = StreamableHttpService::new(
            || Ok(mcp_calc::Calc::default()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let authorizations = Arc::new(Mutex::new(Vec::new()));
        let seen = authorizations.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let service = service.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            if let Some(v) = req.headers().get("authorization") {
                                seen.lock()
                                    .unwrap()
                                    .push(v.to_str().unwrap_or("").to_string());
                            }
                            let inner = TowerToHyperService::new(service.clone());
                            async move { hyper::service::Service::call(&inner, req).await }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Self {
            url: format!("http://{addr}/mcp"),
            authorizations,
            task,
        }
    }
}
