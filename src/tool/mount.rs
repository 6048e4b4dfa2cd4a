//! Mounting tools from a mount plan: which tools one session's model may call.
//!
//! Owns: mapping `tools[]` module entries — the `Mount::Plan` rows of
//! `config::modules::TOOL_MODULES`, whose tools its tests check it mounts — to tool
//! instances (`tool-filesystem` →
//! `read_file`, `list_directory`, and unless its config says `read_only: true`,
//! `write_file`, `edit_file`; `tool-search` → `glob`, `grep`; `tool-bash` → `bash`; `tool-todo` → `todo`; `tool-web` → `web_fetch` (and `web_search` with config `web: {search_url}`);
//! `tool-task` → `task` and `tool-delegate` → `delegate` below `max_recursion_depth`; `tool-mcp` mounts nothing here: its
//! servers' tools need the servers started, which the engine does through
//! `tool::mcp`), and the error text for a call to a tool that is not
//! mounted. Does not own: running calls (`engine::turn`) or building the task tool
//! (the engine passes a constructor, since the task tool needs the runtime).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::MountPlan;
use crate::sandbox::Sandbox;

use super::task::{self, TaskConfig};
use super::{Tool, ToolSpec, bash, delegate, filesystem, search, todo, web};

/// Builds the delegation tool of a module (`tool-task` or `tool-delegate`, the first
/// argument) from its config; the engine's, since delegation needs the runtime.
pub type DelegationBuilder<'a> = dyn Fn(&str, TaskConfig) -> Arc<dyn Tool> + 'a;

/// The tools mounted for one session's turn, in mount order, unique by name.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
    /// Tool name → why it is not mounted (e.g. `task` at the depth limit).
    unavailable: BTreeMap<String, String>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("tools", &self.names())
            .field("unavailable", &self.unavailable)
            .finish()
    }
}

impl ToolSet {
    /// Mounts the built-in modules named in `plan.tools()` for a session at `depth`.
    /// `task` builds the delegation tool of a module (`tool-task` or `tool-delegate`)
    /// from its config (`None`: delegation is not wired,
    /// e.g. in tool-only tests). Modules arbor does not implement are skipped; the
    /// agent registry reports them.
    pub fn mount(plan: &MountPlan, depth: u32, task: Option<&DelegationBuilder>) -> Self {
        Self::mount_sandboxed(plan, depth, task, &Sandbox::default())
    }

    /// [`ToolSet::mount`] with `bash` confined by `sandbox` to the plan's
    /// `allowed_write_paths` (its `tool-filesystem` entry's; `["."]` when it has none;
    /// an unusable entry leaves bash only its temp dir, as it leaves `write_file`
    /// nothing).
    pub fn mount_sandboxed(
        plan: &MountPlan,
        depth: u32,
        task: Option<&DelegationBuilder>,
        sandbox: &Sandbox,
    ) -> Self {
        Self::mount_with(plan, depth, task, sandbox, web::WebConfig::default())
    }

    /// [`ToolSet::mount_sandboxed`] with `web_fetch` under the user's `web:` config.
    pub fn mount_with(
        plan: &MountPlan,
        depth: u32,
        task: Option<&DelegationBuilder>,
        sandbox: &Sandbox,
        web_config: web::WebConfig,
    ) -> Self {
        let writable: Vec<String> = plan
            .tools()
            .into_iter()
            .find(|e| e.module == filesystem::MODULE)
            .map(|e| filesystem::write::WriteConfig::from_config(&e.config))
            .unwrap_or_default()
            .roots()
            .map(<[String]>::to_vec)
            .unwrap_or_default();
        let mut set = Self::default();
        for entry in plan.tools() {
            match entry.module.as_str() {
                filesystem::MODULE => set.extend(filesystem::tools(&entry.config)),
                search::MODULE => set.extend(search::tools()),
                bash::MODULE => set.extend(bash::tools(&entry.config, sandbox, writable.clone())),
                todo::MODULE => set.extend(todo::tools()),
                web::MODULE => set.extend(web::tools(&web_config)),
                module @ (task::MODULE | delegate::MODULE) => {
                    let config = TaskConfig::from_value(&entry.config);
                    let name = if module == task::MODULE {
                        task::TOOL_NAME
                    } else {
                        delegate::TOOL_NAME
                    };
                    if depth >= config.max_recursion_depth {
                        set.unavailable.insert(
                            name.to_string(),
                            format!(
                                "Delegation depth limit reached: this session is at depth {depth} \
                                 and max_recursion_depth is {}, so the {name} tool is not available here.",
                                config.max_recursion_depth
                            ),
                        );
                    } else if let Some(build) = task {
                        set.extend([build(module, config)]);
                    }
                }
                _ => {}
            }
        }
        set
    }

