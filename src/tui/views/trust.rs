//! The trust prompt (SPEC §12 "Trust"): a modal box asking whether to trust the current
//! project, listing its power files and what each gains, saying what trusting changes
//! and what it never does, with the answer keys
//! from the keymap.
//!
//! Owns: how the prompt looks. Does not own: the question or its keys
//! (`state::trust`), where it goes on screen (`app::draw`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Padding, Widget};

use super::{answer_keys, centered};
use crate::tui::keymap::{Action, Keymap};
use crate::tui::state::trust::TrustPrompt;
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{RLine, truncate, wrap};

/// Widest the prompt gets (columns, borders included).
pub const MAX_WIDTH: u16 = 72;

/// The trust prompt.
pub struct TrustView<'a> {
    pub prompt: &'a TrustPrompt,
    pub keymap: &'a Keymap,
    pub theme: &'a Theme,
}

impl TrustView<'_> {
    fn rows(&self, width: u16) -> Vec<Line<'static>> {
        let text = self.theme.style(Slot::Base);
        let meta = self.theme.style(Slot::TreeMeta);
        let mut rows = wrap(
            &RLine::new(Line::from(Span::styled(
                self.prompt.shown.clone(),
                self.theme.style(Slot::Title),
            ))),
            width,
        );
        rows.extend(wrap(
            &RLine::new(Line::from(Span::styled("has:", text))),
            width,
        ));
        for line in self.prompt.what() {
            rows.extend(wrap(
                &RLine::new(Line::from(Span::styled(format!("  {line}"), text))),
                width,
            ));
        }
        rows.push(Line::default());
        for sentence in [
            "Until you trust it, its hooks do not run, its agents load but add no tools \
             of their own, and its MCP servers do not start.",
            "Trusting lets them at once; it never lets an agent file loosen your approvals.",
        ] {
            rows.extend(wrap(
                &RLine::new(Line::from(Span::styled(sentence, meta))),
                width,
            ));
        }
        rows.push(Line::default());
        let keys = answer_keys(
            self.keymap,
            self.theme,
            &[
                (Action::TrustYes, " trust".to_string()),
                (Action::TrustNo, " not now".to_string()),
            ],
        );
        rows.extend(wrap(&RLine::new(keys), width));
        rows
    }
}

impl Widget for &TrustView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let width = area.width.min(MAX_WIDTH);
        let inner_w = width.saturating_sub(4).max(1);
        let rows = self.rows(inner_w);
        let height = u16::try_from(rows.len() + 2).unwrap_or(area.height);
        let area = centered(area, width, height);
        Clear.render(area, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Thick)
            .border_style(self.theme.style(Slot::Warning))
            .title(Line::from(" Trust this project? ").style(self.theme.style(Slot::Title)))
            .padding(Padding::horizontal(1))
            .style(self.theme.style(Slot::Base));
        let inner = block.inner(area);
        block.render(area, buf);
        for (y, row) in rows.iter().take(usize::from(inner.height)).enumerate() {
            let y = inner.y + u16::try_from(y).unwrap_or(0);
            buf.set_line(inner.x, y, &truncate(row, inner.width), inner.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::tui::testing::buffer_text;

    fn render(prompt: &TrustPrompt, w: u16, h: u16) -> String {
        let theme = Theme::builtin_dark(false);
        let keymap = Keymap::defaults();
        let view = TrustView {
            prompt,
            keymap: &keymap,
            theme: &theme,
        };
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        (&view).render(area, &mut buf);
        buffer_text(&buf)
    }

    #[test]
    fn the_prompt_names_the_project_what_it_has_and_the_keys() {
        let prompt = TrustPrompt {
            project: PathBuf::from("/home/ada/src/cloned-repo"),
            powers: vec![
                crate::config::trust::PowerFile {
                    path: ".claude/settings.json".into(),
                    gains: "hooks: PreToolUse (1) (run in the sandbox, as bash does)".into(),
                },
                crate::config::trust::PowerFile {
                    path: ".mcp.json".into(),
                    gains: "MCP servers started for every session: calc".into(),
                },
            ],
            store: PathBuf::from("/home/ada/.local/state/arbor/trusted-projects.json"),
            shown: "~/src/cloned-repo".into(),
        };
        let wide = render(&prompt, 80, 24);
        assert!(wide.contains("~/src/cloned-repo"), "{wide}");
        assert!(wide.contains("y trust · n/Esc not now"), "{wide}");
        insta::assert_snapshot!("trust_80", wide);
        let narrow = render(&prompt, 40, 24);
        assert!(narrow.contains("not now"), "{narrow}");
        insta::assert_snapshot!("trust_40", narrow);
    }
}
