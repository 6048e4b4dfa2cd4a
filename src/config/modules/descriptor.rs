//! What the tool table says about any tool by name ([`describe`]): a built-in tool's
//! row, or the descriptor every MCP tool ([`MCP_TOOL`]) or unknown tool
//! ([`OTHER_TOOL`]) gets; and the parts of a descriptor — ACP kind ([`ToolKind`]) and
//! approval summary ([`Summary`]).
//!
//! Owns: those lookups, the MCP tool name convention (`mcp__<server>__<tool>`), and
//! the one line a call's summary is. Does not own: the rows (`super`), what a front
//! end makes of a kind (`acp` maps it to ACP's), or matching hooks (`hooks`).

use serde_json::Value;

use super::{Access, BuiltinTool, builtin_tool};
use crate::session::protocol::TaskInput;

/// The prefix of every MCP tool name (`mcp__<server>__<tool>`).
pub const MCP_TOOL_PREFIX: &str = "mcp__";

/// The server and tool parts of an MCP tool name (`mcp__github__search` →
/// `(github, search)`); `None` for other tools.
pub fn mcp_server_of(tool_name: &str) -> Option<(&str, &str)> {
    tool_name.strip_prefix(MCP_TOOL_PREFIX)?.split_once("__")
}

/// What kind of call a tool makes, as ACP (the Agent Client Protocol's `ToolKind`)
/// groups them; `acp` maps each to the schema's variant of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Reading files or data.
    Read,
    /// Modifying files or content.
    Edit,
    /// Removing files or data.
    Delete,
    /// Moving or renaming files.
    Move,
    /// Searching for information.
    Search,
    /// Running commands or code.
    Execute,
    /// Internal reasoning or planning (a checklist, a delegation).
    Think,
    /// Retrieving external data.
    Fetch,
    /// Anything else.
    Other,
}

