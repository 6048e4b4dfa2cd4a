//! TUI scenario tests: drive `App` with key events and synthetic engine events (no
//! engine runs), read the engine-command channel, and snapshot whole screens.

use std::sync::Arc;
use std::time::Duration;

use arbor::agent::{AgentDef, AgentIssue, AgentSource, Registry};
use arbor::session::protocol::{CancelCompletedEvent, DeltaKind, SessionStartEvent};
use arbor::session::{EngineEvent, Event, LoadedSession, Message, Metadata, SessionStatus};
use arbor::tui::app::AppOptions;
use arbor::tui::clock::Clock;
use arbor::tui::keymap::{Keymap, KeymapError};
use arbor::tui::testing::{buffer_text, fork, response, start, tokens};
use arbor::tui::theme::Theme;
use arbor::tui::{App, AppEvent, EngineCommand, EngineReply, Focus, Overlay};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use jiff::Timestamp;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

mod approvals;
mod cancel;
mod copy_mouse;
mod find;
mod fork_marks;
mod help;
mod history;
mod layout;
mod live;
mod local;
mod mcp;
mod mentions;
mod model;
mod needs_you;
mod palette;
mod ran_on;
mod recover;
mod steer;
mod stream;
mod tail_first;
mod todo;
mod trust;
mod wall;
mod worktree_keys;

const T0: &str = "2025-03-01T12:00:00Z";
const ROOT: &str = "5f0e1c2a-1111-4222-8333-444455556666";
const CHILD: &str = "5f0e1c2a11114222-0a1b2c3d4e5f6071_explorer";

fn appended(message: Value) -> EngineEvent {
    EngineEvent::appended(serde_json::from_value(message).unwrap())
}

fn registry() -> Registry {
    let def = |name: &str, errors: Vec<AgentIssue>| AgentDef {
        name: name.into(),
        namespace: None,
        source: AgentSource::User,
        path: Some(format!("/agents/{name}.md").into()),
        description: format!("{name} agent"),
        instruction: String::new(),
        overlay: json!({}),
        errors,
        warnings: vec![],
        shadows: vec![],
    };
    Registry::from_defs(vec![def("explorer", vec![]), def("zen-architect", vec![])])
}

struct Harness {
    app: App,
    commands: UnboundedReceiver<EngineCommand>,
    clock: Clock,
}

fn harness_with(provider: Result<String, String>, open: Option<&str>) -> Harness {
    let (tx, commands) = unbounded_channel();
    let clock = Clock::manual(T0.parse().unwrap());
    let app = App::new(
        AppOptions {
            theme: Theme::builtin_dark(false),
            theme_source: None,
            keymap: Keymap::defaults(),
            clock: clock.clone(),
            provider_label: provider.map_err(arbor::tui::error::NoProvider),
            registry: Arc::new(registry()),
            agent: None,
            open_session: open.map(str::to_string),
            continue_last: false,
        },
        tx,
    );
    let mut h = Harness {
        app,
        commands,
        clock,
    };
    assert_eq!(h.drain().first(), Some(&EngineCommand::ListSessions));
    h
}

fn harness() -> Harness {
    harness_with(Ok("openai/gpt-4o".into()), None)
}

impl Harness {
    fn drain(&mut self) -> Vec<EngineCommand> {
        std::iter::from_fn(|| self.commands.try_recv().ok()).collect()
    }

    fn key(&mut self, code: KeyCode, mods: KeyModifiers) {
        let ev = TermEvent::Key(KeyEvent::new(code, mods));
        self.app.handle(AppEvent::Input(ev));
    }

    fn press(&mut self, code: KeyCode) {
        self.key(code, KeyModifiers::NONE);
    }

    fn type_text(&mut self, s: &str) {
        for c in s.chars() {
            self.press(KeyCode::Char(c));
        }
    }

    fn engine(&mut self, msg: EngineEvent, id: &str, parent: Option<&str>, secs: i64) {
        let ts = T0.parse::<Timestamp>().unwrap() + jiff::SignedDuration::from_secs(secs);
        let event = arbor::tui::testing::event(msg, id, parent, &ts.to_string());
        self.app.handle(AppEvent::Engine(Arc::new(event)));
    }

    fn load(&mut self, id: &str, parent: Option<&str>, agent: &str, transcript: Vec<Message>) {
        self.app.handle(AppEvent::Reply(EngineReply::Opened {
            requested: id.into(),
            session: Box::new(LoadedSession {
                metadata: Metadata {
                    session_id: id.into(),
                    parent_id: parent.map(Into::into),
                    agent_name: Some(agent.into()),
                    ..Default::default()
                },
                transcript,
                warnings: vec![],
            }),
            earlier: None,
        }));
    }

