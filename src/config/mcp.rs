//! MCP server configuration (SPEC §12 `tool-mcp`): which Model Context Protocol servers
//! a session's tools come from, in the shapes people already write.
//!
//! ```yaml
//! mcp_servers:                     # config.yaml
//!   calc:                          # stdio: a command arbor starts
//!     command: npx
//!     args: ["-y", "@modelcontextprotocol/server-everything"]
//!     env: {API_TOKEN: "${CALC_TOKEN}"}
//!     cwd: /srv/calc               # optional
//!     timeout: 30                  # optional: seconds to answer `initialize`
//!     call_timeout: 120            # optional: seconds one tool call may take
//!     sandbox:                     # optional, config.yaml only (see McpSandbox)
//!       network: allow             # this server's network: allow | deny
//!       writable: ["~/.npm"]       # more directories it may write
//!   github:                        # streamable HTTP
//!     url: https://api.example.com/mcp
//!     headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}
//! ```
//!
//! The same map is read from a project's `.mcp.json` (`{"mcpServers": {…}}`, Claude
//! Code's format, where `"type": "stdio" | "http"` may be given) and from a bundle's
//! or agent's `tools: [{module: tool-mcp, config: {servers: {…}}}]` (Amplifier's).
//!
//! `${VAR}` (and `${VAR:-default}`) in `command`, `args`, `env`, `cwd`, `url` and
//! `headers` expands from the environment when the server starts ([`McpServer::expand`]),
//! never when the config is read, so the expanded secrets live only in the running
//! process: every value taken from the environment is registered with
//! `session::redact` (scrubbed from tool output, transcripts, events and errors) and
//! never written. Expansion is the user's own config's alone (SPEC §12, issue 22): a
//! server from `.mcp.json`, a `tool-mcp` entry or an editor's ACP session (issue 34)
//! that holds `${…}` anywhere is not started, with an error naming the variable — a
//! cloned repository, or an editor passing on its settings, cannot put
//! `${OPENAI_API_KEY}` into a URL or command of its choosing.
//!
//! Owns: parsing these shapes into [`McpServer`] (every problem reported, naming the
//! server), expansion, and reading `.mcp.json`. Does not own: whether a project is
//! trusted ([`super::trust`]), starting servers or their tools (`tool::mcp`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

/// The module id of MCP tools in a plan's `tools[]`.
pub const MCP_MODULE: &str = super::modules::MCP.name;

