//! Assembling an OpenAI Chat Completions stream (`chat.completion.chunk` events).
//!
//! Owns: the meaning of each chunk as OpenAI and the OpenAI-compatible servers send
//! it (Azure, OpenRouter, DeepSeek, Mistral, Groq, vLLM, llama.cpp/llama-box, Ollama,
//! Perplexity): `delta.content`, `delta.refusal` (shown as text),
//! `delta.reasoning_content` / `delta.reasoning` (thinking), `delta.tool_calls`
//! assembled by `index`, `finish_reason`, `usage` on any chunk (last wins), and error
//! objects / `event: error` (their `code`/`type`/`status` give the kind, through
//! `http_error::kind_for_stream_error`, so a 429/5xx before any output is retried).
//! An event whose data is not a JSON object is skipped as malformed (`Flow::Skipped`).
//! Does not own: HTTP or SSE framing (`transport`, `sse`).
//!
//! Tool-call deltas: the first delta of an `index` carries `id` and `function.name`;
//! later ones append `function.arguments`. Servers differ: some repeat the name on
//! every delta (kept once), send `arguments: null`, send `""` then a full `"{}"`, or
//! send the whole call in one chunk. A missing id becomes `call_<index>`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::body::{Assembler, Flow};
use super::http_error::{api_error_message, kind_for_stream_error};
use super::sse::SseEvent;
use super::{ProviderError, ProviderErrorKind, ProviderResponse, StreamEvent};
use crate::session::Usage;
use crate::session::message::{ContentBlock, ToolArgs, ToolCall};

/// Parses streamed tool-call arguments: empty → `{}`; valid JSON → that value; one
/// or more JSON values back to back (a server that re-sent the full arguments) → the
/// last one; anything else → `{"_raw": "<the text>"}` so nothing is lost.
pub fn parse_arguments(text: &str) -> Value {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Value::Object(Map::new());
    }
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        return v;
    }
    let values: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(trimmed)
        .into_iter::<Value>()
        .collect();
    match values {
        Ok(mut vs) if !vs.is_empty() => vs.pop().unwrap_or_default(),
        _ => {
            let mut raw = Map::new();
            raw.insert("_raw".into(), Value::String(text.to_string()));
            Value::Object(raw)
        }
    }
}

#[derive(Debug)]
enum Part {
    Text(String),
    Thinking(String),
    Tool(u64),
}

#[derive(Debug, Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
    started: bool,
}

/// State of one Chat Completions stream.
#[derive(Debug)]
pub(crate) struct ChatAssembler {
    provider: String,
    parts: Vec<Part>,
    calls: BTreeMap<u64, PendingCall>,
    usage: Usage,
    stop_reason: Option<String>,
    model: Option<String>,
    done: bool,
}

