//! Agent transfer in the TUI (SPEC §11): the chat header shows the agent answering
//! (`helpdesk › billing`), the thread marks each hand-off (`⇄ helpdesk → billing`) when
//! loaded and live, and the agent browser shows an agent's `sub_agents` tree.

use ratatui::layout::Rect;
use serde_json::json;

use super::browser::BrowserView;
use super::chat::{self, ChatView};
use super::tests::render;
use crate::agent::{AgentDef, AgentSource, Registry};
use crate::session::protocol::AgentTransferEvent;
use crate::session::{EngineEvent, LoadedSession, Message, Metadata};
use crate::tui::state::browser::BrowserState;
use crate::tui::state::cells::CellKind;
use crate::tui::state::thread::Thread;
use crate::tui::state::tree::SessionTree;
use crate::tui::testing::{event, to_thread};
use crate::tui::theme::Theme;

const ID: &str = "5f0e1c2a-1111-4222-8333-444455556666";
const NOW: &str = "2025-03-01T12:00:30Z";

fn message(v: serde_json::Value) -> Message {
    serde_json::from_value(v).unwrap()
}

fn handed_over() -> Vec<Message> {
    vec![
        message(json!({"role": "user", "content": "Where is my invoice?"})),
        message(json!({"role": "assistant", "content": [
            {"type": "tool_call", "id": "t1", "name": "transfer_to_agent", "input": {"agent_name": "billing"}}
        ], "tool_calls": [{"id": "t1", "tool": "transfer_to_agent", "arguments": {"agent_name": "billing"}}],
           "metadata": {"author": "helpdesk"}})),
        message(
            json!({"role": "tool", "name": "transfer_to_agent", "tool_call_id": "t1",
            "content": "Transferred to agent 'billing'.",
            "metadata": {"author": "helpdesk", "transfer_to_agent": "billing"}}),
        ),
        message(
            json!({"role": "assistant", "content": [{"type": "text", "text": "Invoice 42 was paid on 3 March."}],
            "metadata": {"author": "billing"}}),
        ),
    ]
}

fn loaded(active: Option<&str>) -> Thread {
    let mut t = Thread::loading(ID, Some("helpdesk".into()));
    t.load(LoadedSession {
        metadata: Metadata {
            session_id: ID.into(),
            agent_name: Some("helpdesk".into()),
            arbor: crate::session::metadata::ArborKeys {
                active_agent: active.map(str::to_string),
                ..Default::default()
            },
            ..Default::default()
        },
        transcript: handed_over(),
        warnings: vec![],
    });
    t
}

fn screen(thread: &mut Thread, width: u16) -> String {
    let theme = Theme::builtin_dark(false);
    let area = Rect::new(0, 0, width, 12);
    thread.layout(
        chat::wrap_width(area),
        usize::from(chat::body_area(area).height),
        &theme,
    );
    let tree = SessionTree::default();
    let view = ChatView {
        thread: Some(thread),
        tree: &tree,
        theme: &theme,
        now: NOW.parse().unwrap(),
        focused: true,
    };
    render(&view, width, 12)
}

#[test]
fn a_loaded_hand_off_is_marked_and_the_header_shows_the_active_agent() {
    let mut thread = loaded(Some("billing"));
    let marks: Vec<_> = thread
        .cells
        .iter()
        .filter_map(|c| match &c.kind {
            CellKind::Handoff(h) => Some((h.from.as_str(), h.to.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(marks, [("helpdesk", "billing")]);
    insta::assert_snapshot!("transfer_chat_80", screen(&mut thread, 80));
    insta::assert_snapshot!("transfer_chat_40", screen(&mut thread, 40));
}

#[test]
fn the_header_follows_selection_and_live_transfers() {
    // billing may not return to its parent: the next message goes to helpdesk.
    let mut thread = loaded(Some("helpdesk"));
    let head = screen(&mut thread, 80);
    assert!(!head.lines().next().unwrap().contains('›'), "{head}");
    let theme = Theme::builtin_dark(false);
    let transfer = EngineEvent::AgentTransfer(AgentTransferEvent {
        from: "helpdesk".into(),
        to: "tech".into(),
        tool_call_id: "t2".into(),
    });
    to_thread(&mut thread, &event(transfer, ID, None, NOW), &theme);
    let head = screen(&mut thread, 80);
    assert!(
        head.lines().next().unwrap().contains("helpdesk › tech"),
        "{head}"
    );
}

#[test]
fn the_browser_shows_the_agent_tree() {
    let def = |name: &str, overlay: serde_json::Value| {
        let mut d = AgentDef {
            name: name.into(),
            namespace: None,
            source: AgentSource::User,
            path: None,
            description: format!("The {name} desk."),
            instruction: format!("You are {name}."),
            overlay,
            errors: vec![],
            warnings: vec![],
            shadows: vec![],
        };
        d.path = Some(format!("/home/u/.amplifier/agents/{name}.md").into());
        d
    };
    let registry = Registry::from_defs(vec![
        def("helpdesk", json!({"sub_agents": ["billing", "tech"]})),
        def("billing", json!({"disallow_transfer_to_parent": true})),
        def("tech", json!({})),
    ]);
    let state = BrowserState {
        selected: Some("billing".into()),
        ..Default::default()
    };
    let theme = Theme::builtin_dark(false);
    let view = BrowserView {
        registry: &registry,
        state: &state,
        mark: None,
        theme: &theme,
    };
    insta::assert_snapshot!("transfer_browser_80", render(&view, 80, 16));
}