    fn screen(&mut self, w: u16, h: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal
            .draw(|f| {
                self.app.layout(f.area());
                self.app.draw(f);
            })
            .unwrap();
        let out = buffer_text(terminal.backend().buffer());
        filter_ids(&out)
    }
}

/// Replaces full UUIDs with `[uuid]` (short ids stay: they are synthetic here).
fn filter_ids(s: &str) -> String {
    let re =
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    re.replace_all(s, "[uuid]").into_owned()
}

fn msg(v: Value) -> Message {
    serde_json::from_value(v).unwrap()
}

fn root_transcript() -> Vec<Message> {
    vec![
        msg(json!({"role": "user", "content": "Survey the repo"})),
        msg(json!({"role": "assistant", "content": [
            {"type": "text", "text": "Delegating to explorer."},
            {"type": "tool_call", "id": "c1", "name": "task", "input": {"agent": "explorer", "instruction": "List the modules"}}
        ]})),
        msg(json!({"role": "tool", "name": "task", "tool_call_id": "c1",
            "content": format!("{{\"response\":\"six modules\",\"session_id\":\"{CHILD}\",\"agent\":\"explorer\",\"status\":\"completed\",\"turn_count\":1}}")})),
        msg(json!({"role": "assistant", "content": "All done."})),
    ]
}

/// Root thread open, sessions known, focus in the chat.
fn with_root_open() -> Harness {
    let mut h = harness_with(Ok("openai/gpt-4o".into()), Some(ROOT));
    assert!(
        h.drain().is_empty(),
        "LoadTranscript was sent with ListSessions"
    );
    h.engine(start("zen-architect"), ROOT, None, 0);
    h.engine(fork(ROOT, "explorer"), CHILD, Some(ROOT), 1);
    h.engine(
        EngineEvent::status(SessionStatus::Completed),
        CHILD,
        Some(ROOT),
        9,
    );
    h.load(ROOT, None, "zen-architect", root_transcript());
    h.press(KeyCode::Tab); // composer → tree
    h.press(KeyCode::Tab); // tree → chat
    assert_eq!(h.app.focus(), Focus::Chat);
    h
}

#[test]
fn resume_option_requests_the_transcript() {
    let (tx, mut rx) = unbounded_channel();
    let _app = App::new(
        AppOptions {
            theme: Theme::builtin_dark(true),
            theme_source: None,
            keymap: Keymap::defaults(),
            clock: Clock::system(),
            provider_label: Ok("x".into()),
            registry: Arc::new(Registry::default()),
            agent: None,
            open_session: Some("5f0e".into()),
            continue_last: false,
        },
        tx,
    );
    let cmds: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(
        cmds,
        [
            EngineCommand::ListSessions,
            EngineCommand::LoadTranscript {
                session_id: "5f0e".into()
            }
        ]
    );
}

#[test]
fn enter_on_a_task_card_opens_the_child_and_typing_resumes_it() {
    let mut h = with_root_open();
    h.screen(80, 24);
    // Up selects the nearest card above the bottom: the task card.
    h.press(KeyCode::Up);
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::LoadTranscript {
            session_id: CHILD.into()
        }]
    );
    h.load(
        CHILD,
        Some(ROOT),
        "explorer",
        vec![
            msg(json!({"role": "user", "content": "List the modules"})),
            msg(json!({"role": "assistant", "content": "There are six modules: agent, config, engine."})),
        ],
    );
    let screen = h.screen(80, 24);
    assert!(screen.contains("There are six modules"), "{screen}");
    assert!(
        screen.contains("sub-session #0a1b2c3d · explorer"),
        "{screen}"
    );
    insta::assert_snapshot!("child_thread_80", screen);
    // An unbound letter typed while reading moves to the composer.
    h.type_text("m");
    assert_eq!(
        h.app.focus(),
        Focus::Composer,
        "typing in the chat moves to the composer"
    );
    h.press(KeyCode::Backspace);
    h.type_text("and tests?");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::Submit {
            session_id: Some(CHILD.into()),
            agent: None,
            prompt: "and tests?".into(),
            cleared: false,
        }]
    );
    assert!(h.app.composer_text().is_empty());
    // A second message while the resumed turn runs steers it (SPEC §13).
    h.type_text("more");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::Steer {
            session_id: CHILD.into(),
            text: "more".into()
        }]
    );
    assert!(h.app.composer_text().is_empty());
}

