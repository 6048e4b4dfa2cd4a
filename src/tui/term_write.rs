//! What the TUI writes to the terminal besides frames (issue 15 item 4): a copy to the
//! clipboard with OSC 52, and turning mouse capture on or off.
//!
//! OSC 52 is `ESC ] 52 ; c ; <base64 of the text> BEL` (xterm's "Manipulate Selection
//! Data", `c` = the clipboard); kitty, WezTerm, iTerm2, foot, Alacritty, Windows
//! Terminal and xterm (with `allowWindowOps`) honour it; inside tmux it needs
//! `set-clipboard on`. Mouse capture is crossterm's `EnableMouseCapture` /
//! `DisableMouseCapture` as ANSI text, the same bytes `terminal::setup` and `restore`
//! write.
//!
//! Owns: [`TerminalWrite`] and its bytes. Does not own: deciding what to copy or when
//! (`app`), or where the bytes go (the run loop hands them to its `Host`, which writes
//! them to the real terminal between frames, as it does notifications).

use std::io::{self, Write};

use base64::Engine as _;
use crossterm::Command;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};

/// The largest text copied, in bytes: terminals drop longer OSC 52 sequences (xterm,
/// tmux and kitty take about 100 kB of base64 by default; this is 74 kB of text).
pub const MAX_COPY_BYTES: usize = 74_000;

/// One write to the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalWrite {
    /// Put this text on the system clipboard (OSC 52).
    Clipboard(String),
    /// Capture the mouse (`true`: wheel and clicks come to arbor) or leave it to the
    /// terminal (`false`: its own text selection works).
    MouseCapture(bool),
}

impl TerminalWrite {
    /// The bytes to write.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            TerminalWrite::Clipboard(text) => {
                let mut out = b"\x1b]52;c;".to_vec();
                out.extend_from_slice(
                    base64::engine::general_purpose::STANDARD
                        .encode(text)
                        .as_bytes(),
                );
                out.push(0x07);
                out
            }
            TerminalWrite::MouseCapture(on) => {
                let mut s = String::new();
                let written = if *on {
                    EnableMouseCapture.write_ansi(&mut s)
                } else {
                    DisableMouseCapture.write_ansi(&mut s)
                };
                // Writing to a String cannot fail.
                debug_assert!(written.is_ok());
                s.into_bytes()
            }
        }
    }

    /// Writes [`TerminalWrite::bytes`] to `out` and flushes it.
    ///
    /// Errors: the writer's.
    pub fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&self.bytes())?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipboard_is_osc52_with_base64_and_mouse_capture_is_crossterms() {
        assert_eq!(
            TerminalWrite::Clipboard("héllo\n".into()).bytes(),
            b"\x1b]52;c;aMOpbGxvCg==\x07"
        );
        let on = String::from_utf8(TerminalWrite::MouseCapture(true).bytes()).unwrap();
        let off = String::from_utf8(TerminalWrite::MouseCapture(false).bytes()).unwrap();
        assert!(
            on.contains("\x1b[?1000h") && on.contains("\x1b[?1006h"),
            "{on:?}"
        );
        assert!(
            off.contains("\x1b[?1000l") && off.contains("\x1b[?1006l"),
            "{off:?}"
        );
    }
}
