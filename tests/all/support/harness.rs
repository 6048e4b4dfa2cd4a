//! Shared by the `retry`, `usage` and TUI-over-a-real-turn tests: a runtime over the engine fixture
//! with a price table, and an `App` fed with the bus events a real (scripted) turn
//! published, rendered to text with ids filtered.
#![allow(dead_code)]

use std::sync::Arc;

use arbor::agent::Registry;
use arbor::engine::EngineStream;
use arbor::session::Event;
use arbor::tui::app::AppOptions;
use arbor::tui::clock::Clock;
use arbor::tui::keymap::Keymap;
use arbor::tui::theme::Theme;
use arbor::tui::{App, AppEvent, EngineCommand, EngineReply};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// Every event is re-stamped with this time (the app's clock too), so elapsed times
/// in the tree are stable.
pub const T0: &str = "2025-03-01T12:00:00Z";

/// An app showing session `open` (its transcript is loaded from `loaded`).
pub fn app_for(
    open: &str,
    label: &str,
    loaded: arbor::session::LoadedSession,
) -> (App, UnboundedReceiver<EngineCommand>) {
    let (tx, rx) = unbounded_channel();
    let mut app = App::new(
        AppOptions {
            theme: Theme::builtin_dark(false),
            theme_source: None,
            keymap: Keymap::defaults(),
            clock: Clock::manual(T0.parse().unwrap()),
            provider_label: Ok(label.to_string()),
            registry: Arc::new(Registry::from_defs(vec![])),
            agent: None,
            open_session: Some(open.to_string()),
            continue_last: false,
        },
        tx,
    );
    app.handle(AppEvent::Reply(EngineReply::Opened {
        requested: open.to_string(),
        session: Box::new(loaded),
        earlier: None,
    }));
    (app, rx)
}

/// Hands the app every item of the TUI's engine `stream` (events re-stamped at
/// [`T0`]) until a reply for which `done` holds, which is handed too.
pub async fn pump(app: &mut App, stream: &mut EngineStream, done: impl Fn(&EngineReply) -> bool) {
    loop {
        let output = tokio::time::timeout(super::fixture::GUARD, stream.next())
            .await
            .expect("the engine answers in time")
            .expect("the engine stream is open");
        let Some(event) = AppEvent::from_engine(output) else {
            continue;
        };
        match event {
            AppEvent::Engine(e) => feed(app, &[e]),
            AppEvent::Reply(reply) => {
                let last = done(&reply);
                app.handle(AppEvent::Reply(reply));
                if last {
                    return;
                }
            }
            other => app.handle(other),
        }
    }
}

/// Feeds bus events to the app, re-stamped at [`T0`].
pub fn feed(app: &mut App, events: &[Arc<Event>]) {
    for e in events {
        let mut e = (**e).clone();
        e.timestamp = T0.to_string();
        app.handle(AppEvent::Engine(Arc::new(e)));
    }
}

/// The screen as text, rows right-trimmed, session ids replaced by placeholders.
pub fn screen(app: &mut App, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| {
            app.layout(f.area());
            app.draw(f);
        })
        .unwrap();
    let out = arbor::tui::testing::buffer_text(terminal.backend().buffer());
    let uuid =
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let short = regex::Regex::new(r"#[0-9a-f]{8}").unwrap();
    let out = uuid.replace_all(&out, "[uuid]");
    short.replace_all(&out, "#[id]    ").into_owned()
}