#[test]
fn a_fork_appears_under_its_parent_while_running() {
    let mut h = harness();
    h.engine(start("zen-architect"), ROOT, None, 0);
    h.engine(EngineEvent::status(SessionStatus::Running), ROOT, None, 0);
    h.engine(fork(ROOT, "explorer"), CHILD, Some(ROOT), 2);
    h.engine(
        EngineEvent::status(SessionStatus::Running),
        CHILD,
        Some(ROOT),
        2,
    );
    h.engine(tokens(1500, 500, None), CHILD, Some(ROOT), 3);
    h.clock.advance(Duration::from_secs(5));
    let rows = h.app.tree().rows();
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[1].node.id.as_str(), rows[1].depth), (CHILD, 1));
    assert_eq!(rows[1].node.status, SessionStatus::Running);
    assert_eq!(rows[0].tokens, 2000, "tokens roll up to the parent");
    let screen = h.screen(80, 24);
    insta::assert_snapshot!("fork_running_80", screen);
    assert!(screen.contains("● 2 running"), "{screen}");
}

#[test]
fn deltas_stream_into_the_tail_and_commit_line_by_line() {
    let mut h = with_root_open();
    h.screen(80, 24);
    let wrapped = |h: &Harness| h.app.thread().unwrap().stats.lines_wrapped;
    h.engine(
        EngineEvent::delta(DeltaKind::Text, "First li"),
        ROOT,
        None,
        30,
    );
    h.screen(80, 24);
    let s = h.app.thread().unwrap().streaming().unwrap();
    assert_eq!((s.committed_len(), s.tail()), (0, "First li"));
    let before = wrapped(&h);
    h.engine(
        EngineEvent::delta(DeltaKind::Text, "ne\nSecond"),
        ROOT,
        None,
        30,
    );
    let screen = h.screen(80, 24);
    let s = h.app.thread().unwrap().streaming().unwrap();
    assert_eq!((s.committed_len(), s.tail()), (1, "Second"));
    assert_eq!(wrapped(&h) - before, 2, "one committed line and the tail");
    assert!(
        screen.contains("First line") && screen.contains("Second▍"),
        "{screen}"
    );
    let before = wrapped(&h);
    for _ in 0..20 {
        h.engine(EngineEvent::delta(DeltaKind::Text, " x"), ROOT, None, 30);
        h.screen(80, 24);
    }
    assert_eq!(
        wrapped(&h) - before,
        20,
        "each delta re-wraps only the tail"
    );
    h.engine(
        appended(json!({"role": "assistant", "content": "First line\nSecond x x"})),
        ROOT,
        None,
        31,
    );
    assert!(h.app.thread().unwrap().streaming().is_none());
    assert!(h.screen(80, 24).contains("Second x x"));
}

#[test]
fn registry_reload_shows_the_mark() {
    let mut h = harness();
    let mut defs = registry().agents().to_vec();
    defs[1].description = "rewritten".into();
    defs.push(AgentDef {
        name: "broken".into(),
        path: Some("/agents/broken.md".into()),
        description: "half-written".into(),
        errors: vec![AgentIssue {
            path: "/agents/broken.md".into(),
            line: 2,
            column: 5,
            message: "bad yaml".into(),
        }],
        ..defs[0].clone()
    });
    h.app
        .handle(AppEvent::RegistryReloaded(Arc::new(Registry::from_defs(
            defs,
        ))));
    let screen = h.screen(80, 24);
    assert!(screen.contains("↻ reloaded:"), "{screen}");
    assert!(screen.contains("zen-architect (changed)"), "{screen}");
    h.press(KeyCode::F(2));
    assert_eq!(h.app.overlay(), Overlay::Browser);
    let screen = h.screen(80, 24);
    insta::assert_snapshot!("browser_after_reload_80", screen);
    assert!(screen.contains("broken [user] ✗ invalid"), "{screen}");
    h.clock.advance(Duration::from_secs(5));
    h.app.handle(AppEvent::Tick);
    assert!(h.app.reload_mark().is_none(), "the mark expires");
}

