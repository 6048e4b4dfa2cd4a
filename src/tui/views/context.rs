//! The context meter (issue 26 item 4): `ctx ▰▰▰▱▱ 3.2k/4k` in the status bar and
//! `3.2k/4k` on tree rows, amber from the compaction threshold on.
//!
//! Owns: the text and style of the meter. Does not own: the numbers
//! (`state::context`).

use ratatui::text::Span;

use crate::tui::clock::format_tokens;
use crate::tui::state::context::ContextMeter;
use crate::tui::theme::{Slot, Theme};

/// Cells of the status bar's bar.
const BAR: usize = 5;

/// `3.2k/4k`: tokens used of the limit.
pub fn used_of_limit(meter: &ContextMeter) -> String {
    format!(
        "{}/{}",
        format_tokens(meter.tokens),
        format_tokens(meter.max_tokens)
    )
}

/// The status bar's meter: ` ctx ▰▰▰▱▱ 3.2k/4k ` (`short`: without the bar), in the
/// bar's style, or the warning (amber) style at the threshold.
pub fn meter_span(meter: &ContextMeter, short: bool, theme: &Theme) -> Span<'static> {
    let style = if meter.at_threshold() {
        theme.style(Slot::Warning)
    } else {
        theme.style(Slot::StatusBar)
    };
    if short {
        return Span::styled(format!(" ctx {} ", used_of_limit(meter)), style);
    }
    let filled = ((meter.share() * BAR as f64).ceil() as usize).min(BAR);
    let bar: String = "▰".repeat(filled) + &"▱".repeat(BAR - filled);
    Span::styled(format!(" ctx {bar} {} ", used_of_limit(meter)), style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_text_and_amber_at_threshold() {
        let theme = Theme::builtin_dark(false);
        let m = ContextMeter {
            tokens: 3300,
            max_tokens: 4000,
            threshold: 0.8,
        };
        let span = meter_span(&m, false, &theme);
        assert!(span.content.contains("▰▰▰▰▰ 3.3k/4.0k"), "{}", span.content);
        assert_eq!(span.style, theme.style(Slot::Warning));
        let low = ContextMeter { tokens: 100, ..m };
        assert_eq!(
            meter_span(&low, true, &theme).style,
            theme.style(Slot::StatusBar)
        );
    }

    #[test]
    fn status_bar_shows_the_meter_and_narrows_it() {
        use crate::tui::views::status::StatusView;
        let theme = Theme::builtin_dark(true);
        let ok = Ok("openai/gpt-4o".to_string());
        let view = StatusView {
            provider: &ok,
            needs_you: 0,
            needs_you_key: String::new(),
            running: 1,
            context: Some(ContextMeter {
                tokens: 1600,
                max_tokens: 4000,
                threshold: 0.8,
            }),
            usage: None,
            note: None,
            reload: None,
            hints: Vec::new(),
            mouse_off: None,
            theme: &theme,
        };
        insta::assert_snapshot!(
            "context_status_80",
            crate::tui::views::tests::render(&view, 80, 1)
        );
        insta::assert_snapshot!(
            "context_status_30",
            crate::tui::views::tests::render(&view, 30, 1)
        );
    }
}
