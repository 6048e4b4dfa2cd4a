//! The status bar: provider/model (or a no-provider warning), the count of sessions
//! that need the person (`⚑ 2 need you (Ctrl+g)`: an approval, paused, failed,
//! interrupted — `state::tree::needs_you` — with the key that jumps to them), running count, the open
//! session's usage (tokens, cost where known, and its tree's total when it has
//! sub-sessions or is one), its context use (`ctx ▰▰▱▱▱ 1.6k/4.0k`, amber at the
//! compaction threshold), a note or the reload mark, and key hints from the keymap.
//!
//! A label without a model (`openai` or `openai/`: a local server whose model the
//! runtime is still asking it for at startup, or could not learn) reads
//! `openai (default model)` until the startup lookup or a `provider:response` names it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::tui::clock::{format_cost, format_tokens};
use crate::tui::state::context::ContextMeter;
use crate::tui::state::note::Note;
use crate::tui::state::tree::Spend;
use crate::tui::theme::{Slot, Theme};
use crate::tui::views::WAITING_GLYPH;
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

/// The open session's usage for the status bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatusUsage {
    /// The session's own tokens and cost.
    pub session: Spend,
    /// Its root's whole tree, when that differs from the session alone.
    pub tree: Option<Spend>,
}

impl StatusUsage {
    /// `12.3k tok $0.04 · tree 45.6k $0.31` (cost only where known).
    pub fn text(&self) -> String {
        self.text_with(" tok")
    }

    fn text_with(&self, unit: &str) -> String {
        let spend = |s: &Spend, unit: &str| {
            let mut out = format!("{}{unit}", format_tokens(s.tokens));
            if let Some(c) = s.cost {
                out.push(' ');
                out.push_str(&format_cost(c));
            }
            out
        };
        let mut text = spend(&self.session, unit);
        if let Some(tree) = &self.tree {
            text.push_str(&format!(" · tree {}", spend(tree, "")));
        }
        text
    }
}

/// The status bar.
pub struct StatusView<'a> {
    pub provider: &'a Result<String, crate::tui::error::NoProvider>,
    /// Sessions that need the person (`SessionTree::needs_you_count`).
    pub needs_you: usize,
    /// The jump key's label (`Keymap::label` of `global.next_needs_you`; empty when
    /// unbound), shown beside the count when there is room.
    pub needs_you_key: String,
    pub running: usize,
    /// The open session's usage (`None`: no session open or nothing spent yet).
    pub usage: Option<StatusUsage>,
    /// The open session's context use (`None`: unknown), `views::context`'s meter.
    pub context: Option<ContextMeter>,
    pub note: Option<&'a Note>,
    /// The reload summary while its mark is visible.
    pub reload: Option<String>,
    /// `(key, description)` from `Keymap::hints`.
    pub hints: Vec<(String, &'static str)>,
    /// `Some(key label of global.mouse)` while the mouse is left to the terminal:
    /// `mouse off (Alt+m)` is shown.
    pub mouse_off: Option<String>,
    pub theme: &'a Theme,
}

impl StatusView<'_> {
    /// The left part at `level` of compaction: 0 full; 1 usage without the tree
    /// total, the count without the jump key; 2 also the provider label as its model,
    /// `⚑N` / `●N` for sessions that need you and running ones and usage without "tok".
    fn left(&self, level: u8) -> Vec<Span<'static>> {
        let bar = self.theme.style(Slot::StatusBar);
        let mut left = vec![match self.provider {
            Ok(label) if level >= 2 => {
                let short = model_part(label).map_or_else(|| display_label(label), str::to_string);
                Span::styled(format!(" {short} "), bar)
            }
            Ok(label) => Span::styled(format!(" {} ", display_label(label)), bar),
            Err(_) => Span::styled(" ⚠ no provider ", self.theme.style(Slot::StatusNote)),
        }];
        if let Some(key) = &self.mouse_off {
            let text = match level {
                0 if !key.is_empty() => format!("│ mouse off ({key}) "),
                _ => "│ mouse off ".to_string(),
            };
            left.push(Span::styled(text, self.theme.style(Slot::StatusNote)));
        }
        if self.needs_you > 0 {
            let n = self.needs_you;
            let text = match level {
                0 if !self.needs_you_key.is_empty() => {
                    format!("│ {WAITING_GLYPH} {n} need you ({}) ", self.needs_you_key)
                }
                0 | 1 => format!("│ {WAITING_GLYPH} {n} need you "),
                _ => format!("│ {WAITING_GLYPH}{n} "),
            };
            left.push(Span::styled(text, self.theme.style(Slot::StatusNote)));
        }
        if self.running > 0 {
            let text = if level >= 2 {
                format!("│ ●{} ", self.running)
            } else {
                format!("│ ● {} running ", self.running)
            };
            left.push(Span::styled(text, bar));
        }
        if let Some(usage) = &self.usage {
            let text = match level {
                0 => usage.text(),
                1 => StatusUsage {
                    tree: None,
                    ..*usage
                }
                .text(),
                _ => StatusUsage {
                    tree: None,
                    ..*usage
                }
                .text_with(""),
            };
            left.push(Span::styled(format!("│ {text} "), bar));
        }
        if let Some(context) = &self.context {
            left.push(Span::styled("│", bar));
            left.push(super::context::meter_span(context, level >= 1, self.theme));
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
        left
    }
}

impl Widget for &StatusView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let bar = self.theme.style(Slot::StatusBar);
        buf.set_style(area, bar);
        let total = usize::from(area.width);
        let span_w = |spans: &[Span<'_>]| spans.iter().map(|s| width(&s.content)).sum::<usize>();
        // The least compaction that fits (the last one is truncated when none does).
        let mut left = self.left(0);
        for level in 1..=2 {
            if span_w(&left) <= total {
                break;
            }
            left = self.left(level);
        }
        let left_w = span_w(&left);
        let left = Line::from(left);
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
