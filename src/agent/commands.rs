//! Custom slash commands from Markdown files (issue 29, Claude Code's format): prompt
//! templates the person keeps in `.claude/commands/` and `.amplifier/commands/` of the
//! project (and its parents) and `<config dir>/arbor/commands/` for the user.
//!
//! A file `review.md` is the command `/review`; a file in a subdirectory
//! `frontend/lint.md` is `/frontend:lint`. Frontmatter (optional) gives
//! `description`, `argument-hint`, `model` and `agent`; the body is the prompt, with
//! `$ARGUMENTS` replaced by everything after the name and `$1`, `$2`, … by its
//! whitespace-separated words. They are prompts only — no tools, no trust needed.
//!
//! A project's command files are read through `config::project_file` (issue 34): a
//! link leading out of the directory that holds `.claude/commands` (the project) or
//! to a private path, a FIFO or a device is skipped with a warning, never waited on,
//! and no file is read past [`MAX_BYTES`]. The user's own are read anywhere, still
//! non-blocking, regular files only, capped.
//!
//! Owns: finding the files ([`discover`], read afresh on every call so an edited file
//! counts at once), parsing them, and expanding one ([`CustomCommand::expand`],
//! [`expand_message`]). Does not own: the built-in commands (`tui::state`), which win
//! over a file of the same name, or sending the prompt (front ends).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::private::private_paths;
use crate::config::project_file::{self, Confinement};
use crate::paths::Paths;

/// Files read per directory at most.
const MAX_FILES: usize = 500;
/// Bytes of one command file read at most (the rest is cut, with a warning).
pub const MAX_BYTES: u64 = 256 * 1024;

/// Where a command file lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandScope {
    /// The project's `.claude/commands/` or `.amplifier/commands/`.
    Project,
    /// The user's `<config dir>/arbor/commands/`.
    User,
}

/// One command file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// Typed after `/` (`review`, `frontend:lint`).
    pub name: String,
    /// Frontmatter `description`, else the body's first non-empty line (cut).
    pub description: String,
    /// Frontmatter `argument-hint` (`[file]`), shown in the palette.
    pub argument_hint: Option<String>,
    /// Frontmatter `model`: the model the prompt asks for.
    pub model: Option<String>,
    /// Frontmatter `agent`: the agent the prompt asks for.
    pub agent: Option<String>,
    /// The prompt template.
    pub body: String,
    /// Project or user.
    pub scope: CommandScope,
    /// The file.
    pub path: PathBuf,
}

impl CustomCommand {
    /// `(project)` / `(user)` and the file, as help and the palette show the source.
    pub fn source(&self) -> String {
        let scope = match self.scope {
            CommandScope::Project => "project",
            CommandScope::User => "user",
        };
        format!("{scope}: {}", self.path.display())
    }

    /// The prompt for `/name args`: `$ARGUMENTS` → `args` (trimmed), `$1`…`$9` → its
    /// words (missing ones empty). A body without `$ARGUMENTS` or `$N` gets non-empty
    /// `args` appended on a line of its own (Claude Code does the same).
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        let words: Vec<&str> = args.split_whitespace().collect();
        let mut out = String::with_capacity(self.body.len() + args.len());
        let mut used = false;
        let mut rest = self.body.as_str();
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(args);
                used = true;
                rest = tail;
            } else if let Some(d) = after
                .chars()
                .next()
                .and_then(|c| c.to_digit(10))
                .filter(|d| *d > 0)
            {
                let index = usize::try_from(d - 1).unwrap_or(usize::MAX);
                out.push_str(words.get(index).copied().unwrap_or(""));
                used = true;
                rest = &after[1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        let mut out = out.trim().to_string();
        if !used && !args.is_empty() {
            out.push_str("\n\n");
            out.push_str(args);
        }
        out
    }
}