impl ChatAssembler {
    pub(crate) fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_string(),
            parts: Vec::new(),
            calls: BTreeMap::new(),
            usage: Usage::default(),
            stop_reason: None,
            model: None,
            done: false,
        }
    }

    /// The error an in-stream error object stands for: the kind its
    /// `code`/`type`/`status` names (`Stream` when none is known), the status it
    /// carries, and the API's message (else the raw `fallback` text).
    fn stream_error(&self, json: Option<&Value>, fallback: &str) -> ProviderError {
        let message = json
            .and_then(api_error_message)
            .unwrap_or_else(|| fallback.to_string());
        let (kind, status) = json.map_or((ProviderErrorKind::Stream, None), |j| {
            kind_for_stream_error(j, &message)
        });
        ProviderError {
            status,
            ..ProviderError::new(kind, &self.provider, message)
        }
    }

    fn push_text(&mut self, text: &str, thinking: bool, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        match (self.parts.last_mut(), thinking) {
            (Some(Part::Text(t)), false) | (Some(Part::Thinking(t)), true) => t.push_str(text),
            (_, false) => self.parts.push(Part::Text(text.to_string())),
            (_, true) => self.parts.push(Part::Thinking(text.to_string())),
        }
        out.push(if thinking {
            StreamEvent::ThinkingDelta(text.to_string())
        } else {
            StreamEvent::TextDelta(text.to_string())
        });
    }

    fn on_tool_delta(&mut self, position: usize, delta: &Value, out: &mut Vec<StreamEvent>) {
        let index = delta
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position as u64);
        if !self.calls.contains_key(&index) {
            self.parts.push(Part::Tool(index));
        }
        let call = self.calls.entry(index).or_default();
        if let Some(id) = delta.get("id").and_then(Value::as_str)
            && call.id.is_empty()
        {
            call.id = id.to_string();
        }
        let function = delta.get("function");
        if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str)
            && call.name.is_empty()
        {
            call.name = name.to_string();
        }
        let piece = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(s)) => {
                call.arguments.push_str(s);
                s.clone()
            }
            Some(v @ Value::Object(_)) => {
                call.arguments = v.to_string();
                call.arguments.clone()
            }
            _ => String::new(),
        };
        if !call.started && !call.name.is_empty() {
            call.started = true;
            if call.id.is_empty() {
                call.id = format!("call_{index}");
            }
            out.push(StreamEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
        if !piece.is_empty() {
            out.push(StreamEvent::ToolCallDelta {
                id: call.id.clone(),
                arguments: piece,
            });
        }
    }

    fn on_chunk(&mut self, chunk: &Value, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(self.stream_error(Some(chunk), &err.to_string()));
        }
        // A placeholder (llama.cpp's server says `-` when started without an alias)
        // names no model: the configured one stays.
        if let Some(model) = chunk.get("model").and_then(Value::as_str)
            && !matches!(model.trim(), "" | "-")
        {
            self.model = Some(model.to_string());
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_from(usage);
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.get("delta") {
                self.on_delta(delta, out);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.stop_reason = Some(reason.to_string());
            }
        }
        Ok(())
    }

    fn on_delta(&mut self, delta: &Value, out: &mut Vec<StreamEvent>) {
        let text = |key: &str| delta.get(key).and_then(Value::as_str);
        if let Some(thinking) = text("reasoning_content").or_else(|| text("reasoning")) {
            self.push_text(thinking, true, out);
        }
        if let Some(content) = text("content") {
            self.push_text(content, false, out);
        }
        if let Some(refusal) = text("refusal") {
            self.push_text(refusal, false, out);
        }
        let calls = delta.get("tool_calls").and_then(Value::as_array);
        for (position, call) in calls.into_iter().flatten().enumerate() {
            self.on_tool_delta(position, call, out);
        }
    }
}

/// Chat Completions `usage` → [`Usage`]: `prompt_tokens`, `completion_tokens`,
/// cache reads from `prompt_tokens_details.cached_tokens` or DeepSeek's
/// `prompt_cache_hit_tokens`, cache writes from `prompt_tokens_details.cache_write_tokens`
/// (OpenRouter). `input_tokens` is the API's `prompt_tokens` (it includes cached ones).
pub fn usage_from(usage: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let details = usage.get("prompt_tokens_details");
    let cached = n(details.and_then(|d| d.get("cached_tokens")));
    Usage {
        input_tokens: n(usage.get("prompt_tokens")),
        output_tokens: n(usage.get("completion_tokens")),
        cache_read_tokens: cached.max(n(usage.get("prompt_cache_hit_tokens"))),
        cache_creation_tokens: n(details.and_then(|d| d.get("cache_write_tokens"))),
    }
}

