//! The `hooks:` configuration (Claude Code's shape): event → matchers → commands.
//!
//! ```yaml
//! hooks:
//!   PreToolUse:
//!     - matcher: bash            # a regex over tool names; absent, "" or "*": every tool
//!       hooks: [{type: command, command: "~/bin/check.sh", timeout: 60}]
//! ```
//!
//! Owns: parsing that shape from the user's `config.yaml` (`hooks:`) and from a trusted
//! project's `.amplifier/settings.yaml` / `.claude/settings.json` (their `hooks` key),
//! which hooks a tool name matches, and where each hook came from. Does not own:
//! whether a project is trusted (`config::trust`), or running hooks (`hooks::run`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

/// A hook's timeout when its entry gives none (Claude Code's default): 60 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest timeout an entry may ask for: 10 minutes.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// The project settings files that may hold `hooks`, relative to a project root
/// (both are power files: they need trust, `config::trust`).
pub use crate::config::trust::SETTINGS_FILES as PROJECT_SETTINGS;

/// The events a hook can be attached to (Claude Code's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    /// Before a tool call runs (and before it asks for approval); exit 2 blocks it.
    PreToolUse,
    /// After a tool call returned; gets `tool_response`.
    PostToolUse,
    /// A person's prompt, before the model sees it; exit 2 blocks it.
    UserPromptSubmit,
    /// A session started or resumed.
    SessionStart,
    /// A turn ended.
    Stop,
    /// A sub-session was spawned.
    SubagentStart,
    /// A sub-session's turn ended.
    SubagentStop,
    /// Before the context is compacted.
    PreCompact,
    /// A session needs the person (an approval).
    Notification,
}

impl HookEvent {
    /// Every event, in the order above.
    pub const ALL: [HookEvent; 9] = [
        Self::PreToolUse,
        Self::PostToolUse,
        Self::UserPromptSubmit,
        Self::SessionStart,
        Self::Stop,
        Self::SubagentStart,
        Self::SubagentStop,
        Self::PreCompact,
        Self::Notification,
    ];

    /// The config and `hook_event_name` spelling (`PreToolUse`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::SessionStart => "SessionStart",
            Self::Stop => "Stop",
            Self::SubagentStart => "SubagentStart",
            Self::SubagentStop => "SubagentStop",
            Self::PreCompact => "PreCompact",
            Self::Notification => "Notification",
        }
    }

    /// The event named `name` (exact spelling), if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// Where a hook was configured, which decides how it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookSource {
    /// The user's own `config.yaml`: runs as the user, unconfined (like Claude Code).
    User,
    /// A trusted project's settings file (absolute path): runs in the kernel sandbox,
    /// like `bash`.
    Project(PathBuf),
}

impl HookSource {
    /// `user`, or `project`, as events name it.
    pub fn label(&self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project(_) => "project",
        }
    }
}

/// One command hook.
#[derive(Debug, Clone)]
pub struct HookCommand {
    /// The shell command (`sh -c`); a leading `~/` is the user's home.
    pub command: String,
    /// How long it may run before it is killed (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// Where it was configured.
    pub source: HookSource,
}

/// One `{matcher, hooks}` entry of an event.
#[derive(Debug, Clone)]
struct Matcher {
    /// The matcher as written (`*` when absent or empty).
    raw: String,
    /// `None`: every tool (and the events without tools).
    pattern: Option<Regex>,
    hooks: Vec<HookCommand>,
}

/// A `hooks:` section that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HookConfigError {
    /// `hooks` is not a mapping of event names.
    #[error("{origin}: `hooks` must be a mapping of event names to matcher lists")]
    NotAMapping { origin: String },
    /// An event name arbor does not know.
    #[error("{origin}: unknown hook event `{name}` (known: {known})")]
    UnknownEvent {
        origin: String,
        name: String,
        known: String,
    },
    /// A matcher entry is malformed.
    #[error("{origin}: hooks.{event}[{index}]: {problem}")]
    BadEntry {
        origin: String,
        event: &'static str,
        index: usize,
        problem: EntryProblem,
    },
}

