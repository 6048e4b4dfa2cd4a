//! Assembling an Anthropic Messages stream.
//!
//! Owns: the meaning of `message_start` (model, input and cache usage),
//! `content_block_start` (`text`, `thinking`, `redacted_thinking`, `tool_use`; other
//! types such as `server_tool_use`, `web_search_tool_result` or `compaction` are
//! skipped: they are not client tool calls), `content_block_delta` (`text_delta`,
//! `thinking_delta`, `signature_delta`, `input_json_delta`; `citations_delta` and
//! unknown deltas ignored), `message_delta` (stop reason, final usage), `message_stop`,
//! `ping` and `error`; an event whose data is not a JSON object is skipped as
//! malformed (`Flow::Skipped`). Does not own: HTTP or SSE framing.
//!
//! Usage: `message_start.message.usage` gives input/cache counts; `message_delta.usage`
//! is cumulative and overrides any field it carries. When it carries `iterations`
//! (server-side compaction ran), the totals are the sum over the iterations, since the
//! top-level numbers leave the compaction step out.

use serde_json::Value;

use super::body::{Assembler, Flow};
use super::http_error::kind_for_stream_error;
use super::openai_stream::parse_arguments;
use super::sse::SseEvent;
use super::{ProviderError, ProviderErrorKind, ProviderResponse, StreamEvent};
use crate::session::Usage;
use crate::session::message::{ContentBlock, ToolArgs, ToolCall};

#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    Skipped,
}

/// State of one Messages stream.
#[derive(Debug)]
pub(crate) struct MessagesAssembler {
    provider: String,
    /// Blocks by their `index`, in start order.
    blocks: Vec<(u64, Block)>,
    usage: Usage,
    stop_reason: Option<String>,
    model: Option<String>,
    stopped: bool,
}

impl MessagesAssembler {
    pub(crate) fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_string(),
            blocks: Vec::new(),
            usage: Usage::default(),
            stop_reason: None,
            model: None,
            stopped: false,
        }
    }

    fn block(&mut self, event: &Value) -> Option<&mut Block> {
        let index = event.get("index").and_then(Value::as_u64)?;
        self.blocks
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn on_block_start(&mut self, event: &Value, out: &mut Vec<StreamEvent>) {
        let Some(index) = event.get("index").and_then(Value::as_u64) else {
            return;
        };
        let cb = event.get("content_block").unwrap_or(&Value::Null);
        let s = |key: &str| {
            cb.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let block = match cb.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                let text = s("text");
                if !text.is_empty() {
                    out.push(StreamEvent::TextDelta(text.clone()));
                }
                Block::Text(text)
            }
            "thinking" => {
                let thinking = s("thinking");
                if !thinking.is_empty() {
                    out.push(StreamEvent::ThinkingDelta(thinking.clone()));
                }
                Block::Thinking {
                    thinking,
                    signature: s("signature"),
                }
            }
            "redacted_thinking" => Block::Redacted(s("data")),
            "tool_use" => {
                let (id, name) = (s("id"), s("name"));
                out.push(StreamEvent::ToolCallStarted {
                    id: id.clone(),
                    name: name.clone(),
                });
                let initial = cb.get("input").cloned().unwrap_or(Value::Null);
                Block::ToolUse {
                    id,
                    name,
                    json: String::new(),
                    initial,
                }
            }
            other => {
                tracing::debug!(provider = %self.provider, block = other, "skipping content block");
                Block::Skipped
            }
        };
        self.blocks.retain(|(i, _)| *i != index);
        self.blocks.push((index, block));
    }

    fn on_block_delta(&mut self, event: &Value, out: &mut Vec<StreamEvent>) {
        let Some(delta) = event.get("delta") else {
            return;
        };
        let s = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
        let kind = s("type");
        match (self.block(event), kind) {
            (Some(Block::Text(text)), "text_delta") => {
                let t = s("text");
                if !t.is_empty() {
                    text.push_str(t);
                    out.push(StreamEvent::TextDelta(t.to_string()));
                }
            }
            (Some(Block::Thinking { thinking, .. }), "thinking_delta") => {
                let t = s("thinking");
                if !t.is_empty() {
                    thinking.push_str(t);
                    out.push(StreamEvent::ThinkingDelta(t.to_string()));
                }
            }
            (Some(Block::Thinking { signature, .. }), "signature_delta") => {
                signature.push_str(s("signature"));
            }
            (Some(Block::ToolUse { id, json, .. }), "input_json_delta") => {
                let piece = s("partial_json");
                if !piece.is_empty() {
                    json.push_str(piece);
                    out.push(StreamEvent::ToolCallDelta {
                        id: id.clone(),
                        arguments: piece.to_string(),
                    });
                }
            }
            _ => {}
        }
    }

    fn on_message_delta(&mut self, event: &Value) {
        if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
            self.stop_reason = Some(reason.to_string());
        }
        let Some(usage) = event.get("usage") else {
            return;
        };
        match usage.get("iterations").and_then(Value::as_array) {
            Some(iterations) if !iterations.is_empty() => {
                let mut total = Usage::default();
                for it in iterations {
                    let mut u = Usage::default();
                    apply_usage(&mut u, it);
                    total.add(&u);
                }
                self.usage = total;
            }
            _ => apply_usage(&mut self.usage, usage),
        }
    }

    fn error(&self, event: &Value) -> ProviderError {
        let err = event.get("error").unwrap_or(event);
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("the stream reported an error")
            .to_string();
        let (kind, status) = kind_for_stream_error(event, &message);
        ProviderError {
            status,
            ..ProviderError::new(kind, &self.provider, message)
        }
    }
}