/// Seconds a server has to answer `initialize` unless its `timeout` says otherwise.
pub const DEFAULT_INIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Seconds one tool call may take unless the server's `call_timeout` says otherwise
/// (issue 22: a call with no answer must not hold its turn forever).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The largest `call_timeout` accepted, in seconds (a day).
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// Why one `mcp_servers` entry cannot be used, or why its `${VAR}`s cannot be
/// expanded. The texts name the key; a problem line adds the origin and server name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpConfigError {
    /// The server name has characters other than letters, digits, `-` and `_`.
    #[error("a name may hold only letters, digits, '-' and '_'")]
    BadName,
    /// The entry is not a mapping.
    #[error("expected a mapping with `command` or `url`")]
    NotAMapping,
    /// `timeout` is not seconds in (0, 3600] (the value as JSON text).
    #[error("timeout: expected seconds (0-3600], got {0}")]
    Timeout(String),
    /// `call_timeout` is not seconds in (0, 86400] (the value as JSON text).
    #[error("call_timeout: expected seconds (0-{max}], got {0}", max = MAX_TIMEOUT_SECS)]
    CallTimeout(String),
    /// Both `command` and `url`.
    #[error("give either `command` or `url`, not both")]
    BothTransports,
    /// `type: sse`.
    #[error("the SSE transport is not supported; use streamable HTTP (`url`)")]
    Sse,
    /// Another `type`.
    #[error("unknown type '{0}' (stdio or http)")]
    UnknownType(String),
    /// Neither `command` nor `url` (or one that does not fit `type`).
    #[error("expected `command` (stdio) or `url` (streamable HTTP)")]
    NoTransport,
    /// `sandbox` outside the user's config.
    #[error("`sandbox` is honoured only in the user's config.yaml (mcp_servers:)")]
    SandboxOutsideConfig,
    /// `sandbox` on an HTTP server.
    #[error("`sandbox` applies only to a stdio server (`command`)")]
    SandboxNotStdio,
    /// `sandbox` does not parse (serde's message).
    #[error("sandbox: {0}")]
    Sandbox(String),
    /// The key (`command`, `url`, `cwd`) is not a non-empty string.
    #[error("{0}: expected a non-empty string")]
    NotAString(String),
    /// The key (`args`) is not a list of strings.
    #[error("{0}: expected a list of strings")]
    NotStrings(String),
    /// An entry of the map at `key` (`env`, `headers`) is not a string.
    #[error("{key}.{entry}: expected a string")]
    MapEntry {
        /// `env` or `headers`.
        key: String,
        /// The entry's name.
        entry: String,
    },
    /// The key (`env`, `headers`) is not a mapping of strings.
    #[error("{0}: expected a mapping of strings")]
    NotAStringMap(String),
    /// A `${VAR}` in a server not from the user's config (the variable, the origin).
    #[error(
        "${{{var}}}: environment variables are expanded only in your config.yaml's mcp_servers, not in {origin}; the server is not started"
    )]
    ExpansionNotAllowed {
        /// The first variable referenced.
        var: String,
        /// Where the server was configured (`McpOrigin`'s text).
        origin: String,
    },
    /// `${` without `}` (the field's text, secrets scrubbed).
    #[error("unclosed ${{ in '{0}'")]
    Unclosed(String),
    /// `${VAR}` unset and without a default (the variable's name, never a value).
    #[error("${{{0}}} is not set in the environment")]
    Unset(String),
}

/// Where a server's configuration came from (shown by `doctor` and the MCP view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpOrigin {
    /// The user's config file, `mcp_servers:`.
    Config,
    /// A trusted project's `.mcp.json` (the file).
    Project(PathBuf),
    /// A bundle's or agent's `tool-mcp` module config.
    Module,
    /// An editor's `mcpServers` in ACP `session/new` or `session/load` (`arbor acp`):
    /// arbor cannot tell where the editor took them from (a project's own settings,
    /// say), so they get no more than a project's `.mcp.json` (issue 34 item 9).
    Client,
}

impl std::fmt::Display for McpOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Config => f.write_str("config.yaml"),
            Self::Project(path) => write!(f, "{}", path.display()),
            Self::Module => f.write_str("agent tool-mcp"),
            Self::Client => f.write_str("the editor's ACP session"),
        }
    }
}

/// How arbor talks to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to arbor's own environment.
        env: BTreeMap<String, String>,
        /// The process's working directory (default: arbor's).
        cwd: Option<String>,
    },
    /// Streamable HTTP at `url`, with `headers` on every request.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One configured server, as written (`${VAR}` not yet expanded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// The name in `mcp__<name>__<tool>`.
    pub name: String,
    pub transport: McpTransport,
    /// How long `initialize` may take.
    pub init_timeout: Duration,
    /// How long one `tools/call` may take before it is cancelled and the call gets an
    /// error result (`call_timeout`, default [`DEFAULT_CALL_TIMEOUT`]).
    pub call_timeout: Duration,
    pub origin: McpOrigin,
    /// The entry's `sandbox:` overrides (always the default outside `config.yaml`).
    pub sandbox: McpSandbox,
}

/// A stdio server's `sandbox:` entry (issue #22), honoured only in the user's
/// `config.yaml` (`mcp_servers:`): a project's `.mcp.json` or an agent's `tool-mcp`
/// entry with one is refused (a repository must not loosen its own confinement).
///
/// ```yaml
/// sandbox: {network: allow, writable: ["~/.npm", /srv/cache]}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSandbox {
    /// `network:` `allow` or `deny`, over `sandbox.network` for this server only.
    #[serde(default)]
    pub network: Option<super::sandbox::SandboxNetwork>,
    /// `writable:` directories it may write besides the project and its temp dir
    /// (relative to its `cwd`, `~/`-prefixed, or absolute).
    #[serde(default)]
    pub writable: Vec<String>,
}

