//! The built-in modules arbor implements, as two tables: [`TOOL_MODULES`] (SPEC §9,
//! §11, §12) and [`PROVIDER_MODULES`] (SPEC §10).
//!
//! Owns: one row per module — a tool module's tools with each tool's descriptor (its
//! access, and so its approvals default, SPEC §12; its ACP kind, its name in Claude
//! Code's hook contract and the summary an approval prompt shows, [`descriptor`]) and
//! how it is mounted; a provider module's wire API, environment variables (key, base
//! URL, model), default endpoint, model and context window, and how its usage counts
//! cached tokens — and the lookups over them. Every reader takes its facts from here:
//! agent validation ("unavailable module"), approvals (known modules and tools,
//! defaults, command tools, the prompt's summary), hooks (Claude Code's tool names),
//! ACP (tool kinds and titles), the TUI (task cards), doctor, provider setup and local
//! servers (`routing::setup`, `routing::local`), prices (cache accounting), context
//! limits, the TUI's error hints and the secrets a session scrubs. Sits in `config`,
//! below every reader. Does not own: the implementations (`tool::*`, which
//! `tool::mount` mounts — its tests check that it mounts exactly these rows' tools —
//! and the wire clients in `provider`), or building a client from an entry
//! (`routing::setup`).
//!
//! A new tool module is a row in [`TOOL_MODULES`] plus its file under `src/tool/`
//! (and one arm in `tool::mount`); nothing outside the tool names it. A new provider is
//! a row in [`PROVIDER_MODULES`] plus its client under `src/provider/` (and its arm in
//! `routing::setup`).

pub mod descriptor;

pub use descriptor::{MCP_TOOL_PREFIX, OTHER_TOOL, Summary, ToolKind, describe, mcp_server_of};

/// What a tool's calls do, which decides its approvals default (SPEC §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only reads (files, directory listings): allowed by default, and kept by a
    /// `read_only: true` module config.
    Read,
    /// Hands work to an agent in a sub-session of its own (`task`, `delegate`), whose
    /// own calls are gated: allowed by default.
    Delegate,
    /// Hands the conversation to another agent of the same session
    /// (`transfer_to_agent`), whose own calls are gated: allowed by default.
    Transfer,
    /// Changes files: asks by default.
    Write,
    /// Runs commands: asks by default.
    Execute,
    /// Reaches the network (`web_fetch`, `web_search`): asks by default.
    Network,
    /// A tool outside the table (MCP tools, names arbor does not know), whose effects
    /// arbor cannot tell: asks by default.
    Unknown,
}

impl Access {
    /// Whether a call is allowed without asking when no rule matches
    /// (`Read`, `Delegate`, `Transfer`); the rest ask.
    pub const fn allowed_by_default(self) -> bool {
        matches!(self, Self::Read | Self::Delegate | Self::Transfer)
    }
}

/// One tool a built-in module provides, and its descriptor: what front ends and
/// approvals know of a tool, so none of them matches its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinTool {
    /// The name the model calls (`read_file`).
    pub name: &'static str,
    /// What its calls do (and so its approvals default).
    pub access: Access,
    /// The input field holding the command string, for a tool that takes command
    /// patterns in approval keys (`bash(cargo test*)`: `bash`'s `command`); `None`
    /// otherwise.
    pub command_field: Option<&'static str>,
    /// What kind of call it is, as ACP clients group calls.
    pub kind: ToolKind,
    /// Its name in Claude Code's hook contract (`bash` → `Bash`), so hook matchers
    /// written for Claude Code match it; `None` when Claude Code has no such tool.
    pub hook_name: Option<&'static str>,
    /// The one line an approval prompt (and an ACP client's call title) shows.
    pub summary: Summary,
}

impl BuiltinTool {
    /// Whether its calls change files ([`Access::Write`]).
    pub const fn writes(&self) -> bool {
        matches!(self.access, Access::Write)
    }

    /// Whether each call hands work to a sub-session ([`Access::Delegate`]): its
    /// output's effect is the sub-session's result, and front ends show its calls as
    /// task cards.
    pub const fn delegates(&self) -> bool {
        matches!(self.access, Access::Delegate)
    }
}

