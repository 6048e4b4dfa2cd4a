//! Snapshot tests of every view at 80×24 and 40 columns (insta, `TestBackend`-style
//! buffers). Time comes from a fixed clock; ids are synthetic.

use std::path::PathBuf;

use jiff::Timestamp;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use serde_json::{Value, json};

use super::banner::BannerView;
use super::browser::BrowserView;
use super::chat::{self, ChatView};
use super::composer::ComposerView;
use super::help::HelpView;
use super::status::StatusView;
use super::tree::TreeView;
use crate::agent::reload::RegistryDiff;
use crate::agent::{AgentDef, AgentIssue, AgentSource, Registry, Shadowed};
use crate::session::protocol::{DeltaKind, ResolvedModel, SessionForkEvent, Via};
use crate::session::{EngineEvent, Event, LoadedSession, Message, Metadata, SessionStatus};
use crate::tui::composer::Composer;
use crate::tui::keymap::{Context, Keymap};
use crate::tui::state::browser::{BrowserState, ReloadMark};
use crate::tui::state::note::Note;
use crate::tui::state::thread::Thread;
use crate::tui::state::tree::SessionTree;
use crate::tui::testing::{buffer_text, event as ev, fork, start, to_thread, to_tree, tokens};
use crate::tui::theme::Theme;

const NOW: &str = "2025-03-01T12:00:30Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

fn theme() -> Theme {
    Theme::builtin_dark(false)
}

/// Renders `widget` into a `width`×`height` buffer and returns its rows, right-trimmed.
pub(super) fn render<W>(widget: &W, width: u16, height: u16) -> String
where
    for<'a> &'a W: Widget,
{
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    widget.render(area, &mut buf);
    buffer_text(&buf)
}

fn appended(message: Value) -> EngineEvent {
    EngineEvent::appended(serde_json::from_value(message).unwrap())
}

pub(crate) const ROOT: &str = "5f0e1c2a-1111-4222-8333-444455556666";
pub(crate) const EXPLORER: &str = "5f0e1c2a11114222-0a1b2c3d4e5f6071_explorer";
pub(crate) const TESTER: &str = "5f0e1c2a11114222-1122334455667788_tester";
pub(crate) const REVIEWER: &str = "0a1b2c3d4e5f6071-99aabbccddeeff00_reviewer";
pub(crate) const WRITER: &str = "5f0e1c2a11114222-aabbccddeeff0011_writer";

fn sample_tree() -> SessionTree {
    let mut t = SessionTree::default();
    to_tree(
        &mut t,
        &ev(start("zen-architect"), ROOT, None, "2025-03-01T12:00:00Z"),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Running),
            ROOT,
            None,
            "2025-03-01T12:00:00Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            fork(ROOT, "explorer"),
            EXPLORER,
            Some(ROOT),
            "2025-03-01T12:00:02Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Running),
            EXPLORER,
            Some(ROOT),
            "2025-03-01T12:00:02Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            fork(EXPLORER, "reviewer"),
            REVIEWER,
            Some(EXPLORER),
            "2025-03-01T12:00:04Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Running),
            REVIEWER,
            Some(EXPLORER),
            "2025-03-01T12:00:04Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Completed),
            REVIEWER,
            Some(EXPLORER),
            "2025-03-01T12:00:16Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            tokens(1200, 300, None),
            REVIEWER,
            Some(EXPLORER),
            "2025-03-01T12:00:16Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            fork(ROOT, "tester"),
            TESTER,
            Some(ROOT),
            "2025-03-01T12:00:05Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Running),
            TESTER,
            Some(ROOT),
            "2025-03-01T12:00:05Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Failed),
            TESTER,
            Some(ROOT),
            "2025-03-01T12:00:09Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            fork(ROOT, "writer"),
            WRITER,
            Some(ROOT),
            "2025-03-01T12:00:06Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Running),
            WRITER,
            Some(ROOT),
            "2025-03-01T12:00:06Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            EngineEvent::status(SessionStatus::Cancelled),
            WRITER,
            Some(ROOT),
            "2025-03-01T12:00:07Z",
        ),
    );
    to_tree(
        &mut t,
        &ev(
            tokens(40000, 2345, None),
            ROOT,
            None,
            "2025-03-01T12:00:20Z",
        ),
    );
    t.load(&[Metadata {
        session_id: "9c8b7a6d-0000-4000-8000-000000000000".into(),
        agent_name: Some("helper".into()),
        created: "2025-02-28T09:00:00Z".into(),
        last_updated: "2025-02-28T09:03:05Z".into(),
        ..Default::default()
    }]);
    t.selected = Some(EXPLORER.into());
    t
}

