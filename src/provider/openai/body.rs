//! The Chat Completions request body, serialized straight from the borrowed
//! [`ChatRequest`] to bytes.
//!
//! Owns: the body's JSON shape (see the parent module's "Message conversion") and its
//! key order: `model`, `messages`, `stream`, `stream_options`, `tools`, `max_tokens`,
//! then the passed config keys. Does not own: sending it (`openai`, `transport`).
//!
//! Nothing of the transcript is copied: no `serde_json::Value` tree of the body is
//! built, so a request over a long history costs its bytes, not a second transcript.

use std::borrow::Cow;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use crate::provider::image_parts::{ContentParts, ImageForm};
use crate::provider::{ChatRequest, ToolSpec};
use crate::session::message::{AssistantMessage, ContentBlock, Message};

/// `request.config` keys copied into the body when present and not null.
const CONFIG_KEYS: [&str; 5] = ["temperature", "top_p", "reasoning_effort", "seed", "stop"];

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
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry("messages", &Messages(r, self.model))?;
        map.serialize_entry("stream", &true)?;
        map.serialize_entry(
            "stream_options",
            &StreamOptions {
                include_usage: true,
            },
        )?;
        if !r.tools.is_empty() {
            map.serialize_entry("tools", &Tools(&r.tools))?;
        }
        if let Some(max) = r.max_tokens {
            map.serialize_entry("max_tokens", &max)?;
        }
        for key in CONFIG_KEYS {
            if let Some(v) = r.config.get(key).filter(|v| !v.is_null()) {
                map.serialize_entry(key, v)?;
            }
        }
        map.end()
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

struct Tools<'a>(&'a [ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        s.collect_seq(self.0.iter().map(|t| Typed {
            kind: "function",
            function: Function {
                name: &t.name,
                description: &t.description,
                parameters: &t.input_schema,
            },
        }))
    }
}

/// `{"type": kind, "function": …}`.
#[derive(Serialize)]
struct Typed<F> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: F,
}

/// `{"role", "content"}` (user and system messages).
#[derive(Serialize)]
struct Plain<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct ToolResult<'a> {
    role: &'static str,
    tool_call_id: &'a str,
    content: &'a str,
}

#[derive(Serialize)]
struct Assistant<'a> {
    role: &'static str,
    /// `null` when the message has no text.
    content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Call<'a>>,
}

/// `{"id", "type": "function", "function": {"name", "arguments": "<json string>"}}`.
#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

/// A user message with images: `{"role":"user","content":[parts]}`.
#[derive(Serialize)]
struct UserParts<'a> {
    role: &'static str,
    content: ContentParts<'a>,
}

/// The text of the user message that carries the images of a run of tool results.
const TOOL_IMAGES: &str = "The tool results above returned these images:";

/// A tool result's text with each image marker replaced by a note, and the markers
/// taken out (they go in the user message after the run of results).
fn tool_images(content: &str) -> (String, String) {
    use crate::session::image::{Part, marker, parts};
    let (mut text, mut markers) = (String::new(), String::new());
    for part in parts(content) {
        match part {
            Part::Text(t) => text.push_str(t),
            Part::Image { media_type, data } => {
                text.push_str(&format!("[{media_type} image: in the next message]"));
                markers.push_str(&marker(media_type, data));
            }
        }
    }
    (text, markers)
}

/// The system prompt, then the transcript in Chat Completions form.
struct Messages<'a>(&'a ChatRequest, &'a str);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let request = self.0;
        let mut seq = s.serialize_seq(None)?;
        if !request.system.is_empty() {
            seq.serialize_element(&Plain {
                role: "system",
                content: &request.system,
            })?;
        }
        // Images tool results returned: Chat Completions takes none in a `tool`
        // message, so they follow the run of results as one user message.
        let mut images = String::new();
        for (i, message) in request.messages.iter().enumerate() {
            match message {
                Message::User(m)
                    if crate::session::image::has_images(&m.content)
                        && crate::session::image::lacks_vision(self.1) =>
                {
                    seq.serialize_element(&Plain {
                        role: "user",
                        content: &crate::session::image::without_images(&m.content, self.1),
                    })?
                }
                Message::User(m) if crate::session::image::has_images(&m.content) => seq
                    .serialize_element(&UserParts {
                        role: "user",
                        content: ContentParts {
                            text: &m.content,
                            form: ImageForm::DataUrl,
                        },
                    })?,
                Message::User(m) => seq.serialize_element(&Plain {
                    role: "user",
                    content: &m.content,
                })?,
                Message::System(m) => seq.serialize_element(&Plain {
                    role: "system",
                    content: &m.content,
                })?,
                Message::Tool(m) if crate::session::image::has_images(&m.content) => {
                    let (text, markers) = tool_images(&m.content);
                    images.push_str(&markers);
                    seq.serialize_element(&ToolResult {
                        role: "tool",
                        tool_call_id: &m.tool_call_id,
                        content: &text,
                    })?;
                }
                Message::Tool(m) => seq.serialize_element(&ToolResult {
                    role: "tool",
                    tool_call_id: &m.tool_call_id,
                    content: &m.content,
                })?,
                Message::Assistant(m) => {
                    if let Some(assistant) = assistant(m) {
                        seq.serialize_element(&assistant)?;
                    }
                }
            }
            let run_ends = !matches!(request.messages.get(i + 1), Some(Message::Tool(_)));
            if run_ends && !images.is_empty() {
                let text = format!("{TOOL_IMAGES}{}", std::mem::take(&mut images));
                if crate::session::image::lacks_vision(self.1) {
                    seq.serialize_element(&Plain {
                        role: "user",
                        content: &crate::session::image::without_images(&text, self.1),
                    })?;
                } else {
                    seq.serialize_element(&UserParts {
                        role: "user",
                        content: ContentParts {
                            text: &text,
                            form: ImageForm::DataUrl,
                        },
                    })?;
                }
            }
        }
        seq.end()
    }
}

