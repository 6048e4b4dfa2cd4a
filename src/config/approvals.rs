//! Approval rules (SPEC §12 "Approvals"): what `approvals:` in the config file or in an
//! agent file's frontmatter says about tool calls.
//!
//! ```yaml
//! approvals:
//!   bash: ask                      # a tool name
//!   "mcp__github__*": allow        # a glob over tool names
//!   tool-filesystem: allow         # a module id (every tool of the module)
//!   "bash(cargo test*)": allow     # a glob over a bash command
//!   "bash(rm *)": deny
//! ```
//!
//! Owns: the [`Decision`] values, parsing and validating an `approvals:` mapping into
//! [`Rules`] (every problem reported, quoting the bad key or value), the built-in
//! defaults ([`default_decision`]), warnings for keys that name no known tool or module,
//! and — in [`policy`] — how rules from several sources combine into one decision per
//! tool call. Does not own: asking the person (the engine's approval gate and the TUI
//! prompt), the trust of a project ([`super::trust`]), or which tier an agent file
//! belongs to (`agent::approvals` maps agent sources onto [`policy::Authority`]).

pub mod command;
pub mod deleters;
pub mod pattern;
pub mod policy;
pub mod save;
pub mod wrappers;

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::modules::{TOOL_MODULES, builtin_tool, builtin_tools, tool_module};

pub use policy::{ApprovalPolicy, Authority, DecidedBy, Grant, Grants, RuleSource, Verdict};

/// What happens to one tool call, ordered from least to most restrictive, so
/// `max` is "the most restrictive of".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run without asking.
    Allow,
    /// Ask the person first (headless: denied unless `--yes`).
    Ask,
    /// Never run; no answer and no `--yes` overrides it.
    Deny,
}

impl Decision {
    /// `allow`, `ask` or `deny`, as written in `approvals:`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Self::Allow),
            "ask" => Some(Self::Ask),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The built-in tools allowed (`true`) or asking (`false`) by default, in the order of
/// `config::modules::TOOL_MODULES` (SPEC §12: calls that only read or delegate are
/// allowed; MCP tools (`mcp__<server>__<tool>`) ask, and so does any tool arbor does
/// not know).
pub fn default_tools(allowed: bool) -> Vec<&'static str> {
    builtin_tools()
        .filter(|t| t.access.allowed_by_default() == allowed)
        .map(|t| t.name)
        .collect()
}

/// The input field holding the command string of `tool` when it takes command
/// pattern keys (`bash(…)`: `command`), from its `config::modules` row.
pub fn command_field(tool: &str) -> Option<&'static str> {
    builtin_tool(tool).and_then(|t| t.command_field)
}

/// The tools that take command pattern keys, in table order.
fn command_tools() -> Vec<&'static str> {
    builtin_tools()
        .filter(|t| t.command_field.is_some())
        .map(|t| t.name)
        .collect()
}

/// The built-in decision for `tool` when no rule matches: allow for a built-in tool
/// whose row in `config::modules` only reads or delegates, ask for everything else
/// (writes, `bash`, MCP tools, unknown tools).
pub fn default_decision(tool: &str) -> Decision {
    if builtin_tool(tool).is_some_and(|t| t.access.allowed_by_default()) {
        Decision::Allow
    } else {
        Decision::Ask
    }
}

/// What one key matches, from the least to the most specific.
#[derive(Debug, Clone)]
pub enum KeyKind {
    /// `tool-filesystem`: every tool of the module (a key starting with `tool-`).
    Module(String),
    /// `mcp__github__*`: a glob over tool names (a key with `*`, `?` or `[`).
    ToolGlob(GlobMatcher),
    /// `bash`: one tool.
    Tool(String),
    /// `bash(cargo test*)`: a glob over the command string of one tool's calls.
    Command {
        /// The tool (`bash`).
        tool: String,
        /// The glob: as `allow`, matched at a word boundary against each command of
        /// the script's plain reading; as `deny`/`ask`, against every command it runs
        /// (see [`pattern::CommandPattern`]).
        pattern: Box<pattern::CommandPattern>,
    },
}

impl KeyKind {
    /// How specific the key is: command pattern 4 > tool name 3 > tool glob 2 > module 1
    /// (the built-in default is 0).
    pub fn specificity(&self) -> u8 {
        match self {
            Self::Module(_) => 1,
            Self::ToolGlob(_) => 2,
            Self::Tool(_) => 3,
            Self::Command { .. } => 4,
        }
    }
}

/// One `key: decision` entry.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The key as written (`bash(cargo test*)`).
    pub key: String,
    pub kind: KeyKind,
    pub decision: Decision,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.decision == other.decision
    }
}

/// A parsed `approvals:` mapping, in file order, keys unique. Empty when absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    rules: Vec<Rule>,
}

/// One problem in an `approvals:` value; the message quotes the bad key or value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ApprovalIssue(pub String);