#[test]
fn tree_view_with_nested_statuses() {
    let tree = sample_tree();
    let theme = theme();
    let view = TreeView {
        tree: &tree,
        theme: &theme,
        now: now(),
        focused: true,
        open: Some(ROOT),
    };
    insta::assert_snapshot!("tree_80", render(&view, 80, 24));
    insta::assert_snapshot!("tree_40", render(&view, 40, 24));
}

#[test]
fn collapsed_node_shows_running_sessions_below() {
    let mut tree = sample_tree();
    tree.selected = Some(ROOT.into());
    tree.set_collapsed(true);
    let theme = theme();
    let view = TreeView {
        tree: &tree,
        theme: &theme,
        now: now(),
        focused: true,
        open: Some(ROOT),
    };
    let wide = render(&view, 40, 4);
    // The failed child hidden below needs the person: `⚑1` before the title.
    assert!(
        wide.contains("›▸ ⠋ ⚑1 zen-architect") && wide.contains(" ●1 30s 43.8k┃"),
        "{wide}"
    );
    // Narrow: the time and tokens go first, the running count stays at the right.
    let narrow = render(&view, 16, 4);
    assert!(narrow.contains("┃›▸ ⠋ ⚑1 ze… ●1┃"), "{narrow}");
    // Narrower still: the count moves next to the fold glyph.
    let narrower = render(&view, 11, 4);
    assert!(narrower.contains("┃›▸ ●1 ⠋ …┃"), "{narrower}");
}

#[test]
fn provider_label_without_a_model_reads_default_model() {
    use super::status::display_label;
    assert_eq!(display_label("openai/qwen2.5"), "openai/qwen2.5");
    assert_eq!(display_label("openai/"), "openai (default model)");
    assert_eq!(display_label("openai"), "openai (default model)");
    assert_eq!(display_label(""), "provider (default model)");
}

fn transcript() -> Vec<Message> {
    let lines = [
        json!({"role": "user", "content": "Map the crate and test the parser."}),
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The user wants a survey first.\nThen tests."},
            {"type": "text", "text": "Plan:\n\n- read `src/lib.rs`\n- delegate the tests\n\n```rust\nfn main() {}\n```"},
            {"type": "tool_call", "id": "c1", "name": "read_file", "input": {"path": "src/lib.rs"}},
            {"type": "tool_call", "id": "c2", "name": "task", "input": {"agent": "explorer", "instruction": "Survey the modules"}}
        ]}),
        json!({"role": "tool", "name": "read_file", "tool_call_id": "c1", "content": "//! arbor: a terminal workbench\npub mod agent;"}),
        json!({"role": "tool", "name": "task", "tool_call_id": "c2", "content": format!("{{\"response\":\"Six modules.\",\"session_id\":\"{EXPLORER}\",\"agent\":\"explorer\",\"status\":\"completed\",\"turn_count\":1}}")}),
    ];
    lines
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect()
}

pub(crate) fn sample_thread() -> Thread {
    let mut t = Thread::loading(ROOT, Some("zen-architect".into()));
    t.load(LoadedSession {
        metadata: Metadata {
            session_id: ROOT.into(),
            agent_name: Some("zen-architect".into()),
            ..Default::default()
        },
        transcript: transcript(),
        warnings: vec![],
    });
    let theme = theme();
    to_thread(
        &mut t,
        &ev(
            EngineEvent::delta(
                DeltaKind::Text,
                "Both done. The parser\nhandles CRLF and BO",
            ),
            ROOT,
            None,
            NOW,
        ),
        &theme,
    );
    t
}

