//! Find in the open thread (issue 15 item 4) as a component: `global.find` (Ctrl+F,
//! in the chat, the tree and the composer) opens the bar under the chat and takes
//! typed characters; every keystroke searches again and shows the first match at or
//! below the one shown before (at first: the top of the view). `find.next` (Enter,
//! `n`) and `find.prev` (Shift+Enter, `N`) step through the matches, scrolling each
//! into view, and leave typing (Ctrl+F types again); `find.close` (Esc) closes the bar
//! first of all that Esc does (SPEC §13). Other keys work as in the pane under the
//! bar; over the composer the bar takes no keys.
//!
//! Owns: those keys and keeping the hits current for a live thread. Does not own:
//! the search (`state::find`) or the look (`views::find`).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;

use crate::tui::action::KeyOutcome;
use crate::tui::app::Focus;
use crate::tui::app::component::{Component, Ctx, DrawCtx, Effect, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::keymap::{Action, Context, KeyBinding};
use crate::tui::state::find::{self, Find};
use crate::tui::views::chat;
use crate::tui::views::find::{FindBarView, FindMarks};

/// The find bar, while open.
#[derive(Debug)]
pub(crate) struct FindBar {
    /// The query and its hits.
    pub(crate) find: Find,
}

impl FindBar {
    /// `global.find`: opens the bar over the open thread (the chat takes the keys the
    /// bar does not use).
    pub(super) fn open(cx: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        if cx.thread.is_none() {
            cx.note("nothing to find in: open a thread first", true);
            return None;
        }
        Self::focus_chat(cx);
        Some(Box::new(Self { find: Find::open() }))
    }

    fn focus_chat(cx: &mut Ctx<'_>) {
        if cx.focus == Focus::Composer {
            cx.push(Effect::Focus(Focus::Chat));
        }
    }

    /// Searches the open thread for the query and shows the first match at or below
    /// the match shown until now (else the top of the view).
    fn search(&mut self, cx: &mut Ctx<'_>) {
        let size = chat_size(cx);
        let (f, Some(t)) = (&mut self.find, cx.thread.as_mut()) else {
            return;
        };
        // Incremental: a longer query keeps to the match shown (when it still
        // matches), else starts at the first message whose top is on screen.
        let top = t
            .window
            .iter()
            .find(|&&(_, row)| row == 0)
            .or(t.window.first());
        let from = f
            .current()
            .map(|hit| hit.cell)
            .or(top.map(|&(cell, _)| cell))
            .unwrap_or(0);
        if let Some(hit) = f.search(t, cx.theme, from) {
            find::reveal(t, hit, &f.query, size, cx.theme);
        }
    }

    /// `find.next` / `find.prev`: the next or previous match, scrolled into view.
    fn step(&mut self, forward: bool, cx: &mut Ctx<'_>) {
        let size = chat_size(cx);
        let (f, Some(t)) = (&mut self.find, cx.thread.as_mut()) else {
            return;
        };
        f.editing = false;
        if let Some(hit) = f.step(forward) {
            find::reveal(t, hit, &f.query, size, cx.theme);
        }
    }
}

/// The chat's wrap width and visible rows as last laid out.
fn chat_size(cx: &Ctx<'_>) -> (u16, usize) {
    cx.areas.chat.map_or((1, 0), |area| {
        (
            chat::wrap_width(area),
            usize::from(chat::body_area(area).height),
        )
    })
}

impl Component for FindBar {
    fn layer(&self) -> Layer {
        Layer::Bar
    }

    fn context(&self, focus: Focus) -> Option<Context> {
        (focus != Focus::Composer).then_some(Context::Find)
    }

    fn modal(&self) -> bool {
        false
    }

    fn handle_key(
        &mut self,
        key: &KeyEvent,
        binding: &KeyBinding,
        action: Option<Action>,
        cx: &mut Ctx<'_>,
    ) -> KeyOutcome {
        if cx.focus == Focus::Composer {
            return KeyOutcome::Ignored;
        }
        if self.find.editing {
            match key.code {
                KeyCode::Char(c) if binding.is_text() => {
                    self.find.query.push(c);
                    self.search(cx);
                    return KeyOutcome::Consumed;
                }
                KeyCode::Backspace => {
                    self.find.query.pop();
                    self.search(cx);
                    return KeyOutcome::Consumed;
                }
                _ => {}
            }
        }
        match action {
            Some(Action::FindNext) => self.step(true, cx),
            Some(Action::FindPrev) => self.step(false, cx),
            Some(Action::FindClose) => cx.close(),
            _ => return KeyOutcome::Ignored,
        }
        KeyOutcome::Consumed
    }

    /// Ctrl+F again: types into the bar again.
    fn reopen(&mut self, cx: &mut Ctx<'_>) -> bool {
        self.find.editing = true;
        Self::focus_chat(cx);
        true
    }

    /// Keeps the hits current with a thread that changed; a thread switched under the
    /// bar is searched afresh.
    fn layout(&mut self, _: &Panes, cx: &mut Ctx<'_>) {
        if let Some(t) = cx.thread.as_ref() {
            self.find.refresh(t, cx.theme);
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let (Some(chat_area), Some(thread)) = (panes.chat, cx.thread) else {
            return;
        };
        if panes.composer.is_none() {
            return;
        }
        let marks = FindMarks {
            thread,
            find: &self.find,
            theme: cx.theme,
        };
        frame.render_widget(&marks, chat_area);
        let bar = FindBarView {
            find: &self.find,
            keymap: cx.keymap,
            theme: cx.theme,
        };
        frame.render_widget(&bar, panes.find);
    }
}
