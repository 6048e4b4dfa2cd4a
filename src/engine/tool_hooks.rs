//! The person's hooks around one tool call (`PreToolUse` / `PostToolUse`) and one
//! turn (`UserPromptSubmit`, `Stop` / `SubagentStop`), and before a compaction
//! (`PreCompact`), and at a session's start (`SessionStart` / `SubagentStart`; a
//! root's `SessionStart` also after each compaction, source `compact`) (issue 29).
//!
//! Owns: the JSON a tool hook gets (`session_id`, `transcript_path`, `cwd`,
//! `tool_name`, `tool_input`, `tool_use_id`, and `tool_response` after the call),
//! publishing one `hook:ran` per hook, and what their verdicts do to the call: a
//! `PreToolUse` block refuses the call (it never asks for approval) with the hook's
//! reason as its result; a `PostToolUse` block, and every hook's `additionalContext`,
//! is appended to the result the model reads. A `UserPromptSubmit` block ends the turn
//! failed with the hook's reason before any model call, and the prompt is not stored;
//! its `additionalContext` (or
//! plain stdout) reaches the model as a system note after the prompt. `Stop` (a root)
//! or `SubagentStop` (a sub-session) runs when a turn ended; a block of a completed
//! turn continues it with the reason (the turn loop decides). Does not own: running hooks (`hooks`),
//! the call itself (`calls`), or `Notification` hooks (`notify_hooks`).

use serde_json::{Map, Value, json};

use super::gate::Gate;
use super::live::LiveSession;
use crate::hooks::{HookEvent, HookVerdict};
use crate::session::EngineEvent;
use crate::session::message::ToolCall;
use crate::tool::ToolOutput;

/// The first line of the result of a call a `PreToolUse` hook blocked.
pub const BLOCKED_PREFIX: &str = "blocked by a PreToolUse hook";

/// Runs `call`'s `PreToolUse` hooks. `Err` is the refused call's result (a hook
/// blocked it); `Ok` carries any `additionalContext` to append after the call.
pub(crate) async fn pre(
    live: &LiveSession,
    gate: &Gate<'_>,
    call: &ToolCall,
) -> Result<Vec<String>, ToolOutput> {
    let verdict = run(live, gate, call, HookEvent::PreToolUse, None).await;
    match verdict.blocked {
        Some(reason) => Err(ToolOutput::error(format!(
            "{BLOCKED_PREFIX}; the call did not run: {reason}"
        ))),
        None => Ok(verdict.context),
    }
}

/// Runs `call`'s `PostToolUse` hooks with its `output` and appends what they say
/// (a block's reason, `additionalContext`, and `context` left by `PreToolUse`).
pub(crate) async fn post(
    live: &LiveSession,
    gate: &Gate<'_>,
    call: &ToolCall,
    output: &mut ToolOutput,
    mut context: Vec<String>,
) {
    let response = serde_json::from_str::<Value>(&output.content)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"content": output.content, "is_error": output.is_error}));
    let verdict = run(live, gate, call, HookEvent::PostToolUse, Some(response)).await;
    if let Some(reason) = verdict.blocked {
        output
            .content
            .push_str(&format!("\n\n[PostToolUse hook] {reason}"));
    }
    context.extend(verdict.context);
    for text in context {
        output
            .content
            .push_str(&format!("\n\n[hook context] {text}"));
    }
}

async fn run(
    live: &LiveSession,
    gate: &Gate<'_>,
    call: &ToolCall,
    event: HookEvent,
    response: Option<Value>,
) -> HookVerdict {
    let hooks = gate.hooks();
    if !hooks.has(event) {
        return HookVerdict::default();
    }
    let mut input = session_input(live, gate);
    input.insert("tool_name".into(), call.tool.clone().into());
    input.insert("tool_input".into(), Value::clone(&call.arguments));
    input.insert("tool_use_id".into(), call.id.clone().into());
    if let Some(response) = response {
        input.insert("tool_response".into(), response);
    }
    let verdict = hooks
        .run(event, Some(&call.tool), input, &live.working_dir)
        .await;
    for record in &verdict.runs {
        live.emit(EngineEvent::HookRan(record.clone()));
    }
    verdict
}

