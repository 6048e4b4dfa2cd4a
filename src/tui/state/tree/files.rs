//! Files changed in the session tree: how many distinct files a session and its
//! descendants wrote or edited (SPEC §12, §13: "files changed", rolled up the subtree).
//!
//! Owns: that count. Does not own: where the changes come from (metadata
//! `files_changed` and `tool:post.file_changed`, applied in `tree`) or drawing it
//! (`views::tree`).

use std::collections::HashSet;

use super::SessionTree;

impl SessionTree {
    /// Distinct paths changed by `id` and all its descendants (a file two sessions
    /// edited counts once; cycles and dangling links ignored). 0 for an unknown id.
    pub fn subtree_files(&self, id: &str) -> usize {
        let paths: HashSet<&str> = self
            .subtree(id)
            .into_iter()
            .flat_map(|node| node.files_changed.iter().map(|f| f.path.as_str()))
            .collect();
        paths.len()
    }
}

#[cfg(test)]
mod tests {
    use crate::session::{Event, Metadata};
    use crate::tui::state::tree::SessionTree;
    use crate::tui::testing::{event, file_written, fork, start, to_tree};

    const TS: &str = "2025-01-01T00:00:00Z";

    fn wrote(session: &str, parent: Option<&str>, path: &str) -> Event {
        event(file_written(path, 2, 0), session, parent, TS)
    }

    #[test]
    fn files_roll_up_the_subtree_once_per_path() {
        let mut tree = SessionTree::default();
        to_tree(&mut tree, &event(start("arbor"), "root", None, TS));
        to_tree(
            &mut tree,
            &event(fork("root", "implementer"), "kid", Some("root"), TS),
        );
        to_tree(
            &mut tree,
            &event(fork("root", "implementer"), "other", Some("root"), TS),
        );
        to_tree(&mut tree, &wrote("root", None, "a.rs"));
        to_tree(&mut tree, &wrote("kid", Some("root"), "a.rs"));
        to_tree(&mut tree, &wrote("kid", Some("root"), "b.rs"));
        to_tree(&mut tree, &wrote("kid", Some("root"), "b.rs"));
        to_tree(&mut tree, &wrote("other", Some("root"), "c.rs"));
        assert_eq!(tree.subtree_files("kid"), 2);
        assert_eq!(tree.subtree_files("other"), 1);
        assert_eq!(tree.subtree_files("root"), 3);
        assert_eq!(tree.get("kid").unwrap().files_changed[1].changes, 2);
        let rows = tree.rows();
        let files: Vec<(&str, usize)> =
            rows.iter().map(|r| (r.node.id.as_str(), r.files)).collect();
        assert_eq!(files, [("root", 3), ("kid", 2), ("other", 1)]);
        assert_eq!(tree.subtree_files("nobody"), 0);
    }

    #[test]
    fn stored_sessions_bring_their_files() {
        let mut tree = SessionTree::default();
        let meta: Metadata = serde_json::from_value(serde_json::json!({
            "session_id": "s1",
            "files_changed": [
                {"path": "x.md", "tool": "edit_file", "lines_added": 1, "lines_removed": 1},
                {"path": "y.md", "tool": "write_file", "lines_added": 4, "created": true}
            ]
        }))
        .unwrap();
        tree.load(&[meta]);
        assert_eq!(tree.subtree_files("s1"), 2);
    }
}