#[test]
fn browser_enter_starts_a_session_with_that_agent_and_e_edits() {
    let mut h = harness();
    h.press(KeyCode::F(2));
    h.press(KeyCode::Char('/'));
    h.type_text("zen");
    h.press(KeyCode::Enter); // leaves filter mode
    h.press(KeyCode::Char('e'));
    assert_eq!(
        h.app.take_editor_request(),
        Some("/agents/zen-architect.md".into())
    );
    h.press(KeyCode::Enter);
    assert_eq!(h.app.overlay(), Overlay::None);
    h.type_text("hello");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.drain(),
        [EngineCommand::Submit {
            session_id: None,
            agent: Some("zen-architect".into()),
            prompt: "hello".into(),
            cleared: false,
        }]
    );
    h.app.handle(AppEvent::Reply(EngineReply::SessionCreated {
        session_id: ROOT.into(),
    }));
    assert_eq!(h.app.thread().unwrap().session_id.as_deref(), Some(ROOT));
    assert_eq!(h.app.tree().get(ROOT).unwrap().agent, "zen-architect");
    h.engine(
        appended(json!({"role": "user", "content": "hello"})),
        ROOT,
        None,
        1,
    );
    let cells = &h.app.thread().unwrap().cells;
    assert_eq!(
        cells.len(),
        1,
        "the echoed user message is confirmed, not duplicated"
    );
}

#[test]
fn no_provider_banner_and_failed_submit_show_the_message() {
    let text = "No provider configured. Looked for OPENAI_API_KEY, ANTHROPIC_API_KEY and a local ollama at http://127.0.0.1:11434.\nAdd one under `providers:` in config.yaml.";
    let mut h = harness_with(Err(text.into()), None);
    let screen = h.screen(80, 24);
    insta::assert_snapshot!("no_provider_80", screen);
    assert!(screen.contains("⚠ No provider configured"), "{screen}");
    insta::assert_snapshot!("no_provider_40", h.screen(40, 24));
    h.type_text("hi");
    h.press(KeyCode::Enter);
    assert_eq!(h.drain().len(), 1);
    h.app.handle(AppEvent::Reply(EngineReply::Failed {
        session_id: None,
        error: arbor::engine::EngineError::NoProvider("no provider".into()),
    }));
    assert!(h.screen(80, 24).contains("✗ no provider"));
}

#[test]
fn narrow_terminal_hides_the_tree_until_focused() {
    let mut h = with_root_open();
    let screen = h.screen(40, 24);
    insta::assert_snapshot!("root_thread_40", screen);
    assert!(!screen.contains("Sessions"), "{screen}");
    h.press(KeyCode::BackTab);
    let screen = h.screen(40, 24);
    assert!(screen.contains("Sessions (2)"), "{screen}");
    insta::assert_snapshot!("root_thread_80", h.screen(80, 24));
}

#[test]
fn keymap_conflicts_are_rejected_at_load() {
    let overrides = json!({"tree.open": "x"}).as_object().cloned().unwrap();
    let err = Keymap::with_overrides(&overrides).unwrap_err();
    assert!(matches!(err, KeymapError::Conflict { .. }));
    assert_eq!(
        err.to_string(),
        "keymap: key x is bound to both tree.open and tree.cancel"
    );
}

