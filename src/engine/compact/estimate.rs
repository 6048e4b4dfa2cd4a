//! Token estimates of a request (issue 26 item 2).
//!
//! Owns: the estimate ≈ characters / 4 (Amplifier `context-simple`'s
//! `_estimate_tokens`, OpenAI's rule of thumb for English) of a message, a system
//! prompt and tool specs, and the measured size of a request view: the provider's own
//! usage of the latest call plus an estimate of what was appended after it. Does not
//! own: deciding to compact (`plan`).

use crate::config::modules::CacheAccounting;
use crate::provider::ToolSpec;
use crate::session::message::{ContentBlock, Message};

/// Characters counted per message on top of its text: role, ids and JSON framing.
const PER_MESSAGE: usize = 16;

/// Estimated tokens of `chars` characters.
pub fn of_chars(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// Characters a message puts on the wire (its texts, thinking, tool-call names and
/// arguments, plus [`PER_MESSAGE`]).
pub fn message_chars(message: &Message) -> usize {
    PER_MESSAGE
        + match message {
            Message::User(m) | Message::System(m) => m.content.len(),
            Message::Tool(m) => m.name.len() + m.tool_call_id.len() + m.content.len(),
            Message::Assistant(m) => m
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text { text } => text.len(),
                    ContentBlock::Thinking { thinking, .. } => thinking.len(),
                    ContentBlock::RedactedThinking { data } => data.len(),
                    ContentBlock::ToolCall { id, name, input } => {
                        id.len() + name.len() + input.to_string().len()
                    }
                    ContentBlock::Unknown => 0,
                })
                .sum(),
        }
}

/// Estimated tokens of one message.
pub fn message(message: &Message) -> u64 {
    of_chars(message_chars(message))
}

/// Estimated tokens of `messages`.
pub fn messages(messages: &[Message]) -> u64 {
    messages.iter().map(message).sum()
}

/// Estimated tokens of the fixed part of every request: the system prompt and the
/// tool specs as sent.
pub fn fixed(system: &str, tools: &[ToolSpec]) -> u64 {
    let tools: usize = tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len() + 32)
        .sum();
    of_chars(system.len() + tools)
}

/// The provider-measured tokens of the view up to and including its last assistant
/// message at or after `from` that carries `metadata.usage`, and that message's
/// index: the call's input (with cache tokens where the API counts them apart) plus
/// its output. `None` when no such message exists.
pub fn measured(
    view: &[Message],
    from: usize,
    accounting: CacheAccounting,
) -> Option<(usize, u64)> {
    view.iter().enumerate().skip(from).rev().find_map(|(i, m)| {
        let Message::Assistant(a) = m else {
            return None;
        };
        let usage = a.metadata.as_ref()?.get("usage")?;
        let n = |k: &str| {
            usage
                .get(k)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        let input = n("input_tokens");
        if input == 0 {
            return None;
        }
        let cache = match accounting {
            CacheAccounting::IncludedInInput => 0,
            CacheAccounting::SeparateFromInput => {
                n("cache_read_tokens") + n("cache_creation_tokens")
            }
        };
        Some((i, input + cache + n("output_tokens")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_characters_a_token() {
        assert_eq!(of_chars(0), 0);
        assert_eq!(of_chars(4), 1);
        assert_eq!(of_chars(5), 2);
        let m = Message::user("x".repeat(84));
        assert_eq!(message(&m), 25);
    }
}