/// The common input of a session event's hooks.
fn session_input(live: &LiveSession, gate: &Gate<'_>) -> Map<String, Value> {
    super::notify_hooks::common_input(live, &gate.transcript_path())
}

/// What the `UserPromptSubmit` hooks said about a turn's prompts.
pub(crate) enum PromptVerdict {
    /// The turn goes ahead with these texts added as context (often none).
    Proceed(Vec<String>),
    /// A hook blocked the turn, for this reason.
    Blocked(String),
}

/// Runs the `UserPromptSubmit` hooks for `prompts` (the turn's new user texts, joined).
pub(crate) async fn prompt_submit(
    live: &LiveSession,
    gate: &Gate<'_>,
    prompts: &[String],
) -> PromptVerdict {
    let hooks = gate.hooks();
    if prompts.is_empty() || !hooks.has(HookEvent::UserPromptSubmit) {
        return PromptVerdict::Proceed(Vec::new());
    }
    let mut input = session_input(live, gate);
    input.insert("prompt".into(), prompts.join("\n\n").into());
    let verdict = hooks
        .run(HookEvent::UserPromptSubmit, None, input, &live.working_dir)
        .await;
    for record in &verdict.runs {
        live.emit(EngineEvent::HookRan(record.clone()));
    }
    match verdict.blocked {
        Some(reason) => PromptVerdict::Blocked(reason),
        None => PromptVerdict::Proceed(verdict.context),
    }
}

/// Runs the `Stop` hooks (a root) or `SubagentStop` hooks (a sub-session) after a turn
/// ended with `status`; `active` is sent as `stop_hook_active` (the turn was already
/// continued by a Stop hook). `Some(reason)` when a hook blocked the stop (exit 2 or
/// `decision: "block"`).
pub(crate) async fn stop(
    live: &LiveSession,
    gate: &Gate<'_>,
    status: &str,
    active: bool,
) -> Option<String> {
    let event = if live.parent_id.is_some() {
        HookEvent::SubagentStop
    } else {
        HookEvent::Stop
    };
    let hooks = gate.hooks();
    if !hooks.has(event) {
        return None;
    }
    let mut input = session_input(live, gate);
    input.insert("stop_hook_active".into(), active.into());
    input.insert("status".into(), status.into());
    input.insert("agent".into(), live.agent_name.clone().into());
    let verdict = hooks.run(event, None, input, &live.working_dir).await;
    for record in &verdict.runs {
        live.emit(EngineEvent::HookRan(record.clone()));
    }
    verdict.blocked
}

/// Runs the `PreCompact` hooks before the context of `live` is compacted, with
/// `trigger` (`auto`, `manual`, `overflow`) and `/compact`'s focus as
/// `custom_instructions`. Reported only: a hook cannot stop a compaction (Claude
/// Code's rule).
pub(crate) async fn pre_compact(
    live: &LiveSession,
    env: &super::env::TurnEnv,
    trigger: &str,
    focus: Option<&str>,
) {
    let powers = env.powers();
    let hooks = &powers.hooks;
    if !hooks.has(HookEvent::PreCompact) {
        return;
    }
    let transcript = crate::hooks::transcript_path(&env.paths, &live.id);
    let mut input = super::notify_hooks::common_input(live, &transcript);
    input.insert("trigger".into(), trigger.into());
    input.insert("custom_instructions".into(), focus.unwrap_or("").into());
    let verdict = hooks
        .run(HookEvent::PreCompact, None, input, &live.working_dir)
        .await;
    for record in &verdict.runs {
        live.emit(EngineEvent::HookRan(record.clone()));
    }
}

