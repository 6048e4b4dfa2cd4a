//! The wall (issue 14, SPEC §13 "Wall"): one tile per session running under the open
//! thread, with the live tail of its stream.
//!
//! Bus events it hears while the wall is open (from the TUI's dispatcher,
//! `state::dispatch`): any event of a session below the wall's session (all
//! descendants, through the tree's parents) whose turn is in progress adds its tile,
//! in the order they start; `content_block:delta` (text) appends to the session's
//! tail, `tool:pre` adds a `⚙ tool` line. Finished tiles stay (the view dims
//! them) until the wall is closed. Tails are bounded ([`MAX_TAIL_BYTES`]; older whole
//! lines go first) and kept for tiles only.
//!
//! Owns: the tiles, their tails, the selected tile and paging. Does not own: the
//! sessions' status, tokens or cost (`tree`), drawing (`views::wall`).

use std::collections::HashMap;

use crate::tui::state::inflight::InflightStreams;
use crate::tui::state::tree::SessionTree;

/// Most bytes of streamed text kept per tile (a tile shows a few lines).
pub const MAX_TAIL_BYTES: usize = 4096;

/// The open wall.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wall {
    /// The session whose descendants the wall shows (the open thread's).
    pub root: String,
    /// Session ids, in the order their tiles appeared.
    pub tiles: Vec<String>,
    /// Index into `tiles`.
    pub selected: usize,
    tails: HashMap<String, String>,
}

impl Wall {
    /// A wall over the descendants of `root`, with a tile for each one running now
    /// (its tail seeded from what it streamed so far).
    pub fn open(root: &str, tree: &SessionTree, inflight: &InflightStreams) -> Self {
        let mut wall = Wall {
            root: root.to_string(),
            ..Wall::default()
        };
        let mut running: Vec<_> = tree
            .subtree(root)
            .into_iter()
            .filter(|n| n.id != root && n.status.turn_in_progress())
            .collect();
        running.sort_by_key(|n| n.started);
        for node in running {
            wall.tiles.push(node.id.clone());
            let tail = inflight.get(&node.id).map(|f| f.text.clone());
            let mut tail = tail.unwrap_or_default();
            bound(&mut tail);
            wall.tails.insert(node.id.clone(), tail);
        }
        wall
    }

    /// Any event of session `id`, after the tree took it: a session below the wall's
    /// whose turn is in progress gets its tile. Returns whether `id` has a tile.
    pub fn join(&mut self, id: &str, tree: &SessionTree) -> bool {
        if self.tails.contains_key(id) {
            return true;
        }
        let running = tree.get(id).is_some_and(|n| n.status.turn_in_progress());
        if !running || !self.is_below(id, tree) {
            return false;
        }
        self.tiles.push(id.to_string());
        self.tails.insert(id.to_string(), String::new());
        true
    }

    /// `content_block:delta` text of session `id`: appended to its tail.
    pub fn on_text(&mut self, id: &str, delta: &str, tree: &SessionTree) {
        if let Some(tail) = self.tail_of(id, tree) {
            tail.push_str(delta);
            bound(tail);
        }
    }

    /// `tool:pre` of session `id`: a `⚙ tool` line in its tail.
    pub fn on_tool(&mut self, id: &str, tool_name: &str, tree: &SessionTree) {
        if let Some(tail) = self.tail_of(id, tree) {
            if !tail.is_empty() && !tail.ends_with('\n') {
                tail.push('\n');
            }
            tail.push_str(&format!("⚙ {tool_name}\n"));
            bound(tail);
        }
    }

    /// Session `id`'s tail, once it has a tile ([`Wall::join`]).
    fn tail_of(&mut self, id: &str, tree: &SessionTree) -> Option<&mut String> {
        if !self.join(id, tree) {
            return None;
        }
        self.tails.get_mut(id)
    }

    /// Whether `id` is a descendant of the wall's session.
    fn is_below(&self, id: &str, tree: &SessionTree) -> bool {
        let mut cur = tree.get(id).and_then(|n| n.tree_parent());
        let mut steps = 0;
        while let Some(parent) = cur {
            if parent == self.root {
                return true;
            }
            steps += 1;
            if steps > 1000 {
                return false;
            }
            cur = tree.get(parent).and_then(|n| n.tree_parent());
        }
        false
    }

    /// What session `id` streamed (its last lines matter).
    pub fn tail(&self, id: &str) -> &str {
        self.tails.get(id).map_or("", String::as_str)
    }

    /// The selected tile's session.
    pub fn selected_id(&self) -> Option<&str> {
        self.tiles.get(self.selected).map(String::as_str)
    }

    /// Moves the selection by `delta` tiles, staying within the tiles.
    pub fn move_selection(&mut self, delta: isize) {
        let last = self.tiles.len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(delta).min(last);
    }

