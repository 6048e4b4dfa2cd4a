//! The components over the panes, one file each, and the one table of what opens
//! them ([`opener`]).
//!
//! Adding an overlay: write `NAME.rs` with a type implementing
//! [`Component`](super::stack::Component) (its state, keys, drawing; a `fn open(cx:
//! &mut Ctx) -> Option<Box<dyn Component>>` that builds it or says why not with a
//! note), then register it here: `mod NAME;` and its row in [`opener`] (the actions
//! that open it; a slash command reaches it through the same action). New keys are
//! rows of `keymap::actions!` in that overlay's context.
//!
//! Owns: the list and the table. Does not own: the walk (`app::stack`).

pub(super) mod approval;
mod browser;
mod diff;
pub(super) mod find;
mod help;
mod mcp;
pub(super) mod trust;
mod wall;

use super::stack::{Component, Ctx};
use crate::tui::keymap::Action;

pub(super) use diff::DiffOverlay;

/// Builds a component for the person (`None`: it did not open; it said why in `cx`).
pub(super) type Open = fn(&mut Ctx<'_>) -> Option<Box<dyn Component>>;

/// The component `action` opens, if it opens one: the registration table.
pub(super) fn opener(action: Action) -> Option<Open> {
    Some(match action {
        Action::Help | Action::TreeHelp | Action::ChatHelp => help::HelpOverlay::open,
        Action::Agents | Action::TreeAgents | Action::ChatAgents => browser::BrowserOverlay::open,
        Action::Mcp => mcp::McpOverlay::open,
        Action::TreeDiff => diff::DiffOverlay::open_selected,
        Action::ChatDiff => diff::DiffOverlay::open_thread,
        Action::TreeWall | Action::ChatWall => wall::WallOverlay::open,
        Action::Find => find::FindBar::open,
        _ => return None,
    })
}
