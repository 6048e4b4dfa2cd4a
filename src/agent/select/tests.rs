use serde_json::json;

use super::*;
use crate::agent::tree::TreeAgent;
use crate::session::message::{AssistantMessage, ToolCall, ToolMessage};

fn helpdesk(billing_disallows_parent: bool) -> AgentTree {
    let mut tree = AgentTree::new(TreeAgent::new("helpdesk"));
    tree.add(
        0,
        TreeAgent {
            disallow_transfer_to_parent: billing_disallows_parent,
            ..TreeAgent::new("billing")
        },
    );
    tree.add(0, TreeAgent::new("tech"));
    tree
}

fn said(author: &str, text: &str, calls: &[&str]) -> Message {
    Message::Assistant(AssistantMessage {
        content: vec![crate::session::message::ContentBlock::Text { text: text.into() }],
        tool_calls: calls
            .iter()
            .map(|id| ToolCall {
                id: (*id).into(),
                tool: "transfer_to_agent".into(),
                arguments: json!({"agent_name": "billing"}).into(),
            })
            .collect(),
        timestamp: None,
        metadata: Some(json!({"author": author}).into()),
    })
}

fn transferred(author: &str, id: &str, target: &str) -> Message {
    Message::Tool(ToolMessage {
        name: "transfer_to_agent".into(),
        tool_call_id: id.into(),
        content: format!("Transferred to {target}.").into(),
        is_error: false,
        timestamp: None,
        metadata: Some(json!({"author": author, TRANSFER_KEY: target}).into()),
    })
}

/// helpdesk hands over to billing, billing answers, the person writes again.
fn handed_over() -> Vec<Message> {
    vec![
        Message::user("my invoice"),
        said("helpdesk", "", &["c1"]),
        transferred("helpdesk", "c1", "billing"),
        said("billing", "Your invoice is paid.", &[]),
        Message::user("thanks, and the next one?"),
    ]
}

#[test]
fn the_agent_that_answered_keeps_the_conversation() {
    let events = transcript_events(&handed_over(), "helpdesk");
    assert_eq!(
        find_agent_to_run(&helpdesk(false), &events, false),
        "billing"
    );
}

#[test]
fn an_agent_that_may_not_return_to_its_parent_hands_back_to_the_root() {
    let events = transcript_events(&handed_over(), "helpdesk");
    assert_eq!(
        find_agent_to_run(&helpdesk(true), &events, false),
        "helpdesk"
    );
}

#[test]
fn an_unanswered_transfer_owns_the_next_message() {
    let mut transcript = handed_over();
    transcript.truncate(3);
    transcript.push(Message::user("hello?"));
    let events = transcript_events(&transcript, "helpdesk");
    assert_eq!(
        find_agent_to_run(&helpdesk(false), &events, false),
        "billing"
    );
}

#[test]
fn no_author_means_the_default_and_a_fresh_session_goes_to_the_root() {
    let events = transcript_events(&[Message::user("hi")], "helpdesk");
    assert_eq!(events[0].author, USER);
    assert_eq!(
        find_agent_to_run(&helpdesk(false), &events, false),
        "helpdesk"
    );
    let mut untagged = said("x", "hello", &[]);
    if let Message::Assistant(a) = &mut untagged {
        a.metadata = None;
    }
    let events = transcript_events(&[untagged], "helpdesk");
    assert_eq!(events[0].author, "helpdesk");
}

#[test]
fn rewinds_drop_the_rewound_invocations() {
    let ev = |author: &str, inv: &str| RouteEvent {
        author: author.into(),
        invocation_id: Some(inv.into()),
        has_content: true,
        ..RouteEvent::default()
    };
    let events = vec![
        ev("helpdesk", "inv0"),
        ev("billing", "inv1"),
        ev("tech", "inv2"),
        RouteEvent {
            author: USER.into(),
            rewind_before_invocation_id: Some("inv1".into()),
            ..RouteEvent::default()
        },
    ];
    let live: Vec<&str> = apply_rewinds(&events)
        .iter()
        .map(|e| e.author.as_str())
        .collect();
    assert_eq!(live, ["helpdesk"]);
    assert_eq!(
        find_agent_to_run(&helpdesk(false), &events, false),
        "helpdesk"
    );
}
