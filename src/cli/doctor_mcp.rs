//! `arbor doctor`'s MCP section: starts each MCP server every session would mount
//! (config `mcp_servers:`, a trusted project's `.mcp.json`) and lists its tools, or the
//! reason it is not available, and how each stdio server is confined (the kernel
//! sandbox's note: `sandboxed: writes ./, no network`). Never prints an `env` or
//! `headers` value.

use color_eyre::Result;

use super::context::Context;
use crate::config::mcp::process_servers;
use crate::outln;
use crate::sandbox::Sandbox;
use crate::tool::mcp::{McpHub, ServerState};

/// Prints the section; returns the number of problems (a bad entry, a server that
/// does not start). An untrusted project's servers are not started and are not a
/// problem (the person chooses whether to trust).
pub async fn report(ctx: &Context) -> Result<usize> {
    let found = process_servers(&ctx.paths, &ctx.config);
    let mut problems = found.problems.len();
    if found.servers.is_empty() && found.problems.is_empty() && found.untrusted.is_none() {
        outln!(
            "mcp       no servers configured (`mcp_servers:` in the config file, or a project's .mcp.json)"
        )?;
        return Ok(0);
    }
    outln!(
        "mcp       {}",
        super::out::plural(found.servers.len(), "server")
    )?;
    for p in &found.problems {
        outln!("  invalid {p}")?;
    }
    if let Some(root) = &found.untrusted {
        outln!(
            "  project {}: .mcp.json not trusted, its servers do not start (run `arbor trust`)",
            root.display()
        )?;
    }
    let sandbox = Sandbox::new(ctx.config.sandbox.clone(), &ctx.paths);
    let hub = McpHub::new(ctx.env.clone()).sandboxed(sandbox, ctx.paths.cwd.clone());
    hub.mount(&found.servers).await;
    for server in hub.servers() {
        outln!(
            "  server  {} ({}): {}",
            server.spec.name,
            server.spec.origin,
            server.spec.describe()
        )?;
        match server.state() {
            ServerState::Running { tools } => {
                outln!("    tools {} ({})", tools.len(), tools.join(", "))?;
            }
            ServerState::Failed { reason } => {
                problems += 1;
                outln!("    failed {reason}")?;
            }
            ServerState::NotStarted => outln!("    not started")?,
        }
        if let Some(note) = server.sandbox_note() {
            outln!("    sandbox {note}")?;
        }
    }
    hub.shutdown().await;
    Ok(problems)
}
