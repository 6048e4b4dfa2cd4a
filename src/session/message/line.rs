//! Reading one transcript line into a [`Message`] in one pass.
//!
//! `Message` is tagged by `role`, and a derived internally tagged enum makes serde
//! buffer the whole line (every string copied into its `Content`) before it knows
//! the variant. Here the line is read straight into a flat [`Line`] with every
//! field any role has, then the message is built from it: each text is copied once,
//! from the input into its [`Text`].
//!
//! Owns: the tolerant readings (string, block-array or null `content`; blocks of
//! unknown type or shape dropped; OpenAI-style `tool_calls`, see [`ToolCall`]) and
//! the errors of a line that is not a message (`missing field`, `unknown variant`).
//! Does not own: the message shapes or writing them (`message`).

use crate::session::ids::ToolCallId;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{
    AssistantMessage, ContentBlock, Message, Meta, Text, ToolCall, ToolMessage, UserMessage,
};

/// The roles, as `unknown variant` errors list them.
const ROLES: &[&str] = &["user", "assistant", "tool", "system"];

/// Every field of every role; the role picks which are used.
#[derive(Deserialize)]
struct Line {
    role: String,
    #[serde(default)]
    content: Content,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    metadata: Option<Meta>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    tool_call_id: Option<ToolCallId>,
    #[serde(default)]
    is_error: Option<bool>,
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Line {
            role,
            content,
            tool_calls,
            timestamp,
            metadata,
            name,
            tool_call_id,
            is_error,
        } = Line::deserialize(d)?;
        let text = |content: Content| {
            content
                .into_text()
                .ok_or_else(|| de::Error::missing_field("content"))
        };
        Ok(match role.as_str() {
            "user" | "system" => {
                let message = UserMessage {
                    content: text(content)?,
                    timestamp,
                    metadata,
                };
                if role == "user" {
                    Message::User(message)
                } else {
                    Message::System(message)
                }
            }
            "assistant" => {
                let content = content.into_blocks();
                let mut tool_calls = exact(tool_calls.unwrap_or_default());
                share_arguments(&content, &mut tool_calls);
                Message::Assistant(AssistantMessage {
                    content,
                    tool_calls,
                    timestamp,
                    metadata,
                })
            }
            "tool" => Message::Tool(ToolMessage {
                name: name.unwrap_or_default(),
                tool_call_id: tool_call_id
                    .ok_or_else(|| de::Error::missing_field("tool_call_id"))?,
                content: text(content)?,
                is_error: is_error.unwrap_or(false),
                timestamp,
                metadata,
            }),
            other => return Err(de::Error::unknown_variant(other, ROLES)),
        })
    }
}

/// Points each `tool_calls` entry at the arguments of the `tool_call` block with its
/// id when the two are equal, so the line's second copy is dropped (a 100k-message
/// session held 24.8k calls twice). Entries without such a block keep their own.
fn share_arguments(blocks: &[ContentBlock], calls: &mut [ToolCall]) {
    for call in calls {
        let block = blocks.iter().find_map(|b| match b {
            ContentBlock::ToolCall { id, input, .. } if *id == call.id => Some(input),
            _ => None,
        });
        if let Some(input) = block
            && *input == call.arguments
        {
            call.arguments = input.clone();
        }
    }
}

/// `v` holding no more room than its elements: serde's `Vec` reading grows by
/// doubling (2 tool calls sit in room for 4), and a finished message keeps it.
fn exact<T>(mut v: Vec<T>) -> Vec<T> {
    v.shrink_to_fit();
    v
}

/// A line's `content`, before its role says how to read it.
#[derive(Default)]
enum Content {
    #[default]
    Absent,
    Null,
    Text(Text),
    Blocks(Vec<Block>),
    /// Any other JSON value, as its JSON text.
    Other(String),
}

impl Content {
    /// User, system and tool content: a string; a block array's `text`s joined; null
    /// is empty; any other value its JSON text. `None` when absent.
    fn into_text(self) -> Option<Text> {
        Some(match self {
            Content::Absent => return None,
            Content::Null => Text::default(),
            Content::Text(t) => t,
            Content::Blocks(blocks) => blocks
                .into_iter()
                .filter_map(|b| b.text.into_value())
                .map(String::from)
                .collect(),
            Content::Other(json) => json.into(),
        })
    }

