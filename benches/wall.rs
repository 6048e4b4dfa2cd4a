//! The wall under load (issue 14): eight sub-sessions streaming 100 deltas/s each
//! with the wall open. Two measures:
//! (a) frame time — `App::layout` + `App::draw` into a 120×40 `TestBackend`, one frame
//!     per 1/60 s of stream (8 × 100 deltas/s applied between frames, as the bus
//!     would deliver them), p50/p95 over the frames;
//! (b) process CPU — the real `arbor` binary (bench profile) in a 120×40 pty, a boss
//!     agent delegating to eight workers whose replies a loopback stub streams at
//!     100 deltas/s each, the wall opened with `w`; CPU time (utime + stime from
//!     `/proc/<pid>/stat`) over a window while all eight stream, as cores.
//! Prints a table. Run: `cargo bench --bench wall` (about half a minute).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/server.rs"]
mod server;
#[path = "common/stats.rs"]
mod stats;
#[path = "common/term.rs"]
mod term;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor::agent::Registry;
use arbor::session::protocol::DeltaKind;
use arbor::session::{EngineEvent, SessionStatus};
use arbor::tui::app::AppOptions;
use arbor::tui::clock::Clock;
use arbor::tui::keymap::Keymap;
use arbor::tui::testing::{event, fork, start};
use arbor::tui::theme::Theme;
use arbor::tui::{App, AppEvent};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use term::Pty;

const BIN: &str = env!("CARGO_BIN_EXE_arbor");
const CHILDREN: usize = 8;
const DELTAS_PER_SEC: usize = 100;
/// Stream length per child in the pty run (seconds).
const STREAM_SECS: usize = 12;
/// The CPU window, taken while all children stream.
const CPU_WINDOW: Duration = Duration::from_secs(5);
/// Frames drawn in the in-process run (10 s at 60 fps).
const FRAMES: usize = 600;

const ROOT: &str = "5f0e1c2a-1111-4222-8333-444455556666";

fn words(n: usize) -> String {
    const W: [&str; 8] = [
        "scanning", "module", "the", "turn", "loop", "reads", "each", "file",
    ];
    W[n % W.len()].to_string()
}

/// (a) Frame time of the wall with eight streaming tiles, in process.
fn frame_time() -> (f64, f64) {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = Clock::manual("2025-03-01T12:00:00Z".parse().unwrap());
    let mut app = App::new(
        AppOptions {
            theme: Theme::builtin_dark(false),
            theme_source: None,
            keymap: Keymap::defaults(),
            clock: clock.clone(),
            provider_label: Ok("openai/scripted-model".into()),
            registry: Arc::new(Registry::from_defs(Vec::new())),
            agent: None,
            open_session: Some(ROOT.into()),
            continue_last: false,
        },
        tx,
    );
    let ts = "2025-03-01T12:00:00Z";
    let send = |app: &mut App, msg: EngineEvent, id: &str, parent: Option<&str>| {
        app.handle(AppEvent::Engine(Arc::new(event(msg, id, parent, ts))));
    };
    send(&mut app, start("boss"), ROOT, None);
    send(
        &mut app,
        EngineEvent::status(SessionStatus::Running),
        ROOT,
        None,
    );
    let ids: Vec<String> = (0..CHILDREN)
        .map(|n| format!("5f0e1c2a11114222-{n:016x}_worker"))
        .collect();
    for id in &ids {
        send(&mut app, fork(ROOT, "worker"), id, Some(ROOT));
        send(
            &mut app,
            EngineEvent::status(SessionStatus::Running),
            id,
            Some(ROOT),
        );
    }
    let key = |code| TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE));
    app.handle(AppEvent::Input(key(KeyCode::BackTab))); // composer → chat
    app.handle(AppEvent::Input(key(KeyCode::Char('w'))));
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let per_frame = CHILDREN * DELTAS_PER_SEC / 60;
    let mut samples = Vec::with_capacity(FRAMES);
    let mut n = 0;
    for _ in 0..FRAMES {
        for _ in 0..per_frame {
            let id = &ids[n % CHILDREN];
            let mut delta = format!(" {}", words(n));
            if n % 97 == 0 {
                delta.push('\n');
            }
            send(
                &mut app,
                EngineEvent::delta(DeltaKind::Text, delta),
                id,
                Some(ROOT),
            );
            n += 1;
        }
        clock.advance(Duration::from_millis(16));
        let t = Instant::now();
        terminal
            .draw(|f| {
                app.layout(f.area());
                app.draw(f);
            })
            .unwrap();
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let screen = arbor::tui::testing::buffer_text(terminal.backend().buffer());
    assert!(screen.contains("8 running of 8"), "{screen}");
    stats::percentiles(&mut samples)
}