    /// Moves the selection to the first tile of the next (`+1`) or previous (`-1`)
    /// page of `per_page` tiles.
    pub fn turn_page(&mut self, delta: isize, per_page: usize) {
        let per_page = per_page.max(1);
        let pages = self.tiles.len().div_ceil(per_page).max(1);
        let page = (self.selected / per_page)
            .saturating_add_signed(delta)
            .min(pages - 1);
        self.selected = (page * per_page).min(self.tiles.len().saturating_sub(1));
    }
}

/// Keeps the last [`MAX_TAIL_BYTES`] of `tail`, cut after a line break when there is
/// one (else at a char boundary).
fn bound(tail: &mut String) {
    if tail.len() <= MAX_TAIL_BYTES {
        return;
    }
    let mut cut = tail.len() - MAX_TAIL_BYTES / 2;
    while !tail.is_char_boundary(cut) {
        cut += 1;
    }
    let cut = tail[cut..].find('\n').map_or(cut, |i| cut + i + 1);
    tail.drain(..cut);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::protocol::DeltaKind;
    use crate::session::{EngineEvent, SessionStatus};
    use crate::tui::state::dispatch::{Listeners, dispatch};
    use crate::tui::testing::{event, fork, start, to_tree};

    const ROOT: &str = "5f0e1c2a-1111-4222-8333-444455556666";
    const A: &str = "5f0e1c2a11114222-0a1b2c3d4e5f6071_explorer";
    const B: &str = "0a1b2c3d4e5f6071-99aabbccddeeff00_reviewer";
    const OTHER: &str = "77777777-1111-4222-8333-444455556666";

    fn apply(
        tree: &mut SessionTree,
        wall: &mut Wall,
        msg: EngineEvent,
        id: &str,
        parent: Option<&str>,
    ) {
        let e = event(msg, id, parent, "2025-03-01T12:00:00Z");
        let listeners = Listeners {
            wall: Some(wall),
            ..Listeners::tree(tree)
        };
        dispatch(&e, listeners);
    }

    fn delta(text: &str) -> EngineEvent {
        EngineEvent::delta(DeltaKind::Text, text)
    }

    #[test]
    fn descendants_get_tiles_as_they_start_and_keep_them_when_done() {
        let mut tree = SessionTree::default();
        to_tree(
            &mut tree,
            &event(start("zen"), ROOT, None, "2025-03-01T12:00:00Z"),
        );
        to_tree(
            &mut tree,
            &event(start("zen"), OTHER, None, "2025-03-01T12:00:00Z"),
        );
        let mut wall = Wall::open(ROOT, &tree, &InflightStreams::default());
        assert!(wall.tiles.is_empty());
        apply(&mut tree, &mut wall, fork(ROOT, "explorer"), A, Some(ROOT));
        apply(
            &mut tree,
            &mut wall,
            EngineEvent::status(SessionStatus::Running),
            A,
            Some(ROOT),
        );
        apply(&mut tree, &mut wall, delta("hello "), A, Some(ROOT));
        apply(&mut tree, &mut wall, delta("world"), A, Some(ROOT));
        // A grandchild counts; another tree's session does not.
        apply(&mut tree, &mut wall, fork(A, "reviewer"), B, Some(A));
        apply(
            &mut tree,
            &mut wall,
            EngineEvent::status(SessionStatus::Queued),
            B,
            Some(A),
        );
        apply(
            &mut tree,
            &mut wall,
            EngineEvent::status(SessionStatus::Running),
            OTHER,
            None,
        );
        apply(&mut tree, &mut wall, delta("elsewhere"), OTHER, None);
        assert_eq!(wall.tiles, [A, B]);
        assert_eq!(wall.tail(A), "hello world");
        apply(
            &mut tree,
            &mut wall,
            EngineEvent::status(SessionStatus::Completed),
            A,
            Some(ROOT),
        );
        assert_eq!(wall.tiles, [A, B], "a finished tile stays");
        assert_eq!(wall.tail(A), "hello world");
    }

    #[test]
    fn tails_are_bounded_to_their_last_lines() {
        let mut tail = String::new();
        for n in 0..1000 {
            tail.push_str(&format!("line {n}\n"));
        }
        bound(&mut tail);
        assert!(tail.len() <= MAX_TAIL_BYTES);
        assert!(tail.starts_with("line "), "cut after a line break");
        assert!(tail.ends_with("line 999\n"));
    }

    #[test]
    fn selection_and_pages_stay_within_the_tiles() {
        let mut wall = Wall {
            tiles: (0..7).map(|n| n.to_string()).collect(),
            ..Wall::default()
        };
        wall.move_selection(-1);
        assert_eq!(wall.selected, 0);
        wall.move_selection(10);
        assert_eq!(wall.selected, 6);
        wall.turn_page(-1, 4);
        assert_eq!(wall.selected, 0);
        wall.turn_page(1, 4);
        assert_eq!(wall.selected, 4);
        wall.turn_page(1, 4);
        assert_eq!(wall.selected, 4, "no page past the last");
    }
}
