//! Snapshot of the tree pane when stored parent links are broken: a parent cycle, a
//! session naming itself, a deleted parent. Every session is drawn, the detached roots
//! say why, at 80 columns and 40.

use super::tree::TreeView;
use crate::session::SessionId;
use crate::session::{Metadata, SessionStatus};
use crate::tui::state::tree::SessionTree;
use crate::tui::theme::Theme;

fn meta(id: &str, agent: &str, parent: Option<&str>, created: &str) -> Metadata {
    Metadata {
        session_id: id.into(),
        agent_name: Some(agent.into()),
        parent_id: parent.map(SessionId::from),
        created: created.into(),
        last_updated: created.into(),
        status: SessionStatus::Completed,
        ..Default::default()
    }
}

#[test]
fn tree_shows_cycles_self_parents_and_missing_parents() {
    let mut tree = SessionTree::default();
    tree.load(&[
        meta("r", "zen-architect", None, "2025-03-01T12:00:05Z"),
        meta("b", "coder", Some("a"), "2025-03-01T12:00:02Z"),
        meta("a", "planner", Some("b"), "2025-03-01T12:00:01Z"),
        meta("s", "tester", Some("s"), "2025-03-01T12:00:04Z"),
        meta("o", "reviewer", Some("deleted"), "2025-03-01T12:00:06Z"),
    ]);
    let theme = Theme::builtin_dark(false);
    for (w, name) in [(80u16, "tree_80_detached"), (40, "tree_40_detached")] {
        let view = TreeView {
            tree: &tree,
            theme: &theme,
            now: "2025-03-01T12:00:30Z".parse().unwrap(),
            focused: true,
            open: None,
        };
        let text = super::tests::render(&view, w, 8);
        insta::assert_snapshot!(name, text);
        for agent in ["zen-architect", "coder", "planner", "tester", "reviewer"] {
            assert!(text.contains(agent), "{agent} missing at {w}:\n{text}");
        }
    }
}