impl Assembler for ChatAssembler {
    fn on_event(
        &mut self,
        event: SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, ProviderError> {
        let data = event.data.trim();
        if event.event.as_deref() == Some("error") {
            let json: Option<Value> = serde_json::from_str(data).ok();
            return Err(self.stream_error(json.as_ref(), data));
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        match serde_json::from_str::<Value>(data) {
            Ok(chunk) if chunk.is_object() => self.on_chunk(&chunk, out)?,
            Ok(other) => {
                tracing::warn!(provider = %self.provider, "skipping a chunk that is not an object: {other}");
                return Ok(Flow::Skipped);
            }
            Err(e) => {
                tracing::warn!(provider = %self.provider, "skipping a malformed chunk: {e}");
                return Ok(Flow::Skipped);
            }
        }
        Ok(Flow::Continue)
    }

    fn finish(&mut self) -> Result<ProviderResponse, ProviderError> {
        if !self.done && self.stop_reason.is_none() {
            return Err(ProviderError::new(
                ProviderErrorKind::Network,
                &self.provider,
                "the response stream ended before the model finished (no finish_reason and no [DONE])",
            ));
        }
        let mut response = ProviderResponse {
            usage: self.usage,
            stop_reason: self.stop_reason.take(),
            model: self.model.take(),
            ..Default::default()
        };
        for part in std::mem::take(&mut self.parts) {
            match part {
                Part::Text(text) => response
                    .content
                    .push(ContentBlock::Text { text: text.into() }),
                Part::Thinking(thinking) => response.content.push(ContentBlock::Thinking {
                    thinking: thinking.into(),
                    signature: None,
                }),
                Part::Tool(index) => {
                    let Some(call) = self.calls.remove(&index) else {
                        continue;
                    };
                    let id = if call.id.is_empty() {
                        format!("call_{index}")
                    } else {
                        call.id
                    };
                    let arguments = ToolArgs::from(parse_arguments(&call.arguments));
                    response.content.push(ContentBlock::ToolCall {
                        id: id.clone(),
                        name: call.name.clone(),
                        input: arguments.clone(),
                    });
                    response.tool_calls.push(ToolCall {
                        id,
                        tool: call.name,
                        arguments,
                    });
                }
            }
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::sse::decode_all;
    use serde_json::json;

    fn run(body: &str) -> (Vec<StreamEvent>, Result<ProviderResponse, ProviderError>) {
        let mut a = ChatAssembler::new("openai");
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

    #[test]
    fn a_placeholder_model_name_is_no_model_name() {
        let body = |model: &str| {
            format!(
                "data: {{\"model\":\"{model}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"hi\"}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
            )
        };
        assert_eq!(run(&body("-")).1.unwrap().model, None);
        assert_eq!(run(&body(" ")).1.unwrap().model, None);
        assert_eq!(
            run(&body("qwen2.5-coder")).1.unwrap().model.as_deref(),
            Some("qwen2.5-coder")
        );
    }

    #[test]
    fn arguments_parse_leniently() {
        assert_eq!(parse_arguments(""), json!({}));
        assert_eq!(parse_arguments(" {\"a\":1} "), json!({"a":1}));
        assert_eq!(parse_arguments("{}{\"a\":2}"), json!({"a":2}));
        assert_eq!(parse_arguments("{\"a\":"), json!({"_raw":"{\"a\":"}));
    }

    #[test]
    fn tool_calls_by_index_with_repeated_names_null_and_missing_ids() {
        let body = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"a","arguments":null}},{"index":1,"id":"x","function":{"name":"b","arguments":"{\"q\""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"b","arguments":":1}"}}]},"finish_reason":"tool_calls"}]}

data: [DONE]