/// The assistant message: its text and its calls (`tool_calls` first, then any
/// `tool_call` block not listed there). `None` when it has neither (thinking only).
fn assistant(m: &AssistantMessage) -> Option<Assistant<'_>> {
    let mut calls: Vec<Call<'_>> = m
        .tool_calls
        .iter()
        .map(|c| call(&c.id, &c.tool, &c.arguments))
        .collect();
    for block in &m.content {
        if let ContentBlock::ToolCall { id, name, input } = block
            && !m.tool_calls.iter().any(|c| &c.id == id)
        {
            calls.push(call(id, name, input));
        }
    }
    let text = text(&m.content);
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    Some(Assistant {
        role: "assistant",
        content: (!text.is_empty()).then_some(text),
        tool_calls: calls,
    })
}

/// The text blocks joined (borrowed when there is one).
fn text(blocks: &[ContentBlock]) -> Cow<'_, str> {
    let mut texts = blocks.iter().filter_map(|b| match b {
        ContentBlock::Text { text } => Some(text.as_str()),
        _ => None,
    });
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(one), None) => Cow::Borrowed(one),
        (Some(first), Some(second)) => {
            let mut joined = format!("{first}{second}");
            texts.for_each(|t| joined.push_str(t));
            Cow::Owned(joined)
        }
    }
}

fn call<'a>(id: &'a str, name: &'a str, arguments: &'a Value) -> Call<'a> {
    let arguments = match arguments {
        Value::Null => Cow::Borrowed("{}"),
        Value::String(s) => Cow::Borrowed(s.as_str()),
        other => Cow::Owned(other.to_string()),
    };
    Call {
        id,
        kind: "function",
        function: CallFunction { name, arguments },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::provider::test_fixtures::edge_request;

    /// The exact bytes the `Value`-tree encoder sent before, key order included.
    const EDGE_BODY: &str = r#"{"model":"m1","messages":[{"role":"system","content":"Sys prompt"},{"role":"system","content":"note one"},{"role":"user","content":""},{"role":"assistant","content":"ab \"q\" ü","tool_calls":[{"id":"k3","type":"function","function":{"name":"num","arguments":"[1,2.5]"}},{"id":"k1","type":"function","function":{"name":"grep","arguments":"{\"z\":1,\"a\":2}"}},{"id":"k2","type":"function","function":{"name":"raw","arguments":"str-args"}}]},{"role":"tool","tool_call_id":"k1","content":"r1"},{"role":"system","content":"note two"},{"role":"tool","tool_call_id":"k2","content":""},{"role":"user","content":""},{"role":"tool","tool_call_id":"k3","content":"r3\n"},{"role":"user","content":"after"},{"role":"user","content":"again"},{"role":"assistant","content":null,"tool_calls":[{"id":"k4","type":"function","function":{"name":"t","arguments":"{}"}}]}],"stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"grep","description":"d","parameters":{"type":"object"}}},{"type":"function","function":{"name":"t","description":"","parameters":null}}],"temperature":0.7,"reasoning_effort":"low","seed":7,"stop":["x"]}"#;
    const EDGE_BODY_BARE: &str = r#"{"model":"m1","messages":[{"role":"system","content":"note one"},{"role":"user","content":""},{"role":"assistant","content":"ab \"q\" ü","tool_calls":[{"id":"k3","type":"function","function":{"name":"num","arguments":"[1,2.5]"}},{"id":"k1","type":"function","function":{"name":"grep","arguments":"{\"z\":1,\"a\":2}"}},{"id":"k2","type":"function","function":{"name":"raw","arguments":"str-args"}}]},{"role":"tool","tool_call_id":"k1","content":"r1"},{"role":"system","content":"note two"},{"role":"tool","tool_call_id":"k2","content":""},{"role":"user","content":""},{"role":"tool","tool_call_id":"k3","content":"r3\n"},{"role":"user","content":"after"},{"role":"user","content":"again"},{"role":"assistant","content":null,"tool_calls":[{"id":"k4","type":"function","function":{"name":"t","arguments":"{}"}}]}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":5}"#;

    #[test]
    fn images_are_parts_unless_the_model_takes_none() {
        let mut request = edge_request();
        let text = format!("see {}", crate::session::image::marker("image/png", "QUJD"));
        request.messages = std::sync::Arc::new(vec![Message::user(text)]);
        let value = request_value(&request, "gpt-4o").unwrap();
        assert_eq!(
            value["messages"].as_array().unwrap().last().unwrap()["content"],
            serde_json::json!([
                {"type": "text", "text": "see "},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
            ])
        );
        let value = request_value(&request, "gpt-3.5-turbo").unwrap();
        let text = value["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap();
        assert!(
            text.contains("gpt-3.5-turbo does not accept images"),
            "{text}"
        );
        assert!(!text.contains("QUJD"));
    }

    #[test]
    fn edge_cases_serialize_as_before() {
        let request = edge_request();
        let bytes = request_bytes(&request, "m1").unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), EDGE_BODY);
        let value = request_value(&request, "m1").unwrap();
        assert_eq!(value, serde_json::from_str::<Value>(EDGE_BODY).unwrap());
        assert_eq!(serde_json::to_string(&value).unwrap(), EDGE_BODY);

        let mut bare = request;
        bare.system.clear();
        bare.tools.clear();
        bare.max_tokens = Some(5);
        bare.config = Value::Null;
        let bytes = request_bytes(&bare, "m1").unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), EDGE_BODY_BARE);
    }
}