/// The command directories of `paths`, highest precedence first: the project's
/// (`cwd` and each parent up to the filesystem root: `.claude/commands`, then
/// `.amplifier/commands`), then the user's `<config dir>/arbor/commands`.
pub fn command_dirs(paths: &Paths) -> Vec<(PathBuf, CommandScope)> {
    let mut dirs = Vec::new();
    let user = user_dir(paths);
    for dir in paths.cwd.ancestors() {
        for sub in [".claude/commands", ".amplifier/commands"] {
            let d = dir.join(sub);
            if Some(&d) != user.as_ref() && d.is_dir() {
                dirs.push((d, CommandScope::Project));
            }
        }
    }
    if let Some(user) = user {
        dirs.push((user, CommandScope::User));
    }
    dirs
}

/// `<config dir>/arbor/commands` (beside `themes/`).
fn user_dir(paths: &Paths) -> Option<PathBuf> {
    paths.themes_dir.parent().map(|d| d.join("commands"))
}

/// The commands found by [`discover_reporting`], and the files skipped.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// Every command, sorted by name (see [`discover`]).
    pub commands: Vec<CustomCommand>,
    /// One line per command file refused or unreadable (a link out of the project, a
    /// private path, a FIFO …), with the reason; files cut at [`MAX_BYTES`] too.
    pub skipped: Vec<String>,
}

/// Every command of `paths`' directories, read now; the first of a name wins
/// ([`command_dirs`] order), sorted by name. Files that cannot or may not be read are
/// skipped (logged; [`discover_reporting`] returns them).
///
/// A project's file is read only inside the directory holding its `.claude` (or
/// `.amplifier`) and never from a private path (`config::private`, with the home
/// directory from `HOME`).
pub fn discover(paths: &Paths) -> Vec<CustomCommand> {
    let found = discover_reporting(paths);
    for why in &found.skipped {
        tracing::warn!("command file: {why}");
    }
    found.commands
}

/// [`discover`], with the files skipped named rather than logged.
pub fn discover_reporting(paths: &Paths) -> Discovered {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let private = private_paths(paths, home.as_deref());
    let mut found = Discovered::default();
    for (dir, scope) in command_dirs(paths) {
        let within = match scope {
            CommandScope::User => Confinement::unconfined(),
            CommandScope::Project => Confinement {
                // `<project>/.claude/commands`: confined to `<project>`.
                root: dir
                    .parent()
                    .and_then(Path::parent)
                    .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())),
                private: private.clone(),
            },
        };
        for file in md_files(&dir) {
            let Some(command) = read(&dir, &file, scope, &within, &mut found.skipped) else {
                continue;
            };
            if !found.commands.iter().any(|c| c.name == command.name) {
                found.commands.push(command);
            }
        }
    }
    found.commands.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The command `/name` of `paths`, read now.
pub fn find(paths: &Paths, name: &str) -> Option<CustomCommand> {
    discover(paths).into_iter().find(|c| c.name == name)
}

/// When `message` is `/name args` for a command of `paths` (read now): that command
/// and its expanded prompt. Front ends check their built-in commands first.
pub fn expand_message(paths: &Paths, message: &str) -> Option<(CustomCommand, String)> {
    let (found, skipped) = expand_message_reporting(paths, message);
    for why in &skipped {
        tracing::warn!("command file: {why}");
    }
    found
}

/// [`expand_message`], with the command files skipped while looking (see
/// [`Discovered::skipped`]) returned rather than logged; nothing is read unless
/// `message` starts with `/name`.
pub fn expand_message_reporting(
    paths: &Paths,
    message: &str,
) -> (Option<(CustomCommand, String)>, Vec<String>) {
    let Some(rest) = message.trim_start().strip_prefix('/') else {
        return (None, Vec::new());
    };
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, args) = rest.split_at(end);
    if name.is_empty() {
        return (None, Vec::new());
    }
    let found = discover_reporting(paths);
    let command = found.commands.into_iter().find(|c| c.name == name);
    let expanded = command.map(|command| {
        let prompt = command.expand(args);
        (command, prompt)
    });
    (expanded, found.skipped)
}