/// Overrides the fields of `usage` that `json` carries (`input_tokens`,
/// `output_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`).
fn apply_usage(usage: &mut Usage, json: &Value) {
    let set = |field: &mut u64, key: &str| {
        if let Some(n) = json.get(key).and_then(Value::as_u64) {
            *field = n;
        }
    };
    set(&mut usage.input_tokens, "input_tokens");
    set(&mut usage.output_tokens, "output_tokens");
    set(&mut usage.cache_read_tokens, "cache_read_input_tokens");
    set(
        &mut usage.cache_creation_tokens,
        "cache_creation_input_tokens",
    );
}

impl Assembler for MessagesAssembler {
    fn on_event(
        &mut self,
        event: SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, ProviderError> {
        let json: Value = match serde_json::from_str(event.data.trim()) {
            Ok(v @ Value::Object(_)) => v,
            Ok(other) => {
                tracing::warn!(provider = %self.provider, "skipping an event that is not an object: {other}");
                return Ok(Flow::Skipped);
            }
            Err(_) if event.data.trim().is_empty() => Value::Null,
            Err(e) => {
                tracing::warn!(provider = %self.provider, "skipping a malformed event: {e}");
                return Ok(Flow::Skipped);
            }
        };
        let kind = json
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "message_start" => {
                let message = json.get("message").unwrap_or(&Value::Null);
                if let Some(model) = message.get("model").and_then(Value::as_str) {
                    self.model = Some(model.to_string());
                }
                if let Some(usage) = message.get("usage") {
                    apply_usage(&mut self.usage, usage);
                }
            }
            "content_block_start" => self.on_block_start(&json, out),
            "content_block_delta" => self.on_block_delta(&json, out),
            "message_delta" => self.on_message_delta(&json),
            "message_stop" => {
                self.stopped = true;
                return Ok(Flow::Done);
            }
            "error" => return Err(self.error(&json)),
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self) -> Result<ProviderResponse, ProviderError> {
        if !self.stopped && self.stop_reason.is_none() {
            return Err(ProviderError::new(
                ProviderErrorKind::Network,
                &self.provider,
                "the response stream ended before message_stop",
            ));
        }
        let mut response = ProviderResponse {
            usage: self.usage,
            stop_reason: self.stop_reason.take(),
            model: self.model.take(),
            ..Default::default()
        };
        for (_, block) in std::mem::take(&mut self.blocks) {
            match block {
                Block::Text(text) if text.is_empty() => {}
                Block::Text(text) => match response.content.last_mut() {
                    Some(ContentBlock::Text { text: prev }) => {
                        *prev = format!("{prev}{text}").into()
                    }
                    _ => response
                        .content
                        .push(ContentBlock::Text { text: text.into() }),
                },
                Block::Thinking {
                    thinking,
                    signature,
                } => response.content.push(ContentBlock::Thinking {
                    thinking: thinking.into(),
                    signature: (!signature.is_empty()).then_some(signature),
                }),
                Block::Redacted(data) => response
                    .content
                    .push(ContentBlock::RedactedThinking { data }),
                Block::ToolUse {
                    id,
                    name,
                    json,
                    initial,
                } => {
                    let input = ToolArgs::from(if json.trim().is_empty() && initial.is_object() {
                        initial
                    } else {
                        parse_arguments(&json)
                    });
                    response.content.push(ContentBlock::ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        input: input.clone(),
                    });
                    response.tool_calls.push(ToolCall {
                        id,
                        tool: name,
                        arguments: input,
                    });
                }
                Block::Skipped => {}
            }
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::sse::decode_all;

    fn run(body: &str) -> (Vec<StreamEvent>, Result<ProviderResponse, ProviderError>) {
        let mut a = MessagesAssembler::new("anthropic");
        let mut out = Vec::new();
        for ev in decode_all(body.as_bytes()) {
            match a.on_event(ev, &mut out) {
                Ok(Flow::Continue | Flow::Skipped) => {}
                Ok(Flow::Done) => break,
                Err(e) => return (out, Err(e)),
            }
        }
        let r = a.finish();
        (out, r)
    }

    const START: &str = "data: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\n\n";

    #[test]
    fn usage_overrides_and_iterations_sum() {
        let body = format!(
            "{START}data: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"mystery\"}}}}\n\n\
data: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"mystery_delta\",\"x\":1}}}}\n\n\
data: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{{\"output_tokens\":7}}}}\n\n\
data: {{\"type\":\"message_stop\"}}\n\n"
        );
        let r = run(&body).1.unwrap();
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 7,
                cache_read_tokens: 4,
                cache_creation_tokens: 0
            }
        );
        assert!(r.content.is_empty());
        let body = format!(
            "{START}data: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{{\"output_tokens\":2,\"iterations\":[{{\"input_tokens\":5,\"output_tokens\":3,\"cache_read_input_tokens\":9}},{{\"input_tokens\":6,\"output_tokens\":2}}]}}}}\n\n"
        );
        let r = run(&body).1.unwrap();
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 11,
                output_tokens: 5,
                cache_read_tokens: 9,
                cache_creation_tokens: 0
            }
        );
    }

    #[test]
    fn tool_input_streams_as_deltas_and_unreadable_events_are_skipped() {
        let body = format!(
            "{START}data: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"grep\",\"input\":{{}}}}}}\n\n\
data: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{{\\\"q\\\":\"}}}}\n\n\
data: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"1}}\"}}}}\n\n\
data: {{\"type\":\"message_stop\"}}\n\n"
        );
        let (out, r) = run(&body);
        let delta = |arguments: &str| StreamEvent::ToolCallDelta {
            id: "t1".into(),
            arguments: arguments.into(),
        };
        assert_eq!(&out[1..], &[delta("{\"q\":"), delta("1}")]);
        let r = r.unwrap();
        assert_eq!(r.tool_calls[0].arguments, serde_json::json!({"q": 1}));
        // The block and the entry of a call hold its arguments once.
        let ContentBlock::ToolCall { input, .. } = &r.content[0] else {
            panic!("{:?}", r.content)
        };
        assert!(ToolArgs::shares(input, &r.tool_calls[0].arguments));

        let mut a = MessagesAssembler::new("anthropic");
        let mut out = Vec::new();
        for data in ["{\"type\": \"message_st", "garbage", "42", "null"] {
            let ev = SseEvent {
                event: Some("message_start".into()),
                data: data.into(),
            };
            assert_eq!(a.on_event(ev, &mut out).unwrap(), Flow::Skipped, "{data}");
        }
        let ping = SseEvent {
            event: Some("ping".into()),
            data: String::new(),
        };
        assert_eq!(a.on_event(ping, &mut out).unwrap(), Flow::Continue);
    }

    #[test]
    fn error_event_kinds_and_truncation() {
        let body = format!(
            "{START}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}}}\n\n"
        );
        let e = run(&body).1.unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ProviderErrorKind::RateLimit, "slow down")
        );
        for (error_type, kind) in [
            ("api_error", ProviderErrorKind::Server),
            ("overloaded_error", ProviderErrorKind::Overloaded),
            ("invalid_request_error", ProviderErrorKind::InvalidRequest),
            ("brand_new_error", ProviderErrorKind::Stream),
        ] {
            let body = format!(
                "{START}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"{error_type}\",\"message\":\"m\"}}}}\n\n"
            );
            assert_eq!(run(&body).1.unwrap_err().kind, kind, "{error_type}");
        }
        let body = format!(
            "{START}data: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
data: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"par\"}}}}\n\n"
        );
        let (out, r) = run(&body);
        assert_eq!(out, vec![StreamEvent::TextDelta("par".into())]);
        assert_eq!(r.unwrap_err().kind, ProviderErrorKind::Network);
    }
}
