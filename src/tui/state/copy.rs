//! What the chat's copy keys copy (issue 15 item 4): a cell's text as a person would
//! paste it, and the code blocks of a Markdown message.
//!
//! Owns: [`copy_text`], [`code_blocks`], [`code_block_near`], and moving the chat's
//! cursor by message ([`step_message`]). Does not own: writing to the clipboard
//! (`term_write`), the keys (`app::copy`).

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use super::cells::{Cell, CellKind};
use super::layout::{self, LayoutCtx};
use super::thread::Thread;
use crate::tui::theme::Theme;

/// What copying `cell` puts on the clipboard: a message's text (an assistant reply's
/// Markdown source, thinking as written), a tool card's result (else its arguments as
/// JSON), a task card's response (else its instruction), an error or notice as shown.
/// `None` for a hand-off or a provider failure card.
pub fn copy_text(cell: &Cell) -> Option<String> {
    let text = match &cell.kind {
        CellKind::User(t)
        | CellKind::Assistant(t)
        | CellKind::Thinking(t)
        | CellKind::Error(t)
        | CellKind::Notice(t) => t.to_string(),
        CellKind::Streaming(s) => s.text(),
        CellKind::Checklist(items) => checklist_text(items),
        CellKind::Tool(card) => card
            .result
            .as_deref()
            .map(str::to_string)
            .unwrap_or_else(|| {
                serde_json::to_string_pretty(&card.arguments.value()).unwrap_or_default()
            }),
        CellKind::Task(card) => card
            .response
            .as_deref()
            .unwrap_or(&card.instruction)
            .to_string(),
        CellKind::Compaction(card) => card.summary.clone()?,
        CellKind::Handoff { .. } | CellKind::Failure(_) => return None,
    };
    Some(text)
}

/// A checklist as Markdown task items: `[x] Read`, `[~] Fix`, `[ ] Test`.
fn checklist_text(items: &[crate::session::metadata::TodoItem]) -> String {
    use crate::session::metadata::TodoStatus;
    items
        .iter()
        .map(|i| {
            let mark = match i.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Completed => "[x]",
            };
            format!("{mark} {}", i.content)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The code blocks (fenced or indented) of a Markdown text, each as its content
/// without the fences, in order.
pub fn code_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => current = Some(String::new()),
            Event::Text(text) => {
                if let Some(block) = &mut current {
                    block.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(current.take()),
            _ => {}
        }
    }
    blocks
}

/// The code block nearest cell `from`: the last code block of the nearest message
/// at or above it that has one (an assistant reply, a user message, the streaming
/// tail), else of the nearest below it. `None` when the thread has none.
pub fn code_block_near(cells: &[Cell], from: usize) -> Option<String> {
    let last_block = |cell: &Cell| {
        let text = match &cell.kind {
            CellKind::Assistant(t) | CellKind::User(t) => t.to_string(),
            CellKind::Streaming(s) => s.text(),
            _ => return None,
        };
        code_blocks(&text).pop()
    };
    let from = from.min(cells.len().checked_sub(1)?);
    cells[..=from]
        .iter()
        .rev()
        .find_map(last_block)
        .or_else(|| cells[from + 1..].iter().find_map(last_block))
}

/// Moves the chat's cursor (`thread.selected`) to the previous (`up`) or next cell of
/// any kind, scrolling it into view in a viewport of `size` (wrap width, rows); from
/// no cursor, `up` starts at the newest cell. Returns false when there is none.
pub fn step_message(thread: &mut Thread, up: bool, size: (u16, usize), theme: &Theme) -> bool {
    let n = thread.cells.len();
    let next = match (thread.selected, up) {
        (Some(s), true) => s.checked_sub(1),
        (Some(s), false) => Some(s + 1).filter(|i| *i < n),
        (None, true) => n.checked_sub(1),
        (None, false) => None,
    };
    let Some(i) = next else {
        return false;
    };
    thread.selected = Some(i);
    let mut ctx = LayoutCtx {
        width: size.0,
        height: size.1,
        theme,
        stats: &mut thread.stats,
    };
    layout::ensure_visible(&mut thread.cells, &mut thread.scroll, i, &mut ctx);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_blocks_come_without_fences_and_the_nearest_above_wins() {
        let md = "Try this:\n\n```rust\nfn main() {}\n```\n\nor\n\n    indented\n";
        assert_eq!(code_blocks(md), ["fn main() {}\n", "indented\n"]);
        let cells = vec![
            Cell::new(CellKind::Assistant("```sh\nls\n```".into())),
            Cell::new(CellKind::User("thanks".into())),
            Cell::new(CellKind::Assistant("```py\nprint(1)\n```".into())),
        ];
        assert_eq!(code_block_near(&cells, 1).as_deref(), Some("ls\n"));
        assert_eq!(code_block_near(&cells, 2).as_deref(), Some("print(1)\n"));
        assert_eq!(code_block_near(&cells[1..2], 0), None);
    }
}
