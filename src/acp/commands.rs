//! Slash commands in `arbor acp` prompts, announced with `available_commands_update`
//! (ACP v1 schema 1.20 `AvailableCommand`) when a session opens.
//!
//! The built-ins an editor can use here are the TUI's `/model [NAME]`, `/rename
//! TITLE` and `/compact [FOCUS]` (the others — `/new`, `/resume`, `/wall`, … — are
//! the editor's own business: it opens and shows sessions). Then the project's and
//! the user's custom commands (`agent::commands`: `.claude/commands/*.md`,
//! `.amplifier/commands/*.md`, `<config dir>/arbor/commands/*.md`), a built-in
//! winning over a file of the same name; a custom command's prompt is its template
//! expanded with the words after its name.
//!
//! Owns: the command list and reading a prompt as a command ([`parse`]). Does not
//! own: running one (`agent`) or the command files (`agent::commands`).

use std::path::Path;

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};

use crate::agent::commands::{discover, expand_message};
use crate::paths::Paths;

/// A built-in command: name, argument hint (empty: none), description.
const BUILT_IN: [(&str, &str, &str); 3] = [
    (
        "model",
        "[PROVIDER/]MODEL",
        "Switch the session's model (no name: show the current one)",
    ),
    ("rename", "TITLE", "Rename the session"),
    (
        "compact",
        "[FOCUS]",
        "Summarise the session's older messages to free context (FOCUS: what to keep)",
    ),
];

/// What a prompt is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// `/model [NAME]`, its argument trimmed (empty: show the current model).
    Model(String),
    /// `/rename TITLE`.
    Rename(String),
    /// `/compact [FOCUS]`.
    Compact(String),
    /// A custom command: the prompt it expands to.
    Custom(String),
    /// An ordinary prompt (or `/name` naming no command: sent as written).
    Text,
}

/// The paths a session in `cwd` reads its command files from.
pub fn paths(cwd: &Path) -> Paths {
    Paths::from_env_map(&|key| std::env::var(key).ok(), cwd.to_path_buf())
}

/// Reads `text` as a command of a session whose command files are under `paths`.
pub fn parse(text: &str, paths: &Paths) -> Parsed {
    let Some(rest) = text.trim_start().strip_prefix('/') else {
        return Parsed::Text;
    };
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, args) = rest.split_at(end);
    let args = args.trim().to_string();
    match name {
        "model" => Parsed::Model(args),
        "rename" => Parsed::Rename(args),
        "compact" => Parsed::Compact(args),
        _ => match expand_message(paths, text) {
            Some((_, prompt)) => Parsed::Custom(prompt),
            None => Parsed::Text,
        },
    }
}

/// `available_commands_update` with the built-ins and the custom commands of `paths`
/// (read now).
pub fn available(paths: &Paths) -> SessionUpdate {
    let input = |hint: &str| {
        (!hint.is_empty()).then(|| {
            AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint.to_string()))
        })
    };
    let mut commands: Vec<AvailableCommand> = BUILT_IN
        .iter()
        .map(|(name, hint, about)| AvailableCommand::new(*name, *about).input(input(hint)))
        .collect();
    for custom in discover(paths) {
        if BUILT_IN.iter().any(|(name, ..)| *name == custom.name) {
            continue;
        }
        let hint = custom.argument_hint.clone().unwrap_or_default();
        commands.push(AvailableCommand::new(custom.name, custom.description).input(input(&hint)));
    }
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_are_read_before_files_and_other_text_is_a_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let paths = paths(dir.path());
        assert_eq!(
            parse("/model  openai/x ", &paths),
            Parsed::Model("openai/x".into())
        );
        assert_eq!(
            parse("/rename New name", &paths),
            Parsed::Rename("New name".into())
        );
        assert_eq!(parse("/compact", &paths), Parsed::Compact(String::new()));
        assert_eq!(parse("/nothing here", &paths), Parsed::Text);
        assert_eq!(parse("hello /model", &paths), Parsed::Text);
    }
}
