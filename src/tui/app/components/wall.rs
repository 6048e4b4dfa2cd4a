//! The wall of running sub-sessions as a component: opens over the open thread's
//! session (else the tree's selection), follows the engine's events while open, moves
//! between tiles and pages, opens a tile's thread; drawn beside the panes on wide
//! terminals (`draw::WALL_BESIDE_WIDTH`), else over them.
//!
//! Owns: the wall's tiles and tails (`state::wall`), dropped when it closes. Does not
//! own: where it goes on screen (`app::draw`'s panes) or the tiles' look
//! (`views::wall`).

use ratatui::Frame;
use ratatui::layout::Position;

use crate::session::SessionId;
use crate::tui::action::UiAction;
use crate::tui::app::component::{Component, Ctx, DrawCtx, Effect, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::app::{Focus, Overlay};
use crate::tui::keymap::{Action, Context};
use crate::tui::state::wall::Wall;
use crate::tui::views::wall::{WallView, grid, per_page};

/// The wall overlay.
#[derive(Debug)]
pub(crate) struct WallOverlay {
    wall: Wall,
}

impl WallOverlay {
    /// `w`, `/wall`: the wall over the open thread's session (else the selected one).
    pub(super) fn open(cx: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        let open = cx.thread.as_ref().and_then(|t| t.session_id.clone());
        let Some(root) = open.or_else(|| cx.tree.selected.clone().map(SessionId::from)) else {
            cx.note(
                "open a session first: the wall shows its running sub-sessions",
                true,
            );
            return None;
        };
        Some(Box::new(Self {
            wall: Wall::open(&root, cx.tree, cx.inflight),
        }))
    }

    /// Its tiles, as engine events change them (`state::dispatch`).
    pub(in crate::tui::app) fn wall_mut(&mut self) -> &mut Wall {
        &mut self.wall
    }
}

impl Component for WallOverlay {
    fn layer(&self) -> Layer {
        Layer::Overlay
    }

    fn overlay(&self) -> Overlay {
        Overlay::Wall
    }

    fn context(&self, _: Focus) -> Option<Context> {
        Some(Context::Wall)
    }

    fn act(&mut self, action: Action, cx: &mut Ctx<'_>) {
        match action {
            Action::WallLeft => self.wall.move_selection(-1),
            Action::WallRight => self.wall.move_selection(1),
            Action::WallUp | Action::WallDown => {
                let cols = cx.areas.wall.map_or(1, |a| {
                    let inner = ratatui::widgets::Block::bordered().inner(a);
                    usize::from(grid(inner).0)
                });
                let cols = isize::try_from(cols).unwrap_or(1);
                self.wall.move_selection(if action == Action::WallUp {
                    -cols
                } else {
                    cols
                });
            }
            Action::WallPageUp | Action::WallPageDown => {
                let per_page = cx.areas.wall.map_or(1, per_page);
                let delta = if action == Action::WallPageUp { -1 } else { 1 };
                self.wall.turn_page(delta, per_page);
            }
            Action::WallOpen => {
                if let Some(id) = self.wall.selected_id().map(str::to_string) {
                    cx.close();
                    cx.emit(UiAction::OpenThread(id.clone()));
                    cx.tree.reveal(&id);
                    cx.push(Effect::Focus(Focus::Chat));
                }
            }
            Action::WallClose => cx.close(),
            _ => {}
        }
    }

    /// Scrolls the tiles under the pointer; beside a wide wall the panes scroll.
    fn wheel(&mut self, up: bool, pos: Position, cx: &mut Ctx<'_>) -> bool {
        if !cx.areas.wall.is_some_and(|a| a.contains(pos)) {
            return false;
        }
        self.act(if up { Action::WallUp } else { Action::WallDown }, cx);
        true
    }

    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let Some(area) = panes.wall else {
            return;
        };
        let view = WallView {
            wall: &self.wall,
            tree: cx.tree,
            theme: cx.theme,
            now: cx.now,
        };
        frame.render_widget(ratatui::widgets::Clear, area);
        frame.render_widget(&view, area);
    }
}