/// A row's tool: `name` with `access`, shown as `kind`, called `hook_name` by Claude
/// Code's hooks, summarised by `summary`.
const fn tool(
    name: &'static str,
    access: Access,
    kind: ToolKind,
    hook_name: Option<&'static str>,
    summary: Summary,
) -> BuiltinTool {
    BuiltinTool {
        name,
        access,
        command_field: None,
        kind,
        hook_name,
        summary,
    }
}

/// How a tool module's tools reach a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mount {
    /// Named in a mount plan's `tools[]`, mounted by `tool::mount` (the delegation
    /// modules below the plan's `max_recursion_depth` only).
    Plan,
    /// Named in a mount plan's `tools[]`; its tools come from the MCP servers of its
    /// config, which the engine starts (`tool::mcp`).
    McpServers,
    /// Never from a plan: the engine mounts it for agents in a tree (SPEC §11).
    AgentTree,
}

/// One built-in tool module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolModule {
    /// The module id (`tool-filesystem`), as plans and approval keys name it.
    pub name: &'static str,
    /// Its tools, in mount order; empty when they come from elsewhere
    /// ([`Mount::McpServers`]).
    pub tools: &'static [BuiltinTool],
    /// How its tools are mounted.
    pub mount: Mount,
}

impl ToolModule {
    /// Whether a mount plan's `tools[]` may name it (every [`Mount`] but
    /// [`Mount::AgentTree`]); any other tool module in a plan is "unavailable".
    pub const fn in_plans(&self) -> bool {
        !matches!(self.mount, Mount::AgentTree)
    }
}

/// `tool-filesystem`: reading, listing, writing and editing files (`read_only: true`
/// keeps the [`Access::Read`] ones).
pub const FILESYSTEM: ToolModule = ToolModule {
    name: "tool-filesystem",
    tools: &[
        tool(
            "read_file",
            Access::Read,
            ToolKind::Read,
            Some("Read"),
            Summary::File("read"),
        ),
        tool(
            "list_directory",
            Access::Read,
            ToolKind::Read,
            Some("LS"),
            Summary::Name,
        ),
        tool(
            "write_file",
            Access::Write,
            ToolKind::Edit,
            Some("Write"),
            Summary::File("write"),
        ),
        tool(
            "edit_file",
            Access::Write,
            ToolKind::Edit,
            Some("Edit"),
            Summary::File("edit"),
        ),
    ],
    mount: Mount::Plan,
};

/// `tool-search`: `glob` and `grep` over the working directory.
pub const SEARCH: ToolModule = ToolModule {
    name: "tool-search",
    tools: &[
        tool(
            "glob",
            Access::Read,
            ToolKind::Search,
            Some("Glob"),
            Summary::Name,
        ),
        tool(
            "grep",
            Access::Read,
            ToolKind::Search,
            Some("Grep"),
            Summary::Name,
        ),
    ],
    mount: Mount::Plan,
};

/// `tool-bash`: one shell command per call, in the kernel sandbox.
pub const BASH: ToolModule = ToolModule {
    name: "tool-bash",
    tools: &[BuiltinTool {
        name: "bash",
        access: Access::Execute,
        command_field: Some("command"),
        kind: ToolKind::Execute,
        hook_name: Some("Bash"),
        summary: Summary::Command,
    }],
    mount: Mount::Plan,
};

/// `tool-task`: the task tool (SPEC §9), a child session per call.
pub const TASK: ToolModule = ToolModule {
    name: "tool-task",
    tools: &[tool(
        "task",
        Access::Delegate,
        ToolKind::Think,
        Some("Task"),
        Summary::Delegation,
    )],
    mount: Mount::Plan,
};

/// `tool-delegate`: Amplifier's current delegation tool.
pub const DELEGATE: ToolModule = ToolModule {
    name: "tool-delegate",
    tools: &[tool(
        "delegate",
        Access::Delegate,
        ToolKind::Think,
        None,
        Summary::Delegation,
    )],
    mount: Mount::Plan,
};

