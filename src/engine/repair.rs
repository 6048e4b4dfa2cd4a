//! Transcript repair before a turn (SPEC §7 "Resume").
//!
//! Owns: finding tool calls that never got a result (a crash or kill mid-tool) and
//! making the synthetic results that are appended for them — "interrupted" when the
//! session's process died mid-turn, "cancelled" otherwise, "not run: interrupted while
//! waiting for approval" for a call that was waiting for a person when its process
//! died (the gate lists those in metadata) — and the
//! request view of a transcript that places every result right after its call (the
//! shared transcript itself when it is already in that order). A caller may answer a
//! call itself instead ([`missing_results_with`]: a `task` call whose sub-session has
//! answered since).
//! Does not own: writing the transcript (`session::store`); existing lines are never
//! rewritten — repairs are appended.

use std::sync::Arc;

use serde_json::json;

use crate::session::message::{Message, ToolCall};

/// The content of a synthetic result for a call that has none.
pub const MISSING_RESULT: &str = "cancelled: no result was recorded";

/// The content of a synthetic result for a call whose session was interrupted: the
/// process running it ended (a crash, `kill -9`) before the call finished.
pub const INTERRUPTED_RESULT: &str = "interrupted: arbor stopped before this tool call finished; it may have run in part or not at all";

/// The content of a synthetic result for a call that was waiting for approval when
/// its session's process died (SPEC §7 "Resume", §12): it never ran.
pub const NOT_RUN_AWAITING_APPROVAL: &str = "not run: interrupted while waiting for approval";

/// Synthetic `{"role":"tool", …, "content": otherwise, "is_error": true}` messages,
/// one per tool call in `transcript` that has no result, in call order; `otherwise` is
/// [`MISSING_RESULT`] ("cancelled: …") or, for a session that was interrupted,
/// [`INTERRUPTED_RESULT`]. A call whose id is in `awaiting_approval` (the calls that
/// were waiting for a person, from metadata) gets [`NOT_RUN_AWAITING_APPROVAL`]
/// instead. Empty when the transcript is consistent.
pub fn missing_results(
    transcript: &[Message],
    awaiting_approval: &[String],
    otherwise: &str,
) -> Vec<Message> {
    missing_results_with(transcript, awaiting_approval, otherwise, &mut |_| None)
}

/// [`missing_results`], except that a call not waiting for approval first asks
/// `recovered` for its result: `Some(message)` is used as it is (the engine answers a
/// `task` call with the answer its sub-session gave since, `engine::recovered`),
/// `None` gets the synthetic result. `recovered` is called once per such call, in
/// call order.
pub fn missing_results_with(
    transcript: &[Message],
    awaiting_approval: &[String],
    otherwise: &str,
    recovered: &mut dyn FnMut(&ToolCall) -> Option<Message>,
) -> Vec<Message> {
    pair_results(transcript)
        .into_iter()
        .flat_map(|(_, calls)| calls)
        .filter(|(_, result)| result.is_none())
        .map(|(call, _)| {
            if awaiting_approval.contains(&call.id) {
                return synthetic_with(call, NOT_RUN_AWAITING_APPROVAL);
            }
            recovered(call).unwrap_or_else(|| synthetic_with(call, otherwise))
        })
        .collect()
}

/// The synthetic result for `call`, marked `metadata.synthetic = true`.
pub fn synthetic_result(call: &ToolCall) -> Message {
    synthetic_with(call, MISSING_RESULT)
}

/// The synthetic result for `call` with `text`, marked `metadata.synthetic = true`
/// (an error result).
pub fn synthetic_with(call: &ToolCall, text: &str) -> Message {
    let mut message = Message::tool_result(call, text, true);
    if let Message::Tool(t) = &mut message {
        t.metadata = Some(json!({"synthetic": true}).into());
    }
    message
}

/// The transcript as sent to a provider: every tool result directly after the
/// assistant message holding its call (in call order), results without a call dropped,
/// calls without a result given a synthetic one. Providers reject any other order,
/// and repairs are appended at the end of the file, not beside their call.
pub fn request_view(transcript: &[Message]) -> Vec<Message> {
    materialize(transcript, &view_slots(transcript))
}