fn md_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.filter_map(Result::ok) {
            if out.len() >= MAX_FILES {
                return out;
            }
            let path = entry.path();
            let hidden = path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if hidden {
                continue;
            }
            if kind.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The command of `file` in `dir`, read under `within`; `None` when it cannot be read
/// (the reason added to `skipped`, unless it is gone) or named.
fn read(
    dir: &Path,
    file: &Path,
    scope: CommandScope,
    within: &Confinement,
    skipped: &mut Vec<String>,
) -> Option<CustomCommand> {
    let text = match project_file::read(file, within, MAX_BYTES) {
        Ok(read) => {
            if read.cut {
                skipped.push(format!("{} cut at {MAX_BYTES} bytes", file.display()));
            }
            read.text()
        }
        Err(e) => {
            if !e.is_not_found() {
                skipped.push(e.to_string());
            }
            return None;
        }
    };
    let relative = file.strip_prefix(dir).ok()?.with_extension("");
    let name = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(":");
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let (meta, body) = match super::frontmatter::split(&text) {
        Ok(fm) => (
            crate::config::yaml::from_str::<Value>(&fm.yaml).unwrap_or(Value::Null),
            fm.body.to_string(),
        ),
        Err(_) => (Value::Null, text.clone()),
    };
    let field = |key: &str| {
        meta.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let description = field("description").unwrap_or_else(|| {
        let first = body
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        first
            .trim_start_matches('#')
            .trim()
            .chars()
            .take(80)
            .collect()
    });
    Some(CustomCommand {
        name,
        description,
        argument_hint: field("argument-hint"),
        model: field("model"),
        agent: field("agent"),
        body,
        scope,
        path: file.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(root: &Path) -> Paths {
        let project = root.join("project");
        std::fs::create_dir_all(&project).unwrap();
        let home = root.join("home").to_string_lossy().into_owned();
        Paths::from_env_map(&|k| (k == "HOME").then(|| home.clone()), project)
    }

    #[test]
    fn files_become_commands_with_arguments_expanded() {
        let tmp = tempfile::tempdir().unwrap();
        let p = paths(tmp.path());
        let project = p.cwd.join(".claude/commands");
        std::fs::create_dir_all(project.join("git")).unwrap();
        std::fs::write(
            project.join("review.md"),
            "---\ndescription: Review a file\nargument-hint: \"[file]\"\nmodel: gpt-4o\n---\nReview $ARGUMENTS carefully; start with $1. Cost: $5.\n",
        )
        .unwrap();
        std::fs::write(
            project.join("git/log.md"),
            "# Summarize the log\nSummarize.\n",
        )
        .unwrap();
        let user = p.themes_dir.parent().unwrap().join("commands");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(user.join("review.md"), "user's review\n").unwrap();
        std::fs::write(user.join("hi.md"), "Say hi\n").unwrap();

        let all = discover(&p);
        let names: Vec<_> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["git:log", "hi", "review"]);
        let review = &all[2];
        assert_eq!(review.scope, CommandScope::Project, "the project's wins");
        assert_eq!(review.description, "Review a file");
        assert_eq!(review.argument_hint.as_deref(), Some("[file]"));
        assert_eq!(review.model.as_deref(), Some("gpt-4o"));
        assert_eq!(all[0].description, "Summarize the log");
        let (_, prompt) = expand_message(&p, "/review src/a.rs src/b.rs").unwrap();
        assert_eq!(
            prompt,
            "Review src/a.rs src/b.rs carefully; start with src/a.rs. Cost: ."
        );
        let (_, prompt) = expand_message(&p, "/hi there").unwrap();
        assert_eq!(prompt, "Say hi\n\nthere");
        assert!(expand_message(&p, "/nope x").is_none());
        assert!(expand_message(&p, "review").is_none());

        // Edited: read again at once.
        std::fs::write(project.join("review.md"), "Look at $ARGUMENTS\n").unwrap();
        assert_eq!(expand_message(&p, "/review x").unwrap().1, "Look at x");
    }
}
