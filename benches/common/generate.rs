//! Deterministic synthetic material for the benchmarks: agent files, transcripts and
//! OpenAI-style SSE bodies, sized like real ones.
//!
//! Owns: generating text only. Does not own: where it is written (each bench) or any
//! measurement.
#![allow(dead_code)]

use std::path::Path;

use arbor::session::message::{
    AssistantMessage, ContentBlock, ToolArgs, ToolCall, ToolMessage, UserMessage,
};
use arbor::session::{Message, Metadata, SessionStatus, SessionStore};
use serde_json::{Value, json};

const WORDS: &[&str] = &[
    "the",
    "session",
    "agent",
    "returns",
    "a",
    "module",
    "config",
    "value",
    "when",
    "tree",
    "parser",
    "reads",
    "from",
    "disk",
    "and",
    "writes",
    "each",
    "line",
    "to",
    "stream",
    "of",
    "events",
    "with",
    "its",
    "parent",
    "transcript",
    "before",
    "after",
    "tool",
    "call",
    "result",
    "bundle",
    "overlay",
    "merge",
    "is",
    "not",
    "every",
    "layout",
    "cache",
    "frame",
];

/// `n` words picked deterministically from `seed`, space-separated, lower case.
pub fn words(seed: usize, n: usize) -> String {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut out = String::with_capacity(n * 7);
    for i in 0..n {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[(state >> 33) % WORDS.len()]);
    }
    out
}

/// A valid user agent file `agent-<i>`: ~30 lines of frontmatter (meta, model role,
/// provider preferences, tools with config, delegation list) and a ~40-line body.
pub fn agent_file(i: usize) -> String {
    let mut s = format!(
        "---\nmeta:\n  name: agent-{i:04}\n  description: |\n    {}\n    {}\n\
         model_role: [coding, general]\n\nprovider_preferences:\n",
        words(i, 14),
        words(i + 1, 12)
    );
    for (p, m) in [
        ("anthropic", "claude-sonnet-*"),
        ("openai", "gpt-5*"),
        ("ollama", "qwen2.5-coder:*"),
    ] {
        s += &format!("  - provider: {p}\n    model: {m}\n");
    }
    s += "\ntools:\n  - module: tool-filesystem\n    config:\n      allowed_read_paths: [\".\"]\n\
          \x20 - module: tool-search\n  - module: tool-task\n    config:\n      max_recursion_depth: 2\n\
          \x20     max_parallel: 4\n\nagents: [explorer, reviewer]\n\n\
          session:\n  orchestrator:\n    config:\n      max_iterations: 30\n---\n\n";
    s += &format!("You are agent {i}, a focused specialist.\n\n## How you work\n\n");
    for line in 0..36 {
        s += &format!("- {}.\n", words(i * 100 + line, 12));
    }
    s
}

/// Writes `n` agent files `agent-0000.md`… into `dir` (created).
pub fn write_agents(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        std::fs::write(dir.join(format!("agent-{i:04}.md")), agent_file(i)).unwrap();
    }
}

const TS: &str = "2025-03-01T12:00:00Z";

/// How big the messages of a generated session are.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Words in a user message.
    pub user_words: usize,
    /// Lines of a tool result (each ~60 B).
    pub result_lines: usize,
    /// Words in the last paragraph of an answer.
    pub answer_words: usize,
}

/// The benches' long coding session: 100k messages make a ~78 MB transcript.
pub const LONG: Shape = Shape {
    user_words: 30,
    result_lines: 24,
    answer_words: 40,
};

/// The issue's reference session (#16: "a 100k-message session (34 MB of
/// transcript)"): the same kinds of messages, shorter, so 100k make ~34 MB.
pub const ISSUE: Shape = Shape {
    user_words: 6,
    result_lines: 2,
    answer_words: 3,
};

/// Message `i` of a long coding session, cycling user → assistant with a tool call →
/// tool result (~1.5 KB) → assistant markdown answer (~0.6 KB; every 8th has a code
/// block).
pub fn message(i: usize) -> Message {
    message_shaped(i, LONG)
}

