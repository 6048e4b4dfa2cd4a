//! Themes: YAML files mapping semantic slots (`chat.user`, `tree.running`, …) to
//! styles. Views ask for a [`Slot`]; they never build raw colours.
//!
//! File shape (`themes/dark.yaml`, or `<config dir>/arbor/themes/<name>.yaml`):
//! ```yaml
//! name: my-theme
//! extends: dark            # optional; user themes extend `dark` by default
//! slots:
//!   chat.user: {fg: "#7dcfff", modifiers: [bold]}
//!   tree.selected: {bg: blue, modifiers: [reversed]}
//! ```
//! Colours: ratatui names (`red`, `lightblue`, `darkgray`, …), `#rrggbb`, or a 0–255
//! index. Modifiers: bold, dim, italic, underlined, reversed, crossed_out.
//! With `NO_COLOR` set, colours are dropped and only modifiers remain.
//!
//! Owns: slot names, parsing, built-ins (embedded). Does not own: choosing the theme
//! name (`--theme` / config, decided by the caller).

use std::collections::HashMap;
use std::path::Path;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

macro_rules! slots {
    ($($variant:ident = $name:literal,)*) => {
        /// A semantic style slot.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Slot { $($variant,)* }

        impl Slot {
            /// Every slot.
            pub const ALL: &[Slot] = &[$(Slot::$variant,)*];

            /// The slot's name in theme files.
            pub fn name(self) -> &'static str {
                match self { $(Slot::$variant => $name,)* }
            }
        }
    };
}

slots! {
    Base = "base",
    ChatUser = "chat.user",
    ChatAssistant = "chat.assistant",
    ChatThinking = "chat.thinking",
    ChatTool = "chat.tool",
    ChatToolResult = "chat.tool_result",
    ChatTask = "chat.task",
    ChatError = "chat.error",
    ChatNotice = "chat.notice",
    ChatSelected = "chat.selected",
    ChatHeader = "chat.header",
    MdHeading = "markdown.heading",
    MdCode = "markdown.code",
    MdCodeBlock = "markdown.code_block",
    MdQuote = "markdown.quote",
    MdLink = "markdown.link",
    MdBullet = "markdown.bullet",
    TreeRunning = "tree.running",
    TreeDone = "tree.done",
    TreeFailed = "tree.failed",
    TreeCancelled = "tree.cancelled",
    TreeIdle = "tree.idle",
    TreeWaiting = "tree.waiting",
    TreeSelected = "tree.selected",
    TreeMeta = "tree.meta",
    StatusBar = "status.bar",
    StatusHint = "status.hint",
    StatusKey = "status.key",
    StatusNote = "status.note",
    Warning = "warning",
    BorderFocused = "border.focused",
    BorderUnfocused = "border.unfocused",
    Title = "title",
    BrowserSource = "browser.source",
    BrowserInvalid = "browser.invalid",
    BrowserSelected = "browser.selected",
    BrowserLabel = "browser.label",
    ReloadMark = "reload.mark",
    ComposerPlaceholder = "composer.placeholder",
    DiffAdded = "diff.added",
    DiffRemoved = "diff.removed",
    DiffHunk = "diff.hunk",
    FindMatch = "find.match",
    FindCurrent = "find.current",
}

const BUILTINS: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.yaml")),
    ("light", include_str!("../../themes/light.yaml")),
    ("ansi", include_str!("../../themes/ansi.yaml")),
];

/// A theme that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThemeError {
    #[error(
        "unknown theme '{name}': built-ins are {builtins}; user themes live in {dir}/<name>.yaml"
    )]
    Unknown {
        name: String,
        builtins: String,
        dir: String,
    },
    #[error("theme '{name}': {message}")]
    Invalid { name: String, message: String },
}

/// A resolved theme: one style per slot.
#[derive(Debug, Clone)]
pub struct Theme {
    name: String,
    styles: HashMap<Slot, Style>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    #[serde(default)]
    #[allow(dead_code)]
    name: Option<String>,
    #[serde(default)]
    extends: Option<String>,
    #[serde(default)]
    slots: HashMap<String, StyleSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StyleSpec {
    #[serde(default)]
    fg: Option<String>,
    #[serde(default)]
    bg: Option<String>,
    #[serde(default)]
    modifiers: Vec<String>,
}

impl Theme {
    /// Loads theme `name` (default `dark`): a user theme `<themes_dir>/<name>.yaml`
    /// wins over a built-in of the same name. `no_color` drops every colour.
    ///
    /// Errors: no such theme; YAML that does not parse; unknown slot, colour or
    /// modifier names; an `extends` chain deeper than 4 or naming an unknown theme.
    pub fn load(name: Option<&str>, themes_dir: &Path, no_color: bool) -> Result<Self, ThemeError> {
        let name = name.unwrap_or("dark");
        let mut styles = HashMap::new();
        resolve(name, themes_dir, &mut styles, 0)?;
        if no_color {
            for style in styles.values_mut() {
                style.fg = None;
                style.bg = None;
            }
        }
        Ok(Self {
            name: name.to_string(),
            styles,
        })
    }

    /// The built-in dark theme (never fails; colours dropped when `no_color`).
    pub fn builtin_dark(no_color: bool) -> Self {
        Self::load(
            Some("dark"),
            Path::new("/nonexistent-arbor-themes"),
            no_color,
        )
        .unwrap_or_else(|_| Self {
            name: "dark".into(),
            styles: HashMap::new(),
        })
    }

    /// The theme's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The style of `slot` (the default style when the theme leaves it unset).
    pub fn style(&self, slot: Slot) -> Style {
        self.styles.get(&slot).copied().unwrap_or_default()
    }

    /// Names of the built-in themes.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTINS.iter().map(|(n, _)| *n).collect()
    }
}

