//! Snapshot tests of the chat pane holding wide text: emoji with VS16, ZWJ families,
//! skin tones and CJK, finished and streaming, at 80 columns and a narrow width.
//! Nothing may be clipped at the pane's edge: every cluster of the message is drawn.

use jiff::Timestamp;
use ratatui::layout::Rect;
use serde_json::json;
use unicode_segmentation::UnicodeSegmentation;

use super::chat::{self, ChatView};
use crate::session::{LoadedSession, Message, Metadata};
use crate::tui::state::thread::Thread;
use crate::tui::state::tree::SessionTree;
use crate::tui::theme::Theme;

const ID: &str = "5f0e1c2a-1111-4222-8333-444455556666";

/// A reply mixing 2-column clusters that a per-`char` measure gets wrong.
fn reply() -> String {
    let heart = "❤\u{fe0f}";
    format!(
        "{} hearts end\n\nfamily 👨\u{200d}👩\u{200d}👧 and 👨\u{200d}👩\u{200d}👧\u{200d}👦 \
         thumbs 👍🏻👍🏽👍🏿 waving 👋🏾 then 日本語のテキストを折り返します and the last word",
        heart.repeat(45)
    )
}

fn thread(theme: &Theme) -> Thread {
    let mut t = Thread::loading(ID, Some("poet".into()));
    let transcript = [
        json!({"role": "user", "content": "Say it with emoji"}),
        json!({"role": "assistant", "content": [{"type": "text", "text": reply()}]}),
    ];
    t.load(LoadedSession {
        metadata: Metadata {
            session_id: ID.into(),
            agent_name: Some("poet".into()),
            ..Default::default()
        },
        transcript: transcript
            .into_iter()
            .map(|v| serde_json::from_value::<Message>(v).unwrap())
            .collect(),
        warnings: vec![],
    });
    // The same text again, streaming: committed lines and the unfinished tail (the
    // second paragraph) wrap too.
    t.seed_stream(&format!("Again: {}", reply()), "", theme);
    t
}

fn render(width: u16, height: u16) -> String {
    let theme = Theme::builtin_dark(false);
    let tree = SessionTree::default();
    let mut thread = thread(&theme);
    let area = Rect::new(0, 0, width, height);
    thread.scroll = crate::tui::state::layout::Scroll::Top { cell: 0, row: 0 };
    thread.layout(
        chat::wrap_width(area),
        usize::from(chat::body_area(area).height),
        &theme,
    );
    let view = ChatView {
        thread: Some(&thread),
        tree: &tree,
        theme: &theme,
        now: "2025-03-01T12:00:30Z".parse::<Timestamp>().unwrap(),
        focused: true,
    };
    super::tests::render(&view, width, height)
}

/// Grapheme clusters of `s` that are not whitespace or pane border.
fn clusters(s: &str) -> Vec<&str> {
    s.graphemes(true)
        .filter(|g| !g.trim().is_empty() && !"┃┏┓┗┛━│╭╮╰╯─▍".contains(*g))
        .collect()
}

#[test]
fn wide_clusters_wrap_without_clipping() {
    for (w, h, name) in [
        (80u16, 24u16, "chat_80_wide_text"),
        (30, 24, "chat_30_wide_text"),
    ] {
        let screen = render(w, h);
        insta::assert_snapshot!(name, screen);
        let drawn = clusters(&screen).concat();
        let want = clusters(&reply()).concat();
        // Once finished, once streaming: both copies drawn whole, in order.
        assert_eq!(drawn.matches(&want).count(), 2, "at {w} columns:\n{screen}");
    }
}