/// What is wrong with one entry of an event's matcher list (the `problem` of
/// [`HookConfigError::BadEntry`]).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EntryProblem {
    /// The event's value is not a list.
    #[error("must be a list of {{matcher, hooks}}")]
    NotAList,
    /// The entry is not a mapping.
    #[error("must be a mapping {{matcher, hooks}}")]
    NotAMapping,
    /// `matcher` is a string that is no regex.
    #[error("bad matcher `{pattern}`: {reason}")]
    BadMatcher { pattern: String, reason: String },
    /// `matcher` is not a string (the value as JSON).
    #[error("`matcher` must be a string, got {0}")]
    MatcherNotAString(String),
    /// `hooks` is absent or not a list.
    #[error("needs `hooks: [{{type: command, command: …}}]`")]
    NoHooks,
    /// A hook of another `type` than `command`.
    #[error("hook type `{0}` is not supported (only `command`)")]
    UnsupportedType(String),
    /// A hook without a command.
    #[error("a hook needs a non-empty `command`")]
    NoCommand,
    /// `timeout` is not a positive number (the value as JSON).
    #[error("`timeout` must be a positive number of seconds, got {0}")]
    BadTimeout(String),
}

/// A project settings file whose hooks cannot be used (each text names the file).
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file is larger than arbor reads.
    #[error("{}: larger than {max} bytes", path.display())]
    TooLarge { path: PathBuf, max: u64 },
    /// It could not be read (not a regular file, unreadable, outside its project).
    #[error(transparent)]
    Read(#[from] crate::config::project_file::ProjectFileError),
    /// It is not JSON (`.json`) or YAML.
    #[error("{}: {problem}", path.display())]
    Parse { path: PathBuf, problem: String },
    /// Its `hooks` value is malformed.
    #[error(transparent)]
    Hooks(#[from] HookConfigError),
}

/// Every configured hook of a process, by event.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    entries: Vec<(HookEvent, Matcher)>,
}

impl Hooks {
    /// Whether no hook is configured at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parses a `hooks` value (`null` is none) configured at `source`; `origin` names
    /// the file in errors.
    ///
    /// Errors: [`HookConfigError`] naming the first bad event or entry.
    pub fn parse(
        value: &Value,
        source: &HookSource,
        origin: &str,
    ) -> Result<Self, HookConfigError> {
        let origin = origin.to_string();
        let map = match value {
            Value::Null => return Ok(Self::default()),
            Value::Object(map) => map,
            _ => return Err(HookConfigError::NotAMapping { origin }),
        };
        let mut entries = Vec::new();
        for (name, list) in map {
            let event = HookEvent::parse(name).ok_or_else(|| HookConfigError::UnknownEvent {
                origin: origin.clone(),
                name: name.clone(),
                known: HookEvent::ALL.map(HookEvent::as_str).join(", "),
            })?;
            let items = match list {
                Value::Array(items) => items.as_slice(),
                Value::Null => &[],
                _ => {
                    return Err(HookConfigError::BadEntry {
                        origin,
                        event: event.as_str(),
                        index: 0,
                        problem: EntryProblem::NotAList,
                    });
                }
            };
            for (index, item) in items.iter().enumerate() {
                let bad = |problem: EntryProblem| HookConfigError::BadEntry {
                    origin: origin.clone(),
                    event: event.as_str(),
                    index,
                    problem,
                };
                entries.push((event, parse_matcher(item, source).map_err(bad)?));
            }
        }
        Ok(Self { entries })
    }

    /// Adds `other`'s hooks after these (user hooks first, then the project's).
    pub fn extend(&mut self, other: Hooks) {
        self.entries.extend(other.entries);
    }

