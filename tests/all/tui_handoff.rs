//! One parsed copy of a transcript in the TUI process (issue #16 item 3), through the
//! `App` and its real executor: opening a stored session tail-first hands its whole
//! parsed transcript to the engine, so the first turn over it parses nothing again and
//! the engine's messages share every text with the thread's cells; opening a session
//! live in this process lays it out from the engine's own transcript, not the file.
//! Scripted provider, temp dirs (see `engine/fixture.rs`).

use crate::support::fixture;

use std::io::Write;
use std::sync::Arc;

use arbor::agent::Registry;
use arbor::engine::testing::{Drive, Step};
use arbor::engine::{Engine, EngineStream};
use arbor::session::message::{Message, Text};
use arbor::session::{SessionStatus, SessionStore};
use arbor::tui::app::AppOptions;
use arbor::tui::clock::Clock;
use arbor::tui::executor::RuntimeExecutor;
use arbor::tui::keymap::Keymap;
use arbor::tui::runloop::Executor;
use arbor::tui::state::cells::CellKind;
use arbor::tui::state::thread::Thread;
use arbor::tui::theme::Theme;
use arbor::tui::{App, AppEvent, EngineCommand, EngineReply};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use fixture::*;
use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Messages appended to the stored session: more than the TUI reads first (256 in
/// at least 256 KiB), so it opens tail-first with an earlier part.
const HISTORY: usize = 600;

/// Makes a question ~1 KB.
const PAD: &str = concat!(
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor ",
    "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud ",
    "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute ",
    "irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla ",
    "pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia ",
    "deserunt mollit anim id est laborum. Lorem ipsum dolor sit amet, consectetur ",
    "adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ",
    "Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ",
    "ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit ",
    "esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non ",
    "proident, sunt in culpa qui officia deserunt mollit anim id est laborum. Lorem ipsum ",
    "dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut ",
    "labore et dolore magna aliqua."
);

fn scripted() -> Fixture {
    // A limit the 600-message history stays under: what is sent is the transcript
    // itself, never a compacted view (issue 26).
    let big = json!({"session": {"context": {"config": {"max_tokens": 10_000_000}}}});
    Fixture::new(plan(big), &[], |_| vec![Step::text("an answer")])
}

/// A stored root session (one answered turn, then `HISTORY` more messages, the
/// first of them `"first question"`), in no process; its id.
async fn stored_session(fx: &Fixture) -> String {
    let rt = fx.engine();
    let id = rt.create_root(None).unwrap();
    rt.run_turn(&id, "opening".into()).await.unwrap();
    let path = fx.session_dir(&id).join("transcript.jsonl");
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    for i in 0..HISTORY {
        let line = match i {
            0 => json!({"role": "user", "content": "first question"}),
            i if i % 2 == 0 => json!({"role": "user", "content": format!("question {i} {PAD}")}),
            i => {
                json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {i}")}]})
            }
        };
        writeln!(file, "{line}").unwrap();
    }
    id.into_string()
}

/// Rewrites `from` to `to` (same length) in `id`'s transcript file.
fn rewrite(fx: &Fixture, id: &str, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let path = fx.session_dir(id).join("transcript.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from));
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

/// The TUI over `rt`: the app (opening `open`), its real executor and stream, and
/// the channels between them.
struct Tui {
    app: App,
    commands: UnboundedReceiver<EngineCommand>,
    executor: RuntimeExecutor,
    stream: EngineStream,
    /// The TUI's own events (earlier parts laid out off this task).
    tx: UnboundedSender<AppEvent>,
    results: UnboundedReceiver<AppEvent>,
}

impl Tui {
    fn new(rt: &Engine, open: &str) -> Self {
        let (commands_tx, commands) = unbounded_channel();
        let app = App::new(
            AppOptions {
                theme: Theme::builtin_dark(false),
                theme_source: None,
                keymap: Keymap::defaults(),
                clock: Clock::manual("2025-03-01T12:00:00Z".parse().unwrap()),
                provider_label: Ok("scripted/scripted-model".into()),
                registry: Arc::new(Registry::from_defs(vec![])),
                agent: None,
                open_session: Some(open.to_string()),
                continue_last: false,
            },
            commands_tx,
        );
        let (executor, stream) = RuntimeExecutor::connect(rt);
        let (tx, results) = unbounded_channel();
        Tui {
            app,
            commands,
            executor,
            stream,
            tx,
            results,
        }
    }

    /// As the run loop does: submits the app's commands, lays out what it asks for on
    /// a blocking thread, and hands it what the engine's stream and its own channel
    /// bring until `done` holds for one of them (which is handed too).
    async fn run_until(&mut self, done: impl Fn(&AppEvent) -> bool) {
        loop {
            self.submit();
            let event = tokio::time::timeout(GUARD, self.next()).await.unwrap();
            let last = done(&event);
            self.app.handle(event);
            if last {
                return;
            }
        }
    }

    /// Submits the app's commands; starts laying out what it asks for.
    fn submit(&mut self) {
        while let Ok(command) = self.commands.try_recv() {
            self.executor.submit(command);
        }
        for layout in self.app.take_layouts() {
            let tx = self.tx.clone();
            tokio::task::spawn_blocking(move || tx.send(AppEvent::laid_out(layout)).is_ok());
        }
    }

    /// The next event of the TUI's own channel or the engine's stream.
    async fn next(&mut self) -> AppEvent {
        loop {
            tokio::select! {
                Some(event) = self.results.recv() => return event,
                Some(output) = self.stream.next() => {
                    if let Some(event) = AppEvent::from_engine(output) {
                        return event;
                    }
                }
            }
        }
    }

    /// Hands the app everything queued now.
    fn drain(&mut self) {
        self.submit();
        while let Some(event) = self
            .results
            .try_recv()
            .ok()
            .or_else(|| self.stream.try_next().and_then(AppEvent::from_engine))
        {
            self.app.handle(event);
        }
    }

    fn type_line(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
        self.key(KeyCode::Enter);
    }

    fn key(&mut self, code: KeyCode) {
        let key = KeyEvent::new(code, KeyModifiers::NONE);
        self.app.handle(AppEvent::Input(TermEvent::Key(key)));
    }

    fn thread(&self) -> &Thread {
        self.app.thread().unwrap()
    }
}

/// The thread a whole load of `id` gives (what tail-first must equal).
fn whole_load(fx: &Fixture, id: &str) -> Vec<CellKind> {
    let mut thread = Thread::loading(id, None);
    thread.load(SessionStore::new(fx.paths.sessions_dir()).load(id).unwrap());
    thread.cells.into_iter().map(|c| c.kind).collect()
}

fn kinds(thread: &Thread) -> Vec<CellKind> {
    thread.cells.iter().map(|c| c.kind.clone()).collect()
}

/// The cell showing the user message `text`.
fn user_cell<'a>(thread: &'a Thread, text: &str) -> &'a Text {
    thread
        .cells
        .iter()
        .find_map(|c| match &c.kind {
            CellKind::User(t) if *t == text => Some(t),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no cell {text:?}"))
}

/// The engine's message with user text `text` in `id`'s live transcript.
fn engine_user(rt: &Engine, id: &str, text: &str) -> Text {
    rt.transcript_snapshot(id)
        .unwrap()
        .iter()
        .find_map(|m| match m {
            Message::User(u) if u.content == text => Some(u.content.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no message {text:?}"))
}

#[tokio::test]
async fn a_turn_after_opening_a_stored_session_parses_nothing_again_and_shares_its_texts() {
    let fx = scripted();
    let id = stored_session(&fx).await;
    let rt = fx.engine();
    let mut tui = Tui::new(&rt, &id);
    tui.run_until(|e| matches!(e, AppEvent::EarlierLoaded { .. }))
        .await;
    assert!(!tui.thread().earlier_pending());
    assert_eq!(kinds(tui.thread()), whole_load(&fx, &id));
    assert_eq!(
        rt.parked_transcript(),
        Some(id.clone()),
        "the TUI's parse waits in the engine"
    );

    // Same length, other bytes: only a parse of the file would see "FIRST".
    rewrite(&fx, &id, "first question", "FIRST question");
    tui.type_line("go on");
    tui.run_until(|e| matches!(e, AppEvent::Reply(EngineReply::TurnFinished(_))))
        .await;
    let sent = fx.provider.requests().last().unwrap().messages.clone();
    assert!(sent.iter().any(|m| m.text() == "first question"));
    assert!(!sent.iter().any(|m| m.text() == "FIRST question"));
    assert_eq!(rt.parked_transcript(), None, "taken by the turn");
    // One copy: the engine's transcript holds the very texts the cells show.
    let engine = engine_user(&rt, &id, "first question");
    assert!(std::ptr::eq(
        engine.as_ptr(),
        user_cell(tui.thread(), "first question").as_ptr()
    ));
}

#[tokio::test]
async fn a_session_live_here_is_laid_out_from_the_engines_transcript() {
    let fx = scripted();
    let id = stored_session(&fx).await;
    let rt = fx.engine();
    rt.run_turn(&id, "go on".into()).await.unwrap();
    // Only the file says "FIRST": the live session's transcript does not.
    rewrite(&fx, &id, "first question", "FIRST question");
    let mut tui = Tui::new(&rt, &id);
    tui.run_until(|e| matches!(e, AppEvent::EarlierLoaded { .. }))
        .await;
    let thread = tui.thread();
    assert!(!thread.earlier_pending());
    let shown = user_cell(thread, "first question");
    let engine = engine_user(&rt, &id, "first question");
    assert!(std::ptr::eq(engine.as_ptr(), shown.as_ptr()));
    assert_eq!(
        rt.parked_transcript(),
        None,
        "nothing parsed, nothing parked"
    );
    // Apart from that word, the cells are those of a whole load of the file.
    rewrite(&fx, &id, "FIRST question", "first question");
    assert_eq!(kinds(thread), whole_load(&fx, &id));
}

/// The user and assistant texts the thread shows, in order (`U:`/`A:` prefixed).
fn said(thread: &Thread) -> Vec<String> {
    thread
        .cells
        .iter()
        .filter_map(|c| match &c.kind {
            CellKind::User(t) => Some(format!("U:{t}")),
            CellKind::Assistant(t) => Some(format!("A:{t}")),
            _ => None,
        })
        .collect()
}

/// Issue 23 item 13: a stored session open in the TUI shows the turn another
/// process (here a second runtime over the same store, as `arbor session resume ID
/// "more"` from a shell would) adds to it, as it is written; once the session runs
/// in this process, nothing is shown twice.
#[tokio::test]
async fn an_open_thread_shows_the_turns_another_process_adds() {
    let fx = scripted();
    let id = {
        let rt = fx.engine();
        let id = rt.create_root(None).unwrap();
        rt.run_turn(&id, "opening".into()).await.unwrap();
        id
    };
    let rt = fx.engine();
    let mut tui = Tui::new(&rt, &id);
    tui.run_until(|e| matches!(e, AppEvent::Reply(EngineReply::Opened { .. })))
        .await;
    assert_eq!(said(tui.thread()), ["U:opening", "A:an answer"]);

    let shell = fx.engine();
    shell
        .run_turn(&id, "more from a shell".into())
        .await
        .unwrap();
    drop(shell);
    let expected = [
        "U:opening",
        "A:an answer",
        "U:more from a shell",
        "A:an answer",
    ];
    while said(tui.thread()) != expected {
        tui.run_until(|e| matches!(e, AppEvent::Reply(EngineReply::Followed(_))))
            .await;
    }
    // The tree shows the shell's turn over (while it runs, Enter would steer it).
    while tui.app.tree().get(&id).unwrap().status.turn_in_progress() {
        tui.run_until(|e| matches!(e, AppEvent::Reply(EngineReply::StoredSessionChanged(_))))
            .await;
    }

    // A turn of this process: its messages are the bus's, the file is no longer
    // followed (the follower would add each of them a second time).
    tui.type_line("and here");
    tui.run_until(|e| matches!(e, AppEvent::Reply(EngineReply::TurnFinished(_))))
        .await;
    // Give a follower that failed to stop time to read the turn's lines.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    tui.drain();
    let shown = said(tui.thread());
    assert_eq!(
        shown.iter().filter(|s| *s == "U:and here").count(),
        1,
        "{shown:?}"
    );
    assert_eq!(&shown[..4], expected);
    assert!(shown.len() <= 6, "{shown:?}");
}

/// Issue 23 item 13, the tree: while another process runs a turn of the session
/// open in the TUI, the tree shows it running; once that turn ends, it shows the
/// status the other process stored (the follower reads the metadata again when it
/// changes).
#[tokio::test]
async fn the_tree_shows_the_status_another_process_gives_the_open_session() {
    let gate = Arc::new(tokio::sync::Barrier::new(2));
    let step_gate = gate.clone();
    let fx = Fixture::new(plan(json!({})), &[], move |request| {
        if arbor::engine::testing::last_user_text(request) == "slow" {
            vec![Step::Barrier(step_gate.clone()), Step::text("slow answer")]
        } else {
            vec![Step::text("an answer")]
        }
    });
    let id = {
        let rt = fx.engine();
        let id = rt.create_root(None).unwrap();
        rt.run_turn(&id, "opening".into()).await.unwrap();
        id
    };
    let rt = fx.engine();
    let mut tui = Tui::new(&rt, &id);
    tui.run_until(|e| matches!(e, AppEvent::Reply(EngineReply::Opened { .. })))
        .await;
    let status = |tui: &Tui| tui.app.tree().get(&id).unwrap().status;
    assert!(!status(&tui).turn_in_progress());

    let shell = fx.engine();
    let turn = {
        let (shell, id) = (shell.clone(), id.clone());
        tokio::spawn(async move { shell.run_turn(&id, "slow".into()).await })
    };
    while !status(&tui).turn_in_progress() {
        tui.run_until(|e| matches!(e, AppEvent::Reply(EngineReply::StoredSessionChanged(_))))
            .await;
    }
    assert_eq!(status(&tui), SessionStatus::Running);

    gate.wait().await;
    turn.await.unwrap().unwrap();
    drop(shell);
    let metadata = SessionStore::new(fx.paths.sessions_dir())
        .load_metadata(&id)
        .unwrap()
        .0;
    let stored = metadata.status;
    assert!(!stored.turn_in_progress(), "{stored:?}");
    // The status, and the turn's end as stored (the tree's time).
    let ended = metadata.last_updated.parse().ok();
    assert!(ended.is_some());
    while status(&tui) != stored || tui.app.tree().get(&id).unwrap().ended != ended {
        tui.run_until(|e| matches!(e, AppEvent::Reply(EngineReply::StoredSessionChanged(_))))
            .await;
    }
    while !said(tui.thread()).contains(&"A:slow answer".to_string()) {
        tui.run_until(|e| matches!(e, AppEvent::Reply(EngineReply::Followed(_))))
            .await;
    }
}