#[test]
fn chat_view_with_markdown_cards_and_streaming_tail() {
    let theme = theme();
    let tree = sample_tree();
    for (w, name) in [(80u16, "chat_80"), (40, "chat_40")] {
        let mut thread = sample_thread();
        let area = Rect::new(0, 0, w, 24);
        thread.layout(
            chat::wrap_width(area),
            usize::from(chat::body_area(area).height),
            &theme,
        );
        let view = ChatView {
            thread: Some(&thread),
            tree: &tree,
            theme: &theme,
            now: now(),
            focused: true,
        };
        insta::assert_snapshot!(name, render(&view, w, 24));
    }
    // Scrolled to the top with the task card selected and expanded.
    let mut thread = sample_thread();
    let area = Rect::new(0, 0, 80, 24);
    thread.layout(chat::wrap_width(area), 22, &theme);
    thread.scroll = crate::tui::state::layout::Scroll::Top { cell: 0, row: 0 };
    thread.selected = Some(4);
    thread.activate(true);
    thread.layout(chat::wrap_width(area), 22, &theme);
    let view = ChatView {
        thread: Some(&thread),
        tree: &tree,
        theme: &theme,
        now: now(),
        focused: true,
    };
    insta::assert_snapshot!("chat_80_top_expanded_task", render(&view, 80, 24));
}

#[test]
fn composer_view_multiline() {
    let theme = theme();
    let mut c = Composer::new();
    c.paste("First line of the message\nsecond line\nthird");
    c.set_focused(true, theme.style(crate::tui::theme::Slot::Base));
    let view = ComposerView {
        composer: &c,
        theme: &theme,
        focused: true,
        title: " Continue #0a1b2c3d ".into(),
    };
    insta::assert_snapshot!("composer_80", render(&view, 80, 5));
    insta::assert_snapshot!("composer_40", render(&view, 40, 5));
}

#[test]
fn status_bar_with_hints_note_and_warning() {
    let theme = theme();
    let km = Keymap::defaults();
    let ok = Ok("openai/gpt-4o".to_string());
    let view = StatusView {
        provider: &ok,
        needs_you: 0,
        needs_you_key: String::new(),
        running: 2,
        context: None,
        usage: None,
        note: None,
        reload: None,
        hints: km.hints(Context::Tree),
        mouse_off: None,
        theme: &theme,
    };
    insta::assert_snapshot!("status_80", render(&view, 80, 1));
    insta::assert_snapshot!("status_40", render(&view, 40, 1));
    let err = Err(crate::tui::error::NoProvider("none".to_string()));
    let note = Note {
        text: "press Ctrl+C again to quit".into(),
        warning: true,
        until: now(),
    };
    let view = StatusView {
        provider: &err,
        needs_you: 0,
        needs_you_key: String::new(),
        running: 0,
        context: None,
        usage: None,
        note: Some(&note),
        reload: None,
        hints: km.hints(Context::Composer),
        mouse_off: None,
        theme: &theme,
    };
    insta::assert_snapshot!("status_80_no_provider_note", render(&view, 80, 1));
}

pub(crate) fn sample_registry() -> Registry {
    let def = |name: &str, source: AgentSource, path: &str| AgentDef {
        name: name.into(),
        namespace: None,
        source,
        path: Some(PathBuf::from(path)),
        description: format!("{name} does things.\nSecond line."),
        instruction: "You are helpful.".into(),
        overlay: json!({"meta": {"name": name}, "model_role": ["reasoning", "general"], "tools": [{"module": "tool-filesystem"}, "tool-search"]}),
        errors: vec![],
        warnings: vec![],
        shadows: vec![],
    };
    let mut zen = def(
        "zen-architect",
        AgentSource::User,
        "/home/u/.amplifier/agents/zen-architect.md",
    );
    zen.shadows.push(Shadowed {
        source: AgentSource::Bundle,
        path: "builtin:zen-architect".into(),
    });
    let mut broken = def(
        "broken",
        AgentSource::Project,
        "/work/app/.amplifier/agents/broken.md",
    );
    broken.overlay = json!({});
    broken.errors.push(AgentIssue {
        path: "/work/app/.amplifier/agents/broken.md".into(),
        line: 3,
        column: 7,
        message: "did not find expected ',' or ']'".into(),
    });
    let mut explorer = def("explorer", AgentSource::Bundle, "/x/agents/explorer.md");
    explorer.path = None;
    explorer
        .warnings
        .push("unavailable module 'tool-lsp'".into());
    Registry::from_defs(vec![zen, broken, explorer])
}

