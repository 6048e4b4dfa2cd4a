//! The confirmation before merging, discarding or rewinding (issue 25 items 2, 4, 5):
//! `tree.merge` / `tree.discard` on a node with an unmerged worktree, `chat.rewind`
//! on a turn of the open thread ("rewind here" = fork at that turn + restore the
//! files changed after it). A small modal box above the overlays: `confirm.yes`
//! sends the command, `confirm.no` closes it with a note.
//!
//! Owns: what may be asked (a node with a worktree, a settled turn of a stored
//! session), the question and the answer. Does not own: doing it (the engine's
//! `MergeSession` / `DiscardSession` / `ForkSession`, `engine::handle::undo`) or
//! what the result changes (`app::undo`).

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Padding, Widget};

use crate::session::SessionId;
use crate::tui::action::KeyOutcome;
use crate::tui::app::Focus;
use crate::tui::app::component::{Component, Ctx, DrawCtx, Layer};
use crate::tui::app::panes::Panes;
use crate::tui::app_event::EngineCommand;
use crate::tui::keymap::{Action, Context, KeyBinding};
use crate::tui::state::cells::CellKind;
use crate::tui::theme::Slot;
use crate::tui::views::{answer_keys, centered};
use crate::tui::wrap::{RLine, truncate, wrap};

/// Widest the box gets (columns, borders included).
const MAX_WIDTH: u16 = 64;

/// A question waiting for y/n, with the command a yes sends.
#[derive(Debug)]
pub(crate) struct ConfirmPrompt {
    /// The box's title (` Merge? `).
    title: &'static str,
    /// The question, one sentence.
    question: String,
    /// What a yes sends.
    command: EngineCommand,
    /// The note a no leaves (`not merged`).
    declined: &'static str,
}

impl ConfirmPrompt {
    /// `tree.merge`: merge the selected node's worktree into its parent's checkout.
    pub(super) fn open_merge(cx: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        let (id, branch) = worktree_of_selected(cx, "merge")?;
        Some(Box::new(Self {
            title: " Merge? ",
            question: format!("merge {branch} into the parent's checkout?"),
            command: EngineCommand::MergeSession {
                session_id: SessionId::from(id.as_str()),
                markers: false,
            },
            declined: "not merged",
        }))
    }

    /// After a merge of `session_id` was refused for conflicts in `files`: write
    /// git-style conflict markers into them for the person to resolve (issue 35; what
    /// `arbor session merge --markers` does), or leave the branch as it is.
    pub(crate) fn markers(session_id: &str, files: &[String]) -> Box<dyn Component> {
        let n = files.len();
        Box::new(Self {
            title: " Conflict ",
            question: format!(
                "the merge conflicts in {n} file{} ({}); write conflict markers into {} for you to resolve?",
                if n == 1 { "" } else { "s" },
                files.join(", "),
                if n == 1 { "it" } else { "them" }
            ),
            command: EngineCommand::MergeSession {
                session_id: SessionId::from(session_id),
                markers: true,
            },
            declined: "not merged; the branch stays",
        })
    }

    /// `tree.discard`: remove the selected node's worktree and branch.
    pub(super) fn open_discard(cx: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        let (id, branch) = worktree_of_selected(cx, "discard")?;
        Some(Box::new(Self {
            title: " Discard? ",
            question: format!("discard {branch} and its changes? This cannot be undone."),
            command: EngineCommand::DiscardSession {
                session_id: SessionId::from(id.as_str()),
            },
            declined: "not discarded",
        }))
    }

    /// `chat.rewind`: fork the open session at the turn under the cursor and restore
    /// the files it changed after that turn.
    pub(super) fn open_rewind(cx: &mut Ctx<'_>) -> Option<Box<dyn Component>> {
        let Some(thread) = cx.thread.as_ref() else {
            cx.note("no thread open to rewind", true);
            return None;
        };
        let Some(id) = thread.session_id.clone() else {
            cx.note("nothing to rewind: this thread has no session yet", true);
            return None;
        };
        if thread.earlier_pending() {
            cx.note("its earlier messages are still loading; try again", true);
            return None;
        }
        let running = cx
            .tree
            .get(&id)
            .is_some_and(|n| n.status.turn_in_progress());
        if running || thread.turn_in_flight {
            cx.note("it is running a turn: cancel it or wait, then rewind", true);
            return None;
        }
        let Some(at) = thread.selected else {
            cx.note(
                "move the cursor ([ / ]) to a message of the turn to rewind to",
                true,
            );
            return None;
        };
        let turn = thread
            .cells
            .iter()
            .take(at + 1)
            .filter(|c| matches!(c.kind, CellKind::User(_)))
            .count() as u64;
        if turn == 0 {
            cx.note(
                "select a message of a turn (none starts before the first prompt)",
                true,
            );
            return None;
        }
        let short: String = id.as_str().chars().take(8).collect();
        Some(Box::new(Self {
            title: " Rewind here? ",
            question: format!(
                "fork #{short} at turn {turn} and restore the files it changed after turn {turn}?"
            ),
            command: EngineCommand::ForkSession {
                session_id: id,
                at_turn: Some(turn),
                rewind: true,
            },
            declined: "not rewound",
        }))
    }