    /// Assistant content: the blocks arbor knows (others and malformed ones dropped);
    /// a non-empty string is one text block; anything else is no block.
    fn into_blocks(self) -> Vec<ContentBlock> {
        match self {
            Content::Text(t) if t.is_empty() => Vec::new(),
            Content::Text(text) => vec![ContentBlock::Text { text }],
            Content::Blocks(blocks) => {
                // Not `collect`: it would reuse the (much larger) `Block` buffer.
                let mut kept = Vec::with_capacity(blocks.len());
                kept.extend(blocks.into_iter().filter_map(Block::into_block));
                // Blocks arbor does not know were dropped: no room kept for them.
                exact(kept)
            }
            _ => Vec::new(),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("message content")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.into()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v.into()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Content, E> {
                Ok(Content::Other(Value::from(v).to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Content, E> {
                Ok(Content::Other(Value::from(v).to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Content, E> {
                Ok(Content::Other(Value::from(v).to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Content, E> {
                Ok(Content::Other(Value::from(v).to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(block) = seq.next_element::<Block>()? {
                    blocks.push(block);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Content, A::Error> {
                let value = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Content::Other(value.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// One element of a content array, any shape: its fields that matter, each kept only
/// when it has the JSON type a block needs.
#[derive(Default)]
struct Block {
    kind: Field<String>,
    text: Field<Text>,
    thinking: Field<Text>,
    signature: Field<String>,
    data: Field<String>,
    id: Field<String>,
    name: Field<String>,
    /// `None` when absent.
    input: Option<Value>,
}

impl Block {
    /// The block as the derived `ContentBlock` reading takes it: `None` for an unknown
    /// `type` or a field missing or of the wrong type.
    fn into_block(self) -> Option<ContentBlock> {
        Some(match self.kind.into_value()?.as_str() {
            "text" => ContentBlock::Text {
                text: self.text.into_value()?,
            },
            "thinking" => ContentBlock::Thinking {
                thinking: self.thinking.into_value()?,
                signature: match self.signature {
                    Field::Absent | Field::Null => None,
                    Field::Value(s) => Some(s),
                    Field::Other => return None,
                },
            },
            "redacted_thinking" => ContentBlock::RedactedThinking {
                data: self.data.into_value()?,
            },
            "tool_call" => ContentBlock::ToolCall {
                id: self.id.into_value()?,
                name: self.name.into_value()?,
                input: self.input.unwrap_or(Value::Null).into(),
            },
            _ => return None,
        })
    }
}

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Block;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Block, A::Error> {
                let mut block = Block::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Type => block.kind = map.next_value()?,
                        Key::Text => block.text = map.next_value()?,
                        Key::Thinking => block.thinking = map.next_value()?,
                        Key::Signature => block.signature = map.next_value()?,
                        Key::Data => block.data = map.next_value()?,
                        Key::Id => block.id = map.next_value()?,
                        Key::Name => block.name = map.next_value()?,
                        Key::Input => block.input = Some(map.next_value()?),
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(block)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Block, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Block::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Block, E> {
                Ok(Block::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Block, E> {
                Ok(Block::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Block, E> {
                Ok(Block::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Block, E> {
                Ok(Block::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Block, E> {
                Ok(Block::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Block, E> {
                Ok(Block::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Block, E> {
                Ok(Block::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// The keys of a block that matter.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Key {
    Type,
    Text,
    Thinking,
    Signature,
    Data,
    Id,
    Name,
    Input,
    #[serde(other)]
    Other,
}

/// A block field that must be a string: absent, `null`, the string, or any other
/// JSON value (read and dropped).
#[derive(Default)]
enum Field<T> {
    #[default]
    Absent,
    Null,
    Value(T),
    Other,
}

impl<T> Field<T> {
    fn into_value(self) -> Option<T> {
        match self {
            Field::Value(v) => Some(v),
            _ => None,
        }
    }
}

impl<'de, T: From<String> + for<'a> From<&'a str>> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: From<String> + for<'a> From<&'a str>> Visitor<'de> for V<T> {
            type Value = Field<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field<T>, E> {
                Ok(Field::Value(v.into()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Field<T>, E> {
                Ok(Field::Value(v.into()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Field<T>, E> {
                Ok(Field::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Field<T>, E> {
                Ok(Field::Null)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Field<T>, E> {
                Ok(Field::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Field<T>, E> {
                Ok(Field::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Field<T>, E> {
                Ok(Field::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Field<T>, E> {
                Ok(Field::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Field<T>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Field::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field<T>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Field::Other)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::ToolArgs;
    use super::*;

    fn read(line: Value) -> Result<Message, String> {
        let text = line.to_string();
        let from_text = serde_json::from_str::<Message>(&text).map_err(|e| e.to_string());
        // Read from a `Value` (as events and tests do) the same way.
        let from_value = serde_json::from_value::<Message>(line).map_err(|e| e.to_string());
        assert_eq!(
            from_text.as_ref().map_err(|_| ()),
            from_value.as_ref().map_err(|_| ())
        );
        from_text
    }

    fn user_text(line: Value) -> String {
        match read(line).unwrap() {
            Message::User(m) | Message::System(m) => m.content.to_string(),
            Message::Tool(m) => m.content.to_string(),
            other => panic!("{other:?}"),
        }
    }

    fn blocks(content: Value) -> Vec<ContentBlock> {
        match read(json!({"role": "assistant", "content": content})).unwrap() {
            Message::Assistant(a) => a.content,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn user_and_tool_content_reads_every_shape() {
        assert_eq!(user_text(json!({"role": "user", "content": "hi"})), "hi");
        assert_eq!(
            user_text(
                json!({"role": "system", "content": [{"type": "text", "text": "a"}, 3, {"text": "b"}, {"type": "image"}]})
            ),
            "ab"
        );
        assert_eq!(user_text(json!({"role": "user", "content": null})), "");
        assert_eq!(user_text(json!({"role": "user", "content": 5})), "5");
        assert_eq!(
            user_text(json!({"role": "user", "content": {"k": [1]}})),
            r#"{"k":[1]}"#
        );
        assert_eq!(
            user_text(
                json!({"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "ok"}]})
            ),
            "ok"
        );
    }

    #[test]
    fn assistant_blocks_keep_what_arbor_knows_and_drop_the_rest() {
        assert!(blocks(json!("")).is_empty());
        assert!(blocks(json!(null)).is_empty());
        assert!(blocks(json!({"text": "x"})).is_empty());
        assert_eq!(
            blocks(json!("hi")),
            [ContentBlock::Text { text: "hi".into() }]
        );
        let got = blocks(json!([
            {"type": "text", "text": "a"},
            {"type": "text", "text": 5},
            {"type": "text"},
            {"text": "no type"},
            "a string",
            [1, 2],
            null,
            {"type": "image", "source": {"data": "…"}},
            {"type": "thinking", "thinking": "t1", "signature": null, "extra": {"deep": [1]}},
            {"type": "thinking", "thinking": "t2", "signature": "s"},
            {"type": "thinking", "thinking": "t3", "signature": 7},
            {"type": "redacted_thinking", "data": "d"},
            {"type": "tool_call", "id": "c1", "name": "glob"},
            {"type": "tool_call", "id": "c2", "name": "glob", "input": {"p": "*"}},
            {"type": "tool_call", "id": "c3"},
        ]));
        assert_eq!(
            got,
            [
                ContentBlock::Text { text: "a".into() },
                ContentBlock::Thinking {
                    thinking: "t1".into(),
                    signature: None
                },
                ContentBlock::Thinking {
                    thinking: "t2".into(),
                    signature: Some("s".into())
                },
                ContentBlock::RedactedThinking { data: "d".into() },
                ContentBlock::ToolCall {
                    id: "c1".into(),
                    name: "glob".into(),
                    input: Value::Null.into()
                },
                ContentBlock::ToolCall {
                    id: "c2".into(),
                    name: "glob".into(),
                    input: json!({"p": "*"}).into()
                },
            ]
        );
    }

    #[test]
    fn kept_blocks_hold_no_more_room_than_the_array_had_elements() {
        let many: Vec<Value> = (0..8)
            .map(|i| json!({"type": "text", "text": format!("{i}")}))
            .collect();
        let kept = blocks(Value::Array(many));
        assert_eq!(kept.len(), 8);
        assert_eq!(kept.capacity(), 8, "not the buffer of the blocks as read");
        let some = blocks(json!([{"type": "text", "text": "a"}, {"type": "image"}, 3]));
        assert_eq!(
            (some.len(), some.capacity()),
            (1, 1),
            "dropped blocks keep no room"
        );
    }

    #[test]
    fn tool_calls_hold_no_more_room_than_the_line_had_calls() {
        for n in [1usize, 2, 3, 5] {
            let calls: Vec<Value> = (0..n)
                .map(|i| json!({"id": format!("c{i}"), "tool": "glob", "arguments": {}}))
                .collect();
            let line = json!({"role": "assistant", "content": [], "tool_calls": calls});
            let Message::Assistant(a) = read(line).unwrap() else {
                panic!("assistant")
            };
            assert_eq!((a.tool_calls.len(), a.tool_calls.capacity()), (n, n));
        }
    }

    #[test]
    fn a_tool_calls_arguments_are_held_once_for_its_block_and_its_entry() {
        let line = r#"{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_call","id":"c1","name":"glob","input":{"p":"*"}},{"type":"tool_call","id":"c2","name":"read","input":{"path":"a"}}],"tool_calls":[{"id":"c1","tool":"glob","arguments":{"p":"*"}},{"id":"c2","tool":"read","arguments":{"path":"b"}},{"id":"c3","tool":"glob","arguments":{}}]}"#;
        let Message::Assistant(a) = serde_json::from_str::<Message>(line).unwrap() else {
            panic!("assistant")
        };
        let input = |i: usize| match &a.content[i] {
            ContentBlock::ToolCall { input, .. } => input,
            other => panic!("{other:?}"),
        };
        assert!(ToolArgs::shares(input(1), &a.tool_calls[0].arguments));
        // Values that differ stay apart (each as written); no block: its own.
        assert!(!ToolArgs::shares(input(2), &a.tool_calls[1].arguments));
        assert_eq!(a.tool_calls[1].arguments, json!({"path": "b"}));
        assert_eq!(a.tool_calls[2].arguments, json!({}));
        assert_eq!(serde_json::to_string(&Message::Assistant(a)).unwrap(), line);
    }

    #[test]
    fn a_line_that_is_not_a_message_says_why() {
        let err = |v: Value| read(v).unwrap_err();
        assert!(err(json!({"role": "robot"})).contains("unknown variant `robot`"));
        assert!(err(json!({"content": "x"})).contains("missing field `role`"));
        assert!(err(json!({"role": "user"})).contains("missing field `content`"));
        assert!(
            err(json!({"role": "tool", "content": "x"})).contains("missing field `tool_call_id`")
        );
        assert!(
            err(json!({"role": "user", "content": "x", "timestamp": 5})).contains("invalid type")
        );
        assert!(err(json!([1])).contains("invalid type"));
    }

    #[test]
    fn every_field_round_trips() {
        let lines = [
            json!({"role": "user", "content": "q", "timestamp": "t", "metadata": {"author": "a"}}),
            json!({"role": "system", "content": "s"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "thinking", "thinking": "th", "signature": "sg"}, {"type": "redacted_thinking", "data": "d"}, {"type": "tool_call", "id": "c", "name": "n", "input": {"a": 1}}], "tool_calls": [{"id": "c", "tool": "n", "arguments": {"a": 1}}], "timestamp": "t", "metadata": {"author": "a", "usage": {"input_tokens": 1}}}),
            json!({"role": "tool", "name": "n", "tool_call_id": "c", "content": "r", "is_error": true, "timestamp": "t", "metadata": {"z": 1, "a": 2}}),
        ];
        for line in lines {
            let message = read(line.clone()).unwrap();
            assert_eq!(serde_json::to_value(&message).unwrap(), line);
            assert_eq!(serde_json::to_string(&message).unwrap(), line.to_string());
        }
    }
}
