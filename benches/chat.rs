//! Chat layout over a long history (SPEC §16): one frame of the real `App` drawn to a
//! 120×40 `TestBackend` with 1k and 100k messages loaded — idle (warm layout cache),
//! and while a stream appends one `content_block:delta` per frame — plus opening the
//! history in the TUI (cells built + first frame). Run: `cargo bench --bench chat`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/generate.rs"]
mod generate;

use std::sync::Arc;

use arbor::agent::Registry;
use arbor::session::protocol::DeltaKind;
use arbor::session::{EngineEvent, LoadedSession, Metadata};
use arbor::tui::app::AppOptions;
use arbor::tui::clock::Clock;
use arbor::tui::keymap::Keymap;
use arbor::tui::theme::Theme;
use arbor::tui::{App, AppEvent, EngineCommand, EngineReply};
use divan::Bencher;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc::UnboundedReceiver;

const ID: &str = "5f0e1c2a-1111-4222-8333-444455556666";
const T0: &str = "2025-03-01T12:00:00Z";
const SIZES: [usize; 2] = [1_000, 100_000];

fn main() {
    divan::main();
}

fn loaded(messages: usize) -> LoadedSession {
    LoadedSession {
        metadata: Metadata {
            session_id: ID.into(),
            agent_name: Some("arbor".into()),
            ..Default::default()
        },
        transcript: generate::messages(messages),
        warnings: Vec::new(),
    }
}

/// An app asked to open session `ID` (its transcript not delivered yet), and the
/// receiving end of its command channel (kept open).
fn app() -> (App, UnboundedReceiver<EngineCommand>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let options = AppOptions {
        theme: Theme::builtin_dark(false),
        theme_source: None,
        keymap: Keymap::defaults(),
        clock: Clock::manual(T0.parse().unwrap()),
        provider_label: Ok("openai/gpt-4o".into()),
        registry: Arc::new(Registry::from_defs(Vec::new())),
        agent: None,
        open_session: Some(ID.into()),
        continue_last: false,
    };
    (App::new(options, tx), rx)
}

fn deliver(app: &mut App, session: LoadedSession) {
    app.handle(AppEvent::Reply(EngineReply::Opened {
        requested: ID.into(),
        session: Box::new(session),
        earlier: None,
    }));
}

fn terminal() -> Terminal<TestBackend> {
    Terminal::new(TestBackend::new(120, 40)).unwrap()
}

/// An app with `messages` loaded and one frame drawn (layout cache warm).
fn warm(messages: usize) -> (App, UnboundedReceiver<EngineCommand>, Terminal<TestBackend>) {
    let (mut app, rx) = app();
    deliver(&mut app, loaded(messages));
    let mut term = terminal();
    term.draw(|f| {
        app.layout(f.area());
        app.draw(f);
    })
    .unwrap();
    assert!(
        format!("{}", term.backend()).contains("module"),
        "history drawn"
    );
    (app, rx, term)
}

fn delta(text: &str) -> AppEvent {
    let msg = EngineEvent::delta(DeltaKind::Text, text);
    AppEvent::Engine(Arc::new(arbor::tui::testing::event(msg, ID, None, T0)))
}

/// One frame with nothing changed since the last.
#[divan::bench(args = SIZES, sample_count = 200)]
fn frame_idle(bencher: Bencher, messages: usize) {
    let (mut app, _rx, mut term) = warm(messages);
    bencher.bench_local(|| {
        term.draw(|f| {
            app.layout(f.area());
            app.draw(f);
        })
        .unwrap();
    });
}

/// One `content_block:delta` (a word; every 12th ends a line) applied, then a frame.
#[divan::bench(args = SIZES, sample_count = 200)]
fn frame_streaming(bencher: Bencher, messages: usize) {
    let (mut app, _rx, mut term) = warm(messages);
    let mut n = 0usize;
    bencher.bench_local(|| {
        n += 1;
        let text = if n.is_multiple_of(12) {
            " word\n"
        } else {
            " word"
        };
        app.handle(delta(text));
        term.draw(|f| {
            app.layout(f.area());
            app.draw(f);
        })
        .unwrap();
    });
    assert!(app.thread().unwrap().streaming().is_some());
}

/// The transcript delivered to the app (cells built) and the first frame drawn.
#[divan::bench(args = SIZES, sample_count = 10)]
fn open_and_first_frame(bencher: Bencher, messages: usize) {
    let session = loaded(messages);
    bencher
        .with_inputs(|| (app(), session.clone(), terminal()))
        .bench_local_values(|((mut app, rx), session, mut term)| {
            deliver(&mut app, session);
            term.draw(|f| {
                app.layout(f.area());
                app.draw(f);
            })
            .unwrap();
            (app, rx, term)
        });
}
