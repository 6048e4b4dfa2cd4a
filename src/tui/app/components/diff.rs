//! The diff overlay as a component: a session's changes (its own, or with
//! `diff.subtree` its descendants' too), asked of the engine (`EngineCommand::LoadDiff`)
//! when it opens and filled in by the engine's `DiffLoaded` reply (the `App` hands it over); its keys scroll it.
//!
//! Owns: those transitions and the overlay's state. Does not own: the lines
//! (`state::diff`), the replay (`tool::filesystem::changes`, run by the engine) or the
//! view (`views::diff`).

use ratatui::Frame;

use crate::tui::app::component::{Component, Ctx, DrawCtx, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::app::{Focus, Overlay};
use crate::tui::app_event::EngineCommand;
use crate::tui::keymap::{Action, Context};
use crate::tui::state::diff::DiffState;
use crate::tui::views::diff::DiffView;

/// The diff overlay.
#[derive(Debug)]
pub(crate) struct DiffOverlay {
    /// The lines and where they scroll.
    pub(crate) state: DiffState,
}

impl DiffOverlay {
    /// `tree.diff`: the tree's selected session.
    pub(super) fn open_selected(cx: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        let id = cx.tree.selected.clone()?;
        Some(Box::new(Self::load(&id, false, cx)))
    }

    /// `chat.diff`, `/diff`: the open thread's session.
    pub(super) fn open_thread(cx: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        let Some(id) = cx.thread.as_ref().and_then(|t| t.session_id.clone()) else {
            cx.note("nothing to diff: this thread has no session yet", true);
            return None;
        };
        Some(Box::new(Self::load(&id, false, cx)))
    }

    /// The overlay on session `id` while the engine rebuilds its changes.
    fn load(id: &str, subtree: bool, cx: &mut Ctx<'_>) -> Self {
        let label = cx
            .tree
            .get(id)
            .map_or_else(|| "session".to_string(), |n| n.label().to_string());
        cx.send(EngineCommand::LoadDiff {
            session_id: id.into(),
            subtree,
        });
        Self {
            state: DiffState::loading(id, &label, subtree),
        }
    }
}

impl Component for DiffOverlay {
    fn layer(&self) -> Layer {
        Layer::Overlay
    }

    fn overlay(&self) -> Overlay {
        Overlay::Diff
    }

    fn context(&self, _: Focus) -> Option<Context> {
        Some(Context::Diff)
    }

    fn act(&mut self, action: Action, cx: &mut Ctx<'_>) {
        let d = &mut self.state;
        let page = isize::try_from(d.page.saturating_sub(1).max(1)).unwrap_or(1);
        match action {
            Action::DiffUp => d.scroll_by(-1),
            Action::DiffDown => d.scroll_by(1),
            Action::DiffPageUp => d.scroll_by(-page),
            Action::DiffPageDown => d.scroll_by(page),
            Action::DiffTop => d.scroll_to(false),
            Action::DiffBottom => d.scroll_to(true),
            Action::DiffSubtree => {
                let (id, subtree) = (d.session_id.clone(), !d.subtree);
                *self = Self::load(&id, subtree, cx);
            }
            _ => cx.close(),
        }
    }

    fn wheel_actions(&self) -> Option<(Action, Action)> {
        Some((Action::DiffUp, Action::DiffDown))
    }

    fn layout(&mut self, panes: &Panes, _: &mut Ctx<'_>) {
        self.state.set_page(DiffView::page(panes.main));
    }

    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let view = DiffView {
            state: &self.state,
            keymap: cx.keymap,
            theme: cx.theme,
        };
        frame.render_widget(&view, panes.main);
    }
}