/// `tool-todo`: the model's checklist (Amplifier's `tool-todo`); it changes only the
/// session's own list, so it is allowed by default like a read.
pub const TODO: ToolModule = ToolModule {
    name: "tool-todo",
    tools: &[tool(
        "todo",
        Access::Read,
        ToolKind::Think,
        Some("TodoWrite"),
        Summary::Name,
    )],
    mount: Mount::Plan,
};

/// `tool-web`: `web_fetch`, one HTTP(S) GET as Markdown, and `web_search` (mounted
/// only with config `web: {search_url}`) (Amplifier's `tool-web`).
pub const WEB: ToolModule = ToolModule {
    name: "tool-web",
    tools: &[
        tool(
            "web_fetch",
            Access::Network,
            ToolKind::Fetch,
            Some("WebFetch"),
            Summary::Input("url"),
        ),
        tool(
            "web_search",
            Access::Network,
            ToolKind::Fetch,
            Some("WebSearch"),
            Summary::Quoted("query"),
        ),
    ],
    mount: Mount::Plan,
};

/// `tool-mcp`: the tools of Model Context Protocol servers (`mcp__<server>__<tool>`,
/// which ask by default as unknown tools do; their descriptor is
/// [`descriptor::MCP_TOOL`]).
pub const MCP: ToolModule = ToolModule {
    name: "tool-mcp",
    tools: &[],
    mount: Mount::McpServers,
};

/// `tool-transfer`: `transfer_to_agent`, the module id that tool reports.
pub const TRANSFER: ToolModule = ToolModule {
    name: "tool-transfer",
    tools: &[tool(
        "transfer_to_agent",
        Access::Transfer,
        ToolKind::Other,
        None,
        Summary::Name,
    )],
    mount: Mount::AgentTree,
};

/// Every built-in tool module, in the order messages list them.
pub const TOOL_MODULES: &[ToolModule] = &[
    FILESYSTEM, SEARCH, BASH, TASK, DELEGATE, TODO, WEB, MCP, TRANSFER,
];

/// The row of tool module `name`.
pub fn tool_module(name: &str) -> Option<&'static ToolModule> {
    TOOL_MODULES.iter().find(|m| m.name == name)
}

/// The ids of the tool modules a plan's `tools[]` may name ([`ToolModule::in_plans`]),
/// in table order.
pub fn plan_tool_modules() -> Vec<&'static str> {
    TOOL_MODULES
        .iter()
        .filter(|m| m.in_plans())
        .map(|m| m.name)
        .collect()
}

/// Every built-in tool, in table order.
pub fn builtin_tools() -> impl Iterator<Item = &'static BuiltinTool> {
    TOOL_MODULES.iter().flat_map(|m| m.tools.iter())
}

/// The built-in tool called `name` (MCP tools are not built in).
pub fn builtin_tool(name: &str) -> Option<&'static BuiltinTool> {
    builtin_tools().find(|t| t.name == name)
}

/// The wire API a provider module speaks (which client `routing::setup` builds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireApi {
    /// OpenAI Chat Completions (`provider::openai`); any OpenAI-compatible server.
    OpenAiChat,
    /// Anthropic Messages (`provider::anthropic`).
    AnthropicMessages,
}

/// How an API's `input_tokens` relate to its cache counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheAccounting {
    /// OpenAI-compatible APIs: `prompt_tokens` includes the cached tokens.
    IncludedInInput,
    /// Anthropic: `input_tokens` excludes cache reads and writes.
    SeparateFromInput,
}

impl CacheAccounting {
    /// The accounting of a provider module: its row's, and for a module not in
    /// [`PROVIDER_MODULES`] the OpenAI convention every other API speaks.
    pub fn for_module(module: &str) -> Self {
        provider_module(module).map_or(Self::IncludedInInput, |p| p.cache)
    }
}

