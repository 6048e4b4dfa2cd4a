//! The Messages request body, serialized straight from the borrowed [`ChatRequest`]
//! to bytes.
//!
//! Owns: the body's JSON shape (see the parent module's "Message conversion") and its
//! key order: `model`, `max_tokens`, `stream`, `system`, `messages`, `tools`, then the
//! passed config keys. Does not own: sending it (`anthropic`, `transport`).
//!
//! Nothing of the transcript is copied: no `serde_json::Value` tree of the body is
//! built, so a request over a long history costs its bytes, not a second transcript.

use std::borrow::Cow;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::DEFAULT_MAX_TOKENS;
use crate::provider::image_parts::{ContentParts, ImageForm};
use crate::provider::{ChatRequest, ToolSpec};
use crate::session::message::{AssistantMessage, ContentBlock, Message, UserMessage};

/// `request.config` keys copied into the body when present and not null.
const CONFIG_KEYS: [&str; 5] = [
    "temperature",
    "top_p",
    "top_k",
    "thinking",
    "stop_sequences",
];

/// The body's JSON bytes. Errors only if serde_json refuses a value (it has none to
/// refuse here: every key is a string).
pub fn request_bytes(request: &ChatRequest, model: &str) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Body { request, model })
}

/// The body as a JSON value (same content and key order as [`request_bytes`]).
pub fn request_value(request: &ChatRequest, model: &str) -> serde_json::Result<Value> {
    serde_json::to_value(Body { request, model })
}

struct Body<'a> {
    request: &'a ChatRequest,
    model: &'a str,
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.request;
        let system = system(r);
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry("max_tokens", &r.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS))?;
        map.serialize_entry("stream", &true)?;
        if !system.is_empty() {
            map.serialize_entry("system", &system)?;
        }
        map.serialize_entry("messages", &Messages(&r.messages))?;
        if !r.tools.is_empty() {
            map.serialize_entry("tools", &Tools(&r.tools))?;
        }
        for key in CONFIG_KEYS {
            if let Some(v) = r.config.get(key).filter(|v| !v.is_null()) {
                map.serialize_entry(key, v)?;
            }
        }
        map.end()
    }
}

/// The system prompt with the transcript's non-empty `system` messages appended, each
/// after a blank line (borrowed when there are none).
fn system(request: &ChatRequest) -> Cow<'_, str> {
    let mut system = Cow::Borrowed(request.system.as_str());
    for message in request.messages.iter() {
        if let Message::System(m) = message
            && !m.content.is_empty()
        {
            let joined = system.to_mut();
            if !joined.is_empty() {
                joined.push_str("\n\n");
            }
            joined.push_str(&m.content);
        }
    }
    system
}

struct Tools<'a>(&'a [ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            name: &'a str,
            description: &'a str,
            input_schema: &'a Value,
        }
        s.collect_seq(self.0.iter().map(|t| Tool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.input_schema,
        }))
    }
}

/// One content block.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// A result holding images (an MCP tool's image content): its text and
    /// `image` blocks in order (Anthropic Messages API `tool_result` content array).
    #[serde(rename = "tool_result")]
    ToolResultParts {
        tool_use_id: &'a str,
        content: ContentParts<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// A `tool_use` input: the arguments object as is, `{}` for none, anything else
/// wrapped as `{"_raw": …}` (the API requires an object).
enum Input<'a> {
    Object(&'a Value),
    Empty,
    Raw(&'a Value),
}

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Input::Object(v) => v.serialize(s),
            Input::Empty => s.serialize_map(Some(0))?.end(),
            Input::Raw(v) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("_raw", v)?;
                map.end()
            }
        }
    }
}

fn tool_use<'a>(id: &'a str, name: &'a str, input: &'a Value) -> Block<'a> {
    let input = match input {
        Value::Object(_) => Input::Object(input),
        Value::Null => Input::Empty,
        other => Input::Raw(other),
    };
    Block::ToolUse { id, name, input }
}

/// `{"role", "content"}` with string or block content.
#[derive(Serialize)]
struct Turn<C> {
    role: &'static str,
    content: C,
}

