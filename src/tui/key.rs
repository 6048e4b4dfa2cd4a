//! One key chord (`ctrl+c`, `shift+enter`, `f2`, `x`, `?`): parsing from config
//! strings, display in hints, and matching crossterm key events.
//!
//! Owns: the chord syntax. Does not own: which action a chord triggers (`keymap`).

use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// A key with modifiers, normalized so matching is exact: for character keys SHIFT is
/// folded into the character (`G`, `?`), and Shift+Tab is `BackTab`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyBinding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

/// A chord string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid key {input:?}: {reason}")]
pub struct KeyParseError {
    pub input: String,
    pub reason: String,
}

impl KeyBinding {
    /// A binding from parts, normalized.
    pub fn new(code: KeyCode, modifiers: KeyModifiers) -> Self {
        let mut code = code;
        let mut modifiers =
            modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        if let KeyCode::Char(c) = code {
            if modifiers.contains(KeyModifiers::SHIFT) && c.is_ascii_lowercase() {
                code = KeyCode::Char(c.to_ascii_uppercase());
            }
            if modifiers.contains(KeyModifiers::CONTROL) {
                code = KeyCode::Char(c.to_ascii_lowercase());
            } else {
                modifiers.remove(KeyModifiers::SHIFT);
            }
        }
        if code == KeyCode::BackTab
            || (code == KeyCode::Tab && modifiers.contains(KeyModifiers::SHIFT))
        {
            code = KeyCode::BackTab;
            modifiers.remove(KeyModifiers::SHIFT);
        }
        Self { code, modifiers }
    }

    /// The binding a key press matches; `None` for key releases.
    pub fn from_event(event: &KeyEvent) -> Option<Self> {
        if event.kind == KeyEventKind::Release {
            return None;
        }
        Some(Self::new(event.code, event.modifiers))
    }

    /// Parses `ctrl+c`, `alt+x`, `shift+enter`, `f2`, `esc`, `tab`, `shift+tab`,
    /// `pgup`, `pgdn`, `home`, `end`, `up`/`down`/`left`/`right`, `space`, `enter`,
    /// `backspace`, `delete`, or a single character. Case-insensitive names.
    ///
    /// Errors: empty input, unknown modifier or key name.
    pub fn parse(input: &str) -> Result<Self, KeyParseError> {
        let err = |reason: &str| KeyParseError {
            input: input.to_string(),
            reason: reason.to_string(),
        };
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(err("empty"));
        }
        // A lone "+" or a trailing "++" means the plus key itself.
        let (mods_part, key_part) = match trimmed.strip_suffix("++") {
            Some(rest) => (rest, "+"),
            None if trimmed == "+" => ("", "+"),
            None => match trimmed.rsplit_once('+') {
                Some((m, k)) => (m, k),
                None => ("", trimmed),
            },
        };
        let mut modifiers = KeyModifiers::NONE;
        for m in mods_part.split('+').filter(|m| !m.is_empty()) {
            modifiers |= match m.to_ascii_lowercase().as_str() {
                "ctrl" | "control" | "c" => KeyModifiers::CONTROL,
                "alt" | "meta" | "m" => KeyModifiers::ALT,
                "shift" | "s" => KeyModifiers::SHIFT,
                _ => return Err(err(&format!("unknown modifier {m:?}"))),
            };
        }
        let lower = key_part.to_ascii_lowercase();
        let code = match lower.as_str() {
            "esc" | "escape" => KeyCode::Esc,
            "enter" | "return" => KeyCode::Enter,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pgup" | "pageup" => KeyCode::PageUp,
            "pgdn" | "pagedown" => KeyCode::PageDown,
            f if f.len() > 1 && f.starts_with('f') => match f[1..].parse::<u8>() {
                Ok(n) if (1..=24).contains(&n) => KeyCode::F(n),
                _ => return Err(err(&format!("unknown key {key_part:?}"))),
            },
            _ => {
                let mut chars = key_part.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => KeyCode::Char(c),
                    _ => return Err(err(&format!("unknown key {key_part:?}"))),
                }
            }
        };
        Ok(Self::new(code, modifiers))
    }

    /// Whether typing this chord would insert text (a plain printable character).
    pub fn is_text(&self) -> bool {
        matches!(self.code, KeyCode::Char(_))
            && !self
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    }
}

impl fmt::Display for KeyBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            f.write_str("Ctrl+")?;
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            f.write_str("Alt+")?;
        }
        if self.modifiers.contains(KeyModifiers::SHIFT) {
            f.write_str("Shift+")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::F(n) => write!(f, "F{n}"),
            KeyCode::Esc => f.write_str("Esc"),
            KeyCode::Enter => f.write_str("Enter"),
            KeyCode::Tab => f.write_str("Tab"),
            KeyCode::BackTab => f.write_str("Shift+Tab"),
            KeyCode::Backspace => f.write_str("Backspace"),
            KeyCode::Delete => f.write_str("Del"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Home => f.write_str("Home"),
            KeyCode::End => f.write_str("End"),
            KeyCode::PageUp => f.write_str("PgUp"),
            KeyCode::PageDown => f.write_str("PgDn"),
            other => write!(f, "{other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_normalizes() {
        let k = KeyBinding::parse("Ctrl+C").unwrap();
        assert_eq!(
            k,
            KeyBinding::new(KeyCode::Char('c'), KeyModifiers::CONTROL)
        );
        assert_eq!(k.to_string(), "Ctrl+c");
        assert_eq!(
            KeyBinding::parse("shift+tab").unwrap(),
            KeyBinding::new(KeyCode::BackTab, KeyModifiers::SHIFT)
        );
        assert_eq!(
            KeyBinding::parse("?").unwrap(),
            KeyBinding::new(KeyCode::Char('?'), KeyModifiers::SHIFT)
        );
        assert_eq!(
            KeyBinding::parse("shift+g").unwrap(),
            KeyBinding::new(KeyCode::Char('G'), KeyModifiers::NONE)
        );
        assert_eq!(
            KeyBinding::parse("ctrl++").unwrap().code,
            KeyCode::Char('+')
        );
        assert_eq!(KeyBinding::parse("f2").unwrap().code, KeyCode::F(2));
        assert!(KeyBinding::parse("hyper+x").is_err());
        assert!(KeyBinding::parse("nokey").is_err());
        assert!(KeyBinding::parse("").is_err());
        assert!(KeyBinding::parse("x").unwrap().is_text());
        assert!(!KeyBinding::parse("ctrl+x").unwrap().is_text());
    }
}