/// Issue 23 item 12: siblings running the same agent show their tasks; the pane grows
/// with the terminal (a quarter, at most 48 columns); a narrow pane drops the stats
/// before the title; a stopped session shows its age; `g`/`G`/Home/End move in the
/// tree instead of typing into the composer.
#[test]
fn the_tree_tells_siblings_apart_grows_and_moves_with_g() {
    const SIB: &str = "5f0e1c2a11114222-99aa88bb77cc66dd_explorer";
    let mut h = harness();
    h.engine(start("zen-architect"), ROOT, None, 0);
    h.engine(fork(ROOT, "explorer"), CHILD, Some(ROOT), 1);
    h.engine(
        appended(json!({"role": "user", "content": "List the modules\nand what each owns"})),
        CHILD,
        Some(ROOT),
        1,
    );
    h.engine(fork(ROOT, "explorer"), SIB, Some(ROOT), 2);
    h.engine(
        appended(json!({"role": "user", "content": "Count the tests"})),
        SIB,
        Some(ROOT),
        2,
    );
    for id in [CHILD, SIB] {
        h.engine(
            EngineEvent::status(SessionStatus::Completed),
            id,
            Some(ROOT),
            5,
        );
    }
    h.engine(tokens(123_000, 4_000, Some(1.25)), ROOT, None, 5);
    h.clock.advance(Duration::from_secs(600));
    let wide = h.screen(200, 20);
    assert!(wide.contains("explorer · List the modules "), "{wide}");
    assert!(wide.contains("explorer · Count the tests "), "{wide}");
    assert!(wide.contains("10m ago"), "the session's age: {wide}");
    let first = wide.lines().next().unwrap();
    let tree_w = first.chars().position(|c| c == '╮').unwrap() + 1;
    assert_eq!(tree_w, 48, "{wide}");
    let mid = h.screen(120, 20);
    let tree_w = mid.lines().next().unwrap().chars().position(|c| c == '╮');
    assert_eq!(tree_w, Some(29), "{mid}");
    assert!(mid.contains("· List") && mid.contains("· Count"), "{mid}");
    h.press(KeyCode::Tab); // composer → tree (shown at 60 columns when focused)
    let narrow = h.screen(60, 20);
    // Cut rows shorten the agent's name first: the siblings stay apart.
    assert!(narrow.contains("✓ expl… · Li…"), "{narrow}");
    assert!(narrow.contains("✓ expl… · Co…"), "{narrow}");
    assert!(narrow.contains("· zen-architect┃"), "{narrow}");
    assert!(
        !narrow.contains("ago"),
        "stats go before the title: {narrow}"
    );
    insta::assert_snapshot!("tree_siblings_60", narrow);
    // Wide enough for the title and the stats.
    assert!(wide.contains("$1.25"), "{wide}");
    assert_eq!(h.app.tree().selected.as_deref(), Some(ROOT));
    h.press(KeyCode::Char('G'));
    assert_eq!(h.app.tree().selected.as_deref(), Some(SIB));
    h.press(KeyCode::Char('g'));
    assert_eq!(h.app.tree().selected.as_deref(), Some(ROOT));
    h.press(KeyCode::End);
    assert_eq!(h.app.tree().selected.as_deref(), Some(SIB));
    h.press(KeyCode::Home);
    assert_eq!(h.app.tree().selected.as_deref(), Some(ROOT));
    assert_eq!(h.app.focus(), Focus::Tree);
    assert!(h.app.composer_text().is_empty(), "nothing was typed");
}

/// Issue 23 item 6: the composer's readline keys through the App — Ctrl+U deletes to
/// the line's start, Ctrl+Z undoes, Ctrl+L clears.
#[test]
fn composer_readline_keys_work_through_the_app() {
    let mut h = harness();
    assert_eq!(h.app.focus(), Focus::Composer);
    h.type_text("fix the parser");
    h.key(KeyCode::Char('w'), KeyModifiers::CONTROL);
    assert_eq!(h.app.composer_text(), "fix the ");
    h.key(KeyCode::Char('u'), KeyModifiers::CONTROL);
    assert_eq!(h.app.composer_text(), "");
    h.key(KeyCode::Char('z'), KeyModifiers::CONTROL);
    assert_eq!(h.app.composer_text(), "fix the ");
    h.key(KeyCode::Char('a'), KeyModifiers::CONTROL);
    h.type_text("> ");
    assert_eq!(h.app.composer_text(), "> fix the ");
    h.key(KeyCode::Char('l'), KeyModifiers::CONTROL);
    assert_eq!(h.app.composer_text(), "");
    assert!(h.drain().is_empty(), "no key sent anything");
}

/// Issue 23 item 14: tabs go to tab stops (a `read_file` preview keeps the tab after
/// the line number), `@file` attachments collapse to one line, a cancelled partial
/// reply is marked, chat text keeps a column from the right border, the composer's
/// text one from its borders, and a task card's instruction uses the width.
#[test]
fn chat_polish_tabs_attachments_partial_and_margins() {
    let mut h = harness_with(Ok("openai/gpt-4o".into()), Some(ROOT));
    h.drain();
    h.engine(start("zen-architect"), ROOT, None, 0);
    let long = "word ".repeat(30);
    h.load(
        ROOT,
        None,
        "zen-architect",
        vec![
            msg(json!({"role": "user", "content": "<context_file paths=\"@notes.txt → /p/notes.txt\">\nsecret body\n</context_file>\n\nsummarise @notes.txt"})),
            msg(json!({"role": "assistant", "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_call", "id": "r1", "name": "read_file", "input": {"path": "a.go"}},
                {"type": "tool_call", "id": "t1", "name": "task", "input": {"agent": "explorer", "instruction": format!("Survey {long}END")}}
            ]})),
            msg(json!({"role": "tool", "name": "read_file", "tool_call_id": "r1", "content": "     1\tpackage main\n     2\t\tfmt.Println()"})),
            msg(json!({"role": "assistant", "content": "I was about to", "metadata": {"partial": true, "error": null}})),
        ],
    );
    let screen = h.screen(100, 40);
    assert!(screen.contains("📎 attached notes.txt"), "{screen}");
    assert!(!screen.contains("context_file"), "{screen}");
    assert!(!screen.contains("secret body"), "{screen}");
    assert!(screen.contains("partial reply"), "{screen}");
    // `  └ 1` is 5 columns: the tab goes to column 8.
    assert!(
        screen.contains("└ 1   package main"),
        "tab to column 8: {screen}"
    );
    // The task card's instruction wraps over rows instead of being cut.
    assert!(screen.contains("END”"), "{screen}");
    // No chat text touches the right border; the composer's text is padded.
    for line in screen.lines() {
        assert!(!line.contains("word│") && !line.contains("word┃"), "{line}");
    }
    assert_eq!(h.app.focus(), Focus::Composer);
    h.type_text("hi");
    let screen = h.screen(100, 40);
    assert!(screen.contains("┃ hi"), "one column of padding: {screen}");
    insta::assert_snapshot!("chat_polish_100", screen);
}