/// The transcript as Messages turns: `system` messages left out (they are in
/// `system`), tool results grouped with the user text right after them.
struct Messages<'a>(&'a [Message]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let transcript = self.0;
        let mut seq = s.serialize_seq(None)?;
        let mut i = 0;
        while let Some(message) = transcript.get(i) {
            i += 1;
            match message {
                Message::System(_) => {}
                Message::User(m) if crate::session::image::has_images(&m.content) => seq
                    .serialize_element(&Turn {
                        role: "user",
                        content: ContentParts {
                            text: m.content.as_str(),
                            form: ImageForm::Base64Source,
                        },
                    })?,
                Message::User(m) => seq.serialize_element(&Turn {
                    role: "user",
                    content: m.content.as_str(),
                })?,
                Message::Assistant(m) => {
                    if has_blocks(m) {
                        seq.serialize_element(&Turn {
                            role: "assistant",
                            content: AssistantBlocks(m),
                        })?;
                    }
                }
                Message::Tool(_) => {
                    // The run of results (system messages inside it skipped), and the
                    // user message right after it, make one user message.
                    let start = i - 1;
                    while matches!(
                        transcript.get(i),
                        Some(Message::Tool(_) | Message::System(_))
                    ) {
                        i += 1;
                    }
                    let results = &transcript[start..i];
                    let then = match transcript.get(i) {
                        Some(Message::User(u)) => {
                            i += 1;
                            Some(u).filter(|u| !u.content.is_empty())
                        }
                        _ => None,
                    };
                    seq.serialize_element(&Turn {
                        role: "user",
                        content: Results { results, then },
                    })?;
                }
            }
        }
        seq.end()
    }
}

/// `tool_result` blocks of the tool messages in `results`, then `then`'s text.
struct Results<'a> {
    results: &'a [Message],
    then: Option<&'a UserMessage>,
}

impl Serialize for Results<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for message in self.results {
            if let Message::Tool(m) = message {
                if crate::session::image::has_images(&m.content) {
                    seq.serialize_element(&Block::ToolResultParts {
                        tool_use_id: &m.tool_call_id,
                        content: ContentParts {
                            text: m.content.as_str(),
                            form: ImageForm::Base64Source,
                        },
                        is_error: m.is_error,
                    })?;
                    continue;
                }
                seq.serialize_element(&Block::ToolResult {
                    tool_use_id: &m.tool_call_id,
                    content: &m.content,
                    is_error: m.is_error,
                })?;
            }
        }
        if let Some(user) = self.then {
            seq.serialize_element(&Block::Text {
                text: &user.content,
            })?;
        }
        seq.end()
    }
}

/// Whether [`AssistantBlocks`] of `m` has any block.
fn has_blocks(m: &AssistantMessage) -> bool {
    !m.tool_calls.is_empty() || m.content.iter().any(|b| block(b).is_some())
}

/// The block sent for one assistant content block; `None` for empty text, thinking
/// without a signature and unknown blocks.
fn block(b: &ContentBlock) -> Option<Block<'_>> {
    match b {
        ContentBlock::Text { text } if !text.is_empty() => Some(Block::Text { text }),
        ContentBlock::Thinking {
            thinking,
            signature: Some(signature),
        } => Some(Block::Thinking {
            thinking,
            signature,
        }),
        ContentBlock::RedactedThinking { data } => Some(Block::RedactedThinking { data }),
        ContentBlock::ToolCall { id, name, input } => Some(tool_use(id, name, input)),
        _ => None,
    }
}

/// The assistant's blocks in order, then a `tool_use` for each call in `tool_calls`
/// that no `tool_call` block lists.
struct AssistantBlocks<'a>(&'a AssistantMessage);