#[test]
fn agent_browser_with_invalid_and_shadowing_entries() {
    let theme = theme();
    let registry = sample_registry();
    let mut state = BrowserState {
        selected: Some("broken".into()),
        ..Default::default()
    };
    let view = BrowserView {
        registry: &registry,
        state: &state,
        mark: None,
        theme: &theme,
    };
    insta::assert_snapshot!("browser_80_invalid", render(&view, 80, 24));
    insta::assert_snapshot!("browser_40_invalid", render(&view, 40, 24));
    state.selected = Some("zen-architect".into());
    let mark = ReloadMark {
        diff: RegistryDiff {
            changed: vec!["zen-architect".into()],
            ..Default::default()
        },
        until: now(),
    };
    let view = BrowserView {
        registry: &registry,
        state: &state,
        mark: Some(&mark),
        theme: &theme,
    };
    insta::assert_snapshot!("browser_80_shadowing_reloaded", render(&view, 80, 24));
    insta::assert_snapshot!("browser_40_shadowing_reloaded", render(&view, 40, 24));
}

#[test]
fn help_overlay_from_keymap() {
    let theme = theme();
    let km = Keymap::defaults();
    let view = HelpView {
        keymap: &km,
        theme: &theme,
        scroll: 0,
        custom: &[],
    };
    insta::assert_snapshot!("help_80", render(&view, 80, 24));
    insta::assert_snapshot!("help_40", render(&view, 40, 24));
}

pub(crate) const NO_PROVIDER: &str = "No provider configured. Looked for: OPENAI_API_KEY (unset), ANTHROPIC_API_KEY (unset), ollama at http://127.0.0.1:11434 (not running), config providers (none).\nSet OPENAI_API_KEY or ANTHROPIC_API_KEY, or add a provider to ~/.config/arbor/config.yaml.";

#[test]
fn no_provider_banner() {
    let theme = theme();
    let view = BannerView {
        text: NO_PROVIDER,
        theme: &theme,
    };
    assert!(view.height(80) <= super::banner::MAX_HEIGHT);
    let h80 = view.height(80);
    insta::assert_snapshot!("banner_80", render(&view, 80, h80));
    let h40 = view.height(40);
    insta::assert_snapshot!("banner_40", render(&view, 40, h40));
}

/// A thread whose first call was retried once (rate limited) and whose second turn
/// failed for good (authentication).
fn failed_thread() -> Thread {
    let theme = theme();
    let mut t = Thread::loading(ROOT, Some("zen-architect".into()));
    let msgs: Vec<Message> = [json!({"role": "user", "content": "Summarise the README."})]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    t.load(LoadedSession {
        metadata: Metadata {
            session_id: ROOT.into(),
            ..Default::default()
        },
        transcript: msgs,
        warnings: vec![],
    });
    let e = |data: Value| {
        let error = serde_json::from_value(data).unwrap();
        ev(EngineEvent::ProviderError(error), ROOT, None, NOW)
    };
    to_thread(
        &mut t,
        &e(json!({
            "provider": "openrouter", "module": "provider-openai", "model": "meta-llama/llama-3.2-3b-instruct:free",
            "kind": "rate_limit", "status": 429,
            "message": "Rate limit exceeded: limit_rpm/meta-llama/llama-3.2-3b-instruct. Please retry shortly.",
            "error": "openrouter: Rate limit exceeded (HTTP 429)", "retryable": true,
            "retrying": true, "attempt": 1, "max_attempts": 4, "wait_ms": 1000, "retry_after_ms": 1000
        })),
        &theme,
    );
    let reply = json!({"role": "assistant", "content": [{"type": "text", "text": "The README describes arbor."}]});
    to_thread(&mut t, &ev(appended(reply), ROOT, None, NOW), &theme);
    let again = json!({"role": "user", "content": "And the SPEC?"});
    to_thread(&mut t, &ev(appended(again), ROOT, None, NOW), &theme);
    to_thread(
        &mut t,
        &e(json!({
            "provider": "anthropic", "module": "provider-anthropic", "model": "claude-sonnet-4-5",
            "kind": "auth", "status": 401, "message": "invalid x-api-key",
            "error": "anthropic: invalid x-api-key (HTTP 401)", "retryable": false,
            "retrying": false, "attempt": 1, "max_attempts": 4, "wait_ms": null, "retry_after_ms": null
        })),
        &theme,
    );
    t
}