/// [`request_view`] of a shared transcript without copying it when it is already in
/// request order (every result right after its call, none missing or stray — the
/// usual case): then the same `Arc` is returned. Otherwise a new view is built.
pub fn request_view_shared(transcript: &Arc<Vec<Message>>) -> Arc<Vec<Message>> {
    let slots = view_slots(transcript);
    let unchanged = slots.len() == transcript.len()
        && slots
            .iter()
            .enumerate()
            .all(|(i, slot)| matches!(slot, Slot::At(at) if *at == i));
    if unchanged {
        Arc::clone(transcript)
    } else {
        Arc::new(materialize(transcript, &slots))
    }
}

/// One message of the request view: a transcript message by index, or the synthetic
/// result of a call that has none.
enum Slot<'a> {
    At(usize),
    Synthetic(&'a ToolCall),
}

/// The request view (see [`request_view`]) as slots, copying no message.
fn view_slots(transcript: &[Message]) -> Vec<Slot<'_>> {
    let mut pairs = pair_results(transcript).into_iter().peekable();
    let mut out = Vec::with_capacity(transcript.len());
    for (index, message) in transcript.iter().enumerate() {
        match message {
            Message::Tool(_) => {}
            Message::Assistant(_) => {
                out.push(Slot::At(index));
                if let Some((_, calls)) = pairs.next_if(|(at, _)| *at == index) {
                    for (call, result) in calls {
                        out.push(match result {
                            Some(at) => Slot::At(at),
                            None => Slot::Synthetic(call),
                        });
                    }
                }
            }
            _ => out.push(Slot::At(index)),
        }
    }
    out
}

fn materialize(transcript: &[Message], slots: &[Slot<'_>]) -> Vec<Message> {
    slots
        .iter()
        .map(|slot| match slot {
            Slot::At(at) => transcript[*at].clone(),
            Slot::Synthetic(call) => synthetic_result(call),
        })
        .collect()
}

/// The calls of one assistant message, each with the index of its result message.
type CallResults<'a> = Vec<(&'a ToolCall, Option<usize>)>;

