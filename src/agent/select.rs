//! Which agent of a tree handles the next message (SPEC §11): google-adk 2.13.0's
//! `find_agent_to_run` (`google/adk/agents/_agent_router.py`), over a reduced event
//! model ([`RouteEvent`]).
//!
//! Owns: rewinds (`_apply_rewinds`), matching a trailing function response to its call
//! (`find_matching_function_call`), the resume rule (a user's answer, or any answer
//! when the app is resumable, goes back to the caller), the newest-first scan that
//! skips user, abort, `end_of_agent`/`agent_state` and content-less error events,
//! unanswered transfer targets, the transfer-to-parent chain and the root fallback;
//! and reading a transcript as route events ([`transcript_events`]). Does not own:
//! the tree (`agent::tree`) or running the chosen agent (`engine`).
//!
//! Not modelled (arbor has no counterpart): ADK workflow roots (returned directly by
//! ADK), open-interrupt and sub-branch bookkeeping, task-mode delegation above an
//! agent (`_resolve_task_delegator` is applied from the agents' `mode`).

use super::tree::{AgentTree, DELEGATED_TASK_MODES};
use crate::session::Message;
use crate::session::message::Meta;

/// The author name of events a person wrote.
pub const USER: &str = "user";

/// ADK's `error_code` of the events that seal an aborted invocation.
pub const INVOCATION_ABORTED: &str = "INVOCATION_ABORTED";

/// One session event as the router sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteEvent {
    /// `user` or an agent's name.
    pub author: String,
    /// Ids of the function (tool) calls this event makes.
    pub function_calls: Vec<String>,
    /// Ids of the function calls this event answers, in order.
    pub function_responses: Vec<String>,
    pub invocation_id: Option<String>,
    /// `actions.transfer_to_agent`: the agent this event hands the conversation to.
    pub transfer_to_agent: Option<String>,
    /// `actions.rewind_before_invocation_id`.
    pub rewind_before_invocation_id: Option<String>,
    /// `actions.end_of_agent` or `actions.agent_state` set: a state change, not a reply.
    pub agent_state_change: bool,
    pub error_code: Option<String>,
    /// The event has content parts (text, calls or responses).
    pub has_content: bool,
}

impl RouteEvent {
    fn is_abort(&self) -> bool {
        self.error_code.as_deref() == Some(INVOCATION_ABORTED)
    }
}

/// The events left after rewinds: walking back, an event with
/// `rewind_before_invocation_id: X` drops itself and every event from the first event
/// of invocation `X` on (ADK `_apply_rewinds`).
pub fn apply_rewinds(events: &[RouteEvent]) -> Vec<&RouteEvent> {
    let mut kept = Vec::with_capacity(events.len());
    let mut i = events.len();
    while i > 0 {
        i -= 1;
        let event = &events[i];
        if let Some(target) = &event.rewind_before_invocation_id {
            let first = events
                .iter()
                .position(|e| e.invocation_id.as_deref() == Some(target.as_str()));
            if let Some(first) = first.filter(|&f| f < i) {
                i = first;
            }
        } else {
            kept.push(event);
        }
    }
    kept.reverse();
    kept
}

/// The index of the event holding the call that the last event's first function
/// response answers, searching backwards from the second-to-last event (ADK
/// `find_matching_function_call`); `None` when there is no such call.
pub fn find_matching_function_call(events: &[&RouteEvent]) -> Option<usize> {
    let (last, before) = events.split_last()?;
    let id = last
        .function_responses
        .first()
        .filter(|id| !id.is_empty())?;
    before
        .iter()
        .rposition(|e| e.function_calls.iter().any(|c| c == id))
}

/// The name of the agent that handles the next message of a session with `events`
/// (oldest first, the new message included when there is one), ADK 2.x's
/// `find_agent_to_run`. `resumable` is the app's resumability (arbor: `false`).
pub fn find_agent_to_run<'t>(
    tree: &'t AgentTree,
    events: &[RouteEvent],
    resumable: bool,
) -> &'t str {
    let index = find_agent_index(tree, events, resumable);
    tree.get(index)
        .map_or(tree.root().name.as_str(), |a| a.name.as_str())
}

