//! The status bar: provider/model (or a no-provider warning), running count, a note
//! or the reload mark, and key hints from the keymap.
//!
//! A label without a model (`openai` or `openai/`: a local server whose model is
//! resolved on the first request) reads `openai (default model)` until a
//! `provider:response` names the model.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::tui::app::Note;
use crate::tui::theme::{Slot, Theme};
use crate::tui::wrap::{truncate, width};

/// The model part of a `provider/model` label (`None` when missing or empty).
pub fn model_part(label: &str) -> Option<&str> {
    label
        .split_once('/')
        .map(|(_, m)| m.trim())
        .filter(|m| !m.is_empty())
}

/// How the status bar shows a provider label: as is with a model, else
/// `provider (default model)`.
pub fn display_label(label: &str) -> String {
    if model_part(label).is_some() {
        return label.to_string();
    }
    let provider = label.trim().trim_end_matches('/');
    if provider.is_empty() {
        "provider (default model)".to_string()
    } else {
        format!("{provider} (default model)")
    }
}

/// The status bar.
pub struct StatusView<'a> {
    pub provider: &'a Result<String, String>,
    pub running: usize,
    pub note: Option<&'a Note>,
    /// The reload summary while its mark is visible.
    pub reload: Option<String>,
    /// `(key, description)` from `Keymap::hints`.
    pub hints: Vec<(String, &'static str)>,
    pub theme: &'a Theme,
}

impl Widget for &StatusView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let bar = self.theme.style(Slot::StatusBar);
        buf.set_style(area, bar);
        let mut left = vec![match self.provider {
            Ok(label) => Span::styled(format!(" {} ", display_label(label)), bar),
            Err(_) => Span::styled(" ⚠ no provider ", self.theme.style(Slot::StatusNote)),
        }];
        if self.running > 0 {
            left.push(Span::styled(format!("│ ● {} running ", self.running), bar));
        }
        if let Some(note) = self.note {
            let slot = if note.warning {
                Slot::StatusNote
            } else {
                Slot::StatusBar
            };
            left.push(Span::styled(
                format!("│ {} ", note.text),
                self.theme.style(slot),
            ));
        } else if let Some(reload) = &self.reload {
            left.push(Span::styled(
                format!("│ {reload} "),
                self.theme.style(Slot::ReloadMark).patch(bar),
            ));
        }
        let left = Line::from(left);
        let left_w: usize = left.spans.iter().map(|s| width(&s.content)).sum();
        let total = usize::from(area.width);
        let left = if left_w > total {
            truncate(&left, area.width)
        } else {
            left
        };
        let left_w = left_w.min(total);
        buf.set_line(area.x, area.y, &left, area.width);
        // Hints, right-aligned, as many as fit.
        let key = self.theme.style(Slot::StatusKey);
        let hint = self.theme.style(Slot::StatusHint);
        let mut spans: Vec<Span<'static>> = Vec::new();
        let mut used = 0;
        for (k, d) in &self.hints {
            let w = width(k) + width(d) + 3;
            if left_w + used + w + 1 > total {
                break;
            }
            spans.push(Span::styled(format!(" {k}"), key));
            spans.push(Span::styled(format!(" {d} "), hint));
            used += w;
        }
        if !spans.is_empty() {
            let x = area.x + u16::try_from(total - used).unwrap_or(0);
            buf.set_line(
                x,
                area.y,
                &Line::from(spans),
                u16::try_from(used).unwrap_or(0),
            );
        }
    }
}
