//! Running one assistant message's tool calls concurrently.
//!
//! Owns: preparing each call (`Tool::prepare`, so task calls know their sub-session id
//! before `tool:pre`), publishing `tool:pre`, running every call as its own task at
//! once, publishing `tool:post`/`tool:error` as each finishes, and cancellation: when
//! the turn's token fires, a call gets a short grace period to finish on its own (the
//! task tool then returns its child's cancelled result), after which it is aborted and
//! gets a cancelled result. Does not own: appending results (`turn`, in call order).

use std::time::Duration;

use futures::future::join_all;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::live::LiveSession;
use crate::session::events::names;
use crate::session::message::ToolCall;
use crate::tool::confine::truncate_chars;
use crate::tool::mount::ToolSet;
use crate::tool::{ToolContext, ToolOutput};

/// How long a call may keep running after its turn was cancelled.
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// The result text of a call stopped by cancellation.
pub const CANCELLED_RESULT: &str =
    "cancelled: the turn was cancelled before this tool call finished";
/// `tool:post.result` / `tool:error.error` are cut to this many bytes (the full text
/// is in the transcript and in `message:appended`).
const EVENT_RESULT_MAX: usize = 16 * 1024;

/// Runs `calls` concurrently; the outputs come back in call order.
pub(crate) async fn run_calls(
    live: &LiveSession,
    tools: &ToolSet,
    calls: &[ToolCall],
    token: &CancellationToken,
) -> Vec<ToolOutput> {
    let started: Vec<_> = calls
        .iter()
        .map(|call| start(live, tools, call, token))
        .collect();
    let finished = started
        .into_iter()
        .zip(calls)
        .map(|((handle, fields), call)| async move {
            let output = match handle {
                Err(output) => output,
                Ok(handle) => finish(handle, token).await,
            };
            publish_result(live, call, &output, fields);
            output
        });
    join_all(finished).await
}

/// Prepares a call, publishes `tool:pre` and spawns it. `Err` holds an immediate
/// result (unknown tool, already cancelled). The map holds the task fields that every
/// event of the call repeats (`sub_session_id`, `parent_session_id`, `depth`).
fn start(
    live: &LiveSession,
    tools: &ToolSet,
    call: &ToolCall,
    token: &CancellationToken,
) -> (
    Result<tokio::task::JoinHandle<ToolOutput>, ToolOutput>,
    Map<String, Value>,
) {
    let mut ctx = ToolContext {
        session_id: live.id.clone(),
        parent_id: live.parent_id.clone(),
        depth: live.depth,
        tool_call_id: call.id.clone(),
        working_dir: live.working_dir.clone(),
        cancel: token.clone(),
        sub_session_id: None,
    };
    let tool = tools.get(&call.tool);
    if let Some(tool) = &tool {
        tool.prepare(&call.arguments, &mut ctx);
    }
    let mut fields = Map::new();
    if let Some(sub) = &ctx.sub_session_id {
        fields.insert("sub_session_id".into(), json!(sub));
        fields.insert("parent_session_id".into(), json!(live.id));
        fields.insert("depth".into(), json!(live.depth + 1));
    }
    let mut pre = json!({
        "tool_name": call.tool,
        "tool_call_id": call.id,
        "arguments": call.arguments,
    });
    extend(&mut pre, &fields);
    live.emit(names::TOOL_PRE, pre);
    let handle = match tool {
        None => Err(ToolOutput::error(tools.not_mounted_error(&call.tool))),
        Some(_) if token.is_cancelled() => Err(ToolOutput::error(CANCELLED_RESULT)),
        Some(tool) => Ok(tokio::spawn(tool.call(call.arguments.clone(), ctx))),
    };
    (handle, fields)
}

async fn finish(
    mut handle: tokio::task::JoinHandle<ToolOutput>,
    token: &CancellationToken,
) -> ToolOutput {
    let joined = tokio::select! {
        joined = &mut handle => joined,
        _ = token.cancelled() => match tokio::time::timeout(CANCEL_GRACE, &mut handle).await {
            Ok(joined) => joined,
            Err(_) => {
                handle.abort();
                return ToolOutput::error(CANCELLED_RESULT);
            }
        },
    };
    joined.unwrap_or_else(|e| ToolOutput::error(format!("the tool failed: {e}")))
}

fn publish_result(
    live: &LiveSession,
    call: &ToolCall,
    output: &ToolOutput,
    fields: Map<String, Value>,
) {
    let text = truncate_chars(&output.content, EVENT_RESULT_MAX);
    let (name, mut data) = if output.is_error {
        (
            names::TOOL_ERROR,
            json!({"tool_name": call.tool, "tool_call_id": call.id, "error": text}),
        )
    } else {
        (
            names::TOOL_POST,
            json!({"tool_name": call.tool, "tool_call_id": call.id, "result": text}),
        )
    };
    if text.len() < output.content.len()
        && let Value::Object(map) = &mut data
    {
        map.insert("truncated".into(), json!(true));
    }
    extend(&mut data, &fields);
    live.emit(name, data);
}

fn extend(data: &mut Value, fields: &Map<String, Value>) {
    if let Value::Object(map) = data {
        map.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}
