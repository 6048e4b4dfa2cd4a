//! Layout of the window and rendering, in two steps: [`App::layout`] (the update step
//! before a frame) lays out the chat's visible window and records pane areas;
//! [`App::draw`] reads state only and renders pure views. Pane areas come from one
//! function for both (the tree collapses on narrow terminals).

use jiff::Timestamp;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

use super::panes::Panes;
use super::{App, Areas, Focus, Overlay};
use crate::session::SessionStatus;
use crate::session::ids::short_id;
use crate::tui::keymap::{Action, Context};
use crate::tui::state::pending::PendingPrompt;
use crate::tui::state::tree::Spend;
use crate::tui::theme::Slot;
use crate::tui::views::approval::ApprovalView;
use crate::tui::views::banner::BannerView;
use crate::tui::views::chat::{self, ChatView};
use crate::tui::views::composer::ComposerView;
use crate::tui::views::palette::{PaletteView, popup_area};
use crate::tui::views::pending::{self, PendingView};
use crate::tui::views::status::{StatusUsage, StatusView};
use crate::tui::views::tree::TreeView;

/// Below this width the tree is hidden unless focused (then it takes the whole pane).
pub const NARROW_WIDTH: u16 = 60;
/// Tree pane width on wide terminals: a quarter of the width, at least this…
pub const TREE_WIDTH: u16 = 30;
/// …and at most this (never more than a third).
pub const TREE_MAX_WIDTH: u16 = 48;
/// From this width the wall opens beside the thread (parent left, children right)
/// instead of over it.
pub const WALL_BESIDE_WIDTH: u16 = 140;

impl App {
    /// The update step before each frame, for a frame of `area`: lays out the open
    /// thread's visible window for the chat pane (the wrapped-lines cache), sets the
    /// composer's focus look, and records the pane areas for mouse hit-testing and
    /// paging. Call it with the frame's area right before [`App::draw`]:
    /// `terminal.draw(|f| { app.layout(f.area()); app.draw(f) })`.
    pub fn layout(&mut self, area: Rect) {
        let panes = self.panes(area);
        self.stack_layout(&panes);
        if let (Some(t), Some(chat_area)) = (&mut self.thread, panes.chat) {
            let body = chat::body_area(chat_area);
            t.layout(
                chat::wrap_width(chat_area),
                usize::from(body.height),
                &self.theme,
            );
        }
        let focused = self.composer_focused();
        self.prompt
            .composer
            .set_focused(focused, self.theme.style(Slot::Base));
        self.areas = Areas {
            tree: panes.tree,
            chat: panes.chat,
            composer: panes.composer,
            wall: panes.wall,
        };
    }

    /// Draws one frame from the state as [`App::layout`] left it for the same area.
    /// Reads state only: a frame drawn twice is the same frame.
    pub fn draw(&self, frame: &mut Frame<'_>) {
        let panes = self.panes(frame.area());
        let now = self.clock.now();
        self.draw_tree(frame, &panes, now);
        self.draw_chat(frame, &panes, now);
        self.draw_status(frame, &panes);
        // The overlays, prompts and bars, bottom up (the approval prompt above all).
        self.draw_stack(frame, &panes);
        self.draw_popup(frame, &panes);
    }

