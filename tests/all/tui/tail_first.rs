//! A thread opened tail-first (SPEC §16): the newest messages show at once under a
//! "loading earlier messages…" line that scrolling up reaches (never a stall), the
//! composer types meanwhile, and the earlier part, when it arrives, takes the
//! loading line's place with a result whose call was in it on its card.

use arbor::session::store::EarlierRead;
use arbor::tui::state::thread_earlier::{EarlierCells, LOADING_EARLIER};

use super::*;

fn messages(range: std::ops::Range<usize>) -> Vec<Message> {
    range
        .map(|i| match i {
            // The call is the last earlier message; its result the first newest one.
            49 => msg(json!({"role": "assistant", "content": [],
                "tool_calls": [{"id": "c9", "tool": "bash", "arguments": {"command": "cargo check"}}]})),
            50 => msg(json!({"role": "tool", "name": "bash", "tool_call_id": "c9", "content": "Finished"})),
            i if i % 2 == 0 => Message::user(format!("question {i}")),
            i => msg(json!({"role": "assistant", "content": format!("answer {i}")})),
        })
        .collect()
}

#[test]
fn newest_first_then_the_loading_line_then_the_earlier_messages() {
    let mut h = harness_with(Ok("p/m".into()), Some(ROOT));
    h.app.handle(AppEvent::Reply(EngineReply::Opened {
        requested: ROOT.into(),
        session: Box::new(LoadedSession {
            metadata: Metadata {
                session_id: ROOT.into(),
                agent_name: Some("zen-architect".into()),
                ..Default::default()
            },
            transcript: messages(50..70),
            warnings: vec![],
        }),
        earlier: Some(4096),
    }));
    let screen = h.screen(100, 30);
    assert!(screen.contains("answer 69"), "{screen}");
    assert!(
        !screen.contains(LOADING_EARLIER),
        "the newest screenful first: {screen}"
    );
    // The person types while the rest loads.
    h.type_text("still typing");
    for _ in 0..6 {
        h.press(KeyCode::PageUp);
    }
    let screen = h.screen(100, 30);
    assert!(screen.contains(LOADING_EARLIER), "{screen}");
    assert!(screen.contains("still typing"), "{screen}");
    assert!(screen.contains("question 52"), "{screen}");
    // The orphan result is a card of its own until its call arrives.
    assert!(!screen.contains("cargo check"), "{screen}");

    // A part for another load (other end offset) is ignored.
    let stale = EarlierCells::build(1, EarlierRead::default());
    h.app.handle(AppEvent::EarlierLoaded {
        session_id: ROOT.into(),
        end: 1,
        result: Ok(Box::new(stale)),
    });
    assert!(h.screen(100, 30).contains(LOADING_EARLIER));

    let read = EarlierRead {
        messages: messages(0..50),
        warnings: vec!["transcript.jsonl line 3: skipped: bad".into()],
    };
    h.app.handle(AppEvent::EarlierLoaded {
        session_id: ROOT.into(),
        end: 4096,
        result: Ok(Box::new(EarlierCells::build(4096, read))),
    });
    let screen = h.screen(100, 30);
    assert!(!screen.contains(LOADING_EARLIER), "{screen}");
    assert!(
        screen.contains("cargo check"),
        "the call's card, with its result: {screen}"
    );
    for _ in 0..30 {
        h.press(KeyCode::PageUp);
    }
    let screen = h.screen(100, 30);
    assert!(
        screen.contains("line 3: skipped"),
        "warnings first: {screen}"
    );
    assert!(screen.contains("question 0"), "{screen}");
    let thread = h.app.thread().unwrap();
    assert!(!thread.earlier_pending());
    let cards = thread
        .cells
        .iter()
        .filter(|c| matches!(&c.kind, arbor::tui::state::cells::CellKind::Tool(_)))
        .count();
    assert_eq!(cards, 1, "one card for call c9");
}

#[test]
fn an_earlier_part_that_cannot_be_read_is_named() {
    let mut h = harness_with(Ok("p/m".into()), Some(ROOT));
    h.app.handle(AppEvent::Reply(EngineReply::Opened {
        requested: ROOT.into(),
        session: Box::new(LoadedSession {
            metadata: Metadata {
                session_id: ROOT.into(),
                ..Default::default()
            },
            transcript: messages(55..60),
            warnings: vec![],
        }),
        earlier: Some(77),
    }));
    h.app.handle(AppEvent::EarlierLoaded {
        session_id: ROOT.into(),
        end: 77,
        result: Err(arbor::engine::EngineError::Other(
            "transcript.jsonl line 2 is longer than 64 MiB".into(),
        )
        .into()),
    });
    let screen = h.screen(100, 30);
    assert!(screen.contains("cannot load earlier messages"), "{screen}");
    assert!(screen.contains("answer 59"), "{screen}");
}