    /// Every hook in config order with its event and its matcher as written (`*`:
    /// every tool), for listings (`arbor doctor`, the TUI's `/hooks`).
    pub fn listed(&self) -> Vec<(HookEvent, String, HookCommand)> {
        self.entries
            .iter()
            .flat_map(|(event, m)| m.hooks.iter().map(|h| (*event, m.raw.clone(), h.clone())))
            .collect()
    }

    /// The hooks of `event` whose matcher matches `tool` (a tool event) — by arbor's
    /// name or Claude Code's name of the same tool ([`claude_alias`]) — in config order.
    /// For events without a tool (`tool` is `None`) every entry of the event.
    pub fn matching(&self, event: HookEvent, tool: Option<&str>) -> Vec<HookCommand> {
        self.entries
            .iter()
            .filter(|(e, _)| *e == event)
            .filter(|(_, m)| match (&m.pattern, tool) {
                (None, _) | (_, None) => true,
                (Some(re), Some(tool)) => {
                    re.is_match(tool) || claude_alias(tool).is_some_and(|a| re.is_match(a))
                }
            })
            .flat_map(|(_, m)| m.hooks.iter().cloned())
            .collect()
    }
}

/// Claude Code's name of arbor's built-in tool `tool` (`bash` → `Bash`), so hook
/// scripts written for Claude Code match: its descriptor's `hook_name` in the tool
/// table (`config::modules`); `None` for tools without one.
pub fn claude_alias(tool: &str) -> Option<&'static str> {
    crate::config::modules::describe(tool).hook_name
}

fn parse_matcher(item: &Value, source: &HookSource) -> Result<Matcher, EntryProblem> {
    let obj = item.as_object().ok_or(EntryProblem::NotAMapping)?;
    let raw = match obj.get("matcher") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => "*".to_string(),
    };
    let pattern = match obj.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() || s == "*" => None,
        Some(Value::String(s)) => {
            Some(
                Regex::new(&format!("^(?:{s})$")).map_err(|e| EntryProblem::BadMatcher {
                    pattern: s.clone(),
                    reason: e.to_string(),
                })?,
            )
        }
        Some(other) => return Err(EntryProblem::MatcherNotAString(other.to_string())),
    };
    let list = obj
        .get("hooks")
        .and_then(Value::as_array)
        .ok_or(EntryProblem::NoHooks)?;
    let mut hooks = Vec::new();
    for hook in list {
        let kind = hook
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("command");
        if kind != "command" {
            return Err(EntryProblem::UnsupportedType(kind.to_string()));
        }
        let command = hook
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
            .ok_or(EntryProblem::NoCommand)?;
        let timeout = match hook.get("timeout") {
            None | Some(Value::Null) => DEFAULT_TIMEOUT,
            Some(v) => match v.as_f64() {
                Some(s) if s.is_finite() && s > 0.0 => {
                    Duration::from_secs_f64(s.min(MAX_TIMEOUT.as_secs_f64()))
                }
                _ => return Err(EntryProblem::BadTimeout(v.to_string())),
            },
        };
        hooks.push(HookCommand {
            command: command.to_string(),
            timeout,
            source: source.clone(),
        });
    }
    Ok(Matcher {
        raw,
        pattern,
        hooks,
    })
}

/// Bytes of a project settings file read at most.
const MAX_SETTINGS_BYTES: u64 = 1 << 20;