#[test]
fn chat_view_with_a_retry_notice_and_an_error_cell() {
    let theme = theme();
    let tree = sample_tree();
    for (w, name) in [(80u16, "chat_80_error_cell"), (40, "chat_40_error_cell")] {
        let mut thread = failed_thread();
        let area = Rect::new(0, 0, w, 24);
        thread.layout(
            chat::wrap_width(area),
            usize::from(chat::body_area(area).height),
            &theme,
        );
        let view = ChatView {
            thread: Some(&thread),
            tree: &tree,
            theme: &theme,
            now: now(),
            focused: false,
        };
        let screen = render(&view, w, 24);
        assert!(screen.contains("Authentication failed"), "{screen}");
        insta::assert_snapshot!(name, screen);
    }
}

#[test]
fn status_bar_and_tree_show_usage_and_cost() {
    use super::status::StatusUsage;
    use crate::tui::state::tree::Spend;
    let theme = theme();
    let km = Keymap::defaults();
    let ok = Ok("anthropic/claude-sonnet-4-5".to_string());
    let view = StatusView {
        provider: &ok,
        needs_you: 0,
        needs_you_key: String::new(),
        running: 1,
        context: None,
        usage: Some(StatusUsage {
            session: Spend {
                tokens: 12_345,
                cost: Some(0.0412),
            },
            tree: Some(Spend {
                tokens: 45_600,
                cost: Some(0.3125),
            }),
        }),
        note: None,
        reload: None,
        hints: km.hints(Context::Chat),
        mouse_off: None,
        theme: &theme,
    };
    insta::assert_snapshot!("status_80_usage", render(&view, 80, 1));
    insta::assert_snapshot!("status_40_usage", render(&view, 40, 1));

    let mut tree = sample_tree();
    let cost = |id: &str, parent: Option<&str>, usd: f64| {
        ev(tokens(0, 0, Some(usd)), id, parent, "2025-03-01T12:00:21Z")
    };
    to_tree(&mut tree, &cost(ROOT, None, 0.25));
    to_tree(&mut tree, &cost(REVIEWER, Some(EXPLORER), 0.0042));
    let view = TreeView {
        tree: &tree,
        theme: &theme,
        now: now(),
        focused: true,
        open: Some(ROOT),
    };
    insta::assert_snapshot!("tree_80_cost", render(&view, 80, 24));
}

#[test]
fn tree_footer_names_the_selected_sessions_model_and_routing() {
    let mut tree = sample_tree();
    let resolved = ResolvedModel {
        provider: "openai".into(),
        model: "gpt-4o".into(),
        via: Via::AgentRole,
        role: Some("general".into()),
        reason: None,
    };
    let fork = SessionForkEvent {
        parent: ROOT.into(),
        resolved_model: Some(resolved),
        ..Default::default()
    };
    to_tree(
        &mut tree,
        &Event::new(EXPLORER, Some(ROOT), EngineEvent::SessionFork(fork)),
    );
    let theme = theme();
    let view = TreeView {
        tree: &tree,
        theme: &theme,
        now: now(),
        focused: true,
        open: Some(ROOT),
    };
    let screen = render(&view, 40, 24);
    assert!(screen.contains("⚙ openai/gpt-4o"), "{screen}");
    assert!(screen.contains("via agent role (general)"), "{screen}");
    // Too short a pane keeps every row for sessions.
    let short = render(&view, 40, 7);
    assert!(!short.contains("⚙"), "{short}");
}
