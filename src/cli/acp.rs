//! `arbor acp`: serves the Agent Client Protocol on stdin/stdout (`crate::acp`) for an
//! editor (Zed's `agent_servers`, JetBrains, Neovim plugins).
//!
//! Owns: the [`Factory`] every ACP session's engine comes from — a context loaded in
//! the session's `cwd` (`Context::load_in`), the client's MCP servers mounted beside
//! the config's `mcp_servers:` (a config server of the same name is replaced) as
//! `McpOrigin::Client`: `${VAR}` is never expanded in them, and a definition holding
//! one is refused as a project's `.mcp.json`'s would be (issue 34); local servers as
//! providers when none is configured, interactive approvals (asked in
//! the editor; the policy's `deny` still holds), `--model` as the model and `--agent`
//! as the agent of new roots. Does not own: the protocol.

use std::sync::{Arc, Mutex};

use super::context::{Context, ContextOptions};
use crate::acp::{Factory, SessionSetup};
use crate::agent::Registry;
use crate::engine::{ApprovalMode, Engine};

/// Runs `arbor acp` until the editor closes stdin. Returns the exit code (0).
///
/// Errors: stdin could not be read.
pub async fn run(
    options: ContextOptions,
    agent: Option<String>,
    model: Option<String>,
) -> color_eyre::Result<i32> {
    // Each session's registry sender, kept open while the process serves.
    let registries: Arc<Mutex<Vec<tokio::sync::watch::Sender<Arc<Registry>>>>> = Arc::default();
    let factory: Factory = Arc::new(move |setup: SessionSetup| {
        let mut ctx = Context::load_in(&options, setup.cwd)?;
        // The editor's servers are its own origin (no `${VAR}` expansion, like a
        // project's `.mcp.json`), never config ones.
        ctx.config.client_mcp_servers = setup.mcp_servers;
        if let Some(notice) = ctx.use_local_servers() {
            tracing::info!("{notice}");
        }
        let (tx, rx) = tokio::sync::watch::channel(ctx.registry.clone());
        registries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        let options = ctx.engine_options(rx, ApprovalMode::Interactive);
        Ok(Engine::headless(options).with_root_model(model.clone()))
    });
    crate::acp::serve(tokio::io::stdin(), tokio::io::stdout(), factory, agent).await?;
    Ok(0)
}
