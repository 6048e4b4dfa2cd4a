//! The real `arbor` binary in a pseudo-terminal, with a minimal screen model.
//!
//! Owns: spawning the binary in a pty (portable-pty) with an isolated environment,
//! feeding its output through a tiny terminal emulator (cursor moves, clears, printed
//! cells; styles ignored) so a bench can wait until the *screen* shows something,
//! answering the terminal queries crossterm sends at startup (primary device
//! attributes, cursor position) as a real terminal would, keeping the raw output (for
//! tests of the escape sequences written), and the process's RSS (read by `rss`). Does
//! not own: what is measured (`benches/pty.rs`) or tested (`tests/all/terminal.rs`).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use rss::rss_kib;
use unicode_width::UnicodeWidthChar;

#[path = "rss.rs"]
pub mod rss;

pub const COLS: usize = 120;
pub const ROWS: usize = 40;

/// The visible screen: `ROWS` rows of `COLS` cells (a wide glyph's second cell holds
/// `'\0'`).
struct Screen {
    cells: Vec<Vec<char>>,
    row: usize,
    col: usize,
    parser: Parser,
    /// Bytes of an incomplete UTF-8 sequence.
    utf8: Vec<u8>,
}

#[derive(Default)]
enum Parser {
    #[default]
    Ground,
    Escape,
    /// `ESC (` and friends: one more byte.
    Charset,
    Csi(Vec<u8>),
    Osc,
    OscEscape,
}

impl Screen {
    fn new() -> Self {
        Self {
            cells: vec![vec![' '; COLS]; ROWS],
            row: 0,
            col: 0,
            parser: Parser::Ground,
            utf8: Vec::new(),
        }
    }

    /// Feeds output bytes; returns the replies a terminal would send.
    fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut replies = Vec::new();
        for &b in bytes {
            match std::mem::take(&mut self.parser) {
                Parser::Ground => self.ground(b),
                Parser::Escape => {
                    self.parser = match b {
                        b'[' => Parser::Csi(Vec::new()),
                        b']' => Parser::Osc,
                        b'(' | b')' | b'*' | b'+' | b'#' => Parser::Charset,
                        _ => Parser::Ground,
                    }
                }
                Parser::Charset => {}
                Parser::Csi(mut params) => {
                    if (0x40..=0x7e).contains(&b) {
                        self.csi(&params, b, &mut replies);
                    } else {
                        params.push(b);
                        self.parser = Parser::Csi(params);
                    }
                }
                Parser::Osc => {
                    self.parser = match b {
                        0x07 => Parser::Ground,
                        0x1b => Parser::OscEscape,
                        _ => Parser::Osc,
                    }
                }
                Parser::OscEscape => {
                    if b != b'\\' {
                        self.parser = Parser::Osc;
                    }
                }
            }
        }
        replies
    }

    fn ground(&mut self, b: u8) {
        match b {
            0x1b => self.parser = Parser::Escape,
            b'\r' => self.col = 0,
            b'\n' => self.row = (self.row + 1).min(ROWS - 1),
            0x08 => self.col = self.col.saturating_sub(1),
            0..=0x1f | 0x7f => {}
            _ => {
                self.utf8.push(b);
                match std::str::from_utf8(&self.utf8) {
                    Ok(s) => {
                        let c = s.chars().next().unwrap_or(' ');
                        self.utf8.clear();
                        self.print(c);
                    }
                    Err(e) if e.error_len().is_some() || self.utf8.len() >= 4 => {
                        self.utf8.clear();
                        self.print('\u{fffd}');
                    }
                    Err(_) => {}
                }
            }
        }
    }

    fn print(&mut self, c: char) {
        let width = c.width().unwrap_or(0);
        if width == 0 || self.col >= COLS {
            return;
        }
        self.cells[self.row][self.col] = c;
        if width == 2 && self.col + 1 < COLS {
            self.cells[self.row][self.col + 1] = '\0';
        }
        self.col += width;
    }

    fn csi(&mut self, params: &[u8], fin: u8, replies: &mut Vec<u8>) {
        let text = String::from_utf8_lossy(params);
        let private = text.starts_with(['?', '>', '<', '=']);
        let nums: Vec<usize> = text
            .trim_start_matches(['?', '>', '<', '='])
            .split(';')
            .map(|p| p.parse().unwrap_or(0))
            .collect();
        let n =
            |i: usize, default: usize| nums.get(i).copied().filter(|&v| v > 0).unwrap_or(default);
        match fin {
            b'H' | b'f' => {
                self.row = (n(0, 1) - 1).min(ROWS - 1);
                self.col = (n(1, 1) - 1).min(COLS);
            }
            b'A' => self.row = self.row.saturating_sub(n(0, 1)),
            b'B' => self.row = (self.row + n(0, 1)).min(ROWS - 1),
            b'C' => self.col = (self.col + n(0, 1)).min(COLS),
            b'D' => self.col = self.col.saturating_sub(n(0, 1)),
            b'G' => self.col = (n(0, 1) - 1).min(COLS),
            b'J' => match nums.first().copied().unwrap_or(0) {
                0 => {
                    self.clear_line_from(self.row, self.col);
                    (self.row + 1..ROWS).for_each(|r| self.clear_line_from(r, 0));
                }
                _ => (0..ROWS).for_each(|r| self.clear_line_from(r, 0)),
            },
            b'K' => match nums.first().copied().unwrap_or(0) {
                0 => self.clear_line_from(self.row, self.col),
                _ => self.clear_line_from(self.row, 0),
            },
            // Primary device attributes: a VT220-class terminal without the kitty
            // keyboard protocol (so crossterm's enhancement query ends at once).
            b'c' if !private && nums.iter().all(|&v| v == 0) => {
                replies.extend_from_slice(b"\x1b[?62;22c");
            }
            b'n' if !private && nums.first() == Some(&6) => {
                let reply = format!("\x1b[{};{}R", self.row + 1, self.col + 1);
                replies.extend_from_slice(reply.as_bytes());
            }
            _ => {}
        }
    }

    fn clear_line_from(&mut self, row: usize, col: usize) {
        for c in self.cells[row].iter_mut().skip(col) {
            *c = ' ';
        }
    }

    fn text(&self) -> String {
        let mut out = String::with_capacity(ROWS * (COLS + 1));
        for row in &self.cells {
            out.extend(row.iter().filter(|&&c| c != '\0'));
            out.push('\n');
        }
        out
    }
}

