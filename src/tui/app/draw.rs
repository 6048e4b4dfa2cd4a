//! Layout of the window and rendering: computes pane areas (the tree collapses on
//! narrow terminals), lays out the chat's visible window, then renders pure views.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

use super::{App, Areas, Focus, Overlay};
use crate::tui::keymap::Context;
use crate::tui::state::cells::short_id;
use crate::tui::state::tree::Spend;
use crate::tui::theme::Slot;
use crate::tui::views::banner::BannerView;
use crate::tui::views::browser::BrowserView;
use crate::tui::views::centered;
use crate::tui::views::chat::{self, ChatView};
use crate::tui::views::composer::ComposerView;
use crate::tui::views::help::HelpView;
use crate::tui::views::status::{StatusUsage, StatusView};
use crate::tui::views::tree::TreeView;

/// Below this width the tree is hidden unless focused (then it takes the whole pane).
pub const NARROW_WIDTH: u16 = 60;
/// Tree pane width on wide terminals.
pub const TREE_WIDTH: u16 = 30;

impl App {
    /// Draws one frame.
    pub fn draw(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let [main, status_area] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(area);
        let narrow = area.width < NARROW_WIDTH;
        let (tree_area, right) = if !narrow {
            let w = TREE_WIDTH.min(area.width / 3);
            let [t, r] =
                Layout::horizontal([Constraint::Length(w), Constraint::Min(1)]).areas(main);
            (Some(t), Some(r))
        } else if self.focus == Focus::Tree {
            (Some(main), None)
        } else {
            (None, Some(main))
        };
        let now = self.clock.now();
        let mut areas = Areas {
            tree: tree_area,
            ..Areas::default()
        };
        if let Some(tree_area) = tree_area {
            let open = self.thread.as_ref().and_then(|t| t.session_id.as_deref());
            let view = TreeView {
                tree: &self.tree,
                theme: &self.theme,
                now,
                focused: self.focus == Focus::Tree,
                open,
            };
            frame.render_widget(&view, tree_area);
        }
        if let Some(right) = right {
            let banner_text = self.provider_label.as_ref().err().cloned();
            let banner = banner_text.as_deref().map(|text| BannerView {
                text,
                theme: &self.theme,
            });
            let banner_h = banner.as_ref().map_or(0, |b| b.height(right.width));
            let composer_h = self.composer.rows() + 2;
            let [banner_area, chat_area, composer_area] = Layout::vertical([
                Constraint::Length(banner_h),
                Constraint::Min(3),
                Constraint::Length(composer_h),
            ])
            .areas(right);
            if let Some(b) = &banner {
                frame.render_widget(b, banner_area);
            }
            if let Some(t) = &mut self.thread {
                let body = chat::body_area(chat_area);
                t.layout(
                    chat::wrap_width(chat_area),
                    usize::from(body.height),
                    &self.theme,
                );
            }
            let view = ChatView {
                thread: self.thread.as_ref(),
                tree: &self.tree,
                theme: &self.theme,
                now,
                focused: self.focus == Focus::Chat,
            };
            frame.render_widget(&view, chat_area);
            let focused = self.focus == Focus::Composer && self.overlay == Overlay::None;
            self.composer
                .set_focused(focused, self.theme.style(Slot::Base));
            let view = ComposerView {
                composer: &self.composer,
                theme: &self.theme,
                focused,
                title: self.composer_title(),
            };
            frame.render_widget(&view, composer_area);
            areas.chat = Some(chat_area);
            areas.composer = Some(composer_area);
        }
        self.areas = areas;
        let context = match (self.overlay, self.focus) {
            (Overlay::Help, _) => Context::Help,
            (Overlay::Browser, _) => Context::Browser,
            (_, Focus::Tree) => Context::Tree,
            (_, Focus::Chat) => Context::Chat,
            (_, Focus::Composer) => Context::Composer,
        };
        let status = StatusView {
            provider: &self.provider_label,
            running: self.tree.running_count(),
            usage: self.status_usage(),
            note: self.note.as_ref(),
            reload: self.reload_text(),
            hints: self.keymap.hints(context),
            theme: &self.theme,
        };
        frame.render_widget(&status, status_area);
        self.draw_overlay(frame, main);
    }

    fn draw_overlay(&self, frame: &mut Frame<'_>, main: Rect) {
        let area = main;
        match self.overlay {
            Overlay::None => {}
            Overlay::Help => {
                let view = HelpView {
                    keymap: &self.keymap,
                    theme: &self.theme,
                    scroll: self.help_scroll,
                };
                frame.render_widget(&view, centered(area, 72, area.height.saturating_sub(2)));
            }
            Overlay::Browser => {
                let view = BrowserView {
                    registry: &self.registry,
                    state: &self.browser,
                    mark: self.reload_mark.as_ref(),
                    theme: &self.theme,
                };
                frame.render_widget(&view, area);
            }
        }
    }

    /// The open session's spend and its root's tree total (when the tree holds more
    /// than the session); `None` before anything was spent.
    pub fn status_usage(&self) -> Option<StatusUsage> {
        let id = self.thread.as_ref()?.session_id.as_deref()?;
        let session = self.tree.own_spend(id)?;
        let tree = self
            .tree
            .root_of(id)
            .map(|root| self.tree.subtree_spend(root))
            .filter(|total| *total != session);
        let spent = |s: &Spend| s.tokens > 0 || s.cost.is_some();
        (spent(&session) || tree.as_ref().is_some_and(spent))
            .then_some(StatusUsage { session, tree })
    }

    fn composer_title(&self) -> String {
        match &self.thread {
            None => " Message → new session ".to_string(),
            Some(t) => match (&t.session_id, &t.agent) {
                (None, Some(agent)) => format!(" Message → new session ({agent}) "),
                (None, None) => " Message → new session ".to_string(),
                (Some(id), _) => format!(" Continue #{} ", short_id(id)),
            },
        }
    }
}