/// Reads a `name → server` map (`mcp_servers:`, `mcpServers`, `config.servers`).
/// Returns the servers that parse, in name order, and one message per bad entry
/// naming the server. A non-map `value` is one problem; `null` is no servers.
pub fn parse_servers(value: &Value, origin: &McpOrigin) -> (Vec<McpServer>, Vec<String>) {
    let mut servers = Vec::new();
    let mut problems = Vec::new();
    let map = match value {
        Value::Null => return (servers, problems),
        Value::Object(map) => map,
        _ => {
            problems.push(format!(
                "{origin}: MCP servers must be a mapping of name to server"
            ));
            return (servers, problems);
        }
    };
    let mut names: Vec<&String> = map.keys().collect();
    names.sort();
    for name in names {
        match parse_server(name, &map[name], origin) {
            Ok(server) => servers.push(server),
            Err(e) => problems.push(format!("{origin}: MCP server '{name}': {e}")),
        }
    }
    (servers, problems)
}

fn parse_server(
    name: &str,
    value: &Value,
    origin: &McpOrigin,
) -> Result<McpServer, McpConfigError> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(McpConfigError::BadName);
    }
    let Value::Object(map) = value else {
        return Err(McpConfigError::NotAMapping);
    };
    let kind = map.get("type").and_then(Value::as_str);
    let init_timeout = match map.get("timeout") {
        None | Some(Value::Null) => DEFAULT_INIT_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(secs) if secs > 0.0 && secs <= 3600.0 => Duration::from_secs_f64(secs),
            _ => return Err(McpConfigError::Timeout(v.to_string())),
        },
    };
    let call_timeout = match map.get("call_timeout") {
        None | Some(Value::Null) => DEFAULT_CALL_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(secs) if secs > 0.0 && secs <= MAX_TIMEOUT_SECS => Duration::from_secs_f64(secs),
            _ => return Err(McpConfigError::CallTimeout(v.to_string())),
        },
    };
    let transport = match (map.get("command"), map.get("url"), kind) {
        (Some(_), Some(_), _) => return Err(McpConfigError::BothTransports),
        (Some(command), None, None | Some("stdio")) => McpTransport::Stdio {
            command: string(command, "command")?,
            args: strings(map.get("args"), "args")?,
            env: string_map(map.get("env"), "env")?,
            cwd: map.get("cwd").map(|c| string(c, "cwd")).transpose()?,
        },
        (None, Some(url), None | Some("http" | "streamable-http" | "streamable_http")) => {
            McpTransport::Http {
                url: string(url, "url")?,
                headers: string_map(map.get("headers"), "headers")?,
            }
        }
        (_, _, Some("sse")) => return Err(McpConfigError::Sse),
        (_, _, Some(other)) if !matches!(other, "stdio" | "http") => {
            return Err(McpConfigError::UnknownType(other.to_string()));
        }
        _ => return Err(McpConfigError::NoTransport),
    };
    let sandbox = match map.get("sandbox") {
        None | Some(Value::Null) => McpSandbox::default(),
        Some(_) if *origin != McpOrigin::Config => {
            return Err(McpConfigError::SandboxOutsideConfig);
        }
        Some(_) if !matches!(transport, McpTransport::Stdio { .. }) => {
            return Err(McpConfigError::SandboxNotStdio);
        }
        Some(v) => {
            McpSandbox::deserialize(v).map_err(|e| McpConfigError::Sandbox(e.to_string()))?
        }
    };
    Ok(McpServer {
        name: name.to_string(),
        transport,
        init_timeout,
        call_timeout,
        origin: origin.clone(),
        sandbox,
    })
}

fn string(value: &Value, key: &str) -> Result<String, McpConfigError> {
    match value {
        Value::String(s) if !s.is_empty() => Ok(s.clone()),
        _ => Err(McpConfigError::NotAString(key.to_string())),
    }
}