/// For each assistant message with tool calls (by index): its calls, each with the
/// index of its result — the first not yet paired tool message after the call with
/// the same `tool_call_id` (ids may repeat across turns with some servers).
fn pair_results(transcript: &[Message]) -> Vec<(usize, CallResults<'_>)> {
    let mut used = vec![false; transcript.len()];
    let mut out = Vec::new();
    for (index, message) in transcript.iter().enumerate() {
        let Message::Assistant(a) = message else {
            continue;
        };
        if a.tool_calls.is_empty() {
            continue;
        }
        let calls = a
            .tool_calls
            .iter()
            .map(|call| {
                let result = (index + 1..transcript.len()).find(|&at| {
                    !used[at]
                        && matches!(&transcript[at], Message::Tool(t) if t.tool_call_id == call.id)
                });
                if let Some(at) = result {
                    used[at] = true;
                }
                (call, result)
            })
            .collect();
        out.push((index, calls));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::message::{AssistantMessage, ContentBlock};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            tool: "read_file".into(),
            arguments: json!({"path": "a"}).into(),
        }
    }

    fn assistant(ids: &[&str]) -> Message {
        Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::Text { text: "x".into() }],
            tool_calls: ids.iter().map(|i| call(i)).collect(),
            ..Default::default()
        })
    }

    #[test]
    fn orphaned_calls_get_synthetic_cancelled_results() {
        let transcript = vec![
            Message::user("go"),
            assistant(&["a", "b"]),
            Message::tool_result(&call("a"), "done", false),
        ];
        let fixes = missing_results(&transcript, &[], MISSING_RESULT);
        assert_eq!(fixes.len(), 1);
        let line = serde_json::to_value(&fixes[0]).unwrap();
        assert_eq!(line["role"], "tool");
        assert_eq!(line["tool_call_id"], "b");
        assert_eq!(line["content"], MISSING_RESULT);
        assert_eq!(line["is_error"], true);
        let empty = missing_results(&[Message::user("x"), assistant(&[])], &[], MISSING_RESULT);
        assert!(empty.is_empty());
        let interrupted = missing_results(&transcript, &[], INTERRUPTED_RESULT);
        assert_eq!(interrupted.len(), 1);
        assert_eq!(interrupted[0].text(), INTERRUPTED_RESULT);
    }

    #[test]
    fn a_call_that_waited_for_approval_is_not_run() {
        let transcript = vec![Message::user("go"), assistant(&["a", "b", "c"])];
        let waiting = vec!["b".to_string(), "zzz".to_string()];
        let fixes = missing_results(&transcript, &waiting, INTERRUPTED_RESULT);
        let texts: Vec<String> = fixes.iter().map(Message::text).collect();
        assert_eq!(
            texts,
            [
                INTERRUPTED_RESULT,
                NOT_RUN_AWAITING_APPROVAL,
                INTERRUPTED_RESULT
            ]
        );
        let line = serde_json::to_value(&fixes[1]).unwrap();
        assert_eq!(line["tool_call_id"], "b");
        assert_eq!(line["metadata"]["synthetic"], true);
    }

    #[test]
    fn request_view_puts_results_after_their_calls() {
        let transcript = vec![
            Message::user("go"),
            assistant(&["a", "b"]),
            Message::user("interrupted"),
            Message::tool_result(&call("zzz"), "stray", false),
            Message::tool_result(&call("b"), "late b", false),
        ];
        let view = request_view(&transcript);
        let roles: Vec<&str> = view.iter().map(Message::role).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
        assert_eq!(view[2].text(), MISSING_RESULT);
        assert_eq!(view[3].text(), "late b");
    }

    #[test]
    fn repeated_call_ids_pair_with_their_own_results() {
        let transcript = vec![
            Message::user("one"),
            assistant(&["call_0"]),
            Message::tool_result(&call("call_0"), "first", false),
            Message::user("two"),
            assistant(&["call_0"]),
        ];
        let fixes = missing_results(&transcript, &[], MISSING_RESULT);
        assert_eq!(fixes.len(), 1);
        let view = request_view(&transcript);
        let texts: Vec<String> = view.iter().map(Message::text).collect();
        assert_eq!(texts, ["one", "x", "first", "two", "x", MISSING_RESULT]);
    }

    #[test]
    fn shared_view_reuses_a_consistent_transcript_and_repairs_others() {
        let mut messages = Vec::new();
        for i in 0..1000 {
            let id = format!("c{i}");
            messages.push(Message::user(format!("q{i}")));
            messages.push(assistant(&[&id]));
            messages.push(Message::tool_result(&call(&id), "r", false));
            messages.push(assistant(&[]));
        }
        let consistent = Arc::new(messages.clone());
        let view = request_view_shared(&consistent);
        assert!(
            Arc::ptr_eq(&view, &consistent),
            "a consistent transcript is copied"
        );
        assert_eq!(*view, request_view(&consistent));

        // A repair appended at the end: the view moves it beside its call.
        messages.push(assistant(&["late"]));
        messages.push(Message::user("interrupted"));
        messages.push(Message::tool_result(&call("late"), "late result", false));
        let repaired = Arc::new(messages);
        let view = request_view_shared(&repaired);
        assert!(!Arc::ptr_eq(&view, &repaired));
        assert_eq!(*view, request_view(&repaired));
        let tail: Vec<&str> = view[view.len() - 3..].iter().map(Message::role).collect();
        assert_eq!(tail, ["assistant", "tool", "user"]);

        // A missing result or a stray one also changes the view.
        let missing = Arc::new(vec![Message::user("go"), assistant(&["a"])]);
        assert_eq!(request_view_shared(&missing).len(), 3);
        let stray = Arc::new(vec![
            Message::user("go"),
            Message::tool_result(&call("zzz"), "stray", false),
        ]);
        assert_eq!(request_view_shared(&stray).len(), 1);
    }
}
