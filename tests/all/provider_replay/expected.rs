//! What each captured stream must assemble into, and the check that compares.

use arbor::provider::openai_stream::parse_arguments;
use arbor::provider::{Malformed, ProviderErrorKind};
use arbor::session::message::ContentBlock;
use serde_json::{Value, json};

use super::Outcome;
use super::server::Mode;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Api {
    OpenAi,
    Anthropic,
}

/// Expected text: exact, or (prefix, suffix, length in chars) for long ones.
#[derive(Debug)]
pub enum Text {
    Exact(&'static str),
    Affix(&'static str, &'static str, usize),
}

impl Text {
    fn check(&self, got: &str, what: &str, file: &str) {
        match self {
            Text::Exact(want) => assert_eq!(got, *want, "{file}: {what}"),
            Text::Affix(prefix, suffix, len) => {
                assert!(got.starts_with(prefix), "{file}: {what} starts {got:?}");
                assert!(got.ends_with(suffix), "{file}: {what} ends {got:?}");
                assert_eq!(got.chars().count(), *len, "{file}: {what} length");
            }
        }
    }
}

/// What one fixture must assemble into (derived by reading the fixture).
pub struct Expect {
    pub file: &'static str,
    pub api: Api,
    pub text: Text,
    pub thinking: Text,
    /// (id, name, arguments as compact JSON).
    pub tools: &'static [(&'static str, &'static str, &'static str)],
    /// input, output, cache read, cache creation.
    pub usage: [u64; 4],
    pub stop: Option<&'static str>,
    pub model: Option<&'static str>,
    /// Total length of thinking signatures.
    pub signature_len: usize,
    /// Number of redacted thinking blocks.
    pub redacted: usize,
    /// For streams that end in an error: kind and the API's message (for `Network`, a
    /// fragment of ours).
    pub error: Option<(ProviderErrorKind, &'static str)>,
}

pub const OPENAI_PREFIXES: &[&str] = &[
    "openai-chat-",
    "azure-",
    "openrouter-",
    "deepseek-",
    "mistral-",
    "groq-",
    "vllm-",
    "llamabox-",
    "ollama-openai-",
    "perplexity-",
    "llamacpp-",
];

pub fn check(expect: &Expect, out: &Outcome, mode: Mode) {
    let file = &format!("{} ({mode:?})", expect.file);
    let want_tools: Vec<(String, String)> = expect
        .tools
        .iter()
        .map(|(id, name, _)| (id.to_string(), name.to_string()))
        .collect();
    assert_eq!(
        out.started, want_tools,
        "{file}: ToolCallStarted once per call"
    );
    expect.text.check(&out.text, "text deltas", file);
    expect
        .thinking
        .check(&out.thinking, "thinking deltas", file);
    if let Some((kind, message)) = expect.error {
        let err = out
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{file}: expected an error"));
        assert!(out.completed.is_none(), "{file}");
        assert_eq!(err.kind, kind, "{file}: {err}");
        if kind == ProviderErrorKind::Network {
            assert!(err.message.contains(message), "{file}: {}", err.message);
        } else {
            assert_eq!(err.message, message, "{file}");
        }
        assert_eq!(
            out.order.last(),
            Some(&"error"),
            "{file}: deltas come before the error"
        );
        return;
    }
    assert!(out.error.is_none(), "{file}: {:?}", out.error);
    let r = out
        .completed
        .as_ref()
        .unwrap_or_else(|| panic!("{file}: no Completed"));
    expect.text.check(&r.text(), "response text", file);
    let thinking: String = r
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking { thinking, .. } => Some(thinking.as_str()),
            _ => None,
        })
        .collect();
    expect.thinking.check(&thinking, "response thinking", file);
    let signature_len: usize = r
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking { signature, .. } => signature.as_ref().map(String::len),
            _ => None,
        })
        .sum();
    assert_eq!(signature_len, expect.signature_len, "{file}: signatures");
    let redacted = r
        .content
        .iter()
        .filter(|b| matches!(b, ContentBlock::RedactedThinking { data } if !data.is_empty()))
        .count();
    assert_eq!(
        redacted, expect.redacted,
        "{file}: redacted thinking blocks"
    );
    let calls: Vec<(String, String, Value)> = r
        .tool_calls
        .iter()
        .map(|c| (c.id.clone(), c.tool.clone(), Value::clone(&c.arguments)))
        .collect();
    let want: Vec<(String, String, Value)> = expect
        .tools
        .iter()
        .map(|(id, name, args)| {
            (
                id.to_string(),
                name.to_string(),
                serde_json::from_str(args).unwrap(),
            )
        })
        .collect();
    assert_eq!(calls, want, "{file}: tool calls");
    for (id, _, args) in &want {
        let streamed = out
            .arguments
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, text)| parse_arguments(text))
            .unwrap_or_else(|| json!({}));
        assert_eq!(&streamed, args, "{file}: streamed arguments of {id}");
    }
    assert_eq!(
        r.malformed,
        Malformed::default(),
        "{file}: a captured stream has nothing malformed"
    );
    let blocks = r
        .content
        .iter()
        .filter(|b| matches!(b, ContentBlock::ToolCall { .. }))
        .count();
    assert_eq!(blocks, want.len(), "{file}: tool-call blocks in content");
    let u = r.usage;
    assert_eq!(
        [
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_creation_tokens
        ],
        expect.usage,
        "{file}: usage"
    );
    assert_eq!(r.stop_reason.as_deref(), expect.stop, "{file}: stop reason");
    assert_eq!(r.model.as_deref(), expect.model, "{file}: model");
}
