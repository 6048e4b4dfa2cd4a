//! Running one assistant message's tool calls concurrently.
//!
//! Owns: preparing each call (`Tool::prepare`, so task calls know their sub-session id
//! before `tool:pre`), publishing `tool:pre`, the person's `PreToolUse` hooks (a block
//! refuses the call before it asks) and `PostToolUse` hooks (`tool_hooks`), passing each call through the approval
//! gate (`gate`: a call it refuses does not run and gets the gate's result), running
//! each call as its own task — at most [`MAX_CONCURRENT_CALLS`] of one message at once,
//! the others queued in call order until one ends (issue 22: 1,000 `bash` calls in one
//! message must not become 1,000 processes) — publishing `tool:post`/`tool:error` as each finishes, and cancellation: when
//! the turn's token fires, a call gets a short grace period to finish on its own (the
//! task tool then returns its child's cancelled result), after which it is aborted and
//! gets a cancelled result. A call whose task panics gets an error result (`the tool
//! panicked: …`), the panic is logged, and the turn is told so it fails. Every output
//! passes `session::redact::scrub_secrets` (a command that prints the environment must
//! not put a key into the transcript or the model's context), and a call that changed
//! a file adds it to the session's `files_changed` as it finishes. Does not own:
//! appending results (`turn`, in call order).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::gate::{Gate, Pass};
use super::live::LiveSession;
use super::panics;
use super::tool_hooks;
use crate::session::EngineEvent;
use crate::session::message::ToolCall;
use crate::session::metadata::record_file_change;
use crate::session::protocol::{
    TaskCallFields, ToolEffect, ToolErrorEvent, ToolPostEvent, ToolPreEvent, ToolResponse,
};
use crate::session::redact::scrub_secrets;
use crate::tool::confine::truncate_chars;
use crate::tool::mount::ToolSet;
use crate::tool::{Tool, ToolContext, ToolOutput};
use serde_json::Value;

/// Most tool calls of one assistant message running at once; the rest wait (still
/// approved first, so prompts are not held back) for a running one to end.
pub const MAX_CONCURRENT_CALLS: usize = 16;
/// How long a call may keep running after its turn was cancelled.
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// The result text of a call stopped by cancellation.
pub const CANCELLED_RESULT: &str =
    "cancelled: the turn was cancelled before this tool call finished";
/// `tool:post.result` / `tool:error.error` are cut to this many bytes (the full text
/// is in the transcript and in `message:appended`).
const EVENT_RESULT_MAX: usize = 16 * 1024;

/// The results of one assistant message's tool calls.
pub(crate) struct CallResults {
    /// One output per call, in call order (a panicked call's is an error result).
    pub outputs: Vec<ToolOutput>,
    /// One line per call whose task panicked (`tool `bash` (call c1) panicked: …`),
    /// in call order; the turn fails when it is not empty.
    pub panics: Vec<String>,
}

/// Runs `calls` concurrently, each once `gate` lets it; the outputs come back in call
/// order.
pub(crate) async fn run_calls(
    live: &LiveSession,
    tools: &ToolSet,
    gate: &Gate<'_>,
    calls: &[ToolCall],
    token: &CancellationToken,
) -> CallResults {
    // `tool:pre` of every call first, in call order.
    let prepared: Vec<_> = calls
        .iter()
        .map(|call| prepare(live, tools, gate, call, token))
        .collect();
    let slots = Semaphore::new(MAX_CONCURRENT_CALLS);
    let slots = &slots;
    let finished = prepared
        .into_iter()
        .zip(calls)
        .map(|(prepared, call)| async move {
            let Prepared { tool, ctx, task } = prepared;
            let (mut output, panic) = match tool {
                None => (ToolOutput::error(tools.not_mounted_error(&call.tool)), None),
                Some(_) if token.is_cancelled() => (ToolOutput::error(CANCELLED_RESULT), None),
                Some(tool) => match Box::pin(tool_hooks::pre(live, gate, call)).await {
                    Err(blocked) => (blocked, None),
                    Ok(context) => match gate.check(&tool, call, token).await {
                        Pass::Refused(output) => (output, None),
                        Pass::Run if token.is_cancelled() => {
                            (ToolOutput::error(CANCELLED_RESULT), None)
                        }
                        Pass::Run => {
                            // Waits for one of the message's slots (never closed, so only
                            // a cancel ends the wait without one).
                            let slot = tokio::select! {
                                slot = slots.acquire() => slot.ok(),
                                () = token.cancelled() => None,
                            };
                            match slot {
                                Some(_slot) => {
                                    let first = ctx.clone();
                                    let handle =
                                        tokio::spawn(tool.call(Value::clone(&call.arguments), ctx));
                                    match finish(handle, token).await {
                                        Ok(output) => {
                                            let mut output =
                                                Box::pin(super::escalate::network_again(
                                                    gate,
                                                    &tool,
                                                    call,
                                                    (output, first),
                                                    token,
                                                ))
                                                .await;
                                            Box::pin(tool_hooks::post(
                                                live,
                                                gate,
                                                call,
                                                &mut output,
                                                context,
                                            ))
                                            .await;
                                            (output, None)
                                        }
                                        Err(panic) => panicked(live, call, &*panic),
                                    }
                                }
                                None => (ToolOutput::error(CANCELLED_RESULT), None),
                            }
                        }
                    },
                },
            };
            if let Cow::Owned(clean) = scrub_secrets(&output.content) {
                output.content = clean;
            }
            match &mut output.effect {
                Some(ToolEffect::FileChange(change)) => {
                    live.update_metadata(|m| {
                        record_file_change(&mut m.arbor.files_changed, change)
                    });
                }
                Some(ToolEffect::Todo(list)) => {
                    let list = list.clone();
                    live.update_metadata(|m| m.arbor.todos = Some(list));
                }
                Some(ToolEffect::Task(result)) => {
                    for text in [Some(&mut result.response), result.error.as_mut()]
                        .into_iter()
                        .flatten()
                    {
                        if let Cow::Owned(clean) = scrub_secrets(text) {
                            *text = clean;
                        }
                    }
                }
                Some(ToolEffect::Transfer(_)) | None => {}
            }
            publish_result(live, call, &output, task);
            (output, panic)
        });
    let (outputs, panics): (Vec<_>, Vec<_>) = join_all(finished).await.into_iter().unzip();
    CallResults {
        outputs,
        panics: panics.into_iter().flatten().collect(),
    }
}