/// One built-in provider module. Every variable is read trimmed; an empty one counts
/// as unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderModule {
    /// The module id (`provider-openai`); the provider id is it without `provider-`
    /// unless an entry sets `id`.
    pub name: &'static str,
    /// What messages call its API (`the OpenAI API`).
    pub title: &'static str,
    /// The wire API, and so the client.
    pub api: WireApi,
    /// The environment variable holding its key (`None`: a local server needs none).
    pub key_var: Option<&'static str>,
    /// The environment variable setting its endpoint: a base URL, or for a
    /// [`ProviderModule::local`] module a `host:port` (`OLLAMA_HOST`, read by
    /// `provider::probe::ollama_addr`).
    pub base_url_var: Option<&'static str>,
    /// The environment variable naming its default model.
    pub model_var: Option<&'static str>,
    /// Variables of which any, set, makes a new root session mount this module when
    /// the config file lists no providers (`routing::setup::detect_providers`).
    pub detect_vars: &'static [&'static str],
    /// Other key variables of the same API a session scrubs from what it writes
    /// though arbor does not read them (`AZURE_OPENAI_API_KEY`, …).
    pub also_secret_vars: &'static [&'static str],
    /// The official endpoint (base URL) when nothing sets one.
    pub default_base_url: &'static str,
    /// The model on the official endpoint when none is configured (`None`: the
    /// server's first listed model).
    pub default_model: Option<&'static str>,
    /// A local server found by probing (`provider::probe`), not by a key.
    pub local: bool,
    /// How its usage counts cached input tokens (prices, `routing::prices`).
    pub cache: CacheAccounting,
    /// The context limit, tokens, of a session whose model's window is not known
    /// (`engine::compact::limit`): the documented default of the API's models.
    pub default_context_window: u64,
}

/// The context limit, tokens, of a session on a provider module outside
/// [`PROVIDER_MODULES`] whose model's window is not known.
pub const OTHER_CONTEXT_WINDOW: u64 = 32_768;

impl ProviderModule {
    /// The default context window of provider module `module`: its row's
    /// [`ProviderModule::default_context_window`], else [`OTHER_CONTEXT_WINDOW`].
    pub fn context_window_of(module: &str) -> u64 {
        provider_module(module).map_or(OTHER_CONTEXT_WINDOW, |p| p.default_context_window)
    }
}

/// `provider-openai`: the OpenAI API and any OpenAI-compatible server (`base_url`).
pub const OPENAI: ProviderModule = ProviderModule {
    name: "provider-openai",
    title: "the OpenAI API",
    api: WireApi::OpenAiChat,
    key_var: Some("OPENAI_API_KEY"),
    base_url_var: Some("OPENAI_BASE_URL"),
    model_var: Some("OPENAI_MODEL"),
    detect_vars: &["OPENAI_API_KEY", "OPENAI_BASE_URL"],
    also_secret_vars: &["AZURE_OPENAI_API_KEY", "OPENROUTER_API_KEY"],
    default_base_url: "https://api.openai.com/v1",
    default_model: Some("gpt-4o-mini"),
    local: false,
    cache: CacheAccounting::IncludedInInput,
    // GPT-4o.
    default_context_window: 128_000,
};

/// `provider-anthropic`: the Anthropic Messages API.
pub const ANTHROPIC: ProviderModule = ProviderModule {
    name: "provider-anthropic",
    title: "the Anthropic API",
    api: WireApi::AnthropicMessages,
    key_var: Some("ANTHROPIC_API_KEY"),
    base_url_var: Some("ANTHROPIC_BASE_URL"),
    model_var: Some("ANTHROPIC_MODEL"),
    detect_vars: &["ANTHROPIC_API_KEY"],
    also_secret_vars: &[],
    default_base_url: "https://api.anthropic.com",
    default_model: Some("claude-sonnet-4-5"),
    local: false,
    cache: CacheAccounting::SeparateFromInput,
    // Every current Claude model.
    default_context_window: 200_000,
};

/// `provider-ollama`: a local Ollama's OpenAI-compatible endpoint.
pub const OLLAMA: ProviderModule = ProviderModule {
    name: "provider-ollama",
    title: "Ollama",
    api: WireApi::OpenAiChat,
    key_var: None,
    base_url_var: Some("OLLAMA_HOST"),
    model_var: None,
    detect_vars: &[],
    also_secret_vars: &[],
    default_base_url: "http://127.0.0.1:11434/v1",
    default_model: None,
    local: true,
    cache: CacheAccounting::IncludedInInput,
    // Ollama's default `num_ctx`.
    default_context_window: 4_096,
};

