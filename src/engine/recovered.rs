//! The repair before a turn (SPEC §7 "Resume"), with the answers of sub-sessions
//! that finished after their parent stopped (issue 23 item 1).
//!
//! Owns: appending a result for every tool call of a session that has none, before its
//! next turn: a delegation call (`task`, `delegate`) whose sub-session (linked by the parent's `tool:pre`
//! event, `SessionStore::task_links`) has since completed — continued by `R` or
//! `arbor session continue --tree`, children first — gets that sub-session's final
//! answer as its result, in its tool's result shape; a delegation call whose
//! sub-session has not completed gets the synthetic result plus the sub-session's id
//! and status and how to continue it; every other call gets `repair`'s synthetic
//! result. Clearing the calls recorded as waiting for approval. Does not own: the
//! synthetic texts and the request view (`repair`), running the turn (`turn`), the
//! order in which a tree is continued (`runtime`).

use std::collections::HashMap;

use serde_json::json;

use super::approvals;
use super::env::TurnEnv;
use super::live::LiveSession;
use super::repair;
use crate::config::modules::describe;
use crate::session::message::{Message, ToolCall};
use crate::session::protocol::TaskResult;
use crate::session::{SessionStatus, SessionStore};

/// Appends a result for every call of `live`'s transcript that has none (see the
/// module docs): "interrupted" when the session's process died mid-turn, "cancelled"
/// otherwise, "not run" for a call that waited for approval. Nothing is rewritten.
pub(super) fn repair_before_turn(env: &TurnEnv, live: &LiveSession) {
    let gap = if live.metadata().status == SessionStatus::Interrupted {
        repair::INTERRUPTED_RESULT
    } else {
        repair::MISSING_RESULT
    };
    // A call that was waiting for a person when the process died never ran.
    let awaiting = approvals::awaiting_approval(&live.metadata());
    let store = SessionStore::new(env.paths.sessions_dir());
    let mut links: Option<HashMap<String, String>> = None;
    // Bound first: a snapshot alive during the appends would make each one copy the
    // whole transcript (copy-on-write).
    let fixes = {
        let transcript = live.transcript_snapshot();
        repair::missing_results_with(&transcript, &awaiting, gap, &mut |call| {
            if !describe(&call.tool).delegates() {
                return None;
            }
            let links = links.get_or_insert_with(|| {
                store.task_links(&live.id).unwrap_or_else(|e| {
                    tracing::warn!(session = %live.id, "task links not read: {e}");
                    HashMap::new()
                })
            });
            let child = links.get(&call.id)?;
            child_result(&store, &live.id, call, child, gap)
        })
    };
    for fix in fixes {
        live.append(fix);
    }
    if !awaiting.is_empty() {
        live.update_metadata(|m| {
            m.arbor.awaiting_approval.clear();
        });
    }
}

/// The result of the delegation `call` of session `parent` from its sub-session `child`
/// as stored now: its last answer when it completed (its tool's result text,
/// `metadata.recovered_from` naming the child), else `gap` with the child's id, status
/// and how to continue it (an error). `None` when the child cannot be read or is not
/// `parent`'s (the plain synthetic result then).
fn child_result(
    store: &SessionStore,
    parent: &str,
    call: &ToolCall,
    child: &str,
    gap: &str,
) -> Option<Message> {
    let loaded = match store.load(child) {
        Ok(loaded) => loaded,
        Err(e) => {
            tracing::warn!(
                session = parent,
                "sub-session '{child}' of call {}: {e}",
                call.id
            );
            return None;
        }
    };
    let meta = &loaded.metadata;
    if meta.parent_id.as_deref() != Some(parent) {
        return None;
    }
    let agent = meta.agent_name.clone().unwrap_or_default();
    if meta.status != SessionStatus::Completed {
        let text = format!(
            "{gap}\nThe sub-session {child} ({agent}) is {status}: call {tool} with session_id \"{child}\" to continue it.",
            status = meta.status.as_str(),
            tool = call.tool
        );
        return Some(repair::synthetic_with(call, &text));
    }
    let response = loaded
        .transcript
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Assistant(_)))
        .map(Message::text)
        .unwrap_or_default();
    let result = TaskResult {
        response,
        session_id: child.into(),
        agent,
        status: meta.status,
        turn_count: meta.turn_count,
        error: None,
        budget: None,
        isolation: None,
    };
    let content = crate::tool::delegation_text(&call.tool, &result);
    let mut message = Message::tool_result(call, content, false);
    if let Message::Tool(t) = &mut message {
        t.metadata = Some(json!({"recovered_from": child}).into());
    }
    Some(message)
}
