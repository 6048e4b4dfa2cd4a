//! Unit tests for the session tree state.
use super::*;
use crate::session::{EngineEvent, SessionId};
use crate::tui::testing::{event as ev, fork, response, start, to_tree, tokens};
use serde_json::json;

#[test]
fn the_model_comes_from_metadata_then_live_events() {
    let mut t = SessionTree::default();
    let mut routed = Metadata {
        session_id: "a-b_explorer".into(),
        parent_id: Some("r".into()),
        model: Some("openai/gpt-4o-mini".into()),
        ..Default::default()
    };
    routed.arbor.resolved_model = Some(
        serde_json::from_value(
            json!({"provider": "anthropic", "model": "claude-x", "via": "call preferences"}),
        )
        .unwrap(),
    );
    let plain = Metadata {
        session_id: "r".into(),
        model: Some("openai/gpt-4o-mini".into()),
        ..Default::default()
    };
    t.load(&[routed, plain]);
    let child = t.get("a-b_explorer").unwrap();
    assert_eq!(child.model.as_deref(), Some("anthropic/claude-x"));
    assert_eq!(child.model_via.as_deref(), Some("call preferences"));
    assert_eq!(
        t.get("r").unwrap().model.as_deref(),
        Some("openai/gpt-4o-mini")
    );
    // What the API reports wins once a reply arrives; bare models get the provider.
    to_tree(
        &mut t,
        &ev(
            response("openai", "gpt-4o-2024-08-06"),
            "r",
            None,
            "2025-01-01T00:00:07Z",
        ),
    );
    assert_eq!(
        t.get("r").unwrap().model.as_deref(),
        Some("openai/gpt-4o-2024-08-06")
    );
    assert_eq!(model_label(Some("openai"), "openai/x"), "openai/x");
}

#[test]
fn live_fork_appears_under_parent_with_rollup_and_timing() {
    let mut t = SessionTree::default();
    to_tree(
        &mut t,
        &ev(start("lead"), "r", None, "2025-01-01T00:00:00Z"),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Running),
            "r",
            None,
            "2025-01-01T00:00:00Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            fork("r", ""),
            "a-b_explorer",
            Some("r"),
            "2025-01-01T00:00:05Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            tokens(100, 20, None),
            "a-b_explorer",
            Some("r"),
            "2025-01-01T00:00:06Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(tokens(1, 2, None), "r", None, "2025-01-01T00:00:07Z"),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Completed),
            "a-b_explorer",
            Some("r"),
            "2025-01-01T00:00:09Z",
        ),
    );
    let rows = t.rows();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[1].node.agent.as_str(), rows[1].depth),
        ("explorer", 1)
    );
    assert_eq!(rows[0].tokens, 123);
    assert_eq!(t.running_count(), 1);
    assert_eq!(rows[0].hidden_running, 0, "expanded: nothing hidden");
    let now: Timestamp = "2025-01-01T00:01:00Z".parse().unwrap();
    assert_eq!(rows[0].node.elapsed_ms(now), Some(60_000));
    assert_eq!(rows[1].node.elapsed_ms(now), Some(4_000));
}

#[test]
fn a_collapsed_node_counts_its_running_descendants() {
    let mut t = SessionTree::default();
    let running = EngineEvent::status(SessionStatus::Running);
    for (id, parent) in [
        ("r", None),
        ("r-a_x", Some("r")),
        ("r-a-b_y", Some("r-a_x")),
    ] {
        to_tree(&mut t, &ev(start(""), id, parent, "2025-01-01T00:00:00Z"));
    }
    for id in ["r-a_x", "r-a-b_y"] {
        to_tree(
            &mut t,
            &ev(running.clone(), id, None, "2025-01-01T00:00:01Z"),
        );
    }
    t.selected = Some("r".into());
    t.set_collapsed(true);
    let rows = t.rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].hidden_running, 2);
    t.expand("r");
    assert_eq!(t.rows()[0].hidden_running, 0);
    assert_eq!(t.rows()[1].hidden_running, 0);
}

#[test]
fn stored_sessions_link_children_and_orphans_are_adopted() {
    let meta = |id: &str, parent: Option<&str>| Metadata {
        session_id: id.into(),
        parent_id: parent.map(Into::into),
        ..Default::default()
    };
    let mut t = SessionTree::default();
    t.ensure("c-d_x", Some("r1"), None);
    t.load(&[
        meta("r2", None),
        meta("r1-e_y", Some("r1")),
        meta("r1", None),
    ]);
    assert_eq!(t.latest_root(), Some("r2"));
    t.reveal("c-d_x");
    let ids: Vec<&str> = t.rows().iter().map(|r| r.node.id.as_str()).collect();
    assert_eq!(ids, ["r2", "r1", "c-d_x", "r1-e_y"]);
}