/// Message `i` of a session of `shape` (see [`message`] for the cycle).
pub fn message_shaped(i: usize, shape: Shape) -> Message {
    let author = Some(
        json!({"author": "arbor", "usage": {"input_tokens": 1200, "output_tokens": 180}}).into(),
    );
    match i % 4 {
        0 => Message::User(UserMessage {
            content: format!("Please look at module {i}: {}?", words(i, shape.user_words)).into(),
            timestamp: Some(TS.into()),
            metadata: None,
        }),
        1 => {
            let id = format!("call_{i}");
            let input = ToolArgs::from(json!({"path": format!("src/module_{}.rs", i % 97)}));
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentBlock::Text {
                        text: format!("I'll read the file first. {}", words(i, 12)).into(),
                    },
                    ContentBlock::ToolCall {
                        id: id.clone(),
                        name: "read_file".into(),
                        input: input.clone(),
                    },
                ],
                tool_calls: vec![ToolCall {
                    id,
                    tool: "read_file".into(),
                    arguments: input,
                }],
                timestamp: Some(TS.into()),
                metadata: author,
            })
        }
        2 => Message::Tool(ToolMessage {
            name: "read_file".into(),
            tool_call_id: format!("call_{}", i - 1).into(),
            content: (0..shape.result_lines)
                .map(|l| format!("{:>4}  fn f{l}() {{ {} }}\n", l + 1, words(i + l, 8)))
                .collect(),
            is_error: false,
            timestamp: Some(TS.into()),
            metadata: None,
        }),
        _ => {
            let mut text = format!(
                "The module {i} does this:\n\n- {}\n- `{}` {}\n- {}\n\n{}",
                words(i, 14),
                words(i + 1, 1),
                words(i + 2, 12),
                words(i + 3, 14),
                words(i + 4, shape.answer_words)
            );
            if i % 8 == 7 {
                text += "\n\n```rust\nfn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n```";
            }
            Message::Assistant(AssistantMessage {
                content: vec![ContentBlock::Text { text: text.into() }],
                tool_calls: Vec::new(),
                timestamp: Some(TS.into()),
                metadata: author,
            })
        }
    }
}

/// Messages `0..n` of [`message`].
pub fn messages(n: usize) -> Vec<Message> {
    (0..n).map(message).collect()
}

/// Creates a root session in `store` whose metadata holds the built-in bundle's mount
/// plan with an OpenAI provider (as `create_root` records it) and fills it with `n`
/// messages (see [`fill_session`]). Returns its id.
pub fn create_session(store: &SessionStore, n: usize) -> String {
    create_session_shaped(store, n, LONG)
}

/// [`create_session`] with messages of `shape`.
pub fn create_session_shaped(store: &SessionStore, n: usize, shape: Shape) -> String {
    let bundle = arbor::agent::Bundle::builtin();
    let mut plan = bundle.mount_plan.to_value();
    plan["providers"] = json!([{"module": "provider-openai",
        "config": {"base_url": "http://127.0.0.1:9/v1", "default_model": "scripted-model"}}]);
    let metadata = Metadata {
        session_id: arbor::session::ids::SessionId::new_root(),
        agent_name: Some(bundle.name.clone()),
        created: TS.into(),
        last_updated: TS.into(),
        bundle: Some(bundle.name),
        model: Some("openai/scripted-model".into()),
        status: SessionStatus::Completed,
        config: Some(plan),
        agent_overlay: json!({}),
        ..Default::default()
    };
    drop(store.create(&metadata).unwrap());
    fill_session_shaped(store, &metadata.session_id, n, shape);
    metadata.session_id.into_string()
}

/// Appends [`message`]s `0..n` to the existing session `id` of `store` (through the
/// store's writer, as the engine does) and records `n / 4` turns in its metadata.
pub fn fill_session(store: &SessionStore, id: &str, n: usize) {
    fill_session_shaped(store, id, n, LONG);
}

/// [`fill_session`] with messages of `shape`.
pub fn fill_session_shaped(store: &SessionStore, id: &str, n: usize, shape: Shape) {
    let mut writer = store.open(id).unwrap();
    for i in 0..n {
        writer.append_message(&message_shaped(i, shape)).unwrap();
    }
    let mut metadata = writer.metadata().clone();
    metadata.turn_count = u32::try_from(n / 4).unwrap_or(u32::MAX);
    writer.write_metadata(&metadata).unwrap();
    writer.sync().unwrap();
}

/// One `chat.completion.chunk` SSE event carrying `delta` (as OpenAI sends it,
/// including the fields clients ignore).
pub fn openai_chunk(delta: &Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "chatcmpl-CoDWtmOB2DZI2l0bK84UVJEMpo63W", "object": "chat.completion.chunk",
        "created": 1_766_084_443, "model": "gpt-4o-2024-08-06", "service_tier": "default",
        "system_fingerprint": "fp_deacdd5f6f",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        "usage": null,
    });
    format!("data: {c}\n\n")
}

/// An OpenAI Chat Completions SSE body of at least `min_bytes`: one- or two-word
/// content deltas, then `finish_reason`, then `[DONE]`.
pub fn openai_stream(min_bytes: usize) -> Vec<u8> {
    let mut out = openai_chunk(&json!({"role": "assistant", "content": ""}), None);
    let mut i = 0;
    while out.len() < min_bytes {
        out += &openai_chunk(
            &json!({"content": format!(" {}", words(i, 1 + i % 2))}),
            None,
        );
        i += 1;
    }
    out += &openai_chunk(&json!({}), Some("stop"));
    out += "data: [DONE]\n\n";
    out.into_bytes()
}
