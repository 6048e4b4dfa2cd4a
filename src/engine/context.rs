//! Parent context for a delegated instruction (`context_depth: recent|all`, SPEC §9).
//!
//! Owns: splitting a transcript into turns (each starts at a user message) and quoting
//! the last N (or all) of them ahead of the child's instruction. Does not own: the
//! task call itself (`tool::task`, `spawn`).

use crate::session::message::Message;
use crate::tool::confine::truncate_chars;
use crate::tool::task::ContextDepth;

/// A quoted tool result is cut to this many bytes.
const TOOL_RESULT_MAX: usize = 500;

/// The child's first message: `instruction` alone for `ContextDepth::None` (or an
/// empty transcript), else
///
/// ```text
/// Context from the parent session (last N turns):
///
/// > user: …
/// > assistant (agent): …
/// > tool read_file: …
///
/// Your task:
/// <instruction>
/// ```
pub fn with_context(
    transcript: &[Message],
    depth: ContextDepth,
    turns: usize,
    instruction: &str,
) -> String {
    let selected = match depth {
        ContextDepth::None => return instruction.to_string(),
        ContextDepth::All => transcript,
        ContextDepth::Recent => last_turns(transcript, turns),
    };
    let quoted: Vec<String> = selected.iter().filter_map(quote).collect();
    if quoted.is_empty() {
        return instruction.to_string();
    }
    let scope = match depth {
        ContextDepth::All => "the whole conversation".to_string(),
        _ if turns == 1 => "last turn".to_string(),
        _ => format!("last {turns} turns"),
    };
    format!(
        "Context from the parent session ({scope}):\n\n{}\n\nYour task:\n{instruction}",
        quoted.join("\n")
    )
}

/// The messages of the last `turns` turns (a turn starts at a user message).
fn last_turns(transcript: &[Message], turns: usize) -> &[Message] {
    if turns == 0 {
        return &[];
    }
    let starts: Vec<usize> = transcript
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::User(_)))
        .map(|(i, _)| i)
        .collect();
    match starts.len().checked_sub(turns) {
        Some(first) => &transcript[starts[first]..],
        None => transcript,
    }
}

/// One message as quoted lines, `None` when it has nothing to show.
fn quote(message: &Message) -> Option<String> {
    let (who, text) = match message {
        Message::User(m) => ("user".to_string(), m.content.to_string()),
        Message::System(m) => ("system".to_string(), m.content.to_string()),
        Message::Assistant(a) => {
            let who = match a.author() {
                Some(author) => format!("assistant ({author})"),
                None => "assistant".to_string(),
            };
            let mut text = a.text();
            for call in &a.tool_calls {
                text.push_str(&format!("\n[calls {} {}]", call.tool, call.arguments));
            }
            (who, text)
        }
        Message::Tool(t) => {
            let cut = truncate_chars(&t.content, TOOL_RESULT_MAX);
            let more = if cut.len() < t.content.len() {
                " …"
            } else {
                ""
            };
            (format!("tool {}", t.name), format!("{cut}{more}"))
        }
    };
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let mut out = format!("> {who}: {first}");
    for line in lines {
        out.push_str("\n> ");
        out.push_str(line);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript() -> Vec<Message> {
        let reply = |t: &str| {
            serde_json::from_value::<Message>(serde_json::json!({
                "role": "assistant",
                "content": [{"type": "text", "text": t}],
                "metadata": {"author": "root"}
            }))
            .unwrap()
        };
        vec![
            Message::user("first question"),
            reply("first answer"),
            Message::user("second\nquestion"),
            reply("second answer"),
            Message::user("third question"),
        ]
    }

    #[test]
    fn none_is_the_bare_instruction() {
        assert_eq!(
            with_context(&transcript(), ContextDepth::None, 5, "do x"),
            "do x"
        );
        assert_eq!(with_context(&[], ContextDepth::All, 5, "do x"), "do x");
    }

    #[test]
    fn recent_quotes_the_last_turns() {
        let text = with_context(&transcript(), ContextDepth::Recent, 2, "do x");
        assert_eq!(
            text,
            "Context from the parent session (last 2 turns):\n\n\
             > user: second\n> question\n> assistant (root): second answer\n> user: third question\n\n\
             Your task:\ndo x"
        );
        let all = with_context(&transcript(), ContextDepth::All, 1, "do x");
        assert!(all.contains("> user: first question") && all.contains("(the whole conversation)"));
    }
}
