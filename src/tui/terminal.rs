//! Terminal setup and restore: raw mode, alternate screen, bracketed paste, mouse
//! capture, keyboard enhancement (so Shift+Enter is distinguishable), the chained panic
//! hook, and suspend/resume around `$EDITOR`.
//!
//! Owns: every escape sequence that changes terminal modes. Does not own: drawing
//! (`app`, `views`) or reading input (`runloop` consumes an event stream).
//!
//! Restoring is idempotent and a no-op when the TUI never took the terminal, so the
//! panic hook is safe to install for headless commands too.
//!
//! Panics ([`install_panic_hook`]): one on the thread that owns the terminal (the run
//! loop's) restores the terminal before the message is printed, since that thread is
//! unwinding out of the TUI. One on another thread while the TUI runs (a background
//! task: the engine turns those into failed sessions) goes to the log instead of the
//! screen — printing would garble the TUI, and restoring the terminal under a TUI that
//! keeps running would leave it drawing on a normal screen in cooked mode. When stderr
//! is not the terminal, the message is printed there too.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::thread::ThreadId;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// Whether the TUI currently owns the terminal (raw mode + alternate screen).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether keyboard enhancement flags were pushed (and must be popped).
static ENHANCED: AtomicBool = AtomicBool::new(false);
/// The thread that put the terminal into TUI mode (the run loop's).
static OWNER: Mutex<Option<ThreadId>> = Mutex::new(None);

fn owner() -> std::sync::MutexGuard<'static, Option<ThreadId>> {
    OWNER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the panic hook does with a panic (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnPanic {
    /// Restore the terminal, then run the previous hook (which prints the message).
    RestoreThenPrint,
    /// Leave the terminal to the running TUI; log the panic and print it to stderr.
    LogAndPrint,
    /// Leave the terminal to the running TUI; log the panic only.
    Log,
}

/// The hook's choice for a panic: `active` = the TUI owns the terminal, `on_owner` =
/// the panicking thread is the one that took it, `stderr_is_terminal` = printing
/// would land on the screen.
fn on_panic(active: bool, on_owner: bool, stderr_is_terminal: bool) -> OnPanic {
    match (active && !on_owner, stderr_is_terminal) {
        (false, _) => OnPanic::RestoreThenPrint,
        (true, true) => OnPanic::Log,
        (true, false) => OnPanic::LogAndPrint,
    }
}

/// The real terminal type the TUI draws on.
pub type Tui = Terminal<CrosstermBackend<io::Stdout>>;

/// Installs (once per process) a panic hook that restores the terminal and then runs
/// the previously installed hook (e.g. color-eyre's), so the panic message is readable
/// on a normal screen. A panic of another thread while the TUI runs is logged instead
/// (see the module doc).
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let on_owner = *owner() == Some(std::thread::current().id());
            let action = on_panic(
                ACTIVE.load(Ordering::SeqCst),
                on_owner,
                io::stderr().is_terminal(),
            );
            match action {
                OnPanic::RestoreThenPrint => {
                    let _ = restore();
                    previous(info);
                }
                OnPanic::LogAndPrint | OnPanic::Log => {
                    let thread = std::thread::current();
                    let name = thread.name().unwrap_or("unnamed");
                    tracing::error!("thread '{name}' panicked while the TUI ran: {info}");
                    if action == OnPanic::LogAndPrint {
                        previous(info);
                    }
                }
            }
        }));
    });
}

/// Puts the terminal into TUI mode and returns a ratatui terminal over stdout.
///
/// Errors: any I/O error from the terminal; on error the terminal is restored.
pub fn setup() -> io::Result<Tui> {
    enter_modes().inspect_err(|_| {
        let _ = restore();
    })?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    terminal.clear()?;
    Ok(terminal)
}

fn enter_modes() -> io::Result<()> {
    enable_raw_mode()?;
    *owner() = Some(std::thread::current().id());
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableMouseCapture
    )?;
    if supports_keyboard_enhancement().unwrap_or(false) {
        execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        ENHANCED.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Leaves TUI mode: pops keyboard flags, disables mouse capture and bracketed paste,
/// leaves the alternate screen, shows the cursor, disables raw mode. Idempotent; a
/// no-op when the TUI is not active.
pub fn restore() -> io::Result<()> {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let mut out = io::stdout();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = out.flush();
    disable_raw_mode()
}

/// Runs `editor` on `path` with the TUI suspended (terminal restored), then takes the
/// terminal back and forces a full redraw. The editor is `$VISUAL`, else `$EDITOR`,
/// else `vi`; it may contain arguments (`code --wait`).
///
/// Errors: the editor could not be started, or exited unsuccessfully (the message
/// names it and its status); terminal I/O errors.
pub fn run_editor(terminal: &mut Tui, path: &std::path::Path) -> io::Result<()> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| std::env::var("EDITOR").ok())
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string());
    restore()?;
    let mut words = editor.split_whitespace();
    let program = words.next().unwrap_or("vi");
    let status = std::process::Command::new(program)
        .args(words)
        .arg(path)
        .status();
    enter_modes()?;
    terminal.clear()?;
    let status = status.map_err(|e| io::Error::new(e.kind(), format!("{program}: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("{program} exited with {status}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_terminal_owners_panic_restores_the_terminal_first() {
        // Headless, or the run loop's own thread unwinding out of the TUI.
        assert_eq!(on_panic(false, false, true), OnPanic::RestoreThenPrint);
        assert_eq!(on_panic(true, true, true), OnPanic::RestoreThenPrint);
        // A background thread while the TUI runs: the screen stays the TUI's.
        assert_eq!(on_panic(true, false, true), OnPanic::Log);
        assert_eq!(on_panic(true, false, false), OnPanic::LogAndPrint);
    }

    #[test]
    fn restore_without_setup_is_a_no_op_and_hook_installs_once() {
        assert!(restore().is_ok());
        install_panic_hook();
        install_panic_hook();
        assert!(!ACTIVE.load(Ordering::SeqCst));
    }
}
