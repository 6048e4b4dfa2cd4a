//! Request bodies sent for a transcript with tool calls, and model listing.

use arbor::provider::{ChatRequest, Provider, ToolSpec};
use arbor::session::message::{
    AssistantMessage, ContentBlock, Message, ToolArgs, ToolCall, ToolMessage, UserMessage,
};
use serde_json::json;

use super::server::{Captured, Mode, Reply, Server};
use super::{anthropic_at, openai_at, request, run};

/// A transcript with thinking, text, two tool calls (one only in `tool_calls`), their
/// results (one failed) and a final user message.
fn transcript_request(model: &str) -> ChatRequest {
    let glob_args = ToolArgs::from(json!({"pattern": "*.rs"}));
    ChatRequest {
        model: model.into(),
        system: "You are terse.".into(),
        messages: vec![
            Message::User(UserMessage {
                content: "List the files".into(),
                ..Default::default()
            }),
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentBlock::Thinking {
                        thinking: "I should look".into(),
                        signature: Some("sig1".into()),
                    },
                    ContentBlock::Text {
                        text: "Looking.".into(),
                    },
                    ContentBlock::ToolCall {
                        id: "c1".into(),
                        name: "glob".into(),
                        input: glob_args.clone(),
                    },
                ],
                tool_calls: vec![
                    ToolCall {
                        id: "c1".into(),
                        tool: "glob".into(),
                        arguments: glob_args,
                    },
                    ToolCall {
                        id: "c2".into(),
                        tool: "read_file".into(),
                        arguments: json!({"path": "a.rs"}).into(),
                    },
                ],
                ..Default::default()
            }),
            Message::Tool(ToolMessage {
                name: "glob".into(),
                tool_call_id: "c1".into(),
                content: "a.rs\nb.rs".into(),
                ..Default::default()
            }),
            Message::Tool(ToolMessage {
                name: "read_file".into(),
                tool_call_id: "c2".into(),
                content: "boom".into(),
                is_error: true,
                ..Default::default()
            }),
            Message::User(UserMessage {
                content: "thanks".into(),
                ..Default::default()
            }),
        ]
        .into(),
        tools: vec![ToolSpec {
            name: "glob".into(),
            description: "Find files".into(),
            input_schema: json!({"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}),
        }],
        max_tokens: Some(100),
        max_time: None,
        config: json!({"temperature": 0.2, "api_key": "must-not-be-sent", "base_url": "x"}),
    }
}

pub const OPENAI_OK: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
const ANTHROPIC_OK: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-test\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

#[tokio::test]
async fn openai_request_body_for_a_transcript_with_tool_calls() {
    let server = Server::always(Reply::sse(OPENAI_OK.into(), Mode::Whole)).await;
    let out = run(
        &openai_at(&server, Some("sk-req"), None),
        transcript_request("gpt-test"),
    )
    .await;
    assert_eq!(out.completed.unwrap().text(), "ok");
    let req: Captured = server.captured().remove(0);
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(req.header("authorization"), Some("Bearer sk-req"));
    let want = json!({
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "List the files"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "glob", "arguments": "{\"pattern\":\"*.rs\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.rs\nb.rs"},
            {"role": "tool", "tool_call_id": "c2", "content": "boom"},
            {"role": "user", "content": "thanks"},
        ],
        "stream": true,
        "stream_options": {"include_usage": true},
        "tools": [{"type": "function", "function": {
            "name": "glob", "description": "Find files",
            "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
        }}],
        "max_tokens": 100,
        "temperature": 0.2,
    });
    assert_eq!(req.json(), want);
}

#[tokio::test]
async fn anthropic_request_body_for_a_transcript_with_tool_calls() {
    let server = Server::always(Reply::sse(ANTHROPIC_OK.into(), Mode::Whole)).await;
    let out = run(
        &anthropic_at(&server, Some("sk-ant-req")),
        transcript_request(""),
    )
    .await;
    let r = out.completed.unwrap();
    assert_eq!(
        (
            r.text().as_str(),
            r.usage.input_tokens,
            r.usage.output_tokens
        ),
        ("ok", 3, 2)
    );
    let req = server.captured().remove(0);
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(req.header("x-api-key"), Some("sk-ant-req"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("authorization"), None);
    let want = json!({
        "model": "claude-test",
        "max_tokens": 100,
        "stream": true,
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "List the files"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should look", "signature": "sig1"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "c1", "name": "glob", "input": {"pattern": "*.rs"}},
                {"type": "tool_use", "id": "c2", "name": "read_file", "input": {"path": "a.rs"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "a.rs\nb.rs"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "boom", "is_error": true},
                {"type": "text", "text": "thanks"},
            ]},
        ],
        "tools": [{"name": "glob", "description": "Find files",
            "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}}],
        "temperature": 0.2,
    });
    assert_eq!(req.json(), want);
}

#[tokio::test]
async fn list_models_and_lazy_model_resolution() {
    let server = Server::start(|req| {
        if req.path.starts_with("/v1/models") {
            Reply::json(200, r#"{"object":"list","data":[{"id":"qwen2.5-coder-0.5b","object":"model"},{"id":"other"}]}"#)
        } else {
            Reply::sse(OPENAI_OK.into(), Mode::Whole)
        }
    })
    .await;
    let p = openai_at(&server, Some("sk-list"), None);
    assert_eq!(
        p.list_models().await.unwrap(),
        ["qwen2.5-coder-0.5b", "other"]
    );
    assert_eq!(
        server.captured()[0].header("authorization"),
        Some("Bearer sk-list")
    );

    assert_eq!(p.default_model(), "");
    for _ in 0..2 {
        assert!(run(&p, request("")).await.completed.is_some());
    }
    let paths: Vec<String> = server.captured().iter().map(|c| c.path.clone()).collect();
    // One list for list_models(), one for the lazy resolution, then cached.
    assert_eq!(
        paths,
        [
            "/v1/models",
            "/v1/models",
            "/v1/chat/completions",
            "/v1/chat/completions"
        ]
    );
    assert_eq!(server.captured()[2].json()["model"], "qwen2.5-coder-0.5b");
    assert_eq!(p.default_model(), "qwen2.5-coder-0.5b");

    let server = Server::always(Reply::json(
        200,
        r#"{"data":[{"id":"claude-sonnet-4-5","type":"model"}],"has_more":false}"#,
    ))
    .await;
    let a = anthropic_at(&server, Some("sk-ant-list"));
    assert_eq!(a.list_models().await.unwrap(), ["claude-sonnet-4-5"]);
    let req = server.captured().remove(0);
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("GET", "/v1/models?limit=1000")
    );
    assert_eq!(req.header("x-api-key"), Some("sk-ant-list"));
}
