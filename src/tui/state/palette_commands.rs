//! Slash commands as data: ONE table of (command, name, argument, one-line help)
//! drives the palette's rows, the help overlay's "Slash commands" section, the
//! README's table (a test keeps it in sync) and parsing a sent message.
//!
//! Parsing follows Claude Code: only a known command name is a command; a message
//! whose first word is `/` + a command-like name (letters, digits, `-`, `_`) that no
//! command has gets a notice instead of going to the model; any other text that
//! starts with `/` (`/usr/bin is…`) is an ordinary message.
//!
//! Owns: the table, filtering it and parsing. Does not own: what a command does
//! (`app::palette`).

use super::palette::PopupItem;

/// Every slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slash {
    Agents,
    Model,
    New,
    Clear,
    Resume,
    Rename,
    Export,
    Mcp,
    Hooks,
    Wall,
    Diff,
    Compact,
    Help,
}

/// One row of the slash-command table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlashSpec {
    pub command: Slash,
    /// Typed after `/`.
    pub name: &'static str,
    /// The argument's shape as shown in help (`""`: takes none; `[X]`: optional).
    pub args: &'static str,
    /// Whether accepting it in the palette completes `/name ` for an argument instead
    /// of running it.
    pub needs_arg: bool,
    pub help: &'static str,
}

/// The table (palette order).
pub const SLASH_COMMANDS: &[SlashSpec] = &[
    SlashSpec {
        command: Slash::Agents,
        name: "agents",
        args: "",
        needs_arg: false,
        help: "Browse agents; start a session with one",
    },
    SlashSpec {
        command: Slash::Model,
        name: "model",
        args: "[NAME]",
        needs_arg: false,
        help: "Switch the open session's model (no NAME: show the current one)",
    },
    SlashSpec {
        command: Slash::New,
        name: "new",
        args: "[AGENT]",
        needs_arg: false,
        help: "New root session with the open thread's agent (or AGENT); the old one stays in the tree",
    },
    SlashSpec {
        command: Slash::Clear,
        name: "clear",
        args: "",
        needs_arg: false,
        help: "Start afresh: a new root session with the default agent, the find bar closed (the old one stays in the tree)",
    },
    SlashSpec {
        command: Slash::Resume,
        name: "resume",
        args: "[ID]",
        needs_arg: true,
        help: "Pick a stored session of this project and open it",
    },
    SlashSpec {
        command: Slash::Rename,
        name: "rename",
        args: "TITLE",
        needs_arg: true,
        help: "Rename the open session",
    },
    SlashSpec {
        command: Slash::Export,
        name: "export",
        args: "",
        needs_arg: false,
        help: "Write the open session and its sub-sessions as Markdown to this directory",
    },
    SlashSpec {
        command: Slash::Mcp,
        name: "mcp",
        args: "",
        needs_arg: false,
        help: "MCP servers: status and tools",
    },
    SlashSpec {
        command: Slash::Hooks,
        name: "hooks",
        args: "",
        needs_arg: false,
        help: "Hooks: every active one with its source, every skipped one with why",
    },
    SlashSpec {
        command: Slash::Wall,
        name: "wall",
        args: "",
        needs_arg: false,
        help: "Wall of the open session's running sub-sessions",
    },
    SlashSpec {
        command: Slash::Diff,
        name: "diff",
        args: "",
        needs_arg: false,
        help: "Diff of the open session's changes",
    },
    SlashSpec {
        command: Slash::Compact,
        name: "compact",
        args: "[FOCUS]",
        needs_arg: false,
        help: "Summarise the open session's older messages to free context (FOCUS: what to keep)",
    },
    SlashSpec {
        command: Slash::Help,
        name: "help",
        args: "",
        needs_arg: false,
        help: "Keys and commands",
    },
];

/// What a sent message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A known command with its argument (trimmed; may be empty).
    Command(&'static SlashSpec, &'a str),
    /// `/name` that looks like a command but is none (`name` without the slash).
    Unknown(&'a str),
    /// An ordinary message.
    Text,
}

/// Parses a message about to be sent (see the module doc for the rule).
pub fn parse(text: &str) -> Parsed<'_> {
    let Some(rest) = text.strip_prefix('/') else {
        return Parsed::Text;
    };
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, arg) = rest.split_at(end);
    if let Some(spec) = SLASH_COMMANDS.iter().find(|s| s.name == name) {
        return Parsed::Command(spec, arg.trim());
    }
    let command_like = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if command_like {
        Parsed::Unknown(name)
    } else {
        Parsed::Text
    }
}

/// The command-name being typed: the composer's text when it is `/` + a name with no
/// space or newline yet (the palette lists commands only then).
pub fn typed_name(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('/')?;
    (!rest.contains(char::is_whitespace)).then_some(rest)
}

/// The palette rows for `query` (a name without `/`): names starting with it first,
/// then names containing it, in table order.
pub fn rows(query: &str) -> Vec<PopupItem> {
    let q = query.to_lowercase();
    let starts = SLASH_COMMANDS.iter().filter(|s| s.name.starts_with(&q));
    let contains = SLASH_COMMANDS
        .iter()
        .filter(|s| !s.name.starts_with(&q) && s.name.contains(&q));
    starts
        .chain(contains)
        .map(|s| PopupItem {
            label: usage(s),
            detail: s.help.to_string(),
            value: s.name.to_string(),
        })
        .collect()
}

/// `/name ARGS` as shown in help and the palette.
pub fn usage(spec: &SlashSpec) -> String {
    if spec.args.is_empty() {
        format!("/{}", spec.name)
    } else {
        format!("/{} {}", spec.name, spec.args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_names_are_commands_and_paths_are_text() {
        assert!(
            matches!(parse("/model gpt-4o"), Parsed::Command(s, "gpt-4o") if s.command == Slash::Model)
        );
        assert!(
            matches!(parse("/rename  A new title "), Parsed::Command(s, "A new title") if s.command == Slash::Rename)
        );
        assert!(matches!(parse("/new"), Parsed::Command(s, "") if s.command == Slash::New));
        assert_eq!(parse("/foo bar"), Parsed::Unknown("foo"));
        assert_eq!(parse("/usr/bin is where it lives"), Parsed::Text);
        assert_eq!(parse("/etc/hosts"), Parsed::Text);
        assert_eq!(parse("hello /new"), Parsed::Text);
        assert_eq!(typed_name("/mo"), Some("mo"));
        assert_eq!(typed_name("/model x"), None);
    }

    #[test]
    fn rows_filter_by_prefix_then_substring() {
        assert_eq!(rows("").len(), SLASH_COMMANDS.len());
        let names: Vec<String> = rows("e").into_iter().map(|i| i.value).collect();
        assert_eq!(names[0], "export", "prefix first: {names:?}");
        assert!(names.contains(&"agents".to_string()), "{names:?}");
        assert!(rows("zzz").is_empty());
    }
}

#[cfg(test)]
mod readme_tests {
    use super::*;

    /// The README's "Composer" table lists every command of the table, as written.
    #[test]
    fn readme_lists_every_slash_command() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"));
        for spec in SLASH_COMMANDS {
            let row = format!("| `{}` | {} |", usage(spec), spec.help);
            assert!(readme.contains(&row), "README lacks the row {row}");
        }
    }
}
