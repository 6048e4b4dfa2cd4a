//! The summary pass (issue 26 item 2): the oldest part of a conversation summarised
//! by a model call.
//!
//! Owns: rendering messages as plain text for the summariser, splitting that text
//! into pieces that each fit the context limit, and folding them into one summary
//! with the session's provider (each piece updates the summary so far). Does not own:
//! choosing what to summarise (`plan`) or recording it (`record`).

use std::sync::Arc;

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::provider::{ChatRequest, Provider, StreamEvent};
use crate::session::Usage;
use crate::session::message::Message;

use super::CompactError;
use super::estimate;

/// The summariser's instruction.
const SYSTEM: &str = "You compact the earlier part of a conversation between a person and \
an AI agent so the agent can go on without those messages. Write a concise summary in \
plain prose and short lists: the person's goals and instructions, decisions made, facts \
learned (exact file paths, names, commands, numbers, errors), work done, and what remains \
open. Keep identifiers exact. Add nothing that is not in the conversation.";

/// A tool result is cut to this many characters in the summariser's input.
const TOOL_RESULT_CHARS: usize = 2_000;

/// What a summary pass produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// The summary text.
    pub text: String,
    /// The usage of every summary call added up.
    pub usage: Usage,
}

/// The call parameters of a summary pass.
pub struct Summariser<'a> {
    /// The session's provider.
    pub provider: &'a Arc<dyn Provider>,
    /// Its mount-plan config (`temperature`, …).
    pub config: &'a Value,
    /// The model to ask (empty: the provider's default).
    pub model: String,
    /// The context limit a summary request must fit, tokens.
    pub max_tokens: u64,
    /// The longest summary, tokens.
    pub allowance: u64,
}

impl Summariser<'_> {
    /// The summary of `previous` (a summary of what came before, if any) followed by
    /// `messages`, with an optional `focus` from `/compact`. Errors: a failed or empty
    /// model call ([`CompactError::Summary`]), `token` cancelled.
    pub async fn summarise(
        &self,
        previous: Option<&str>,
        messages: &[Message],
        focus: Option<&str>,
        token: &CancellationToken,
    ) -> Result<Summary, CompactError> {
        // Each call: instruction + summary so far + one piece + the answer fit the limit.
        let budget = self
            .max_tokens
            .saturating_sub(estimate::of_chars(SYSTEM.len()) + 2 * self.allowance + 64);
        let piece_chars = usize::try_from(budget.saturating_mul(4))
            .unwrap_or(usize::MAX)
            .max(400);
        let mut out = Summary {
            text: previous.unwrap_or_default().to_string(),
            usage: Usage::default(),
        };
        for piece in pieces(messages, piece_chars) {
            let (text, usage) = self.call(&out.text, &piece, focus, token).await?;
            out.text = text;
            out.usage.add(&usage);
        }
        Ok(out)
    }

    /// One summary call: the summary so far updated with `piece`.
    async fn call(
        &self,
        so_far: &str,
        piece: &str,
        focus: Option<&str>,
        token: &CancellationToken,
    ) -> Result<(String, Usage), CompactError> {
        let mut prompt = String::new();
        if !so_far.is_empty() {
            prompt.push_str("Summary so far:\n");
            prompt.push_str(so_far);
            prompt.push_str("\n\n");
        }
        prompt.push_str("Conversation to add to the summary:\n");
        prompt.push_str(piece);
        if let Some(focus) = focus.filter(|f| !f.trim().is_empty()) {
            prompt.push_str("\n\nFocus the summary on: ");
            prompt.push_str(focus.trim());
        }
        prompt.push_str("\n\nWrite the updated summary now.");
        let request = ChatRequest {
            model: if self.model.is_empty() {
                self.provider.default_model().to_string()
            } else {
                self.model.clone()
            },
            system: SYSTEM.to_string(),
            messages: Arc::new(vec![Message::user(prompt)]),
            tools: Vec::new(),
            max_tokens: u32::try_from(self.allowance).ok(),
            max_time: None,
            config: self.config.clone(),
        };
        let mut stream = self.provider.stream(request);
        loop {
            let next = tokio::select! {
                () = token.cancelled() => return Err(CompactError::Cancelled),
                next = stream.next() => next,
            };
            match next {
                Some(Ok(StreamEvent::Completed(response))) => {
                    let text = response.text();
                    if text.trim().is_empty() {
                        return Err(CompactError::EmptySummary);
                    }
                    return Ok((text, response.usage));
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(CompactError::Summary(Box::new(e))),
                None => return Err(CompactError::EmptySummary),
            }
        }
    }
}

/// `messages` as `role: text` lines, split into pieces of at most about `max_chars`
/// characters (a single longer message is cut to fit).
pub fn pieces(messages: &[Message], max_chars: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for message in messages {
        let mut line = render(message);
        if line.len() > max_chars {
            line = cut(&line, max_chars);
        }
        if !current.is_empty() && current.len() + line.len() + 1 > max_chars {
            out.push(std::mem::take(&mut current));
        }
        current.push_str(&line);
        current.push('\n');
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// One message as one `role: text` entry.
fn render(message: &Message) -> String {
    match message {
        Message::User(m) => format!("user: {}", m.content),
        Message::System(m) => format!("system: {}", m.content),
        Message::Assistant(a) => {
            let mut text = a.text();
            for call in &a.tool_calls {
                text.push_str(&format!("\n[calls {} {}]", call.tool, *call.arguments));
            }
            format!("assistant: {text}")
        }
        Message::Tool(t) => format!(
            "tool {} result: {}",
            t.name,
            cut(&t.content, TOOL_RESULT_CHARS)
        ),
    }
}

/// `text` cut to about `max` bytes at a character boundary, with a marker when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [cut]", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_stay_under_the_size_and_keep_every_message() {
        let messages: Vec<Message> = (0..10)
            .map(|i| Message::user(format!("m{i} {}", "x".repeat(90))))
            .collect();
        let p = pieces(&messages, 250);
        assert!(p.len() >= 4, "{}", p.len());
        assert!(p.iter().all(|s| s.len() <= 260));
        let all = p.concat();
        assert!((0..10).all(|i| all.contains(&format!("m{i} "))));
    }

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut("ééé", 3), "é… [cut]");
    }
}