/// The error result of a call whose task panicked, and the line for the turn's error
/// (the panic is logged).
fn panicked(
    live: &LiveSession,
    call: &ToolCall,
    panic: &(dyn std::any::Any + Send),
) -> (ToolOutput, Option<String>) {
    let what = format!("tool `{}` (call {})", call.tool, call.id);
    let text = panics::logged(&format!("{what} in session '{}'", live.id), panic);
    let output = ToolOutput::error(format!("the tool panicked: {text}"));
    (output, Some(format!("{what} panicked: {text}")))
}

/// A call ready to run: its tool (`None`: not mounted), its context, and the task
/// call's fields, which every event of the call repeats (`None` for other tools).
struct Prepared {
    tool: Option<Arc<dyn Tool>>,
    ctx: ToolContext,
    task: Option<TaskCallFields>,
}

/// Prepares a call (`Tool::prepare`) and publishes its `tool:pre`.
fn prepare(
    live: &LiveSession,
    tools: &ToolSet,
    gate: &Gate<'_>,
    call: &ToolCall,
    token: &CancellationToken,
) -> Prepared {
    let mut ctx = ToolContext {
        session_id: live.id.clone(),
        parent_id: live.parent_id.clone(),
        depth: live.depth,
        tool_call_id: call.id.clone().into(),
        working_dir: live.working_dir.clone(),
        cancel: token.clone(),
        sub_session_id: None,
        session_dir: Some(gate.session_dir()),
        task: None,
        network_once: false,
    };
    let tool = tools.get(&call.tool);
    if let Some(tool) = &tool {
        tool.prepare(&call.arguments, &mut ctx);
    }
    let task = ctx.sub_session_id.as_ref().map(|sub| TaskCallFields {
        sub_session_id: sub.clone(),
        parent_session_id: live.id.clone(),
        depth: live.depth + 1,
    });
    live.emit(EngineEvent::ToolPre(ToolPreEvent {
        tool_name: call.tool.clone(),
        tool_call_id: call.id.clone().into(),
        tool_input: Value::clone(&call.arguments),
        task: task.clone(),
    }));
    Prepared { tool, ctx, task }
}

/// Awaits a spawned call (see the module docs for cancellation). `Err` holds the
/// payload of a panic of the call's task.
async fn finish(
    mut handle: tokio::task::JoinHandle<ToolOutput>,
    token: &CancellationToken,
) -> Result<ToolOutput, Box<dyn std::any::Any + Send>> {
    let joined = tokio::select! {
        joined = &mut handle => joined,
        _ = token.cancelled() => match tokio::time::timeout(CANCEL_GRACE, &mut handle).await {
            Ok(joined) => joined,
            Err(_) => {
                handle.abort();
                return Ok(ToolOutput::error(CANCELLED_RESULT));
            }
        },
    };
    match joined {
        Ok(output) => Ok(output),
        Err(e) if e.is_panic() => Err(e.into_panic()),
        Err(e) => Ok(ToolOutput::error(format!("the tool failed: {e}"))),
    }
}

/// The effect `tool:post` carries: the output's, a delegation's `response` cut as the
/// result is (the whole text is in the transcript).
fn event_effect(output: &ToolOutput) -> Option<ToolEffect> {
    let mut effect = output.effect.clone();
    if let Some(ToolEffect::Task(result)) = &mut effect {
        let cut = truncate_chars(&result.response, EVENT_RESULT_MAX);
        if cut.len() < result.response.len() {
            result.response = cut.to_string();
        }
    }
    effect
}

fn publish_result(
    live: &LiveSession,
    call: &ToolCall,
    output: &ToolOutput,
    task: Option<TaskCallFields>,
) {
    let text = truncate_chars(&output.content, EVENT_RESULT_MAX).to_string();
    let truncated = text.len() < output.content.len();
    let (tool_name, tool_call_id) = (call.tool.clone(), call.id.clone());
    live.emit(if output.is_error {
        EngineEvent::ToolError(ToolErrorEvent {
            tool_name,
            tool_call_id: tool_call_id.into(),
            tool_response: Some(ToolResponse::failed(&text)),
            error: text,
            truncated,
            task,
        })
    } else {
        EngineEvent::ToolPost(ToolPostEvent {
            tool_name,
            tool_call_id: tool_call_id.into(),
            tool_response: Some(ToolResponse::ok(&text)),
            result: text,
            truncated,
            effect: event_effect(output),
            task,
        })
    });
}
