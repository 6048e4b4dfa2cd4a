//! The components over the panes, one file each, and the one table of what opens
//! them ([`opener`]).
//!
//! Adding an overlay: write `NAME.rs` with a type implementing
//! [`Component`](super::component::Component) (its state, keys, drawing; a `fn open(cx:
//! &mut Ctx) -> Option<Box<dyn Component>>` that builds it or says why not with a
//! note), then register it here: `mod NAME;` and its row in [`opener`] (the actions
//! that open it; a slash command reaches it through the same action). New keys are
//! rows of `keymap::actions!` in that overlay's context.
//!
//! Owns: the list and the table. Does not own: the walk (`app::stack`).

pub(super) mod approval;
mod browser;
mod confirm;
mod diff;
pub(super) mod find;
mod help;
mod hooks;
mod mcp;
pub(super) mod trust;
mod wall;

use super::component::{Component, Ctx};
use crate::tui::keymap::Action;

pub(super) use confirm::ConfirmPrompt;
pub(super) use diff::DiffOverlay;
pub(super) use hooks::HooksOverlay;
pub(super) use mcp::McpOverlay;
pub(super) use wall::WallOverlay;

/// Builds a component for the person (`None`: it did not open; it said why in `cx`).
pub(super) type Open = fn(&mut Ctx<'_>) -> Option<Box<dyn Component>>;

/// The component `action` opens, if it opens one: the registration table.
pub(super) fn opener(action: Action) -> Option<Open> {
    Some(match action {
        Action::Help | Action::TreeHelp | Action::ChatHelp => help::HelpOverlay::open,
        Action::Agents | Action::TreeAgents | Action::ChatAgents => browser::BrowserOverlay::open,
        Action::Mcp => mcp::McpOverlay::open,
        Action::Hooks => hooks::HooksOverlay::open,
        Action::TreeDiff => diff::DiffOverlay::open_selected,
        Action::ChatDiff => diff::DiffOverlay::open_thread,
        Action::TreeWall | Action::ChatWall => wall::WallOverlay::open,
        Action::Find => find::FindBar::open,
        Action::TreeMerge => confirm::ConfirmPrompt::open_merge,
        Action::TreeDiscard => confirm::ConfirmPrompt::open_discard,
        Action::ChatRewind => confirm::ConfirmPrompt::open_rewind,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::stack::{Slot, Stack};
    use crate::tui::app::{Focus, Overlay};
    use crate::tui::keymap::Context;
    use crate::tui::state::find::Find;
    use crate::tui::state::trust::TrustPrompt;

    fn contexts(stack: &Stack) -> Vec<Option<Context>> {
        stack
            .order()
            .into_iter()
            .filter(|s| *s != Slot::Approval)
            .filter_map(|s| stack.get(s))
            .map(|c| c.context(Focus::Chat))
            .collect()
    }

    #[test]
    fn the_walk_goes_prompt_overlay_bar_and_one_overlay_replaces_another() {
        let mut stack = Stack::default();
        stack.push(Box::new(find::FindBar { find: Find::open() }));
        stack.push(Box::new(help::HelpOverlay::default()));
        let prompt = TrustPrompt::new("/nowhere".into(), "/nowhere/t.json".into(), None);
        stack.push(Box::new(trust::TrustLayer { prompt }));
        // Pushed last but below the trust prompt: layers, not push order, decide.
        stack.push(Box::new(browser::BrowserOverlay::default()));
        // The approval prompt is pinned on top (nothing waits: no keys, not modal).
        assert_eq!(stack.order()[0], Slot::Approval);
        assert_eq!(
            contexts(&stack),
            [
                Some(Context::Trust),
                Some(Context::Browser),
                Some(Context::Find)
            ]
        );
        assert_eq!(stack.overlay(), Overlay::Browser);
        assert_eq!(stack.context(Focus::Chat), Some(Context::Trust));
        assert!(stack.any_modal());
        stack.close::<trust::TrustLayer>();
        stack.close_overlays();
        // The find bar is not modal and has no keys over the composer.
        assert_eq!(stack.overlay(), Overlay::None);
        assert!(!stack.any_modal());
        assert_eq!(stack.context(Focus::Composer), None);
        assert_eq!(stack.context(Focus::Tree), Some(Context::Find));
    }

    #[test]
    fn every_component_opens_from_a_pane_or_global_key() {
        use crate::tui::keymap::TABLE;
        let openers: Vec<_> = TABLE
            .iter()
            .filter(|s| opener(s.action).is_some())
            .collect();
        assert!(!openers.is_empty());
        for spec in openers {
            assert!(
                matches!(
                    spec.context,
                    Context::Global | Context::Tree | Context::Chat
                ),
                "{} opens a component from {:?}, where a component has the keys",
                spec.name,
                spec.context
            );
        }
    }
}
