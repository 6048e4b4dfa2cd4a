//! Where a node runs (issue 27): a remote sub-session's tree row says `@host` (or the
//! worker's id when the worker runs on this machine), the tree's footer and the chat
//! header spell it out; a local child shows nothing of the kind.

use ratatui::layout::Rect;
use serde_json::json;

use super::chat::{self, ChatView};
use super::tests::render;
use super::tree::TreeView;
use crate::session::{LoadedSession, Metadata, SessionId, SessionStatus};
use crate::tui::state::thread::Thread;
use crate::tui::state::tree::SessionTree;
use crate::tui::theme::Theme;

const ROOT: &str = "4f6d2c1a-9b7e-4c3d-8a2f-1e0d9c8b7a65";
const FAR: &str = "4f6d2c1a9b7e4c3d-1a2b3c4d5e6f7081_explorer";
const NEAR: &str = "4f6d2c1a9b7e4c3d-2b3c4d5e6f708192_builder";
const LOCAL: &str = "4f6d2c1a9b7e4c3d-3c4d5e6f70819203_reviewer";
const NOW: &str = "2025-03-01T12:01:00Z";

fn meta(id: &str, parent: Option<&str>, agent: &str, ran_on: Option<(&str, &str)>) -> Metadata {
    let mut m = Metadata {
        session_id: SessionId::from(id),
        parent_id: parent.map(SessionId::from),
        agent_name: Some(agent.into()),
        created: "2025-03-01T12:00:00Z".into(),
        last_updated: "2025-03-01T12:00:30Z".into(),
        status: SessionStatus::Completed,
        ..Default::default()
    };
    if let Some((worker, host)) = ran_on {
        m.arbor.ran_on = Some(
            serde_json::from_value(json!({"worker": worker, "host": host, "pid": 4242})).unwrap(),
        );
    }
    m
}

/// A root on `laptop` with a child run on `build-1`, one run by a worker on this
/// machine, and one run here.
fn tree() -> SessionTree {
    let mut tree = SessionTree::default();
    tree.set_local_host("laptop");
    tree.load(&[
        meta(ROOT, None, "arbor", None),
        meta(FAR, Some(ROOT), "explorer", Some(("w-1a2b3c4d", "build-1"))),
        meta(NEAR, Some(ROOT), "builder", Some(("w-5e6f7a8b", "laptop"))),
        meta(LOCAL, Some(ROOT), "reviewer", None),
    ]);
    tree.expand(ROOT);
    tree.selected = Some(FAR.into());
    tree
}

fn tree_screen(tree: &SessionTree, width: u16) -> String {
    let theme = Theme::builtin_dark(false);
    let view = TreeView {
        tree,
        theme: &theme,
        now: NOW.parse().unwrap(),
        focused: false,
        open: None,
    };
    render(&view, width, 10)
}

#[test]
fn the_tree_shows_where_each_remote_child_runs() {
    let tree = tree();
    let wide = tree_screen(&tree, 80);
    insta::assert_snapshot!("ran_on_tree_80", wide);
    insta::assert_snapshot!("ran_on_tree_40", tree_screen(&tree, 40));
    // Narrow: the time yields to the place.
    let narrow = tree_screen(&tree, 30);
    insta::assert_snapshot!("ran_on_tree_30", narrow);
    assert!(narrow.contains("builder @w-5e6f7a8b"), "{narrow}");
    let row = |agent: &str| {
        wide.lines()
            .find(|l| l.contains(agent))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("explorer").contains("explorer @build-1"), "{wide}");
    assert!(row("builder").contains("builder @w-5e6f7a8b"), "{wide}");
    assert!(!row("reviewer").contains('@'), "{wide}");
    assert!(
        wide.contains("on build-1 (worker w-1a2b3c4d, pid 4242)"),
        "the footer spells out the selected one: {wide}"
    );
}

#[test]
fn the_chat_header_of_a_remote_child_says_where_it_runs() {
    let tree = tree();
    let theme = Theme::builtin_dark(false);
    let mut thread = Thread::loading(FAR, Some("explorer".into()));
    thread.load(LoadedSession {
        metadata: meta(FAR, Some(ROOT), "explorer", Some(("w-1a2b3c4d", "build-1"))),
        transcript: vec![],
        warnings: vec![],
    });
    let area = Rect::new(0, 0, 100, 6);
    thread.layout(
        chat::wrap_width(area),
        usize::from(chat::body_area(area).height),
        &theme,
    );
    let view = ChatView {
        thread: Some(&thread),
        tree: &tree,
        theme: &theme,
        now: NOW.parse().unwrap(),
        focused: true,
    };
    let screen = render(&view, 100, 6);
    insta::assert_snapshot!("ran_on_chat_header_100", screen);
    let head = screen.lines().next().unwrap_or_default();
    assert!(
        head.contains("sub-session #") && head.contains("on build-1 (worker w-1a2b3c4d, pid 4242)"),
        "{head}"
    );
}