/// A reopened thread shows its stored compactions where they happened (issue 39
/// item 6): `EngineReply::Compactions` comes before the transcript; one that
/// happened among the newest messages shows at once, one at the end after the last
/// message, and one in the earlier part once that part is laid out — each once.
#[test]
fn stored_compactions_show_where_they_happened() {
    use arbor::session::protocol::ContextCompactionEvent;
    use arbor::tui::state::cells::CellKind;
    let at = |s: i64| {
        ("2026-03-01T12:00:00Z".parse::<Timestamp>().unwrap() + jiff::SignedDuration::from_secs(s))
            .to_string()
    };
    let timed = |range: std::ops::Range<usize>| -> Vec<Message> {
        range
            .map(|i| {
                let role = if i % 2 == 0 { "user" } else { "assistant" };
                let text = if i % 2 == 0 {
                    format!("question {i}")
                } else {
                    format!("answer {i}")
                };
                msg(json!({"role": role, "content": text, "timestamp": at(i as i64)}))
            })
            .collect()
    };
    let compaction = |n: u64| ContextCompactionEvent {
        before_tokens: 1000 * n,
        after_tokens: 100,
        messages_removed: n,
        ..Default::default()
    };
    let mut h = harness_with(Ok("p/m".into()), Some(ROOT));
    h.app.handle(AppEvent::Reply(EngineReply::Compactions {
        requested: ROOT.into(),
        // Each half a second after the message it follows.
        compactions: [(10, 1), (60, 2), (100, 3)]
            .into_iter()
            .map(|(s, n)| (at(s).replace('Z', ".500Z"), compaction(n)))
            .collect(),
    }));
    h.app.handle(AppEvent::Reply(EngineReply::Opened {
        requested: ROOT.into(),
        session: Box::new(LoadedSession {
            metadata: Metadata {
                session_id: ROOT.into(),
                ..Default::default()
            },
            transcript: timed(50..70),
            warnings: vec![],
        }),
        earlier: Some(4096),
    }));
    let order = |h: &Harness| -> Vec<String> {
        h.app
            .thread()
            .unwrap()
            .cells
            .iter()
            .filter_map(|c| match &c.kind {
                CellKind::User(t) | CellKind::Assistant(t) => Some(t.to_string()),
                CellKind::Compaction(card) => Some(card.note.clone()),
                _ => None,
            })
            .collect()
    };
    let tail = order(&h);
    let second = tail
        .iter()
        .position(|t| t.contains("2000 →"))
        .expect("the tail's compaction");
    assert_eq!(tail[second - 1], "question 60", "{tail:?}");
    assert_eq!(tail[second + 1], "answer 61", "{tail:?}");
    assert!(tail.last().unwrap().contains("3000 →"), "{tail:?}");
    assert!(!tail.iter().any(|t| t.contains("1000 →")), "{tail:?}");

    h.app.handle(AppEvent::Reply(EngineReply::Earlier {
        session_id: ROOT.into(),
        end: 4096,
        result: Ok(arbor::engine::EarlierMessages::new(
            Arc::new(timed(0..50)),
            50,
            vec![],
        )),
    }));
    let layouts = h.app.take_layouts();
    assert_eq!(layouts.len(), 1);
    for layout in layouts {
        let result = layout.lay_out();
        h.app.handle(AppEvent::EarlierLoaded {
            session_id: ROOT.into(),
            end: 4096,
            result,
        });
    }
    let all = order(&h);
    let notes: Vec<&String> = all
        .iter()
        .filter(|t| t.starts_with("context compacted"))
        .collect();
    assert_eq!(notes.len(), 3, "{all:?}");
    let first = all.iter().position(|t| t.contains("1000 →")).unwrap();
    assert_eq!(all[first - 1], "question 10", "{all:?}");
    assert_eq!(all[first + 1], "answer 11", "{all:?}");
    let second = all.iter().position(|t| t.contains("2000 →")).unwrap();
    assert_eq!(all[second - 1], "question 60", "{all:?}");
    assert!(all.last().unwrap().contains("3000 →"), "{all:?}");
}
