//! Telling the person that a session started needing them while they look at another
//! thread (SPEC §13 "needs you"; config `notify:`, [`Notify`]): the bytes a terminal
//! bell or an OSC 9 notification is made of, and writing them.
//!
//! Owns: [`Notification`] and its escape sequence. Does not own: deciding when to
//! notify (`app`), or where the bytes go (the run loop hands them to its `Host`, which
//! writes to the real terminal between frames).

use std::io::{self, Write};

use crate::config::Notify;

/// BEL: the terminal bell, and the end of an OSC sequence.
const BEL: u8 = 0x07;
/// Longest notification text, in characters (desktop notifications are short).
const MAX_TEXT: usize = 120;

/// One notification for the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// How to notify (never [`Notify::Off`]: nothing is made then).
    pub mode: Notify,
    /// What the OSC 9 notification says (`arbor: explorer needs you (failed)`).
    pub text: String,
}

impl Notification {
    /// The bytes to write: `BEL` for [`Notify::Bell`], `ESC ] 9 ; text BEL` for
    /// [`Notify::Osc9`] (the text with control characters removed, so nothing in a
    /// session's title can end the sequence early or start another; at most 120
    /// characters), nothing for [`Notify::Off`].
    pub fn bytes(&self) -> Vec<u8> {
        match self.mode {
            Notify::Off => Vec::new(),
            Notify::Bell => vec![BEL],
            Notify::Osc9 => {
                let text: String = self
                    .text
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(MAX_TEXT)
                    .collect();
                let mut out = b"\x1b]9;".to_vec();
                out.extend_from_slice(text.as_bytes());
                out.push(BEL);
                out
            }
        }
    }

    /// Writes [`Notification::bytes`] to `out` and flushes it.
    ///
    /// Errors: the writer's.
    pub fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        let bytes = self.bytes();
        if bytes.is_empty() {
            return Ok(());
        }
        out.write_all(&bytes)?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(mode: Notify, text: &str) -> Notification {
        Notification {
            mode,
            text: text.into(),
        }
    }

    #[test]
    fn bell_is_bel_and_osc9_wraps_the_text() {
        assert_eq!(note(Notify::Bell, "x").bytes(), b"\x07");
        assert_eq!(
            note(Notify::Osc9, "arbor: explorer needs you").bytes(),
            b"\x1b]9;arbor: explorer needs you\x07"
        );
        assert!(note(Notify::Off, "x").bytes().is_empty());
    }

    #[test]
    fn control_characters_cannot_escape_the_sequence() {
        let bytes = note(Notify::Osc9, "a\x07b\x1b]0;owned\x07c\n").bytes();
        assert_eq!(bytes, b"\x1b]9;ab]0;ownedc\x07");
        let long = note(Notify::Osc9, &"é".repeat(500)).bytes();
        assert_eq!(long.len(), 4 + 120 * 2 + 1);
    }

    #[test]
    fn writing_sends_the_bytes_and_nothing_for_off() {
        let mut out = Vec::new();
        note(Notify::Osc9, "hi").write_to(&mut out).unwrap();
        note(Notify::Off, "ignored").write_to(&mut out).unwrap();
        note(Notify::Bell, "").write_to(&mut out).unwrap();
        assert_eq!(out, b"\x1b]9;hi\x07\x07");
    }
}