impl Serialize for AssistantBlocks<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut seq = s.serialize_seq(None)?;
        for b in m.content.iter().filter_map(block) {
            seq.serialize_element(&b)?;
        }
        for call in &m.tool_calls {
            let listed = m
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall { id, .. } if *id == call.id));
            if !listed {
                seq.serialize_element(&tool_use(&call.id, &call.tool, &call.arguments))?;
            }
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    use crate::provider::test_fixtures::edge_request;

    /// The exact bytes the `Value`-tree encoder sent before, key order included.
    const EDGE_BODY: &str = r#"{"model":"m2","max_tokens":8192,"stream":true,"system":"Sys prompt\n\nnote one\n\nnote two","messages":[{"role":"user","content":""},{"role":"assistant","content":[{"type":"redacted_thinking","data":"xx"}]},{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b \"q\" ü"},{"type":"tool_use","id":"k1","name":"grep","input":{}},{"type":"tool_use","id":"k2","name":"raw","input":{"_raw":"str-args"}},{"type":"tool_use","id":"k3","name":"num","input":{"_raw":[1,2.5]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"k1","content":"r1"},{"type":"tool_result","tool_use_id":"k2","content":"","is_error":true}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"k3","content":"r3\n"},{"type":"text","text":"after"}]},{"role":"user","content":"again"},{"role":"assistant","content":[{"type":"tool_use","id":"k4","name":"t","input":{}}]}],"tools":[{"name":"grep","description":"d","input_schema":{"type":"object"}},{"name":"t","description":"","input_schema":null}],"temperature":0.7,"top_k":3,"thinking":{"type":"enabled","budget_tokens":1024},"stop_sequences":["s"]}"#;
    const EDGE_BODY_BARE: &str = r#"{"model":"m2","max_tokens":5,"stream":true,"system":"note one\n\nnote two","messages":[{"role":"user","content":""},{"role":"assistant","content":[{"type":"redacted_thinking","data":"xx"}]},{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b \"q\" ü"},{"type":"tool_use","id":"k1","name":"grep","input":{}},{"type":"tool_use","id":"k2","name":"raw","input":{"_raw":"str-args"}},{"type":"tool_use","id":"k3","name":"num","input":{"_raw":[1,2.5]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"k1","content":"r1"},{"type":"tool_result","tool_use_id":"k2","content":"","is_error":true}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"k3","content":"r3\n"},{"type":"text","text":"after"}]},{"role":"user","content":"again"},{"role":"assistant","content":[{"type":"tool_use","id":"k4","name":"t","input":{}}]}]}"#;

    #[test]
    fn an_image_marker_becomes_an_image_block() {
        let mut request = edge_request();
        let text = format!("see {}", crate::session::image::marker("image/png", "QUJD"));
        request.messages = Arc::new(vec![Message::user(text)]);
        let value = request_value(&request, "m2").unwrap();
        assert_eq!(
            value["messages"][0]["content"],
            serde_json::json!([
                {"type": "text", "text": "see "},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}
            ])
        );
    }

    /// A tool result holding an image (an MCP tool's) is a `tool_result` whose
    /// content is its text and image blocks.
    #[test]
    fn a_tool_result_with_an_image_has_an_image_block() {
        let mut request = edge_request();
        let content = format!(
            "chart {}",
            crate::session::image::marker("image/png", "QUJD")
        );
        request.messages = Arc::new(vec![
            serde_json::from_value(serde_json::json!({"role": "assistant", "content": null,
                "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "mcp__x__chart", "arguments": "{}"}}]}))
            .unwrap(),
            serde_json::from_value(serde_json::json!({"role": "tool", "tool_call_id": "t1",
                "name": "mcp__x__chart", "content": content}))
            .unwrap(),
        ]);
        let value = request_value(&request, "m2").unwrap();
        assert_eq!(
            value["messages"][1]["content"][0],
            serde_json::json!({"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "chart "},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}
            ]})
        );
    }

    #[test]
    fn edge_cases_serialize_as_before() {
        let request = edge_request();
        let bytes = request_bytes(&request, "m2").unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), EDGE_BODY);
        let value = request_value(&request, "m2").unwrap();
        assert_eq!(value, serde_json::from_str::<Value>(EDGE_BODY).unwrap());
        assert_eq!(serde_json::to_string(&value).unwrap(), EDGE_BODY);

        let mut bare = request;
        bare.system.clear();
        bare.tools.clear();
        bare.max_tokens = Some(5);
        bare.config = Value::Null;
        let bytes = request_bytes(&bare, "m2").unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), EDGE_BODY_BARE);

        // No system prompt and no system notes: no `system` key.
        Arc::make_mut(&mut bare.messages).retain(|m| !matches!(m, Message::System(_)));
        let bytes = request_bytes(&bare, "m2").unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"model":"m2","max_tokens":5,"stream":true,"messages":[{"role":"user","content":""},{"role":"assistant","content":[{"type":"redacted_thinking","data":"xx"}]},{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b \"q\" ü"},{"type":"tool_use","id":"k1","name":"grep","input":{}},{"type":"tool_use","id":"k2","name":"raw","input":{"_raw":"str-args"}},{"type":"tool_use","id":"k3","name":"num","input":{"_raw":[1,2.5]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"k1","content":"r1"},{"type":"tool_result","tool_use_id":"k2","content":"","is_error":true}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"k3","content":"r3\n"},{"type":"text","text":"after"}]},{"role":"user","content":"again"},{"role":"assistant","content":[{"type":"tool_use","id":"k4","name":"t","input":{}}]}]}"#
        );
    }
}
