//! Snapshot of the tree pane with files changed: each row counts the distinct files of
//! its subtree (`✎ 3 files`, `✎3` where the agent's name would not fit beside it), a
//! collapsed root counts its hidden children's, at 80, 40 and 30 columns.

use super::tree::TreeView;
use crate::session::{EngineEvent, SessionStatus};
use crate::tui::state::tree::SessionTree;
use crate::tui::testing::{buffer_text, event, file_written, fork, start, to_tree};
use crate::tui::theme::Theme;

const T0: &str = "2025-03-01T12:00:00Z";

fn tree() -> SessionTree {
    let mut tree = SessionTree::default();
    let ev = |msg, id: &str, parent: Option<&str>| event(msg, id, parent, T0);
    to_tree(&mut tree, &ev(start("arbor"), "root", None));
    to_tree(
        &mut tree,
        &ev(
            fork("root", "implementer"),
            "root-a_implementer",
            Some("root"),
        ),
    );
    to_tree(
        &mut tree,
        &ev(fork("root", "reviewer"), "root-b_reviewer", Some("root")),
    );
    to_tree(
        &mut tree,
        &ev(file_written("Cargo.toml", 3, 1), "root", None),
    );
    for path in ["src/lib.rs", "src/gate.rs", "README.md"] {
        to_tree(
            &mut tree,
            &ev(
                file_written(path, 10, 2),
                "root-a_implementer",
                Some("root"),
            ),
        );
    }
    for id in ["root", "root-a_implementer", "root-b_reviewer"] {
        let parent = (id != "root").then_some("root");
        to_tree(
            &mut tree,
            &event(
                EngineEvent::status(SessionStatus::Completed),
                id,
                parent,
                "2025-03-01T12:00:42Z",
            ),
        );
    }
    tree
}

fn render(tree: &SessionTree, w: u16) -> String {
    let theme = Theme::builtin_dark(false);
    let view = TreeView {
        tree,
        theme: &theme,
        now: "2025-03-01T12:01:00Z".parse().unwrap(),
        focused: false,
        open: None,
    };
    let area = ratatui::layout::Rect::new(0, 0, w, 8);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    ratatui::widgets::Widget::render(&view, area, &mut buf);
    buffer_text(&buf)
}

#[test]
fn rows_count_the_files_changed_below_them() {
    let mut tree = tree();
    let wide = render(&tree, 80);
    assert!(wide.contains("✎ 4 files"), "{wide}");
    assert!(wide.contains("✎ 3 files"), "{wide}");
    insta::assert_snapshot!("tree_80_files", wide);
    insta::assert_snapshot!("tree_40_files", render(&tree, 40));
    // Too narrow to spell it out beside the agent's name: `✎3`, the name whole.
    let narrow = render(&tree, 30);
    assert!(
        narrow.contains("✓ implementer") && narrow.contains("✎3 1m ago"),
        "{narrow}"
    );
    insta::assert_snapshot!("tree_30_files", narrow);
    tree.selected = Some("root".into());
    tree.set_collapsed(true);
    let collapsed = render(&tree, 80);
    assert!(collapsed.contains("✎ 4 files"), "{collapsed}");
    assert!(!collapsed.contains("implementer"), "{collapsed}");
}
