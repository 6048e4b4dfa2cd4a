//! Where each part of a frame goes (computed by `draw` from the frame's area and the
//! state; the components draw into their part).
//!
//! Owns: the shape only. Does not own: computing it (`draw`).

use ratatui::layout::Rect;

/// Where each part of a frame goes, computed from the frame's area and the state.
pub(crate) struct Panes {
    /// Everything above the status bar (overlays cover it).
    pub main: Rect,
    /// The status bar (the last row).
    pub status: Rect,
    /// The provider banner above the chat (zero height without one).
    pub banner: Rect,
    /// The session tree (`None`: hidden on a narrow terminal).
    pub tree: Option<Rect>,
    /// The chat (`None`: the tree takes a narrow terminal).
    pub chat: Option<Rect>,
    /// The find bar under the chat (zero height when closed).
    pub find: Rect,
    /// The open thread's waiting messages, between the chat and the composer (zero
    /// height when none wait).
    pub pending: Rect,
    /// The composer (`None` with the chat).
    pub composer: Option<Rect>,
    /// The wall, while open: beside the panes on wide terminals, else over them.
    pub wall: Option<Rect>,
    /// The docked approval prompt below the panes (zero height unless docked).
    pub dock: Rect,
}