impl Rules {
    /// Parses an `approvals:` value: a mapping of keys (tool name, tool-name glob,
    /// module id, or `bash(glob)`) to `allow`, `ask` or `deny`. `null` is empty.
    ///
    /// Errors: every bad entry, each message starting `approvals:` and quoting the key
    /// and the bad value — `approvals: "bash": expected allow, ask or deny, got
    /// 'maybe'`; a pattern that does not compile; a command pattern on a tool other than
    /// `bash`; a value that is not a mapping.
    pub fn from_value(value: &Value) -> Result<Self, Vec<ApprovalIssue>> {
        let map = match value {
            Value::Null => return Ok(Self::default()),
            Value::Object(map) => map,
            other => {
                return Err(vec![ApprovalIssue(format!(
                    "approvals: expected a mapping of tool names, module ids or \"bash(pattern)\" \
                     to allow, ask or deny, got {}",
                    describe(other)
                ))]);
            }
        };
        let mut rules = Vec::with_capacity(map.len());
        let mut issues = Vec::new();
        for (key, value) in map {
            let decision = match value.as_str().and_then(Decision::parse) {
                Some(d) => Some(d),
                None => {
                    issues.push(ApprovalIssue(format!(
                        "approvals: \"{key}\": expected allow, ask or deny, got {}",
                        describe(value)
                    )));
                    None
                }
            };
            let kind = match parse_key(key) {
                Ok(kind) => Some(kind),
                Err(message) => {
                    issues.push(ApprovalIssue(format!("approvals: \"{key}\": {message}")));
                    None
                }
            };
            if let (Some(kind), Some(decision)) = (kind, decision) {
                rules.push(Rule {
                    key: key.clone(),
                    kind,
                    decision,
                });
            }
        }
        if issues.is_empty() {
            Ok(Self { rules })
        } else {
            Err(issues)
        }
    }

    /// The rules, in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Keys that name no tool or module arbor knows (a typo such as `bahs: deny` would
    /// otherwise silently not apply): one message per key. MCP tool names
    /// (`mcp__…`) and globs are never warned about.
    pub fn warnings(&self) -> Vec<String> {
        let known_tool =
            |t: &str| builtin_tool(t).is_some() || t.starts_with(super::modules::MCP_TOOL_PREFIX);
        self.rules
            .iter()
            .filter_map(|r| match &r.kind {
                KeyKind::Tool(t) if !known_tool(t) => Some(format!(
                    "approvals: \"{}\" names no tool arbor knows (known: {})",
                    r.key,
                    [default_tools(true), default_tools(false)]
                        .concat()
                        .join(", ")
                )),
                KeyKind::Module(m) if tool_module(m).is_none() => Some(format!(
                    "approvals: \"{}\" names no module arbor knows (known: {})",
                    r.key,
                    TOOL_MODULES
                        .iter()
                        .map(|m| m.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                _ => None,
            })
            .collect()
    }
}

impl Serialize for Rules {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.rules.len()))?;
        for rule in &self.rules {
            map.serialize_entry(&rule.key, rule.decision.as_str())?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Rules {
    /// Through [`Rules::from_value`]; every problem is reported, joined by `; `.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Rules::from_value(&value).map_err(|issues| {
            serde::de::Error::custom(
                issues
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
    }
}

/// A config value for messages: strings quoted, mappings and lists named (also what
/// `config::remote` says of a bad value).
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        Value::Object(_) => "a mapping".into(),
        Value::Array(_) => "a list".into(),
        other => other.to_string(),
    }
}

/// What is wrong with one `approvals:` key (the text leaves the key out: the issue
/// quotes it before).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Blank.
    #[error("empty key")]
    Empty,
    /// Spaces around it.
    #[error("leading or trailing spaces")]
    Spaces,
    /// `tool(pattern` without `)`.
    #[error("a command pattern is written tool(pattern), with a closing ')'")]
    Unclosed,
    /// A command pattern on a tool that runs no command.
    #[error("command patterns apply to {tools} only, not '{tool}'")]
    NotACommandTool {
        /// The tool named before `(`.
        tool: String,
        /// The tools that take command patterns, comma-separated.
        tools: String,
    },
    /// `tool()`.
    #[error("empty command pattern")]
    EmptyPattern,
    /// Spaces or a stray `)`.
    #[error("not a tool name, module id or tool(pattern)")]
    NotAKey,
    /// The glob does not compile (globset's reason).
    #[error("pattern does not compile: {0}")]
    Glob(String),
}

/// Reads one key; the error says what is wrong with it (without the key).
fn parse_key(key: &str) -> Result<KeyKind, KeyError> {
    if key.trim().is_empty() {
        return Err(KeyError::Empty);
    }
    if key != key.trim() {
        return Err(KeyError::Spaces);
    }
    if let Some(open) = key.find('(') {
        let tool = &key[..open];
        let Some(pattern) = key[open + 1..].strip_suffix(')') else {
            return Err(KeyError::Unclosed);
        };
        if command_field(tool).is_none() {
            return Err(KeyError::NotACommandTool {
                tool: tool.to_string(),
                tools: command_tools().join(", "),
            });
        }
        if pattern.trim().is_empty() {
            return Err(KeyError::EmptyPattern);
        }
        return Ok(KeyKind::Command {
            tool: tool.to_string(),
            pattern: Box::new(pattern::CommandPattern::new(pattern, compile)?),
        });
    }
    if key.contains(')') || key.chars().any(char::is_whitespace) {
        return Err(KeyError::NotAKey);
    }
    if key.starts_with("tool-") {
        return Ok(KeyKind::Module(key.to_string()));
    }
    if key.contains(['*', '?', '[']) {
        return Ok(KeyKind::ToolGlob(compile(key)?));
    }
    Ok(KeyKind::Tool(key.to_string()))
}

/// A glob where `*` also matches `/` (commands and tool names are not paths).
fn compile(pattern: &str) -> Result<GlobMatcher, KeyError> {
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map(|g: Glob| g.compile_matcher())
        .map_err(|e| KeyError::Glob(e.kind().to_string()))
}

#[cfg(test)]
mod tests;