struct Shared {
    screen: Mutex<(Screen, bool)>,
    changed: Condvar,
    /// Every byte the process wrote, in order.
    raw: Mutex<Vec<u8>>,
}

/// A running `arbor` in a 120×40 pty. Killed on drop.
pub struct Pty {
    child: Box<dyn Child + Send + Sync>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    shared: Arc<Shared>,
    _master: Box<dyn MasterPty + Send>,
    pub pid: u32,
    pub started: Instant,
}

/// The environment of one isolated run: temp `HOME`, `AMPLIFIER_HOME`, `ARBOR_CONFIG`.
pub struct Env<'a> {
    pub home: &'a Path,
    pub amplifier_home: &'a Path,
    pub config: &'a Path,
    pub cwd: &'a Path,
}

impl Pty {
    /// Spawns `binary args…` in a fresh pty with only the variables of `env` (plus
    /// `PATH`, `TERM`, `LANG`) set.
    pub fn spawn(binary: &str, args: &[&str], env: &Env<'_>) -> Self {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS as u16,
                cols: COLS as u16,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(binary);
        cmd.args(args);
        cmd.env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
        cmd.env("TERM", "xterm-256color");
        cmd.env("LANG", "C.UTF-8");
        cmd.env("HOME", env.home);
        cmd.env("AMPLIFIER_HOME", env.amplifier_home);
        cmd.env("ARBOR_CONFIG", env.config);
        cmd.env("EDITOR", "true");
        cmd.cwd(env.cwd);
        let started = Instant::now();
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let pid = child.process_id().unwrap();
        let writer = Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
        let shared = Arc::new(Shared {
            screen: Mutex::new((Screen::new(), false)),
            changed: Condvar::new(),
            raw: Mutex::new(Vec::new()),
        });
        let mut reader = pair.master.try_clone_reader().unwrap();
        let (shared2, writer2) = (shared.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                shared2.raw.lock().unwrap().extend_from_slice(&buf[..n]);
                let replies = {
                    let mut guard = shared2.screen.lock().unwrap();
                    let replies = guard.0.feed(&buf[..n]);
                    guard.1 = true;
                    replies
                };
                shared2.changed.notify_all();
                if !replies.is_empty() {
                    let mut w = writer2.lock().unwrap();
                    let _ = w.write_all(&replies).and_then(|()| w.flush());
                }
            }
            shared2.screen.lock().unwrap().1 = true;
            shared2.changed.notify_all();
        });
        Self {
            child,
            writer,
            shared,
            _master: pair.master,
            pid,
            started,
        }
    }

    /// Sends bytes as typed keys.
    pub fn send(&self, bytes: &[u8]) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    /// Waits until the screen text satisfies `pred`; the instant it was seen, or `None`
    /// after `timeout`.
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        let mut guard = self.shared.screen.lock().unwrap();
        loop {
            if guard.1 {
                guard.1 = false;
                if pred(&guard.0.text()) {
                    return Some(Instant::now());
                }
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            guard = self.shared.changed.wait_timeout(guard, left).unwrap().0;
        }
    }

    /// Waits until the screen contains `needle`.
    pub fn wait_text(&self, needle: &str, timeout: Duration) -> Option<Instant> {
        // Force one check of the current screen even if nothing changes.
        self.shared.screen.lock().unwrap().1 = true;
        self.wait_for(timeout, |s| s.contains(needle))
    }

    /// The current screen, rows separated by `\n`.
    pub fn screen(&self) -> String {
        self.shared.screen.lock().unwrap().0.text()
    }

    /// Every byte the process has written so far.
    pub fn output(&self) -> Vec<u8> {
        self.shared.raw.lock().unwrap().clone()
    }

    /// Waits up to `timeout` for the process to exit; its status, or `None` if it is
    /// still running.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<portable_pty::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Resident set size of the process, in KiB.
    pub fn rss_kib(&self) -> Option<u64> {
        rss_kib(self.pid)
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