/// Issue 23 item 14: `/new` keeps the open thread's agent, `/clear` goes back to the
/// default agent and closes the find bar; `/resume` rows say when each was created.
#[test]
fn new_and_clear_differ_and_resume_rows_have_dates() {
    let mut h = harness_with(Ok("openai/gpt-4o".into()), Some(ROOT));
    h.drain();
    h.engine(start("explorer"), ROOT, None, 0);
    h.load(ROOT, None, "explorer", root_transcript());
    h.clock.advance(Duration::from_secs(300));
    h.type_text("/resume ");
    let screen = h.screen(100, 30);
    assert!(screen.contains("5m ago"), "{screen}");
    h.key(KeyCode::Char('l'), KeyModifiers::CONTROL);
    h.press(KeyCode::Esc);
    h.type_text("/new");
    h.press(KeyCode::Enter);
    let t = h.app.thread().unwrap();
    assert_eq!(
        (t.session_id.as_deref(), t.agent.as_deref()),
        (None, Some("explorer"))
    );
    assert!(
        h.app
            .note()
            .unwrap()
            .text
            .contains("new session with explorer")
    );
    h.type_text("/clear");
    h.press(KeyCode::Enter);
    let t = h.app.thread().unwrap();
    assert_eq!(t.agent, None, "the default agent");
    assert!(h.app.note().unwrap().text.contains("fresh session"));
    h.type_text("/new nobody");
    h.press(KeyCode::Enter);
    assert!(h.app.note().unwrap().text.contains("no agent nobody"));
    assert_eq!(h.app.composer_text(), "/new nobody");
}

/// A scripted engine stream for run-loop tests: its sender and what the loop reads.
fn engine_stream() -> (EngineTx, arbor::tui::runloop::EngineOutputs) {
    use futures::StreamExt;
    let (tx, rx) = futures::channel::mpsc::unbounded();
    (tx, rx.boxed())
}

/// The sender of a scripted engine stream.
type EngineTx = futures::channel::mpsc::UnboundedSender<arbor::engine::EngineOutput>;

/// `event` as the engine stream carries it.
fn output(event: Event) -> arbor::engine::EngineOutput {
    arbor::engine::EngineOutput::Event(Arc::new(event))
}

/// An executor for run-loop tests: records every command and answers a new-root
/// `Submit` with `SessionCreated` for [`ROOT`] on the engine stream.
struct FakeExecutor(std::sync::Mutex<Vec<EngineCommand>>, EngineTx);

impl arbor::tui::runloop::Executor for FakeExecutor {
    fn submit(&self, command: EngineCommand) {
        if let EngineCommand::Submit {
            session_id: None, ..
        } = &command
        {
            let reply = EngineReply::SessionCreated {
                session_id: ROOT.into(),
            };
            let command = arbor::engine::CommandId(1);
            self.1
                .unbounded_send(arbor::engine::EngineOutput::Reply { command, reply })
                .unwrap();
        }
        self.0.lock().unwrap().push(command);
    }
}

/// A run-loop host with no editor.
struct NoHost;

impl<B: ratatui::backend::Backend> arbor::tui::runloop::Host<B> for NoHost {
    fn open_editor(&mut self, _: &mut Terminal<B>, _: &std::path::Path) -> std::io::Result<()> {
        Err(std::io::Error::other("no editor in tests"))
    }
}