/// How the one line an approval prompt shows for a call is made from its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summary {
    /// The tool's name.
    Name,
    /// The first line of the tool's `command_field` (`cargo test`), with ` …` after
    /// it when the command has more lines.
    Command,
    /// `VERB PATH` (`write src/a.rs`), PATH the input's `file_path` (else `path`).
    File(&'static str),
    /// `TOOL AGENT: INSTRUCTION` (its first line), from a delegation's input.
    Delegation,
    /// `MCP <server> · <tool> <arguments as JSON>`.
    Mcp,
    /// `TOOL VALUE`: the tool's name and the input's string field (`web_fetch
    /// https://…`).
    Input(&'static str),
    /// `TOOL "VALUE"`: the same, quoted (`web_search "rust async"`).
    Quoted(&'static str),
}

/// The descriptor of every MCP tool (`mcp__<server>__<tool>`): arbor cannot tell
/// what it does, so it asks by default; shown as `other`.
pub const MCP_TOOL: BuiltinTool = BuiltinTool {
    name: MCP_TOOL_PREFIX,
    access: Access::Unknown,
    command_field: None,
    kind: ToolKind::Other,
    // Claude Code names MCP tools `mcp__<server>__<tool>` too: a matcher sees the name.
    hook_name: None,
    summary: Summary::Mcp,
};

/// The descriptor of a tool the table does not know.
pub const OTHER_TOOL: BuiltinTool = BuiltinTool {
    name: "",
    access: Access::Unknown,
    command_field: None,
    kind: ToolKind::Other,
    hook_name: None,
    summary: Summary::Name,
};

/// The descriptor of tool `name`: its row in the tool table, [`MCP_TOOL`] for an MCP
/// tool, else [`OTHER_TOOL`].
pub fn describe(name: &str) -> &'static BuiltinTool {
    builtin_tool(name).unwrap_or(if mcp_server_of(name).is_some() {
        &MCP_TOOL
    } else {
        &OTHER_TOOL
    })
}

impl BuiltinTool {
    /// The one line saying what a call of this tool (called `name`, the name the
    /// model used) with `input` does, by its [`Summary`]; the name when the input
    /// lacks what the summary needs.
    pub fn summarize(&self, name: &str, input: &Value) -> String {
        let str_of = |key: &str| input.get(key).and_then(Value::as_str);
        match self.summary {
            Summary::Name => name.to_string(),
            Summary::Command => match self.command_field.and_then(str_of) {
                Some(command) => {
                    let first = command.lines().next().unwrap_or_default().trim();
                    if command.trim().lines().count() > 1 {
                        format!("{first} …")
                    } else {
                        first.to_string()
                    }
                }
                None => name.to_string(),
            },
            Summary::File(verb) => match str_of("file_path").or_else(|| str_of("path")) {
                Some(path) => format!("{verb} {path}"),
                None => name.to_string(),
            },
            Summary::Delegation => {
                let task = TaskInput::of(input);
                let first = |s: &str| s.lines().next().unwrap_or_default().to_string();
                match (task.agent, task.instruction) {
                    (Some(agent), Some(what)) => format!("{name} {agent}: {}", first(&what)),
                    (Some(agent), None) => format!("{name} {agent}"),
                    _ => name.to_string(),
                }
            }
            Summary::Input(field) => match str_of(field) {
                Some(value) => format!("{name} {}", value.trim()),
                None => name.to_string(),
            },
            Summary::Quoted(field) => match str_of(field) {
                Some(value) => format!("{name} \"{}\"", value.trim()),
                None => name.to_string(),
            },
            Summary::Mcp => match mcp_server_of(name) {
                Some((server, tool)) => {
                    let args = match input {
                        Value::Object(map) if map.is_empty() => String::new(),
                        Value::Null => String::new(),
                        other => format!(" {other}"),
                    };
                    format!("MCP {server} · {tool}{args}")
                }
                None => name.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{TOOL_MODULES, builtin_tools};
    use super::*;
    use serde_json::json;

    fn summary(name: &str, input: &Value) -> String {
        describe(name).summarize(name, input)
    }

    #[test]
    fn summaries_come_from_the_table() {
        let bash = json!({"command": "cargo test\n  && rm -rf target"});
        assert_eq!(summary("bash", &bash), "cargo test …");
        assert_eq!(summary("bash", &json!({"command": " ls "})), "ls");
        assert_eq!(summary("bash", &json!({})), "bash");
        let file = json!({"file_path": "src/a.rs", "content": "x"});
        assert_eq!(summary("write_file", &file), "write src/a.rs");
        assert_eq!(summary("edit_file", &file), "edit src/a.rs");
        assert_eq!(summary("read_file", &json!({"path": "b"})), "read b");
        let task = json!({"agent": "zen", "instruction": "look\nclosely"});
        assert_eq!(summary("task", &task), "task zen: look");
        assert_eq!(summary("delegate", &task), "delegate zen: look");
        assert_eq!(summary("task", &json!({"agent": "zen"})), "task zen");
        assert_eq!(summary("mcp__x__y", &json!({})), "MCP x · y");
        assert_eq!(
            summary("mcp__github__search", &json!({"q": "bug"})),
            r#"MCP github · search {"q":"bug"}"#
        );
        assert_eq!(summary("grep", &json!({"pattern": "x"})), "grep");
        assert_eq!(summary("mystery", &json!({"command": "rm"})), "mystery");
    }

    /// The kinds, hook names and access ACP, hooks and approvals read, by name: a
    /// tool the table lists gets its row; MCP and unknown tools the defaults.
    #[test]
    fn every_tool_is_described_by_its_row() {
        for t in builtin_tools() {
            assert_eq!(describe(t.name), t, "{}", t.name);
            assert_ne!(t.access, Access::Unknown, "{}", t.name);
        }
        assert_eq!(describe("list_directory").kind, ToolKind::Read);
        assert_eq!(describe("delegate").kind, ToolKind::Think);
        assert_eq!(describe("task").hook_name, Some("Task"));
        assert_eq!(describe("list_directory").hook_name, Some("LS"));
        assert!(describe("delegate").delegates() && describe("task").delegates());
        assert!(!describe("transfer_to_agent").delegates());
        assert!(describe("edit_file").writes() && !describe("bash").writes());
        assert_eq!(describe("mcp__github__search"), &MCP_TOOL);
        assert_eq!(describe("mystery"), &OTHER_TOOL);
        assert!(!MCP_TOOL.access.allowed_by_default());
        let commands: Vec<&str> = TOOL_MODULES
            .iter()
            .flat_map(|m| m.tools)
            .filter(|t| t.summary == Summary::Command)
            .map(|t| t.name)
            .collect();
        let with_field: Vec<&str> = builtin_tools()
            .filter(|t| t.command_field.is_some())
            .map(|t| t.name)
            .collect();
        assert_eq!(commands, with_field, "a command summary needs its field");
    }
}