"#;
        let (out, r) = run(body);
        let r = r.unwrap();
        assert_eq!(
            out,
            vec![
                StreamEvent::ToolCallStarted {
                    id: "call_0".into(),
                    name: "a".into()
                },
                StreamEvent::ToolCallStarted {
                    id: "x".into(),
                    name: "b".into()
                },
                StreamEvent::ToolCallDelta {
                    id: "x".into(),
                    arguments: "{\"q\"".into()
                },
                StreamEvent::ToolCallDelta {
                    id: "x".into(),
                    arguments: ":1}".into()
                },
            ]
        );
        assert_eq!(r.tool_calls[0].arguments, json!({}));
        assert_eq!(r.tool_calls[1].tool, "b");
        assert_eq!(r.tool_calls[1].arguments, json!({"q":1}));
        // The block and the entry of a call hold its arguments once.
        let ContentBlock::ToolCall { input, .. } = &r.content[1] else {
            panic!("{:?}", r.content)
        };
        assert!(ToolArgs::shares(input, &r.tool_calls[1].arguments));
        assert_eq!(r.stop_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn data_that_is_not_a_json_object_is_skipped_as_malformed() {
        let mut a = ChatAssembler::new("openai");
        let mut out = Vec::new();
        for data in ["{\"choices\": [", "garbage", "42", "[1]", "null"] {
            let ev = SseEvent {
                event: None,
                data: data.into(),
            };
            assert_eq!(a.on_event(ev, &mut out).unwrap(), Flow::Skipped, "{data}");
        }
        for data in ["", "{}", "[DONE]"] {
            let ev = SseEvent {
                event: None,
                data: data.into(),
            };
            assert_ne!(a.on_event(ev, &mut out).unwrap(), Flow::Skipped, "{data}");
        }
        assert!(out.is_empty());
    }

    #[test]
    fn error_chunk_after_text_and_truncation() {
        let (out, r) = run(
            "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\n",
        );
        assert_eq!(out, vec![StreamEvent::TextDelta("hi".into())]);
        let e = r.unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ProviderErrorKind::Stream, "boom")
        );
        let (_, r) = run("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n");
        assert_eq!(r.unwrap_err().kind, ProviderErrorKind::Network);
    }

    #[test]
    fn in_stream_errors_take_the_kind_their_code_names() {
        use ProviderErrorKind::*;
        let cases = [
            (
                r#"{"error":{"code":429,"message":"m"}}"#,
                RateLimit,
                Some(429),
            ),
            (
                r#"{"error":{"code":"503","message":"m"}}"#,
                Server,
                Some(503),
            ),
            (
                r#"{"error":{"code":529,"message":"m"}}"#,
                Overloaded,
                Some(529),
            ),
            (
                r#"{"error":{"code":400,"message":"m"}}"#,
                InvalidRequest,
                Some(400),
            ),
            (
                r#"{"error":{"code":"rate_limit_exceeded","message":"m"}}"#,
                RateLimit,
                None,
            ),
            (
                r#"{"error":{"type":"server_error","message":"m"}}"#,
                Server,
                None,
            ),
            (
                r#"{"error":{"type":"overloaded","message":"m"}}"#,
                Overloaded,
                None,
            ),
            (
                r#"{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"m"}}"#,
                ContextTooLong,
                None,
            ),
            (
                r#"{"error":{"code":"insufficient_quota","message":"m"}}"#,
                InvalidRequest,
                None,
            ),
            (
                r#"{"error":{"type":"invalid_request_error","code":"tool_use_failed","message":"m","status_code":400}}"#,
                InvalidRequest,
                Some(400),
            ),
            (
                r#"{"error":{"type":"authentication_error","message":"m"}}"#,
                Auth,
                None,
            ),
            (
                r#"{"error":{"code":"brand_new","message":"m"}}"#,
                Stream,
                None,
            ),
        ];
        for (chunk, kind, status) in cases {
            let (out, r) = run(&format!(
                "data: {{\"choices\":[{{\"delta\":{{\"content\":\"hi\"}}}}]}}\n\ndata: {chunk}\n\n"
            ));
            assert_eq!(out, vec![StreamEvent::TextDelta("hi".into())], "{chunk}");
            let e = r.unwrap_err();
            assert_eq!((e.kind, e.status), (kind, status), "{chunk}");
            assert_eq!(e.message, "m", "{chunk}");
            // The same object as an `event: error`.
            let (_, r) = run(&format!("event: error\ndata: {chunk}\n\n"));
            let e = r.unwrap_err();
            assert_eq!((e.kind, e.status), (kind, status), "event: error {chunk}");
        }
        // An `event: error` whose data is not JSON keeps its text, as a Stream error.
        let (_, r) = run("event: error\ndata: upstream died\n\n");
        let e = r.unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str(), e.status),
            (Stream, "upstream died", None)
        );
    }
}