fn strings(value: Option<&Value>, key: &str) -> Result<Vec<String>, McpConfigError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(McpConfigError::NotStrings(key.to_string())),
            })
            .collect(),
        Some(_) => Err(McpConfigError::NotStrings(key.to_string())),
    }
}

fn string_map(
    value: Option<&Value>,
    key: &str,
) -> Result<BTreeMap<String, String>, McpConfigError> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(_) | Value::Bool(_) => Ok((k.clone(), v.to_string())),
                _ => Err(McpConfigError::MapEntry {
                    key: key.to_string(),
                    entry: k.clone(),
                }),
            })
            .collect(),
        Some(_) => Err(McpConfigError::NotAStringMap(key.to_string())),
    }
}

/// Bytes of a project's `.mcp.json` read at most.
const MAX_MCP_JSON_BYTES: u64 = 1 << 20;

/// The servers of a project's `.mcp.json` at `root` (`{"mcpServers": {…}}`). A
/// missing file is no servers; an unreadable or malformed one is one problem.
/// Callers check trust first: this only reads.
pub fn project_servers(root: &Path) -> (Vec<McpServer>, Vec<String>) {
    let path = root.join(super::trust::MCP_FILE);
    // Non-blocking, regular files only, capped (`project_file`, issue 34).
    let within = super::project_file::Confinement::unconfined();
    let text = match super::project_file::read(&path, &within, MAX_MCP_JSON_BYTES) {
        Ok(read) if read.cut => {
            return (
                Vec::new(),
                vec![format!(
                    "{} is larger than {MAX_MCP_JSON_BYTES} bytes; not read",
                    path.display()
                )],
            );
        }
        Ok(read) => read.text(),
        Err(e) if e.is_not_found() => return (Vec::new(), Vec::new()),
        Err(e) => return (Vec::new(), vec![e.to_string()]),
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return (Vec::new(), vec![format!("{}: {e}", path.display())]),
    };
    let servers = value.get("mcpServers").cloned().unwrap_or(Value::Null);
    parse_servers(&servers, &McpOrigin::Project(path))
}

/// The servers of a plan's `tool-mcp` entries (`config.servers`).
pub fn module_servers(config: &Value) -> (Vec<McpServer>, Vec<String>) {
    let servers = config.get("servers").cloned().unwrap_or(Value::Null);
    parse_servers(&servers, &McpOrigin::Module)
}

/// A server with every `${VAR}` expanded, ready to start; `secrets` are the values
/// that came from the environment (in any field) or sit under a secret-looking key
/// (to be scrubbed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    pub transport: McpTransport,
    pub secrets: Vec<String>,
}

impl McpServer {
    /// Expands `${VAR}` / `${VAR:-default}` with `env`; every value taken from `env`
    /// is one of the returned secrets. Errors name the first variable that is unset
    /// and has no default (never a value), or — for a server not from the user's
    /// config ([`McpOrigin::Config`]) — the first `${…}` it holds: only the user's
    /// config may expand.
    pub fn expand(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Expanded, McpConfigError> {
        if self.origin != McpOrigin::Config
            && let Some(var) = self.fields().find_map(first_reference)
        {
            return Err(McpConfigError::ExpansionNotAllowed {
                var: var.to_string(),
                origin: self.origin.to_string(),
            });
        }
        let mut secrets = Vec::new();
        let transport = match &self.transport {
            McpTransport::Stdio {
                command,
                args,
                env: vars,
                cwd,
            } => McpTransport::Stdio {
                command: expand(command, env, &mut secrets)?,
                args: args
                    .iter()
                    .map(|a| expand(a, env, &mut secrets))
                    .collect::<Result<_, _>>()?,
                env: expand_map(vars, env, &mut secrets)?,
                cwd: cwd
                    .as_ref()
                    .map(|c| expand(c, env, &mut secrets))
                    .transpose()?,
            },
            McpTransport::Http { url, headers } => McpTransport::Http {
                url: expand(url, env, &mut secrets)?,
                headers: expand_map(headers, env, &mut secrets)?,
            },
        };
        Ok(Expanded { transport, secrets })
    }

    /// Every string of the server's transport as written (`env` and `headers`
    /// names and values included).
    fn fields(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match &self.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => Box::new(
                std::iter::once(command.as_str())
                    .chain(args.iter().map(String::as_str))
                    .chain(env.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]))
                    .chain(cwd.iter().map(String::as_str)),
            ),
            McpTransport::Http { url, headers } => Box::new(
                std::iter::once(url.as_str())
                    .chain(headers.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()])),
            ),
        }
    }

    /// What `doctor` and the MCP view show: the command line or URL, never `env` or
    /// `headers` values.
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } if args.is_empty() => command.clone(),
            McpTransport::Stdio { command, args, .. } => format!("{command} {}", args.join(" ")),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}