#[test]
fn stored_children_keep_spawn_order_whatever_was_updated_last() {
    let meta = |id: &str, parent: Option<&str>, created: &str, updated: &str| Metadata {
        session_id: id.into(),
        parent_id: parent.map(SessionId::from),
        created: created.into(),
        last_updated: updated.into(),
        ..Default::default()
    };
    let mut t = SessionTree::default();
    // Newest update first, as SessionStore::list returns them: the first child was
    // resumed later, so it comes first in the list.
    t.load(&[
        meta(
            "r-a_first",
            Some("r"),
            "2025-01-01T00:00:01Z",
            "2025-01-01T00:09:00Z",
        ),
        meta(
            "r-b_second",
            Some("r"),
            "2025-01-01T00:00:02Z",
            "2025-01-01T00:05:00Z",
        ),
        meta("r", None, "2025-01-01T00:00:00Z", "2025-01-01T00:04:00Z"),
    ]);
    assert_eq!(t.get("r").unwrap().children, ["r-a_first", "r-b_second"]);
}

#[test]
fn parent_cycles_and_missing_parents_hide_no_session() {
    let meta = |id: &str, parent: Option<&str>, created: &str| Metadata {
        session_id: id.into(),
        parent_id: parent.map(SessionId::from),
        created: created.into(),
        last_updated: created.into(),
        status: SessionStatus::Completed,
        ..Default::default()
    };
    let mut t = SessionTree::default();
    t.load(&[
        meta("r", None, "2025-01-01T00:00:05Z"),
        meta("b", Some("a"), "2025-01-01T00:00:02Z"),
        meta("a", Some("b"), "2025-01-01T00:00:01Z"),
        meta("c", Some("a"), "2025-01-01T00:00:03Z"),
        meta("s", Some("s"), "2025-01-01T00:00:04Z"),
        meta("o", Some("gone"), "2025-01-01T00:00:06Z"),
    ]);
    let rows: Vec<(&str, usize, Option<Detached>)> = t
        .rows()
        .iter()
        .map(|r| (r.node.id.as_str(), r.depth, r.node.detached))
        .collect();
    assert_eq!(
        rows,
        [
            ("o", 0, Some(Detached::MissingParent)),
            ("r", 0, None),
            ("s", 0, Some(Detached::SelfParent)),
            ("a", 0, Some(Detached::Cycle)),
            ("b", 1, None),
            ("c", 1, None),
        ]
    );
    assert_eq!(t.root_of("b"), Some("a"));
    t.reveal("b");
    t.set_collapsed(true);
    assert_eq!(t.selected.as_deref(), Some("a"));
    // When the missing parent shows up live, `o` is linked under it, unmarked.
    t.ensure("gone", None, Some("planner"));
    let gone = t.get("gone").unwrap();
    assert_eq!(gone.children, ["o"]);
    assert_eq!(t.get("o").unwrap().detached, None);
    assert_eq!(t.latest_root(), Some("gone"));
}

#[test]
fn a_stored_session_is_timed_by_its_last_turn_not_its_whole_life() {
    let stored = |id: &str, turns: u32, turn_started: Option<&str>| Metadata {
        session_id: id.into(),
        created: "2025-11-20T10:00:00Z".into(),
        last_updated: "2026-11-25T10:00:30Z".into(),
        turn_count: turns,
        status: SessionStatus::Completed,
        arbor: crate::session::metadata::ArborKeys {
            turn_started: turn_started.map(str::to_string),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut t = SessionTree::default();
    t.load(&[
        stored("resumed", 4, Some("2026-11-25T10:00:00Z")),
        stored("amplifier", 4, None),
        stored("one-turn", 1, None),
    ]);
    let now: Timestamp = "2026-11-25T11:00:00Z".parse().unwrap();
    let elapsed = |id: &str| t.get(id).unwrap().elapsed_ms(now);
    // The last turn of a session resumed a year later: 30 s, not a year.
    assert_eq!(elapsed("resumed"), Some(30_000));
    // Another tool's session of several turns: the last turn's start is unknown.
    assert_eq!(elapsed("amplifier"), None);
    // One turn: created → last_updated is that turn.
    assert_eq!(
        elapsed("one-turn"),
        Some(millis_between(
            "2025-11-20T10:00:00Z".parse().unwrap(),
            "2026-11-25T10:00:30Z".parse().unwrap(),
        ))
    );
}

#[test]
fn a_todo_list_shows_its_progress_from_metadata_then_live_calls() {
    let mut t = SessionTree::default();
    let mut stored = Metadata {
        session_id: "r".into(),
        ..Default::default()
    };
    let item = |status: &str| json!({"content": "x", "activeForm": "xing", "status": status});
    stored.arbor.todos = Some(
        serde_json::from_value(json!([item("completed"), item("pending"), item("pending")]))
            .unwrap(),
    );
    t.load(&[stored]);
    assert_eq!(t.get("r").unwrap().todo, Some((1, 3)));
    // The live list is the effect of the call's `tool:post`, not its input.
    let list = serde_json::from_value(json!([item("completed"), item("completed")])).unwrap();
    let post = crate::session::protocol::ToolPostEvent {
        tool_name: "todo".into(),
        tool_call_id: "t1".into(),
        effect: Some(crate::session::protocol::ToolEffect::Todo(list)),
        ..Default::default()
    };
    to_tree(
        &mut t,
        &ev(
            EngineEvent::ToolPost(post),
            "r",
            None,
            "2025-01-01T00:00:01Z",
        ),
    );
    assert_eq!(t.get("r").unwrap().todo, Some((2, 2)));
}
