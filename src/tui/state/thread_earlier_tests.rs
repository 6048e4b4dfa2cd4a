//! A thread opened tail-first, once its earlier part is merged, equals the thread of
//! the same transcript loaded at once.

use proptest::prelude::*;

use super::*;
use crate::session::Metadata;
use crate::session::store::tail::read_tail_from;
use crate::session::store::transcript::{TRANSCRIPT_FILE, read_transcript};

fn session(transcript: Vec<crate::session::Message>, warnings: Vec<String>) -> LoadedSession {
    LoadedSession {
        metadata: Metadata {
            session_id: "s".into(),
            ..Default::default()
        },
        transcript,
        warnings,
    }
}

/// The thread of `bytes` loaded at once, and loaded tail-first (tail of at least
/// `min` messages from a first window of `window` bytes) then merged.
fn both(bytes: &[u8], min: usize, window: u64) -> (Thread, Thread) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TRANSCRIPT_FILE);
    std::fs::write(&path, bytes).unwrap();
    let (messages, warnings) = read_transcript(&path).unwrap();
    let mut whole = Thread::default();
    whole.load(session(messages, warnings));
    let (tail, earlier) = read_tail_from(&path, min, window, window * 16).unwrap();
    let mut split = Thread::default();
    match earlier {
        None => split.load(session(tail.messages.clone(), tail.warnings(0))),
        Some(part) => {
            split.load_tail(session(tail.messages, vec![]), part.end());
            assert_eq!(
                split.cells[0].kind,
                CellKind::Notice(LOADING_EARLIER.into())
            );
            let cells = EarlierCells::build(part.end(), part.read().unwrap());
            assert!(!split.earlier_loaded(EarlierCells::build(part.end() + 1, Default::default())));
            assert!(split.earlier_loaded(cells));
            assert!(!split.earlier_pending());
        }
    }
    (whole, split)
}

fn kinds(t: &Thread) -> Vec<&CellKind> {
    t.cells.iter().map(|c| &c.kind).collect()
}

fn line(v: serde_json::Value) -> String {
    v.to_string() + "\n"
}

#[test]
fn a_result_whose_call_is_in_the_earlier_part_lands_on_its_card() {
    let mut text = line(serde_json::json!({"role": "user", "content": "go"}));
    text += &line(serde_json::json!({"role": "assistant", "content": [],
        "tool_calls": [{"id": "c1", "tool": "bash", "arguments": {"command": "ls -la"}}]}));
    let cut = text.len() as u64;
    text += &line(
        serde_json::json!({"role": "tool", "name": "bash", "tool_call_id": "c1", "content": "ok"}),
    );
    text += &line(serde_json::json!({"role": "assistant", "content": "done"}));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TRANSCRIPT_FILE);
    std::fs::write(&path, &text).unwrap();
    let size = text.len() as u64 - cut;
    let (tail, earlier) = read_tail_from(&path, 2, size, size).unwrap();
    let part = earlier.unwrap();
    assert_eq!(
        part.end(),
        cut,
        "the call is in the earlier part, its result in the tail"
    );
    let mut t = Thread::default();
    t.load_tail(session(tail.messages, vec![]), cut);
    // Before: the loading line, an orphan card (no arguments) and the reply.
    assert_eq!(t.cells.len(), 3);
    t.selected = Some(2);
    t.scroll = Scroll::Top { cell: 0, row: 0 };
    let built = EarlierCells::build(cut, part.read().unwrap());
    assert_eq!(built.len(), 2);
    assert!(t.earlier_loaded(built));
    let (whole, _) = both(text.as_bytes(), 2, size);
    assert_eq!(kinds(&t), kinds(&whole));
    let CellKind::Tool(card) = &t.cells[1].kind else {
        panic!("{:?}", t.cells[1].kind)
    };
    assert_eq!(card.arguments.value()["command"], "ls -la");
    assert_eq!(card.result.as_deref(), Some("ok"));
    assert_eq!(t.selected, Some(2), "the reply stays selected");
    assert_eq!(
        t.scroll,
        Scroll::Top { cell: 1, row: 0 },
        "the card seen first, now with its call"
    );
    assert_eq!(t.calls.get("c1"), Some(&1));
}

#[test]
fn a_failed_earlier_read_replaces_the_loading_line() {
    let mut t = Thread::default();
    t.load_tail(
        session(vec![crate::session::Message::user("hi")], vec![]),
        10,
    );
    assert!(!t.earlier_failed(11, "nope"));
    assert!(t.earlier_failed(10, "disk gone"));
    assert_eq!(
        t.cells[0].kind,
        CellKind::Error("cannot load earlier messages: disk gone".into())
    );
    assert!(!t.earlier_pending());
}

/// One generated line: user text, assistant text with a tool or task call, a tool
/// result (its call perhaps in the other part, ids reused), a blank line, JSON that
/// is not a message, a torn message, or bytes that are not JSON.
fn any_line() -> impl Strategy<Value = Vec<u8>> {
    let msg = ("[a-z ]{0,8}", 0..4u8, 0..3u8).prop_map(|(text, kind, id)| {
        let id = format!("c{id}");
        match kind {
            0 => serde_json::json!({"role": "user", "content": text}),
            1 => serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": text}],
                "tool_calls": [{"id": id, "tool": "bash", "arguments": {"command": text}}]}),
            2 => serde_json::json!({"role": "assistant", "content": [{"type": "thinking", "thinking": text},
                {"type": "tool_call", "id": id, "name": "task", "input": {"agent": "explorer", "instruction": text}}]}),
            _ => serde_json::json!({"role": "tool", "name": "bash", "tool_call_id": id, "content": text}),
        }
        .to_string()
        .into_bytes()
    });
    prop_oneof![
        8 => msg.clone(),
        1 => Just(b"  ".to_vec()),
        1 => Just(br#"{"role":"robot"}"#.to_vec()),
        1 => (msg, 0..20usize).prop_map(|(l, cut)| l[..cut.min(l.len())].to_vec()),
        1 => Just(b"not json".to_vec()),
    ]
}

proptest! {
    #[test]
    fn tail_first_then_earlier_equals_loading_at_once(
        lines in proptest::collection::vec(any_line(), 0..30),
        terminated in any::<bool>(),
        min in 0..8usize,
        window in 1..400u64,
    ) {
        let mut bytes = lines.join(&b'\n');
        if terminated {
            bytes.push(b'\n');
        }
        let (whole, split) = both(&bytes, min, window);
        prop_assert_eq!(kinds(&split), kinds(&whole));
        prop_assert_eq!(&split.calls, &whole.calls);
    }
}
