//! The `todo` checklist in the chat (issue 39 item 7): a `todo` call that sets a list
//! shows a checklist cell — one row per item, `☐` to do, `◐` in progress (its
//! present-continuous form), `☑` done — not a one-line notice with the "cancelled"
//! glyph.

use super::*;
use arbor::session::protocol::{ToolEffect, ToolPostEvent};

#[test]
fn a_todo_call_shows_a_checklist() {
    let mut h = with_root_open();
    let list = serde_json::from_value(json!([
        {"content": "Read the parser", "activeForm": "Reading the parser", "status": "completed"},
        {"content": "Fix the tests", "activeForm": "Fixing the tests", "status": "in_progress"},
        {"content": "Run clippy", "activeForm": "Running clippy", "status": "pending"},
    ]))
    .unwrap();
    h.engine(
        EngineEvent::ToolPost(ToolPostEvent {
            tool_name: "todo".into(),
            tool_call_id: "t1".into(),
            result: "{}".into(),
            effect: Some(ToolEffect::Todo(list)),
            ..Default::default()
        }),
        ROOT,
        None,
        30,
    );
    let screen = h.screen(100, 30);
    for row in [
        "☰ todo 1/3",
        "☑ Read the parser",
        "◐ Fixing the tests",
        "☐ Run clippy",
    ] {
        assert!(screen.contains(row), "{row} missing:\n{screen}");
    }
    assert!(!screen.contains("⊘ todo"), "{screen}");
}