struct Sandbox {
    _dir: tempfile::TempDir,
    home: PathBuf,
    amp: PathBuf,
    config: PathBuf,
    project: PathBuf,
}

/// CPU ticks (utime + stime) of `pid`.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the `(comm)`: state is field 3; utime 14, stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// The unit of `/proc/<pid>/stat` times: Linux's `USER_HZ`, 100 on every architecture
/// it supports.
const USER_HZ: f64 = 100.0;

/// (b) CPU of the real binary with the wall open over eight streaming children.
fn process_cpu() -> (f64, usize) {
    let server = server::Server::start(Arc::new(|body: &[u8]| {
        let (system, last) = server::system_and_last_role(body);
        if system.contains("You are worker.") {
            let deltas = (0..DELTAS_PER_SEC * STREAM_SECS).map(|i| match i {
                0 => "workerstart".to_string(),
                _ if i % 12 == 0 => format!(" {}\n", words(i)),
                _ => format!(" {}", words(i)),
            });
            return server::Reply {
                chunks: server::text_pieces(deltas),
                interval: Duration::from_millis(1000 / DELTAS_PER_SEC as u64),
                ..Default::default()
            };
        }
        if last == "tool" {
            return server::Reply::whole(server::text_body("all workers done"));
        }
        let calls: Vec<_> = (0..CHILDREN)
            .map(|n| {
                (
                    format!("c{n}"),
                    "task".to_string(),
                    json!({"agent": "worker", "instruction": format!("part {n}")}),
                )
            })
            .collect();
        server::Reply::whole(server::tool_calls_body(&calls))
    }));
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let sandbox = Sandbox {
        home: root.join("home"),
        amp: root.join("amp"),
        config: root.join("config.yaml"),
        project: root.join("project"),
        _dir: dir,
    };
    for d in [&sandbox.home, &sandbox.amp.join("agents"), &sandbox.project] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        &sandbox.config,
        format!(
            "providers:\n  - module: provider-openai\n    config:\n      base_url: \"{}\"\n      api_key: local\n      default_model: scripted-model\n",
            server.base_url
        ),
    )
    .unwrap();
    let agents = sandbox.amp.join("agents");
    std::fs::write(
        agents.join("boss.md"),
        "---\nmeta:\n  name: boss\n  description: Splits work.\ntools:\n  - module: tool-task\n    config: {max_parallel: 8}\n---\nYou are boss.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("worker.md"),
        "---\nmeta:\n  name: worker\n  description: Works.\n---\nYou are worker.\n",
    )
    .unwrap();
    let env = term::Env {
        home: &sandbox.home,
        amplifier_home: &sandbox.amp,
        config: &sandbox.config,
        cwd: &sandbox.project,
    };
    let pty = Pty::spawn(BIN, &["--agent", "boss"], &env);
    pty.wait_text("Message…", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("no usable frame:\n{}", pty.screen()));
    pty.send(b"split the work\r");
    // The boss's thread shows the task cards; the workers stream into their own.
    pty.wait_for(Duration::from_secs(30), |screen| {
        screen.matches("task → worker  ● running").count() == CHILDREN
    })
    .unwrap_or_else(|| panic!("the workers never all ran:\n{}", pty.screen()));
    pty.send(b"\x1b[Z"); // Shift+Tab: composer → chat
    pty.send(b"w");
    pty.wait_text("8 running of 8", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("the wall never showed eight:\n{}", pty.screen()));
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(pty.pid);
    let t = Instant::now();
    std::thread::sleep(CPU_WINDOW);
    let ticks = cpu_ticks(pty.pid) - before;
    let elapsed = t.elapsed().as_secs_f64();
    let screen = pty.screen();
    let streaming = screen.matches("running ·").count();
    (ticks as f64 / USER_HZ / elapsed, streaming)
}

fn main() {
    let (p50, p95) = frame_time();
    let (cores, tiles) = process_cpu();
    println!("\n| measure (wall, 8 children × 100 deltas/s, 120×40) | value |\n|---|---|");
    println!("| frame time (layout + draw), p50 | {p50:.2} ms |");
    println!("| frame time (layout + draw), p95 | {p95:.2} ms |");
    println!(
        "| process CPU, real binary, wall open ({} s window, {tiles} tiles streaming on screen) | {cores:.2} cores |",
        CPU_WINDOW.as_secs()
    );
}
