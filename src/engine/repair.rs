//! Transcript repair before a turn (SPEC §7 "Resume").
//!
//! Owns: finding tool calls that never got a result (a crash or kill mid-tool) and
//! making the synthetic "cancelled" results that are appended for them, and the
//! request view of a transcript that places every result right after its call.
//! Does not own: writing the transcript (`session::store`); existing lines are never
//! rewritten — repairs are appended.

use serde_json::json;

use crate::session::message::{Message, ToolCall};

/// The content of a synthetic result for a call that has none.
pub const MISSING_RESULT: &str = "cancelled: no result was recorded";

/// Synthetic `{"role":"tool", …, "content": "cancelled: no result was recorded",
/// "is_error": true}` messages, one per tool call in `transcript` that has no result,
/// in call order. Empty when the transcript is consistent.
pub fn missing_results(transcript: &[Message]) -> Vec<Message> {
    pair_results(transcript)
        .into_iter()
        .flat_map(|(_, calls)| calls)
        .filter(|(_, result)| result.is_none())
        .map(|(call, _)| synthetic_result(call))
        .collect()
}

/// The synthetic result for `call`, marked `metadata.synthetic = true`.
pub fn synthetic_result(call: &ToolCall) -> Message {
    let mut message = Message::tool_result(call, MISSING_RESULT, true);
    if let Message::Tool(t) = &mut message {
        t.metadata = Some(json!({"synthetic": true}));
    }
    message
}

/// The transcript as sent to a provider: every tool result directly after the
/// assistant message holding its call (in call order), results without a call dropped,
/// calls without a result given a synthetic one. Providers reject any other order,
/// and repairs are appended at the end of the file, not beside their call.
pub fn request_view(transcript: &[Message]) -> Vec<Message> {
    let mut pairs = pair_results(transcript).into_iter().peekable();
    let mut out = Vec::with_capacity(transcript.len());
    for (index, message) in transcript.iter().enumerate() {
        match message {
            Message::Tool(_) => {}
            Message::Assistant(_) => {
                out.push(message.clone());
                if let Some((_, calls)) = pairs.next_if(|(at, _)| *at == index) {
                    for (call, result) in calls {
                        out.push(match result {
                            Some(at) => transcript[at].clone(),
                            None => synthetic_result(call),
                        });
                    }
                }
            }
            other => out.push(other.clone()),
        }
    }
    out
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
            arguments: json!({"path": "a"}),
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
        let fixes = missing_results(&transcript);
        assert_eq!(fixes.len(), 1);
        let line = serde_json::to_value(&fixes[0]).unwrap();
        assert_eq!(line["role"], "tool");
        assert_eq!(line["tool_call_id"], "b");
        assert_eq!(line["content"], MISSING_RESULT);
        assert_eq!(line["is_error"], true);
        assert!(missing_results(&[Message::user("x"), assistant(&[])]).is_empty());
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
        let fixes = missing_results(&transcript);
        assert_eq!(fixes.len(), 1);
        let view = request_view(&transcript);
        let texts: Vec<String> = view.iter().map(Message::text).collect();
        assert_eq!(texts, ["one", "x", "first", "two", "x", MISSING_RESULT]);
    }
}
