//! Issue 36, the TUI over the real engine and its one ordered stream: a prompt typed
//! in a new thread creates a root whose `session:start` arrives before its
//! `SessionCreated` (which alone adopts it), and whose streamed deltas all arrive
//! before its `TurnFinished`: the answer shows once, finished, nothing left streaming.
//! Scripted provider, temp dirs (see `engine/fixture.rs`).

use crate::support::fixture;

use std::sync::Arc;

use arbor::agent::Registry;
use arbor::engine::testing::Step;
use arbor::session::EngineEvent;
use arbor::tui::app::AppOptions;
use arbor::tui::clock::Clock;
use arbor::tui::executor::RuntimeExecutor;
use arbor::tui::keymap::Keymap;
use arbor::tui::runloop::Executor;
use arbor::tui::state::cells::CellKind;
use arbor::tui::theme::Theme;
use arbor::tui::{App, AppEvent, EngineReply};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use fixture::*;
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;

#[tokio::test]
async fn a_new_roots_turn_reaches_the_tui_in_order() {
    let fx = Fixture::new(plan(json!({})), &[], |_| {
        vec![
            Step::text("an "),
            Step::text("answer "),
            Step::text("in parts"),
        ]
    });
    let rt = fx.engine();
    let (commands_tx, mut commands) = unbounded_channel();
    let mut app = App::new(
        AppOptions {
            theme: Theme::builtin_dark(false),
            theme_source: None,
            keymap: Keymap::defaults(),
            clock: Clock::manual("2025-03-01T12:00:00Z".parse().unwrap()),
            provider_label: Ok("scripted/scripted-model".into()),
            registry: Arc::new(Registry::from_defs(vec![])),
            agent: None,
            open_session: None,
            continue_last: false,
        },
        commands_tx,
    );
    let (executor, mut stream) = RuntimeExecutor::connect(&rt);
    for code in [KeyCode::Char('h'), KeyCode::Char('i'), KeyCode::Enter] {
        let key = KeyEvent::new(code, KeyModifiers::NONE);
        app.handle(AppEvent::Input(TermEvent::Key(key)));
    }

    // What the app is handed, in order: the root's start, its creation, its deltas,
    // its end.
    let mut seen = Vec::new();
    let root = loop {
        while let Ok(command) = commands.try_recv() {
            executor.submit(command);
        }
        let output = tokio::time::timeout(GUARD, stream.next())
            .await
            .unwrap()
            .unwrap();
        let Some(event) = AppEvent::from_engine(output) else {
            continue;
        };
        let finished = match &event {
            AppEvent::Engine(e) if e.parent_id.is_none() => {
                match &e.msg {
                    EngineEvent::SessionStart(_) => seen.push("start"),
                    EngineEvent::ContentBlockDelta(_) => seen.push("delta"),
                    _ => {}
                }
                None
            }
            AppEvent::Reply(EngineReply::SessionCreated { .. }) => {
                seen.push("created");
                None
            }
            AppEvent::Reply(EngineReply::TurnFinished(outcome)) => {
                seen.push("finished");
                Some(outcome.session_id.clone())
            }
            _ => None,
        };
        app.handle(event);
        if let Some(root) = finished {
            break root;
        }
    };
    let deltas = seen.iter().filter(|s| **s == "delta").count();
    assert!(deltas >= 1, "{seen:?}");
    assert_eq!(seen[..2], ["start", "created"], "{seen:?}");
    assert_eq!(seen.last(), Some(&"finished"), "{seen:?}");

    let thread = app.thread().unwrap();
    assert_eq!(thread.session_id.as_ref(), Some(&root));
    assert!(!thread.awaiting_root && !thread.turn_in_flight);
    assert!(thread.streaming().is_none(), "nothing left streaming");
    let answers: Vec<&CellKind> = thread
        .cells
        .iter()
        .map(|c| &c.kind)
        .filter(|k| matches!(k, CellKind::Assistant(_)))
        .collect();
    assert!(
        matches!(answers[..], [CellKind::Assistant(a)] if &**a == "an answer in parts"),
        "{:?}",
        thread.cells.iter().map(|c| &c.kind).collect::<Vec<_>>()
    );
    assert!(app.tree().get(&root).is_some());
}