/// The `hooks` value of a project settings file at `path` (YAML or JSON by
/// extension; a missing file is `null`).
///
/// Errors: [`SettingsError`], one line naming the file.
pub fn read_settings_hooks(path: &Path) -> Result<Value, SettingsError> {
    // Non-blocking, regular files only, capped (`config::project_file`, issue 34).
    let within = crate::config::project_file::Confinement::unconfined();
    let text = match crate::config::project_file::read(path, &within, MAX_SETTINGS_BYTES) {
        Ok(read) if read.cut => {
            return Err(SettingsError::TooLarge {
                path: path.to_path_buf(),
                max: MAX_SETTINGS_BYTES,
            });
        }
        Ok(read) => read.text(),
        Err(e) if e.is_not_found() => return Ok(Value::Null),
        Err(e) => return Err(e.into()),
    };
    let parse = |problem: String| SettingsError::Parse {
        path: path.to_path_buf(),
        problem,
    };
    let value: Value = if path.extension().is_some_and(|x| x == "json") {
        serde_json::from_str(&text).map_err(|e| parse(e.to_string()))?
    } else {
        crate::config::yaml::from_str(&text).map_err(|e| parse(e.to_string()))?
    };
    Ok(value.get("hooks").cloned().unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A matcher written with a Claude Code tool name matches the arbor tool whose
    /// descriptor in the tool table carries that name, and only that tool.
    #[test]
    fn claude_code_names_come_from_the_tool_table() {
        for tool in crate::config::modules::builtin_tools() {
            let Some(alias) = tool.hook_name else {
                continue;
            };
            let hooks = Hooks::parse(
                &json!({"PreToolUse": [{"matcher": alias, "hooks": [{"command": "x"}]}]}),
                &HookSource::User,
                "config.yaml",
            )
            .unwrap();
            let matched: Vec<&str> = crate::config::modules::builtin_tools()
                .map(|t| t.name)
                .filter(|t| !hooks.matching(HookEvent::PreToolUse, Some(t)).is_empty())
                .collect();
            assert_eq!(matched, [tool.name], "{alias}");
        }
        assert_eq!(claude_alias("todo"), Some("TodoWrite"));
        assert_eq!(claude_alias("list_directory"), Some("LS"));
        assert_eq!(claude_alias("mcp__calc__add"), None);
    }

    #[test]
    fn matchers_select_by_regex_alias_or_everything() {
        let hooks = Hooks::parse(
            &json!({
                "PreToolUse": [
                    {"matcher": "bash", "hooks": [{"type": "command", "command": "a"}]},
                    {"matcher": "Edit|Write", "hooks": [{"command": "b", "timeout": 5}]},
                    {"hooks": [{"command": "c"}]},
                    {"matcher": "mcp__calc__.*", "hooks": [{"command": "d"}]}
                ],
                "Stop": [{"hooks": [{"command": "e"}]}]
            }),
            &HookSource::User,
            "config.yaml",
        )
        .unwrap();
        let names = |tool| {
            hooks
                .matching(HookEvent::PreToolUse, Some(tool))
                .into_iter()
                .map(|h| h.command)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("bash"), ["a", "c"]);
        assert_eq!(names("write_file"), ["b", "c"]);
        assert_eq!(names("bash2"), ["c"]);
        assert_eq!(names("mcp__calc__add"), ["c", "d"]);
        let b = &hooks.matching(HookEvent::PreToolUse, Some("edit_file"))[0];
        assert_eq!(b.timeout, Duration::from_secs(5));
        assert_eq!(hooks.matching(HookEvent::Stop, None).len(), 1);
        assert!(
            hooks
                .matching(HookEvent::PostToolUse, Some("bash"))
                .is_empty()
        );
    }

    #[test]
    fn bad_sections_name_what_is_wrong() {
        let err = Hooks::parse(&json!({"PreTool": []}), &HookSource::User, "c.yaml").unwrap_err();
        assert!(
            err.to_string().contains("unknown hook event `PreTool`"),
            "{err}"
        );
        let err = Hooks::parse(
            &json!({"PreToolUse": [{"matcher": "(", "hooks": [{"command": "x"}]}]}),
            &HookSource::User,
            "c.yaml",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("hooks.PreToolUse[0]: bad matcher"),
            "{err}"
        );
        let err = Hooks::parse(
            &json!({"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]}),
            &HookSource::User,
            "c.yaml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("not supported"), "{err}");
        assert!(Hooks::parse(&json!(3), &HookSource::User, "c").is_err());
    }
}