fn find_agent_index(tree: &AgentTree, events: &[RouteEvent], resumable: bool) -> usize {
    let live = apply_rewinds(events);
    let last_non_user = live.iter().rev().find(|e| e.author != USER);
    let sealed =
        live.last().is_some_and(|e| e.is_abort()) || last_non_user.is_some_and(|e| e.is_abort());
    if !sealed && let Some(call) = find_matching_function_call(&live) {
        let call = live[call];
        let answer = live.last().map(|e| e.author.as_str());
        if !call.author.is_empty()
            && (answer == Some(USER) || resumable)
            && let Some(agent) = tree.find(&call.author)
        {
            return task_delegator(tree, agent);
        }
    }
    for event in live.iter().rev().filter(|e| counts(e)) {
        if let (Some(target), Some(source)) = (&event.transfer_to_agent, tree.find(&event.author)) {
            let hit = tree
                .transfer_targets(source)
                .into_iter()
                .find(|&t| tree.get(t).is_some_and(|a| &a.name == target));
            if let Some(t) = hit.filter(|&t| tree.is_transferable_across_agent_tree(t)) {
                return t;
            }
        }
        if event.author == tree.root().name {
            return 0;
        }
        let Some(agent) = tree.find(&event.author) else {
            continue;
        };
        if tree.is_transferable_across_agent_tree(agent) {
            return task_delegator(tree, agent);
        }
    }
    0
}

/// Whether the scan considers `event`: not the user's, not an abort, not an agent
/// state change, not an error without content.
fn counts(event: &RouteEvent) -> bool {
    event.author != USER
        && !event.is_abort()
        && !event.agent_state_change
        && (event.error_code.is_none() || event.has_content)
}

/// The agent that delegated the task `agent` runs in, or `agent` itself (ADK
/// `_resolve_task_delegator`).
fn task_delegator(tree: &AgentTree, agent: usize) -> usize {
    let mut delegator = agent;
    let mut current = agent;
    while current != 0 {
        let Some(node) = tree.get(current) else { break };
        let Some(parent) = node.parent else { break };
        if node
            .mode
            .as_deref()
            .is_some_and(|m| DELEGATED_TASK_MODES.contains(&m))
        {
            delegator = parent;
        }
        current = parent;
    }
    delegator
}

/// `metadata.author` of a transcript message, if set.
pub fn author_of(metadata: Option<&Meta>) -> Option<String> {
    metadata?.author()
}

/// A transcript read as route events. User messages are the user's; assistant
/// messages and tool results are their `metadata.author`'s (`default_author` when
/// unset: transcripts written before authors were recorded, or by Amplifier); a tool
/// result with `metadata.transfer_to_agent` carries that transfer. System messages are
/// skipped.
pub fn transcript_events(transcript: &[Message], default_author: &str) -> Vec<RouteEvent> {
    transcript
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => Some(RouteEvent {
                author: USER.into(),
                has_content: !u.content.is_empty(),
                ..RouteEvent::default()
            }),
            Message::Assistant(a) => Some(RouteEvent {
                author: author_of(a.metadata.as_ref())
                    .unwrap_or_else(|| default_author.to_string()),
                function_calls: a.tool_calls.iter().map(|c| c.id.clone()).collect(),
                error_code: a
                    .metadata
                    .as_ref()
                    .and_then(|m| m.get_str("error"))
                    .map(|_| "ERROR".to_string()),
                has_content: !a.content.is_empty() || !a.tool_calls.is_empty(),
                ..RouteEvent::default()
            }),
            Message::Tool(t) => Some(RouteEvent {
                author: author_of(t.metadata.as_ref())
                    .unwrap_or_else(|| default_author.to_string()),
                function_responses: vec![t.tool_call_id.to_string()],
                transfer_to_agent: t.metadata.as_ref().and_then(|m| m.get_str(TRANSFER_KEY)),
                has_content: true,
                ..RouteEvent::default()
            }),
            Message::System(_) => None,
        })
        .collect()
}

/// The `metadata` key of a tool result that records a transfer's target (SPEC §11).
pub const TRANSFER_KEY: &str = "transfer_to_agent";

#[cfg(test)]
mod tests;
