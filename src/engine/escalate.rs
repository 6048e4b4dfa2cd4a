//! Codex's escalation (issue 39 item 3): a `bash` command the kernel sandbox cut off
//! from the network may run once more with network, when the person says yes to a
//! prompt of its own — never on its own, never headless (`--yes` does not cover it:
//! it steps outside the sandbox).
//!
//! Owns: noticing such a result (`bash`'s `network_blocked` key), asking (an
//! `approval:required` with `escalation` set, through the gate's wait), and running
//! the call again with [`ToolContext::network_once`]; the second result replaces the
//! first and says so. Does not own: reading the output (`sandbox::explain`), the
//! sandbox itself, or the first run (`calls`).

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::gate::{Gate, Pass};
use crate::session::message::ToolCall;
use crate::tool::{Tool, ToolContext, ToolOutput};

/// What the model reads first in a result run again with network.
const RAN_AGAIN: &str = "The sandbox had blocked the network for this command; the person \
allowed it to run once more with network. This is the result of that second run:";

/// `output` of `call`, or — when it is a `bash` result the sandbox cut off from the
/// network, the approvals are a person's and they say yes — the result of running it
/// once more with network (`ctx` as the first run had it). A no, a cancel or a failed
/// second run keep `output`.
pub(crate) async fn network_again(
    gate: &Gate<'_>,
    tool: &Arc<dyn Tool>,
    call: &ToolCall,
    (output, mut ctx): (ToolOutput, ToolContext),
    token: &CancellationToken,
) -> ToolOutput {
    if call.tool != "bash" || !gate.interactive() || !blocked(&output) || token.is_cancelled() {
        return output;
    }
    match gate.escalate(tool, call, token).await {
        Pass::Refused(_) => output,
        Pass::Run => {
            ctx.network_once = true;
            let again = tokio::spawn(tool.call(Value::clone(&call.arguments), ctx)).await;
            match again {
                Ok(mut again) => {
                    again.content = format!("{RAN_AGAIN}\n{}", again.content);
                    again
                }
                Err(_) => output,
            }
        }
    }
}

/// Whether `output` is a `bash` result with `network_blocked: true`.
fn blocked(output: &ToolOutput) -> bool {
    serde_json::from_str::<Value>(&output.content)
        .ok()
        .and_then(|v| v.get(crate::tool::bash::NETWORK_BLOCKED)?.as_bool())
        .unwrap_or(false)
}