    fn rows(&self, width: u16, cx: &DrawCtx<'_>) -> Vec<Line<'static>> {
        let mut rows = wrap(
            &RLine::new(Line::from(Span::styled(
                self.question.clone(),
                cx.theme.style(Slot::Base),
            ))),
            width,
        );
        rows.push(Line::default());
        let keys = answer_keys(
            cx.keymap,
            cx.theme,
            &[
                (Action::ConfirmYes, " yes".to_string()),
                (Action::ConfirmNo, " no".to_string()),
            ],
        );
        rows.extend(wrap(&RLine::new(keys), width));
        rows
    }
}

/// The selected node's id and branch when it has an unmerged worktree; else a note
/// saying why there is nothing to `what`.
fn worktree_of_selected(cx: &mut Ctx<'_>, what: &str) -> Option<(String, String)> {
    let Some(node) = cx.tree.selected.as_deref().and_then(|id| cx.tree.get(id)) else {
        cx.note(format!("select a session to {what}"), true);
        return None;
    };
    let Some(branch) = node.branch.clone() else {
        cx.note(
            format!(
                "nothing to {what}: {} has no unmerged worktree",
                node.label()
            ),
            true,
        );
        return None;
    };
    if node.status.turn_in_progress() {
        cx.note(
            format!(
                "{} is running a turn: wait for it or cancel it",
                node.label()
            ),
            true,
        );
        return None;
    }
    Some((node.id.clone(), branch))
}

impl Component for ConfirmPrompt {
    fn layer(&self) -> Layer {
        Layer::Prompt
    }

    fn context(&self, _: Focus) -> Option<Context> {
        Some(Context::Confirm)
    }

    fn handle_key(
        &mut self,
        _: &KeyEvent,
        _: &KeyBinding,
        action: Option<Action>,
        cx: &mut Ctx<'_>,
    ) -> KeyOutcome {
        match action {
            Some(Action::Quit) => return KeyOutcome::Ignored,
            Some(Action::ConfirmYes) => {
                cx.close();
                cx.send(self.command.clone());
            }
            Some(Action::ConfirmNo) => {
                cx.close();
                cx.note(self.declined, false);
            }
            _ => {}
        }
        KeyOutcome::Consumed
    }

    fn draw(&self, frame: &mut Frame<'_>, panes: &Panes, cx: &DrawCtx<'_>) {
        let view = ConfirmView { prompt: self, cx };
        frame.render_widget(&view, panes.main);
    }
}

/// The box: the question, then the answer keys.
struct ConfirmView<'a, 'b> {
    prompt: &'a ConfirmPrompt,
    cx: &'a DrawCtx<'b>,
}

impl Widget for &ConfirmView<'_, '_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let width = area.width.min(MAX_WIDTH);
        let rows = self.prompt.rows(width.saturating_sub(4).max(1), self.cx);
        let height = u16::try_from(rows.len() + 2).unwrap_or(area.height);
        let area = centered(area, width, height);
        Clear.render(area, buf);
        let theme = self.cx.theme;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Thick)
            .border_style(theme.style(Slot::Warning))
            .title(Line::from(self.prompt.title).style(theme.style(Slot::Title)))
            .padding(Padding::horizontal(1))
            .style(theme.style(Slot::Base));
        let inner = block.inner(area);
        block.render(area, buf);
        for (y, row) in rows.iter().take(usize::from(inner.height)).enumerate() {
            let y = inner.y + u16::try_from(y).unwrap_or(0);
            buf.set_line(inner.x, y, &truncate(row, inner.width), inner.width);
        }
    }
}