/// Every built-in provider module, in the order messages list them.
pub const PROVIDER_MODULES: &[ProviderModule] = &[OPENAI, ANTHROPIC, OLLAMA];

/// The row of provider module `name`.
pub fn provider_module(name: &str) -> Option<&'static ProviderModule> {
    PROVIDER_MODULES.iter().find(|m| m.name == name)
}

/// The ids of every provider module, in table order.
pub fn provider_module_names() -> Vec<&'static str> {
    PROVIDER_MODULES.iter().map(|m| m.name).collect()
}

/// The environment variable arbor reads the key of a provider from, for hints: given
/// its id and module as one string (`"anthropic provider-anthropic"`), the key
/// variable of the first row other than [`OPENAI`] that has one and whose id (module
/// without `provider-`) occurs in it, case-insensitively; else [`OPENAI`]'s, since
/// every other server (OpenRouter and Azure included) is OpenAI-compatible to arbor.
pub fn key_var_hint(names: &str) -> &'static str {
    let names = names.to_ascii_lowercase();
    PROVIDER_MODULES
        .iter()
        .filter(|p| p.name != OPENAI.name && p.key_var.is_some())
        .find(|p| names.contains(p.name.trim_start_matches("provider-")))
        .and_then(|p| p.key_var)
        .or(OPENAI.key_var)
        .unwrap_or_default()
}

/// Every provider key variable a session scrubs the value of: each row's
/// [`ProviderModule::key_var`] and [`ProviderModule::also_secret_vars`].
pub fn secret_env_vars() -> Vec<&'static str> {
    PROVIDER_MODULES
        .iter()
        .flat_map(|p| {
            p.key_var
                .into_iter()
                .chain(p.also_secret_vars.iter().copied())
        })
        .collect()
}

/// Every [`ProviderModule::detect_vars`] in table order, for "set X, Y or Z" hints.
pub fn detect_vars() -> Vec<&'static str> {
    PROVIDER_MODULES
        .iter()
        .flat_map(|p| p.detect_vars.iter().copied())
        .collect()
}

/// `a, b or c` (`a` alone; empty for none).
pub fn or_list(items: &[&str]) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_prefixed() {
        let mut tools: Vec<_> = TOOL_MODULES.iter().map(|m| m.name).collect();
        tools.sort_unstable();
        tools.dedup();
        assert_eq!(tools.len(), TOOL_MODULES.len());
        assert!(tools.iter().all(|t| t.starts_with("tool-")));
        let mut names: Vec<_> = builtin_tools().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            builtin_tools().count(),
            "a tool in two modules"
        );
        let mut providers = provider_module_names();
        providers.sort_unstable();
        providers.dedup();
        assert_eq!(providers.len(), PROVIDER_MODULES.len());
        assert!(providers.iter().all(|p| p.starts_with("provider-")));
    }

    #[test]
    fn hints_and_secrets_come_from_the_rows() {
        assert_eq!(
            key_var_hint("anthropic provider-anthropic"),
            "ANTHROPIC_API_KEY"
        );
        assert_eq!(key_var_hint("Anthropic"), "ANTHROPIC_API_KEY");
        assert_eq!(key_var_hint("openrouter "), "OPENAI_API_KEY");
        assert_eq!(key_var_hint("my-azure provider-openai"), "OPENAI_API_KEY");
        let secrets = secret_env_vars();
        for p in PROVIDER_MODULES {
            assert!(p.key_var.is_none_or(|k| secrets.contains(&k)), "{}", p.name);
        }
        assert_eq!(
            or_list(&detect_vars()),
            "OPENAI_API_KEY, OPENAI_BASE_URL or ANTHROPIC_API_KEY"
        );
        assert_eq!(
            CacheAccounting::for_module("provider-x"),
            CacheAccounting::IncludedInInput
        );
    }
}
