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
    child.extra.insert(
        "worktree".into(),
        json!({"path": "/w", "branch": "arbor/1a2b3c4d", "base": "0", "repo": "/r", "state": "active"}),
    );
    let mut fork = meta(
        "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b",
        Some(&root.session_id),
        "arbor",
    );
    fork.extra.insert("forked_from_turn".into(), json!(3));
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
