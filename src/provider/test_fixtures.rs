//! Test fixtures shared by the provider request encoders' tests.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::provider::{ChatRequest, ToolSpec};
use crate::session::message::{
    AssistantMessage, ContentBlock, Message, ToolCall, ToolMessage, UserMessage,
};

/// A transcript with every conversion edge: system notes, empty user text,
/// assistants with nothing to send, several text blocks, calls only in blocks or
/// only in `tool_calls`, null/string/array arguments, results split by a system
/// note and by an empty user text, and a call without text.
pub(crate) fn edge_request() -> ChatRequest {
    fn user(content: &str) -> Message {
        Message::User(UserMessage {
            content: content.into(),
            ..Default::default()
        })
    }
    fn note(content: &str) -> Message {
        Message::System(UserMessage {
            content: content.into(),
            ..Default::default()
        })
    }
    fn result(id: &str, content: &str, is_error: bool) -> Message {
        Message::Tool(ToolMessage {
            tool_call_id: id.into(),
            content: content.into(),
            is_error,
            ..Default::default()
        })
    }
    fn assistant(content: Vec<ContentBlock>, calls: Vec<ToolCall>) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            tool_calls: calls,
            ..Default::default()
        })
    }
    let text = |t: &str| ContentBlock::Text { text: t.into() };
    let block = |id: &str, name: &str, input: Value| ContentBlock::ToolCall {
        id: id.into(),
        name: name.into(),
        input: input.into(),
    };
    let call = |id: &str, tool: &str, arguments: Value| ToolCall {
        id: id.into(),
        tool: tool.into(),
        arguments: arguments.into(),
    };
    let thinking = ContentBlock::Thinking {
        thinking: "hmm".into(),
        signature: None,
    };
    let redacted = ContentBlock::RedactedThinking { data: "xx".into() };
    ChatRequest {
        model: "m".into(),
        system: "Sys prompt".into(),
        messages: Arc::new(vec![
            note("note one"),
            user(""),
            assistant(vec![], vec![]),
            assistant(vec![thinking, text(""), redacted], vec![]),
            assistant(
                vec![
                    text("a"),
                    text("b \"q\" ü"),
                    block("k1", "grep", Value::Null),
                    block("k2", "raw", json!("str-args")),
                ],
                vec![
                    call("k3", "num", json!([1, 2.5])),
                    call("k1", "grep", json!({"z": 1, "a": 2})),
                ],
            ),
            result("k1", "r1", false),
            note("note two"),
            result("k2", "", true),
            user(""),
            result("k3", "r3\n", false),
            user("after"),
            user("again"),
            assistant(vec![], vec![call("k4", "t", json!({}))]),
        ]),
        tools: vec![
            ToolSpec {
                name: "grep".into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
            },
            ToolSpec {
                name: "t".into(),
                description: String::new(),
                input_schema: Value::Null,
            },
        ],
        max_tokens: None,
        max_time: None,
        config: json!({"stop": ["x"], "seed": 7, "top_k": 3,
            "thinking": {"type": "enabled", "budget_tokens": 1024}, "top_p": null,
            "temperature": 0.7, "stop_sequences": ["s"], "reasoning_effort": "low"}),
    }
}