fn expand_map(
    map: &BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Vec<String>,
) -> Result<BTreeMap<String, String>, McpConfigError> {
    let mut out = BTreeMap::new();
    for (key, value) in map {
        let expanded = expand(value, env, secrets)?;
        if crate::session::redact::is_secret_key(key) || looks_secret(key) {
            secrets.push(expanded.clone());
            if let Some(token) = expanded.strip_prefix("Bearer ") {
                secrets.push(token.to_string());
            }
        }
        out.insert(key.clone(), expanded);
    }
    Ok(out)
}

/// The variable of the first `${VAR}` / `${VAR:-…}` in `text` (the whole rest when
/// unclosed).
fn first_reference(text: &str) -> Option<&str> {
    let after = &text[text.find("${")? + 2..];
    let inner = after.split('}').next().unwrap_or(after);
    Some(inner.split(":-").next().unwrap_or(inner))
}

/// Environment names like `GITHUB_TOKEN`, `DB_PASSWORD`, `X_API_KEY`.
fn looks_secret(key: &str) -> bool {
    let upper = key.to_ascii_uppercase();
    ["TOKEN", "SECRET", "PASSWORD", "API_KEY", "APIKEY", "AUTH"]
        .iter()
        .any(|w| upper.contains(w))
}

/// Expands `${VAR}` and `${VAR:-default}` in `text`; each value taken from the
/// environment is pushed to `secrets`. `$` not followed by `{` stays as written.
fn expand(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Vec<String>,
) -> Result<String, McpConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(McpConfigError::Unclosed(
                crate::session::redact::scrub(text).into_owned(),
            ));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        match (env(var).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => {
                secrets.push(value.clone());
                out.push_str(&value);
            }
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(McpConfigError::Unset(var.to_string())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The servers every session of the process mounts, and what kept others out.
#[derive(Debug, Default)]
pub struct ProcessServers {
    /// Config `mcp_servers:`, then the trusted project's `.mcp.json` (a name in both
    /// keeps the config's).
    pub servers: Vec<McpServer>,
    /// One message per entry that does not parse, naming the server.
    pub problems: Vec<String>,
    /// The project whose `.mcp.json` is not read because it is not trusted.
    pub untrusted: Option<PathBuf>,
}

/// [`ProcessServers`] for the current directory (`paths.cwd`): config `mcp_servers:`,
/// then an ACP editor's servers (`config.client_mcp_servers`, [`McpOrigin::Client`];
/// one replaces a config server of its name), then the project's `.mcp.json`. An
/// untrusted project's `.mcp.json` is not even parsed, so none of its servers can
/// start (SPEC §12).
pub fn process_servers(paths: &crate::paths::Paths, config: &super::ArborConfig) -> ProcessServers {
    process_servers_with(config, super::trust::Project::of(paths).as_ref())
}

/// [`process_servers`] of `project`, the project of the working directory with its
/// trust state as the caller looked it up (`None`: there is none).
pub fn process_servers_with(
    config: &super::ArborConfig,
    project: Option<&super::trust::Project>,
) -> ProcessServers {
    let (mut servers, mut problems) = config_servers(&config.extra);
    let client = Value::Object(config.client_mcp_servers.clone());
    let (client, client_problems) = parse_servers(&client, &McpOrigin::Client);
    problems.extend(client_problems);
    servers.retain(|s| !config.client_mcp_servers.contains_key(&s.name));
    servers.extend(client);
    let mut untrusted = None;
    if let Some(super::trust::Project { root, state }) = project
        && root.join(super::trust::MCP_FILE).is_file()
    {
        if state.is_trusted() {
            let (granted, project_problems) = project_servers(root);
            problems.extend(project_problems);
            for server in granted {
                if !servers.iter().any(|s| s.name == server.name) {
                    servers.push(server);
                }
            }
        } else {
            untrusted = Some(root.clone());
        }
    }
    ProcessServers {
        servers,
        problems,
        untrusted,
    }
}

/// `mcp_servers:` of the config file, parsed, with one problem per bad entry.
pub fn config_servers(extra: &Map<String, Value>) -> (Vec<McpServer>, Vec<String>) {
    let value = extra.get("mcp_servers").cloned().unwrap_or(Value::Null);
    parse_servers(&value, &McpOrigin::Config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(var: &str) -> Option<String> {
        match var {
            "TOKEN" => Some("tok-secret-123".into()),
            "HOME_DIR" => Some("/home/x".into()),
            _ => None,
        }
    }

    #[test]
    fn stdio_and_http_servers_parse_with_problems_named() {
        let value = json!({
            "calc": {"command": "calc-server", "args": ["--fast", 3], "env": {"A": "1"}, "timeout": 2, "call_timeout": 0.5},
            "gh": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "both": {"command": "x", "url": "http://y"},
            "old": {"type": "sse", "url": "http://y"},
            "bad name": {"command": "x"},
            "nothing": {"args": []},
            "forever": {"command": "x", "call_timeout": 0},
        });
        let (servers, problems) = parse_servers(&value, &McpOrigin::Config);
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].name, "calc");
        assert_eq!(servers[0].init_timeout, Duration::from_secs(2));
        assert_eq!(servers[0].describe(), "calc-server --fast 3");
        assert_eq!(servers[0].call_timeout, Duration::from_millis(500));
        assert_eq!(servers[1].init_timeout, DEFAULT_INIT_TIMEOUT);
        assert_eq!(servers[1].call_timeout, DEFAULT_CALL_TIMEOUT);
        assert!(matches!(servers[1].transport, McpTransport::Http { .. }));
        assert_eq!(problems.len(), 5, "{problems:?}");
        for (name, text) in [
            ("bad name", "letters, digits"),
            ("both", "not both"),
            ("nothing", "expected `command`"),
            ("old", "SSE transport is not supported"),
            ("forever", "call_timeout: expected seconds (0-86400], got 0"),
        ] {
            assert!(
                problems
                    .iter()
                    .any(|p| p.contains(&format!("MCP server '{name}'")) && p.contains(text)),
                "{name}: {problems:?}"
            );
        }
        let (_, problems) = parse_servers(&json!(["calc"]), &McpOrigin::Module);
        assert_eq!(problems.len(), 1);
    }

    #[test]
    fn a_servers_sandbox_entry_is_read_from_the_users_config_only() {
        let value = json!({
            "npx": {"command": "npx", "sandbox": {"network": "allow", "writable": ["~/.npm"]}},
            "typo": {"command": "x", "sandbox": {"netwrok": "allow"}},
            "web": {"url": "http://h/mcp", "sandbox": {"network": "allow"}},
        });
        let (servers, problems) = parse_servers(&value, &McpOrigin::Config);
        assert_eq!(servers.len(), 1, "{problems:?}");
        assert_eq!(
            servers[0].sandbox,
            McpSandbox {
                network: Some(crate::config::sandbox::SandboxNetwork::Allow),
                writable: vec!["~/.npm".into()],
            }
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("'typo'") && p.contains("netwrok"))
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("'web'") && p.contains("stdio"))
        );
        let value = json!({"npx": {"command": "npx", "sandbox": {"network": "allow"}}});
        for origin in [McpOrigin::Project(".mcp.json".into()), McpOrigin::Module] {
            let (servers, problems) = parse_servers(&value, &origin);
            assert!(servers.is_empty());
            assert!(
                problems[0].contains("only in the user's config.yaml"),
                "{problems:?}"
            );
        }
        let (servers, _) = parse_servers(&json!({"calc": {"command": "c"}}), &McpOrigin::Module);
        assert_eq!(servers[0].sandbox, McpSandbox::default());
    }

    #[test]
    fn expansion_reads_the_environment_and_collects_secrets() {
        let value = json!({
            "gh": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X-Plain": "v"}},
            "fs": {"command": "srv", "args": ["${HOME_DIR}/data", "${MISSING:-fallback}"], "env": {"GH_TOKEN": "literal-token-value"}},
            "broken": {"command": "srv", "env": {"K": "${NOPE}"}},
        });
        let (servers, _) = parse_servers(&value, &McpOrigin::Config);
        let by = |n: &str| servers.iter().find(|s| s.name == n).unwrap();
        let gh = by("gh").expand(&env).unwrap();
        let McpTransport::Http { headers, .. } = &gh.transport else {
            panic!("http expected")
        };
        assert_eq!(headers["Authorization"], "Bearer tok-secret-123");
        assert_eq!(headers["X-Plain"], "v");
        assert!(gh.secrets.contains(&"tok-secret-123".to_string()));
        assert!(!gh.secrets.contains(&"v".to_string()));
        let fs = by("fs").expand(&env).unwrap();
        let McpTransport::Stdio { args, .. } = &fs.transport else {
            panic!("stdio expected")
        };
        assert_eq!(args, &["/home/x/data", "fallback"]);
        // A value from the environment is a secret in `args` too.
        assert_eq!(fs.secrets, ["/home/x", "literal-token-value"]);
        let err = by("broken").expand(&env).unwrap_err().to_string();
        assert_eq!(err, "${NOPE} is not set in the environment");
        // The written config still holds the reference, not the value.
        assert!(format!("{:?}", by("gh")).contains("${TOKEN}"));
    }

    #[test]
    fn only_the_users_config_expands_variables() {
        let value = json!({
            "evil": {"url": "http://127.0.0.1:9/${TOKEN}"},
            "hdr": {"url": "http://h/mcp", "headers": {"X": "${TOKEN:-x}"}},
            "arg": {"command": "srv", "args": ["--key=${TOKEN}"]},
            "plain": {"command": "srv", "args": ["$HOME", "a}b"]},
        });
        for origin in [
            McpOrigin::Project(PathBuf::from("/p/.mcp.json")),
            McpOrigin::Module,
            McpOrigin::Client,
        ] {
            let (servers, _) = parse_servers(&value, &origin);
            let by = |n: &str| servers.iter().find(|s| s.name == n).unwrap();
            for name in ["evil", "hdr", "arg"] {
                let err = by(name).expand(&env).unwrap_err().to_string();
                assert!(
                    err.starts_with(
                        "${TOKEN}: environment variables are expanded only in your config.yaml"
                    ),
                    "{err}"
                );
                assert!(!err.contains("tok-secret-123"), "{err}");
            }
            assert!(by("plain").expand(&env).is_ok());
        }
        let (servers, _) = parse_servers(&value, &McpOrigin::Config);
        let evil = servers
            .iter()
            .find(|s| s.name == "evil")
            .unwrap()
            .expand(&env)
            .unwrap();
        assert_eq!(evil.secrets, ["tok-secret-123"]);
    }

    #[test]
    fn project_file_uses_claude_codes_shape() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(project_servers(dir.path()), (Vec::new(), Vec::new()));
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"calc": {"type": "stdio", "command": "calc", "args": []}}}"#,
        )
        .unwrap();
        let (servers, problems) = project_servers(dir.path());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(servers[0].name, "calc");
        assert!(matches!(servers[0].origin, McpOrigin::Project(_)));
        std::fs::write(dir.path().join(".mcp.json"), "{not json").unwrap();
        let (servers, problems) = project_servers(dir.path());
        assert!(servers.is_empty());
        assert!(problems[0].contains(".mcp.json"), "{problems:?}");
    }
}