fn resolve(
    name: &str,
    dir: &Path,
    styles: &mut HashMap<Slot, Style>,
    depth: usize,
) -> Result<(), ThemeError> {
    let invalid = |message: String| ThemeError::Invalid {
        name: name.to_string(),
        message,
    };
    if depth > 4 {
        return Err(invalid("extends chain is deeper than 4".into()));
    }
    let user_file = dir.join(format!("{name}.yaml"));
    let builtin = BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t);
    let (text, is_user) = match std::fs::read_to_string(&user_file) {
        Ok(text) if is_plain_name(name) => (text, true),
        _ => match builtin {
            Some(text) => (text.to_string(), false),
            None => {
                return Err(ThemeError::Unknown {
                    name: name.to_string(),
                    builtins: Theme::builtin_names().join(", "),
                    dir: dir.display().to_string(),
                });
            }
        },
    };
    let file: ThemeFile =
        crate::config::yaml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    let parent = match (&file.extends, is_user) {
        (Some(p), _) => Some(p.clone()),
        (None, true) if name != "dark" => Some("dark".to_string()),
        (None, true) => None,
        (None, false) => None,
    };
    if let Some(parent) = parent {
        if parent == name && !is_user {
            return Err(invalid("a built-in theme cannot extend itself".into()));
        }
        // A user theme named like a built-in may extend that built-in.
        if parent == name {
            let text = builtin.ok_or_else(|| invalid("extends itself".into()))?;
            let base: ThemeFile =
                crate::config::yaml::from_str(text).map_err(|e| invalid(e.to_string()))?;
            apply(&base, styles).map_err(|e| invalid(e.to_string()))?;
        } else {
            resolve(&parent, dir, styles, depth + 1)?;
        }
    }
    apply(&file, styles).map_err(|e| invalid(e.to_string()))
}

/// What in a theme file's `slots:` cannot be used (carried as
/// [`ThemeError::Invalid`]'s message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    #[error("unknown slot '{0}'")]
    Slot(String),
    #[error("unknown colour '{0}'")]
    Colour(String),
    #[error("unknown modifier '{0}'")]
    Modifier(String),
}

fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['/', '\\']) && !name.starts_with('.')
}

fn apply(file: &ThemeFile, styles: &mut HashMap<Slot, Style>) -> Result<(), SlotError> {
    for (key, spec) in &file.slots {
        let slot = Slot::ALL
            .iter()
            .find(|s| s.name() == key)
            .ok_or_else(|| SlotError::Slot(key.clone()))?;
        let mut style = Style::default();
        if let Some(fg) = &spec.fg {
            style = style.fg(parse_color(fg)?);
        }
        if let Some(bg) = &spec.bg {
            style = style.bg(parse_color(bg)?);
        }
        for m in &spec.modifiers {
            style = style.add_modifier(parse_modifier(m)?);
        }
        styles.insert(*slot, style);
    }
    Ok(())
}

fn parse_color(s: &str) -> Result<Color, SlotError> {
    s.trim()
        .parse::<Color>()
        .map_err(|_| SlotError::Colour(s.to_string()))
}

fn parse_modifier(s: &str) -> Result<Modifier, SlotError> {
    Ok(match s.trim().to_ascii_lowercase().as_str() {
        "bold" => Modifier::BOLD,
        "dim" => Modifier::DIM,
        "italic" => Modifier::ITALIC,
        "underlined" | "underline" => Modifier::UNDERLINED,
        "reversed" | "reverse" => Modifier::REVERSED,
        "crossed_out" | "strikethrough" => Modifier::CROSSED_OUT,
        other => return Err(SlotError::Modifier(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_define_every_slot_and_parse() {
        for name in Theme::builtin_names() {
            let t = Theme::load(Some(name), Path::new("/nonexistent"), false).unwrap();
            for slot in Slot::ALL {
                assert!(t.styles.contains_key(slot), "{name} lacks {}", slot.name());
            }
        }
    }

    #[test]
    fn no_color_keeps_modifiers_only() {
        let t = Theme::builtin_dark(true);
        let s = t.style(Slot::TreeSelected);
        assert_eq!((s.fg, s.bg), (None, None));
        assert!(s.add_modifier.contains(Modifier::REVERSED));
        assert!(
            Theme::builtin_dark(false)
                .style(Slot::ChatUser)
                .fg
                .is_some()
        );
    }

    #[test]
    fn user_theme_extends_dark_and_errors_are_clear() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mine.yaml"),
            "slots:\n  chat.user: {fg: '#ff0000', modifiers: [italic]}\n",
        )
        .unwrap();
        let t = Theme::load(Some("mine"), dir.path(), false).unwrap();
        assert_eq!(t.style(Slot::ChatUser).fg, Some(Color::Rgb(255, 0, 0)));
        assert!(
            t.style(Slot::TreeRunning).fg.is_some(),
            "inherited from dark"
        );
        let err = Theme::load(Some("nope"), dir.path(), false).unwrap_err();
        assert!(err.to_string().contains("dark, light, ansi"), "{err}");
        std::fs::write(
            dir.path().join("bad.yaml"),
            "slots:\n  chat.usr: {fg: red}\n",
        )
        .unwrap();
        let err = Theme::load(Some("bad"), dir.path(), false).unwrap_err();
        assert!(err.to_string().contains("unknown slot 'chat.usr'"), "{err}");
        std::fs::write(
            dir.path().join("dark.yaml"),
            "extends: dark\nslots:\n  base: {fg: red}\n",
        )
        .unwrap();
        let t = Theme::load(Some("dark"), dir.path(), false).unwrap();
        assert_eq!(t.style(Slot::Base).fg, Some(Color::Red));
        assert!(t.style(Slot::TreeRunning).fg.is_some());
    }
}