    /// Adds tools, skipping names already mounted.
    pub fn extend(&mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) {
        for tool in tools {
            let name = tool.spec().name;
            if self.get(&name).is_none() {
                self.unavailable.remove(&name);
                self.tools.push(tool);
            }
        }
    }

    /// The mounted tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.spec().name == name).cloned()
    }

    /// Specs of every mounted tool, in mount order (what the provider is offered).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// Names of every mounted tool, in mount order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name).collect()
    }

    /// The error result text for a call to `name`, which is not mounted.
    pub fn not_mounted_error(&self, name: &str) -> String {
        if let Some(reason) = self.unavailable.get(name) {
            return reason.clone();
        }
        let names = self.names();
        if names.is_empty() {
            format!("Unknown tool '{name}': this session has no tools.")
        } else {
            format!(
                "Unknown tool '{name}'. Available tools: {}",
                names.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::modules::{Access, Mount, TOOL_MODULES, TRANSFER, tool_module};
    use serde_json::json;

    #[test]
    fn mounts_builtin_modules_and_skips_others() {
        let plan = MountPlan::from_value(json!({"tools": [
            "tool-filesystem",
            {"module": "tool-search"},
            {"module": "tool-lsp"},
            {"module": "tool-filesystem"}
        ]}));
        let set = ToolSet::mount(&plan, 0, None);
        assert_eq!(
            set.names(),
            [
                "read_file",
                "list_directory",
                "write_file",
                "edit_file",
                "glob",
                "grep"
            ]
        );
        assert!(set.get("grep").is_some());
        assert_eq!(
            set.not_mounted_error("bash"),
            "Unknown tool 'bash'. Available tools: read_file, list_directory, write_file, \
             edit_file, glob, grep"
        );
    }

    #[test]
    fn read_only_filesystem_and_bash_module() {
        let plan = MountPlan::from_value(json!({"tools": [
            {"module": "tool-filesystem", "config": {"read_only": true}},
            {"module": "tool-bash", "config": {"timeout": 30}},
        ]}));
        let set = ToolSet::mount(&plan, 0, None);
        assert_eq!(set.names(), ["read_file", "list_directory", "bash"]);
        let description = set.get("bash").unwrap().spec().description;
        assert!(description.contains("default 30"), "{description}");
    }

    /// The tool-module table (`config::modules::TOOL_MODULES`) names exactly the modules
    /// arbor implements: each implementation's `MODULE` is a row and each row has one.
    #[test]
    fn every_tool_module_is_in_the_table_and_every_row_is_implemented() {
        let mut implemented = vec![
            filesystem::MODULE,
            search::MODULE,
            bash::MODULE,
            task::MODULE,
            delegate::MODULE,
            todo::MODULE,
            web::MODULE,
            crate::config::mcp::MCP_MODULE,
            super::super::transfer::MODULE,
        ];
        implemented.sort_unstable();
        let mut listed: Vec<_> = TOOL_MODULES.iter().map(|m| m.name).collect();
        listed.sort_unstable();
        assert_eq!(listed, implemented);
        // Agent validation accepts exactly the rows a plan may name.
        let validated = &crate::agent::validate::implemented_modules()[0];
        assert_eq!(validated.0, "tools");
        let mut plan_rows: Vec<_> = TOOL_MODULES.iter().filter(|m| m.in_plans()).collect();
        assert_eq!(
            validated.1,
            plan_rows.iter().map(|m| m.name).collect::<Vec<_>>()
        );
        plan_rows.retain(|m| m.mount == Mount::Plan);
        assert!(plan_rows.len() >= 5);
    }

    /// `mount` mounts, for each `Mount::Plan` row, exactly the row's tools (the read
    /// ones under `read_only: true`), each reporting the row's module; delegation rows
    /// name their tool when withheld at the depth limit; other rows and modules outside
    /// the table mount nothing from a plan.
    #[test]
    fn mount_mounts_exactly_the_tables_tools() {
        for row in TOOL_MODULES {
            let names: Vec<&str> = row.tools.iter().map(|t| t.name).collect();
            let plan = MountPlan::from_value(json!({"tools": [row.name]}));
            let set = ToolSet::mount(&plan, 0, None);
            let delegation = row.tools.iter().all(|t| t.access == Access::Delegate);
            match row.mount {
                Mount::Plan if delegation => {
                    let plan = MountPlan::from_value(json!({"tools": [
                        {"module": row.name, "config": {"max_recursion_depth": 1}}
                    ]}));
                    let set = ToolSet::mount(&plan, 1, None);
                    for name in &names {
                        let err = set.not_mounted_error(name);
                        assert!(err.contains("depth limit"), "{}: {err}", row.name);
                    }
                }
                Mount::Plan => {
                    // `web_search` also needs config `web: {search_url}` (`mount_with`).
                    let plain: Vec<&str> = names
                        .iter()
                        .copied()
                        .filter(|n| *n != web::search::SEARCH_TOOL)
                        .collect();
                    assert_eq!(set.names(), plain, "{}", row.name);
                    let web_config = web::WebConfig {
                        search_url: Some("https://s.example/?q={query}".into()),
                        ..web::WebConfig::default()
                    };
                    let sandbox = Sandbox::default();
                    let full = ToolSet::mount_with(&plan, 0, None, &sandbox, web_config);
                    assert_eq!(full.names(), names, "{}", row.name);
                    for tool in set.specs() {
                        let mounted = set.get(&tool.name).unwrap();
                        assert_eq!(mounted.module(), row.name);
                    }
                    let read_only =
                        json!({"tools": [{"module": row.name, "config": {"read_only": true}}]});
                    if row.name == filesystem::MODULE {
                        let reads: Vec<&str> = row
                            .tools
                            .iter()
                            .filter(|t| t.access == Access::Read)
                            .map(|t| t.name)
                            .collect();
                        let set = ToolSet::mount(&MountPlan::from_value(read_only), 0, None);
                        assert_eq!(set.names(), reads);
                    }
                }
                Mount::McpServers | Mount::AgentTree => {
                    assert!(set.names().is_empty(), "{} mounts from a plan", row.name)
                }
            }
        }
        assert_eq!(
            TRANSFER.tools[0].name,
            super::super::transfer::TransferTool::new(Vec::new())
                .spec()
                .name
        );
        assert_eq!(
            tool_module(task::MODULE).unwrap().tools[0].name,
            task::TOOL_NAME
        );
        assert_eq!(
            tool_module(delegate::MODULE).unwrap().tools[0].name,
            delegate::TOOL_NAME
        );
        let outside =
            MountPlan::from_value(json!({"tools": ["tool-lsp", "tool-x", "provider-openai"]}));
        assert!(ToolSet::mount(&outside, 0, None).names().is_empty());
    }

    #[test]
    fn task_is_withheld_at_the_depth_limit() {
        let plan = MountPlan::from_value(
            json!({"tools": [{"module": "tool-task", "config": {"max_recursion_depth": 2}}]}),
        );
        let build = |_: &str, _: TaskConfig| -> Arc<dyn Tool> { Arc::new(filesystem::ReadFile) };
        let at_one = ToolSet::mount(&plan, 1, Some(&build));
        assert_eq!(at_one.names(), ["read_file"]);
        let at_two = ToolSet::mount(&plan, 2, Some(&build));
        assert!(at_two.names().is_empty());
        let err = at_two.not_mounted_error("task");
        assert!(err.contains("max_recursion_depth is 2"), "{err}");
    }
}