    /// The session tree, when it has a pane.
    fn draw_tree(&self, frame: &mut Frame<'_>, panes: &Panes, now: Timestamp) {
        if let Some(tree_area) = panes.tree {
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
    }

    /// The banner, the chat, the open thread's waiting messages and the composer,
    /// when the chat has a pane.
    fn draw_chat(&self, frame: &mut Frame<'_>, panes: &Panes, now: Timestamp) {
        if let (Some(chat_area), Some(composer_area)) = (panes.chat, panes.composer) {
            if let Some(b) = self.banner() {
                frame.render_widget(&b, panes.banner);
            }
            let view = ChatView {
                thread: self.thread.as_ref(),
                tree: &self.tree,
                theme: &self.theme,
                now,
                focused: self.focus == Focus::Chat,
            };
            frame.render_widget(&view, chat_area);
            let items = self.open_pending();
            let view = PendingView {
                items: &items,
                keymap: &self.keymap,
                theme: &self.theme,
            };
            frame.render_widget(&view, panes.pending);
            let view = ComposerView {
                composer: &self.prompt.composer,
                theme: &self.theme,
                focused: self.composer_focused(),
                title: self.composer_title(),
            };
            frame.render_widget(&view, composer_area);
        }
    }

    /// The status bar.
    fn draw_status(&self, frame: &mut Frame<'_>, panes: &Panes) {
        let context = self.key_context();
        let status = StatusView {
            provider: &self.status.provider_label,
            needs_you: self.tree.needs_you_count(),
            needs_you_key: self.keymap.label(Action::NextNeedsYou),
            running: self.tree.running_count(),
            usage: self.status_usage(),
            context: self
                .thread
                .as_ref()
                .and_then(|t| t.session_id.as_deref())
                .and_then(|id| self.tree.get(id)?.context),
            // The cancel question stays up until a key answers it.
            note: self
                .interrupt
                .confirm_cancel
                .as_ref()
                .map(|c| &c.note)
                .or(self.status.note.as_ref()),
            reload: self.reload_text(),
            hints: self.hints(context),
            mouse_off: (!self.outbox.mouse_capture).then(|| self.keymap.label(Action::Mouse)),
            theme: &self.theme,
        };
        frame.render_widget(&status, panes.status);
    }

    /// The composer's popup: only while the composer types (no modal is open).
    fn draw_popup(&self, frame: &mut Frame<'_>, panes: &Panes) {
        if let (Some(popup), Some(chat_area), Some(composer_area)) = (
            self.prompt
                .popup
                .as_ref()
                .filter(|_| self.composer_focused()),
            panes.chat,
            panes.composer,
        ) {
            let area = popup_area(composer_area, chat_area.y, popup);
            let view = PaletteView {
                popup,
                theme: &self.theme,
            };
            frame.render_widget(&view, area);
        }
    }

    /// Pane areas for a frame of `area`: the status bar at the bottom; the tree beside
    /// the chat on wide terminals, else only when focused (then it takes the pane);
    /// the banner, chat and composer stacked on the right.
    fn panes(&self, area: Rect) -> Panes {
        let [main, status] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(area);
        let approvals = &self.stack.approval.queue;
        let dock_h = if approvals.docked() {
            let view = ApprovalView {
                queue: approvals,
                keymap: &self.keymap,
                theme: &self.theme,
            };
            view.docked_height(main.width)
                .min(main.height.saturating_sub(4))
        } else {
            0
        };
        let [main, dock] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(dock_h)]).areas(main);
        let (body, wall) = match self.stack.overlay() {
            Overlay::Wall if area.width >= WALL_BESIDE_WIDTH => {
                let [left, right] =
                    Layout::horizontal([Constraint::Percentage(40), Constraint::Min(1)])
                        .areas(main);
                (left, Some(right))
            }
            Overlay::Wall => (main, Some(main)),
            _ => (main, None),
        };
        let narrow = body.width < NARROW_WIDTH;
        let (tree, right) = if !narrow {
            let w = (body.width / 4)
                .clamp(TREE_WIDTH, TREE_MAX_WIDTH)
                .min(body.width / 3);
            let [t, r] =
                Layout::horizontal([Constraint::Length(w), Constraint::Min(1)]).areas(body);
            (Some(t), Some(r))
        } else if self.focus == Focus::Tree {
            (Some(body), None)
        } else {
            (None, Some(body))
        };
        let mut panes = Panes {
            main,
            status,
            banner: Rect::default(),
            tree,
            chat: None,
            find: Rect::default(),
            pending: Rect::default(),
            composer: None,
            wall,
            dock,
        };
        if let Some(right) = right {
            let banner_h = self.banner().map_or(0, |b| b.height(right.width));
            let composer_h = self.prompt.composer.rows() + 2;
            let pending_h = pending::height(self.open_pending().len());
            let find_h = u16::from(self.stack.bar_open());
            let [banner, chat, find, waiting, composer] = Layout::vertical([
                Constraint::Length(banner_h),
                Constraint::Min(3),
                Constraint::Length(find_h),
                Constraint::Length(pending_h),
                Constraint::Length(composer_h),
            ])
            .areas(right);
            panes.banner = banner;
            panes.chat = Some(chat);
            panes.find = find;
            panes.pending = waiting;
            panes.composer = Some(composer);
        }
        panes
    }

    /// The status bar's hints for `context`, led by how to continue a stopped
    /// session: the selected node's (tree), or the open thread's when interrupted;
    /// in the chat, then the keys that apply where the cursor is ([`Self::chat_hints`]).
    fn hints(&self, context: Context) -> Vec<(String, &'static str)> {
        let mut hints = self.keymap.hints(context);
        let key = self.keymap.label(Action::TreeContinue);
        let status_of = |id: Option<&str>| id.and_then(|id| self.tree.get(id)).map(|n| n.status);
        let stopped = |s: Option<SessionStatus>| {
            matches!(
                s,
                Some(
                    SessionStatus::Interrupted
                        | SessionStatus::Failed
                        | SessionStatus::Cancelled
                        | SessionStatus::Paused
                )
            )
        };
        let lead = match context {
            Context::Tree if stopped(status_of(self.tree.selected.as_deref())) => {
                Some((key, "Continue this stopped session"))
            }
            Context::Chat | Context::Composer
                if status_of(self.thread.as_ref().and_then(|t| t.session_id.as_deref()))
                    == Some(SessionStatus::Interrupted) =>
            {
                Some((key, "(in the tree) continues it"))
            }
            _ => None,
        };
        let lead = lead.filter(|(k, _)| !k.is_empty());
        let led = lead.is_some();
        if let Some(lead) = lead {
            hints.insert(0, lead);
        }
        if context == Context::Chat {
            let at = usize::from(led);
            for (i, hint) in self.chat_hints().into_iter().enumerate() {
                hints.insert(at + i, hint);
            }
        }
        // A docked approval prompt: Esc brings it back instead of cancelling.
        if self.stack.approval.queue.docked() && matches!(context, Context::Tree | Context::Chat) {
            let cancel = self.keymap.label(Action::CancelTurn);
            hints.retain(|(k, _)| *k != cancel);
            hints.insert(0, ("Esc".to_string(), "Back to the approval prompt"));
        }
        hints
    }

    /// The chat's keys that apply where the cursor is: `y` copy (a cell is
    /// selected), `u` rewind here (a stored session's turn is selected and nothing
    /// runs), `d` diff (the open session changed files).
    fn chat_hints(&self) -> Vec<(String, &'static str)> {
        let Some(thread) = &self.thread else {
            return Vec::new();
        };
        let node = thread
            .session_id
            .as_deref()
            .and_then(|id| self.tree.get(id));
        let running = thread.turn_in_flight || node.is_some_and(|n| n.status.turn_in_progress());
        let selected = thread.selected.filter(|&i| i < thread.cells.len());
        let in_turn = selected.is_some_and(|at| {
            thread.cells[..=at]
                .iter()
                .any(|c| matches!(c.kind, crate::tui::state::cells::CellKind::User(_)))
        });
        let mut hints = Vec::new();
        let mut add = |action: Action, what: &'static str, applies: bool| {
            let key = self.keymap.label(action);
            if applies && !key.is_empty() {
                let first = key.split('/').next().unwrap_or(&key).to_string();
                hints.push((first, what));
            }
        };
        add(Action::Copy, "Copy this", selected.is_some());
        add(
            Action::ChatRewind,
            "Rewind here",
            in_turn && !running && thread.session_id.is_some(),
        );
        add(
            Action::ChatDiff,
            "Diff",
            node.is_some_and(|n| !n.files_changed.is_empty()),
        );
        hints
    }

    /// The provider banner: shown while no provider is available.
    fn banner(&self) -> Option<BannerView<'_>> {
        let text = self.status.provider_label.as_ref().err()?;
        Some(BannerView {
            text: &text.0,
            theme: &self.theme,
        })
    }

    /// The composer takes keys: focused, and no modal component over it.
    fn composer_focused(&self) -> bool {
        self.focus == Focus::Composer && !self.stack.any_modal()
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

    /// The open thread's waiting messages (steers, then queued ones).
    fn open_pending(&self) -> Vec<&PendingPrompt> {
        self.thread
            .as_ref()
            .and_then(|t| t.session_id.as_deref())
            .map(|id| self.pending.of(id))
            .unwrap_or_default()
    }

    fn composer_title(&self) -> String {
        match &self.thread {
            None => " Message → new session ".to_string(),
            Some(t) => match (&t.session_id, &t.agent) {
                (None, Some(agent)) => format!(" Message → new session ({agent}) "),
                (None, None) => " Message → new session ".to_string(),
                (Some(id), _) if self.thread_running() => format!(
                    " Steer #{} · {} steers · {} queues ",
                    short_id(id),
                    self.keymap.label(Action::Submit),
                    self.keymap.label(Action::FocusNext),
                ),
                (Some(id), _) => format!(" Continue #{} ", short_id(id)),
            },
        }
    }
}
