//! The tree pane marks a sub-session's unmerged worktree by its branch and a fork by
//! the turn it was cut at (issue 25), from stored metadata.

use serde_json::json;

use super::tree::TreeView;
use crate::session::{Metadata, SessionId, SessionStatus};
use crate::tui::state::tree::SessionTree;
use crate::tui::testing::buffer_text;
use crate::tui::theme::Theme;

fn meta(id: &str, parent: Option<&str>, agent: &str) -> Metadata {
    Metadata {
        session_id: SessionId::from(id),
        parent_id: parent.map(SessionId::from),
        agent_name: Some(agent.into()),
        created: "2025-03-01T12:00:00Z".into(),
        last_updated: "2025-03-01T12:00:30Z".into(),
        status: SessionStatus::Completed,
        ..Default::default()
    }
}

#[test]
fn a_worktree_child_shows_its_branch_and_a_fork_its_turn() {
    let root = meta("4f6d2c1a-9b7e-4c3d-8a2f-1e0d9c8b7a65", None, "arbor");
    let mut child = meta(
        "4f6d2c1a9b7e4c3d-1a2b3c4d5e6f7081_implementer",
        Some(&root.session_id),
        "implementer",
    );
    child.arbor.worktree = Some(serde_json::from_value(json!({"path": "/w", "branch": "arbor/1a2b3c4d", "base": "0", "repo": "/r", "state": "active"})).unwrap());
    let mut fork = meta(
        "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b",
        Some(&root.session_id),
        "arbor",
    );
    fork.forked_from_turn = Some(3);
    let mut tree = SessionTree::default();
    tree.load(&[root, child, fork]);
    for id in tree.roots().to_vec() {
        tree.expand(&id);
    }
    let theme = Theme::builtin_dark(false);
    let view = TreeView {
        tree: &tree,
        theme: &theme,
        now: "2025-03-01T12:01:00Z".parse().unwrap(),
        focused: false,
        open: None,
    };
    let area = ratatui::layout::Rect::new(0, 0, 80, 8);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    ratatui::widgets::Widget::render(&view, area, &mut buf);
    let text = buffer_text(&buf);
    assert!(
        text.contains("implementer ⎇ arbor/1a2b3c4d unmerged"),
        "{text}"
    );
    assert!(text.contains("(fork @3)"), "{text}");
}

#[test]
fn each_worktree_child_says_where_its_work_stands() {
    let root = meta("4f6d2c1a-9b7e-4c3d-8a2f-1e0d9c8b7a65", None, "arbor");
    let child = |n: u8, agent: &str, extra: serde_json::Value| {
        let m = meta(
            &format!("4f6d2c1a9b7e4c3d-{n}a2b3c4d5e6f7081_{agent}"),
            Some(&root.session_id),
            agent,
        );
        // The keys of `extra` read into `m` as `metadata.json` is.
        let mut v = serde_json::to_value(&m).unwrap();
        if let serde_json::Value::Object(map) = extra {
            for (key, value) in map {
                v[key] = value;
            }
        }
        serde_json::from_value(v).unwrap()
    };
    let wt = |branch: &str, state: &str| json!({"path": "/w", "branch": branch, "base": "0", "repo": "/r", "state": state, "changed": 3});
    let sessions = [
        root.clone(),
        child(
            1,
            "alpha",
            json!({"worktree": wt("arbor/11111111", "active")}),
        ),
        child(
            2,
            "beta",
            json!({"worktree": wt("arbor/22222222", "active"), "merge_conflict": ["app.py"]}),
        ),
        child(
            3,
            "gamma",
            json!({"worktree": wt("arbor/33333333", "merged")}),
        ),
        child(
            4,
            "delta",
            json!({"worktree": wt("arbor/44444444", "discarded")}),
        ),
        child(
            5,
            "epsilon",
            json!({"worktree": wt("arbor/55555555", "clean")}),
        ),
    ];
    let mut tree = SessionTree::default();
    tree.load(&sessions);
    for id in tree.roots().to_vec() {
        tree.expand(&id);
    }
    let theme = Theme::builtin_dark(false);
    let view = TreeView {
        tree: &tree,
        theme: &theme,
        now: "2025-03-01T12:01:00Z".parse().unwrap(),
        focused: false,
        open: None,
    };
    let area = ratatui::layout::Rect::new(0, 0, 80, 10);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    ratatui::widgets::Widget::render(&view, area, &mut buf);
    let text = buffer_text(&buf);
    let row = |agent: &str| {
        text.lines()
            .find(|l| l.contains(agent))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        row("alpha").contains("alpha ⎇ arbor/11111111 unmerged ✎3"),
        "{text}"
    );
    assert!(
        row("beta").contains("beta ⎇ arbor/22222222 conflict"),
        "{text}"
    );
    assert!(row("gamma").contains("gamma ✓ merged"), "{text}");
    assert!(row("delta").contains("delta ✗ discarded"), "{text}");
    let clean = row("epsilon");
    assert!(!clean.contains("merged") && !clean.contains('⎇'), "{text}");
}