/// After a compaction of a root session: its `SessionStart` hooks with `source`
/// `compact` (Claude Code's contract); each hook's `additionalContext` or plain
/// stdout becomes a system note after the compacted part, so the compacted request
/// carries it. Returns whether a note was appended. Sub-sessions have no
/// `SessionStart` and run nothing.
pub(crate) async fn session_start_compact(live: &LiveSession, env: &super::env::TurnEnv) -> bool {
    if live.parent_id.is_some() {
        return false;
    }
    let powers = env.powers();
    let hooks = &powers.hooks;
    if !hooks.has(HookEvent::SessionStart) {
        return false;
    }
    let transcript = crate::hooks::transcript_path(&env.paths, &live.id);
    let mut input = super::notify_hooks::common_input(live, &transcript);
    input.insert("source".into(), "compact".into());
    input.insert("agent_type".into(), live.agent_name.clone().into());
    let verdict = hooks
        .run(
            HookEvent::SessionStart,
            Some("compact"),
            input,
            &live.working_dir,
        )
        .await;
    let noted = !verdict.context.is_empty();
    publish_start(live, HookEvent::SessionStart, verdict);
    noted
}

/// Publishes a start hook's runs (no tool) and appends its context as system notes.
fn publish_start(live: &LiveSession, event: HookEvent, verdict: crate::hooks::HookVerdict) {
    for mut record in verdict.runs {
        record.tool_name = None;
        live.emit(EngineEvent::HookRan(record));
    }
    for text in verdict.context {
        live.append(crate::session::message::Message::System(
            crate::session::message::UserMessage {
                content: format!("[{} hook] {text}", event.as_str()).into(),
                timestamp: Some(crate::session::message::now_rfc3339()),
                metadata: None,
            },
        ));
    }
}

/// Before the first model call of `live`'s first turn in this process: a root runs
/// its `SessionStart` hooks with `source` `startup` (no turn yet; `clear` when the
/// person started it with `/clear`) or `resume` (the
/// matcher is read against `source`, Claude Code's rule); a freshly spawned
/// sub-session (no turn yet) runs its `SubagentStart` hooks with `agent_id` (its
/// session id), `agent_type` (its agent's name) and `parent_session_id` (the matcher
/// is read against the agent's name). Each hook's `additionalContext` (and a
/// `SessionStart` hook's plain stdout) becomes a system note in the transcript
/// before the model is called. Neither event can stop the session (Claude Code's
/// contract): an exit 2 or a `decision: block` is reported in `hook:ran` only.
pub(crate) async fn session_start(live: &LiveSession, gate: &Gate<'_>) {
    if live
        .start_hooks_ran
        .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        return;
    }
    let fresh = live.metadata().turn_count == 0;
    let (event, matched) = match &live.parent_id {
        Some(_) if !fresh => return,
        Some(_) => (HookEvent::SubagentStart, live.agent_name.as_str()),
        None if fresh && live.cleared.load(std::sync::atomic::Ordering::SeqCst) => {
            (HookEvent::SessionStart, "clear")
        }
        None if fresh => (HookEvent::SessionStart, "startup"),
        None => (HookEvent::SessionStart, "resume"),
    };
    let hooks = gate.hooks();
    if !hooks.has(event) {
        return;
    }
    let mut input = session_input(live, gate);
    match &live.parent_id {
        Some(parent) => {
            input.insert("agent_id".into(), live.id.to_string().into());
            input.insert("agent_type".into(), live.agent_name.clone().into());
            input.insert("parent_session_id".into(), parent.to_string().into());
        }
        None => {
            input.insert("source".into(), matched.into());
            input.insert("agent_type".into(), live.agent_name.clone().into());
        }
    }
    let verdict = hooks
        .run(event, Some(matched), input, &live.working_dir)
        .await;
    publish_start(live, event, verdict);
}
