//! Transcript messages in Amplifier's shape (SPEC §7 "Messages").
//!
//! Owns: the serde shape of one `transcript.jsonl` line, and tolerant reading of the
//! variants other tools write (string or block content, OpenAI-style
//! `tool_calls[].function{name,arguments}`), read in one pass (`line`). Finished
//! messages stay compact: texts are shared [`Text`]s (a clone of a message shares
//! them: bus events, the TUI's cells, transcript snapshots) and `metadata` is a
//! [`Meta`], its compact JSON text; a tool call's arguments are one [`ToolArgs`]
//! shared by its content block and its `tool_calls` entry. Does not own: the file itself (`store`).

use crate::session::ids::ToolCallId;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

mod args;
mod line;
mod meta;
mod text;
pub use args::ToolArgs;
pub use meta::Meta;
pub use text::Text;

/// One transcript line. Serialized with a `role` tag:
/// `{"role":"user","content":"…"}`, `{"role":"assistant","content":[…],"tool_calls":[…]}`,
/// `{"role":"tool","name":"…","tool_call_id":"…","content":"…"}`.
///
/// Read in one pass (`line`): every text copied once, straight into its [`Text`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// A person's (or a parent agent's) instruction.
    User(UserMessage),
    /// A model's reply: text, thinking and tool-call blocks.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool(ToolMessage),
    /// A system note kept in the transcript (rare; Amplifier writes these for context).
    System(UserMessage),
}

/// `{"role":"user","content":"…"}`. Block-array content is read and joined as text.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct UserMessage {
    pub content: Text,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// arbor puts `author` (the agent name) here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Meta>,
}

/// An assistant message. `content` holds the blocks in stream order; `tool_calls`
/// repeats the tool calls in Amplifier's `{id, tool, arguments}` form.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// arbor puts `author` (agent name) and `usage` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Meta>,
}

/// `{"role":"tool","name":"…","tool_call_id":"…","content":"…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ToolMessage {
    pub name: String,
    pub tool_call_id: ToolCallId,
    pub content: Text,
    /// True when the tool failed; the content is then the error text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Meta>,
}

/// One block of assistant content (Amplifier's block types; Anthropic's names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: Text,
    },
    Thinking {
        thinking: Text,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Anthropic `redacted_thinking`: opaque, sent back to the API unchanged.
    RedactedThinking {
        data: String,
    },
    ToolCall {
        id: String,
        name: String,
        /// Shared with the `tool_calls` entry of the same id (see [`ToolArgs`]).
        #[serde(default)]
        input: ToolArgs,
    },
    /// A block type arbor does not know; dropped when read.
    #[serde(other)]
    Unknown,
}

/// A tool call in Amplifier's `tool_calls` form: `{"id","tool","arguments"}`.
/// Also reads OpenAI's `{"id","type":"function","function":{"name","arguments":"<json>"}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub id: String,
    pub tool: String,
    /// Shared with the `tool_call` content block of the same id (see [`ToolArgs`]).
    pub arguments: ToolArgs,
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Function {
            name: String,
            #[serde(default)]
            arguments: Value,
        }
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            id: String,
            tool: Option<String>,
            name: Option<String>,
            #[serde(default)]
            arguments: Value,
            function: Option<Function>,
        }
        let raw = Raw::deserialize(d)?;
        let (tool, arguments) = match raw.function {
            Some(f) => (f.name, f.arguments),
            None => (raw.tool.or(raw.name).unwrap_or_default(), raw.arguments),
        };
        // OpenAI encodes arguments as a JSON string.
        let arguments = match arguments {
            Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
            Value::Null => Value::Object(Default::default()),
            other => other,
        };
        Ok(ToolCall {
            id: raw.id,
            tool,
            arguments: arguments.into(),
        })
    }
}

impl Message {
    /// A user message with `content` and the current timestamp.
    pub fn user(content: impl Into<Text>) -> Self {
        Message::User(UserMessage {
            content: content.into(),
            timestamp: Some(now_rfc3339()),
            metadata: None,
        })
    }

    /// A tool result message.
    pub fn tool_result(call: &ToolCall, content: impl Into<Text>, is_error: bool) -> Self {
        Message::Tool(ToolMessage {
            name: call.tool.clone(),
            tool_call_id: call.id.clone().into(),
            content: content.into(),
            is_error,
            timestamp: Some(now_rfc3339()),
            metadata: None,
        })
    }

    /// The message's role as written in the transcript.
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::Tool(_) => "tool",
            Message::System(_) => "system",
        }
    }

    /// When the message was written (`timestamp`), if it says.
    pub fn timestamp(&self) -> Option<&str> {
        match self {
            Message::User(m) | Message::System(m) => m.timestamp.as_deref(),
            Message::Assistant(m) => m.timestamp.as_deref(),
            Message::Tool(m) => m.timestamp.as_deref(),
        }
    }

    /// All text of the message joined (assistant: text blocks only).
    pub fn text(&self) -> String {
        match self {
            Message::User(m) | Message::System(m) => m.content.to_string(),
            Message::Assistant(m) => m.text(),
            Message::Tool(m) => m.content.to_string(),
        }
    }
}

/// The text blocks of `blocks` joined without separator (thinking and tool calls skipped).
pub fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(&**text),
            _ => None,
        })
        .collect()
}

impl AssistantMessage {
    /// Text blocks joined without separator.
    pub fn text(&self) -> String {
        blocks_text(&self.content)
    }

    /// The agent that wrote this message, from `metadata.author`.
    pub fn author(&self) -> Option<String> {
        self.metadata.as_ref()?.author()
    }
}

/// The current time as RFC 3339 (UTC), the timestamp format of transcripts and events.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_round_trips_in_amplifier_shape() {
        let line = r#"{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_call","id":"c1","name":"task","input":{"agent":"x"}}],"tool_calls":[{"id":"c1","tool":"task","arguments":{"agent":"x"}}]}"#;
        let m: Message = serde_json::from_str(line).unwrap();
        let Message::Assistant(a) = &m else {
            panic!("not assistant")
        };
        assert_eq!(a.text(), "hi");
        assert_eq!(a.tool_calls[0].tool, "task");
        let back: Value = serde_json::to_value(&m).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(line).unwrap());
    }

    #[test]
    fn reads_openai_style_tool_calls_and_string_content() {
        let line = r#"{"role":"assistant","content":"ok","tool_calls":[{"id":"c","type":"function","function":{"name":"glob","arguments":"{\"pattern\":\"*.rs\"}"}}]}"#;
        let Message::Assistant(a) = serde_json::from_str(line).unwrap() else {
            panic!("not assistant")
        };
        assert_eq!(a.text(), "ok");
        assert_eq!(a.tool_calls[0].tool, "glob");
        assert_eq!(a.tool_calls[0].arguments["pattern"], "*.rs");
    }
}
