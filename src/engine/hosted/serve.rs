//! arbor's client side of a hosted agent's requests (ACP v1, schema 1.20), served
//! within the node's confinement and approvals.
//!
//! Owns: [`Server`] — `session/request_permission` decided by the node's approval
//! gate (`gate::Gate::check`: policy, deny rules, the person's ⚑ answer in the TUI,
//! `--yes` headless) on the arbor tool the tool table gives the request's ACP kind
//! (`execute` → `bash` with its command, `edit`/`delete`/`move` → `write_file`,
//! `read` → `read_file`, `search` → `glob`, `fetch` → `web_fetch`, else
//! `acp_action`), answered with the agent's allow option or its reject option;
//! `fs/read_text_file` gated as `read_file` and confined to the node's working
//! directory (`tool::confine`); `fs/write_text_file` run as arbor's own `write_file`
//! call (`calls::run_calls`: hooks, approval, `allowed_write_paths`, checkpoint,
//! `files_changed`); `terminal/create` run as arbor's own `bash` call (approved and
//! sandboxed the same way) with `terminal/output` (the output once the command ended
//! — `bash` does not stream —, its end kept within `outputByteLimit`),
//! `wait_for_exit`, `kill` and `release` over it. Does not own: reading the wire or
//! the turn (`drive`), the updates (`record`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    CreateTerminalRequest, PermissionOptionKind, ReadTextFileRequest, RequestPermissionRequest,
    ToolKind, WriteTextFileRequest,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::acp_client::rpc::{RpcError, code};
use crate::config::modules::TOOL_MODULES;
use crate::engine::calls;
use crate::engine::gate::{Gate, Pass};
use crate::engine::live::LiveSession;
use crate::provider::ToolSpec;
use crate::session::message::ToolCall;
use crate::tool::mount::ToolSet;
use crate::tool::{Tool, ToolContext, ToolOutput, confine};

/// What a served request came to.
pub(crate) enum Served {
    /// The answer to the agent's request `id`.
    Answer(Value, Result<Value, RpcError>),
    /// Terminal `id`'s command ended with this output (the `bash` tool's result).
    Exited(String, ToolOutput),
}

/// One terminal the agent created.
struct Terminal {
    /// Cancels its command (`terminal/kill`, `release`).
    stop: CancellationToken,
    /// Its output (cut to `limit`), whether it was cut, and its exit code, once it
    /// ended.
    ended: Option<(String, bool, i64)>,
    /// `outputByteLimit`: the bytes of output kept (the end of it).
    limit: Option<u64>,
    /// `wait_for_exit` requests waiting for it.
    waiters: Vec<Value>,
}

/// The node's side of the agent's requests for one hosted turn.
pub(crate) struct Server<'a> {
    live: &'a LiveSession,
    gate: &'a Gate<'a>,
    tools: &'a ToolSet,
    token: &'a CancellationToken,
    terminals: HashMap<String, Terminal>,
    calls: u64,
}

impl<'a> Server<'a> {
    /// A server for `live`'s turn under `token`, deciding through `gate` and running
    /// the node's own `tools`.
    pub fn new(
        live: &'a LiveSession,
        gate: &'a Gate<'a>,
        tools: &'a ToolSet,
        token: &'a CancellationToken,
    ) -> Self {
        Self {
            live,
            gate,
            tools,
            token,
            terminals: HashMap::new(),
            calls: 0,
        }
    }

    /// Starts serving request `id` (`method`, `params`): each future ends with an
    /// answer, or, for a terminal's command, with its exit; none for a
    /// `wait_for_exit` that waits (answered by [`Self::exited`]).
    pub fn handle(&mut self, id: Value, method: &str, params: Value) -> Vec<BoxFuture<'a, Served>> {
        let ready = |id, result| futures::future::ready(Served::Answer(id, result)).boxed();
        let one = match method {
            "session/request_permission" => match parse::<RequestPermissionRequest>(params) {
                Ok(request) => self.permission(id, request),
                Err(e) => ready(id, Err(e)),
            },
            "fs/read_text_file" => match parse::<ReadTextFileRequest>(params) {
                Ok(request) => self.read(id, request),
                Err(e) => ready(id, Err(e)),
            },
            "fs/write_text_file" => match parse::<WriteTextFileRequest>(params) {
                Ok(request) => self.write(id, request),
                Err(e) => ready(id, Err(e)),
            },
            "terminal/create" => match parse::<CreateTerminalRequest>(params) {
                Ok(request) => {
                    let (terminal, run) = self.create_terminal(request);
                    // The answer goes out at once; the command's end comes later.
                    return vec![ready(id, Ok(json!({"terminalId": terminal}))), run];
                }
                Err(e) => ready(id, Err(e)),
            },
            "terminal/output" | "terminal/wait_for_exit" | "terminal/kill" | "terminal/release" => {
                let terminal = params
                    .get("terminalId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                match self.terminal(id.clone(), method, &terminal) {
                    Some(result) => ready(id, result),
                    None => return Vec::new(),
                }
            }
            other => ready(
                id,
                Err(RpcError::new(
                    code::METHOD_NOT_FOUND,
                    format!("arbor does not serve {other}"),
                )),
            ),
        };
        vec![one]
    }

    /// A terminal's command ended: records its output and returns the answers of the
    /// `wait_for_exit` requests waiting for it.
    pub fn exited(&mut self, terminal: &str, output: ToolOutput) -> Vec<(Value, Value)> {
        let Some(t) = self.terminals.get_mut(terminal) else {
            return Vec::new();
        };
        let (text, code) = terminal_output(&output);
        let (text, cut) = keep_tail(text, t.limit);
        t.ended = Some((text, cut, code));
        std::mem::take(&mut t.waiters)
            .into_iter()
            .map(|id| (id, json!({"exitCode": code, "signal": null})))
            .collect()
    }

    fn permission(
        &mut self,
        id: Value,
        request: RequestPermissionRequest,
    ) -> BoxFuture<'a, Served> {
        let fields = &request.tool_call.fields;
        let (tool, arguments) = gate_call(
            fields.kind.unwrap_or_default(),
            fields.raw_input.as_ref(),
            fields
                .locations
                .as_deref()
                .unwrap_or_default()
                .first()
                .map(|l| l.path.as_path()),
            fields.title.as_deref().unwrap_or_default(),
        );
        let call = ToolCall {
            id: request.tool_call.tool_call_id.0.to_string(),
            tool: tool.clone(),
            arguments: arguments.into(),
        };
        let (gate, token) = (self.gate, self.token);
        async move {
            let shim: Arc<dyn Tool> = Arc::new(AskTool::new(&tool));
            let pass = gate.check(&shim, &call, token).await;
            let wanted: &[PermissionOptionKind] = match pass {
                _ if token.is_cancelled() => &[],
                Pass::Run => &[
                    PermissionOptionKind::AllowOnce,
                    PermissionOptionKind::AllowAlways,
                ],
                Pass::Refused(_) => &[
                    PermissionOptionKind::RejectOnce,
                    PermissionOptionKind::RejectAlways,
                ],
            };
            let chosen = wanted
                .iter()
                .find_map(|kind| request.options.iter().find(|o| o.kind == *kind));
            let outcome = match chosen {
                Some(option) => {
                    json!({"outcome": "selected", "optionId": option.option_id.0.to_string()})
                }
                None => json!({"outcome": "cancelled"}),
            };
            Served::Answer(id, Ok(json!({"outcome": outcome})))
        }
        .boxed()
    }

    fn read(&mut self, id: Value, request: ReadTextFileRequest) -> BoxFuture<'a, Served> {
        let path = request.path.display().to_string();
        let call = ToolCall {
            id: self.next_call("read"),
            tool: "read_file".into(),
            arguments: json!({"file_path": path}).into(),
        };
        let (gate, token, dir) = (self.gate, self.token, self.live.working_dir.clone());
        async move {
            let shim: Arc<dyn Tool> = Arc::new(AskTool::new("read_file"));
            if let Pass::Refused(output) = gate.check(&shim, &call, token).await {
                return Served::Answer(id, Err(RpcError::new(code::INTERNAL, output.content)));
            }
            let read = tokio::task::spawn_blocking(move || {
                read_confined(&dir, &path, request.line, request.limit)
            })
            .await
            .unwrap_or_else(|e| Err(format!("the read failed: {e}")));
            Served::Answer(
                id,
                read.map(|content| json!({"content": content}))
                    .map_err(|e| RpcError::new(code::INTERNAL, e)),
            )
        }
        .boxed()
    }

    fn write(&mut self, id: Value, request: WriteTextFileRequest) -> BoxFuture<'a, Served> {
        let call = ToolCall {
            id: self.next_call("write"),
            tool: "write_file".into(),
            arguments:
                json!({"file_path": request.path.display().to_string(), "content": request.content})
                    .into(),
        };
        let (live, tools, gate, token) = (self.live, self.tools, self.gate, self.token);
        async move {
            if tools.get("write_file").is_none() {
                let e = "write_file is not mounted for this agent: it may not write files";
                return Served::Answer(id, Err(RpcError::new(code::INTERNAL, e)));
            }
            let mut results = calls::run_calls(live, tools, gate, &[call], token).await;
            let output = results
                .outputs
                .pop()
                .unwrap_or_else(|| ToolOutput::error("no result"));
            let result = if output.is_error {
                Err(RpcError::new(code::INTERNAL, output.content))
            } else {
                Ok(json!({}))
            };
            Served::Answer(id, result)
        }
        .boxed()
    }

    /// Registers a terminal and returns its id and the future running its command
    /// as a `bash` call (ending with [`Served::Exited`]).
    fn create_terminal(
        &mut self,
        request: CreateTerminalRequest,
    ) -> (String, BoxFuture<'a, Served>) {
        let terminal = self.next_call("term");
        let mut line = String::new();
        if let Some(cwd) = &request.cwd {
            line.push_str(&format!("cd {} && ", quote(&cwd.display().to_string())));
        }
        for var in &request.env {
            line.push_str(&format!("{}={} ", var.name, quote(&var.value)));
        }
        line.push_str(&request.command);
        for arg in &request.args {
            line.push(' ');
            line.push_str(&quote(arg));
        }
        let stop = self.token.child_token();
        self.terminals.insert(
            terminal.clone(),
            Terminal {
                stop: stop.clone(),
                ended: None,
                limit: request.output_byte_limit,
                waiters: Vec::new(),
            },
        );
        let call = ToolCall {
            id: terminal.clone(),
            tool: "bash".into(),
            arguments: json!({"command": line}).into(),
        };
        let (live, tools, gate) = (self.live, self.tools, self.gate);
        let id = terminal.clone();
        let run = async move {
            let output = if tools.get("bash").is_none() {
                ToolOutput::error("bash is not mounted for this agent: it may not run commands")
            } else {
                let mut results = calls::run_calls(live, tools, gate, &[call], &stop).await;
                results
                    .outputs
                    .pop()
                    .unwrap_or_else(|| ToolOutput::error("no result"))
            };
            Served::Exited(id, output)
        }
        .boxed();
        (terminal, run)
    }

    /// The answer to a terminal request; `None` for a `wait_for_exit` left waiting.
    fn terminal(
        &mut self,
        id: Value,
        method: &str,
        terminal: &str,
    ) -> Option<Result<Value, RpcError>> {
        let Some(t) = self.terminals.get_mut(terminal) else {
            return Some(Err(RpcError::new(
                code::INVALID_PARAMS,
                format!("no terminal '{terminal}'"),
            )));
        };
        Some(match method {
            "terminal/output" => Ok(match &t.ended {
                Some((text, cut, code)) => json!({
                    "output": text, "truncated": cut,
                    "exitStatus": {"exitCode": code, "signal": null},
                }),
                None => json!({"output": "", "truncated": false}),
            }),
            "terminal/wait_for_exit" => match &t.ended {
                Some((_, _, code)) => Ok(json!({"exitCode": code, "signal": null})),
                None => {
                    t.waiters.push(id);
                    return None;
                }
            },
            "terminal/kill" => {
                t.stop.cancel();
                Ok(json!({}))
            }
            _ => {
                t.stop.cancel();
                self.terminals.remove(terminal);
                Ok(json!({}))
            }
        })
    }

    fn next_call(&mut self, what: &str) -> String {
        self.calls += 1;
        format!("acp_{what}_{}", self.calls)
    }
}

/// The arbor tool and arguments a permission request of `kind` is decided as: the
/// first tool of the tool table (`config::modules`) whose ACP kind is the request's
/// (delete and move as edits), its input filled from the request as its summary
/// reads it — the command (`bash(rm *)` rules apply), the file, the URL; an action
/// of no such kind is `acp_action` (asked by default).
fn gate_call(
    kind: ToolKind,
    raw: Option<&Value>,
    location: Option<&Path>,
    title: &str,
) -> (String, Value) {
    use crate::config::modules::{Summary, ToolKind as Kind, builtin_tools};
    let kind = match kind {
        ToolKind::Read => Kind::Read,
        ToolKind::Edit | ToolKind::Delete | ToolKind::Move => Kind::Edit,
        ToolKind::Search => Kind::Search,
        ToolKind::Execute => Kind::Execute,
        ToolKind::Fetch => Kind::Fetch,
        _ => Kind::Other,
    };
    let field = |key: &str| raw.and_then(|r| r.get(key)).and_then(Value::as_str);
    let Some(tool) = builtin_tools().find(|t| t.kind == kind && kind != Kind::Other) else {
        return (
            "acp_action".into(),
            json!({"title": title, "raw_input": raw}),
        );
    };
    let mut input = serde_json::Map::new();
    if let Some(command) = tool.command_field {
        let line = command_of(raw).unwrap_or_else(|| title.to_string());
        input.insert(command.into(), Value::String(line));
    }
    match tool.summary {
        Summary::File(_) => {
            let path = location
                .map(|p| p.display().to_string())
                .or_else(|| field("path").map(str::to_string))
                .unwrap_or_default();
            input.insert("file_path".into(), Value::String(path));
        }
        Summary::Input(key) | Summary::Quoted(key) => {
            let value = field(key).or_else(|| field("url")).unwrap_or(title);
            input.insert(key.into(), Value::String(value.to_string()));
        }
        _ => {}
    }
    (tool.name.to_string(), Value::Object(input))
}

/// The command line of an `execute` request's raw input: `command` as text, or as an
/// argv (`["bash", "-lc", "<line>"]` gives the line).
fn command_of(raw: Option<&Value>) -> Option<String> {
    match raw?.get("command")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(argv) => {
            let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [_, flag, line] if flag.ends_with('c') && flag.starts_with('-') => {
                    Some(line.to_string())
                }
                _ => Some(words.join(" ")),
            }
        }
        _ => None,
    }
}

/// Reads `path` inside `dir` (confined as `read_file` is) from 1-based `line`, at
/// most `limit` lines.
fn read_confined(
    dir: &Path,
    path: &str,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String, String> {
    let root = confine::root(dir).map_err(|e| e.to_string())?;
    let file = confine::resolve(&root, path).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read '{path}': {e}"))?;
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    let skip = line.unwrap_or(1).max(1) as usize - 1;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
}

/// A `bash` result as a terminal's output and exit code.
fn terminal_output(output: &ToolOutput) -> (String, i64) {
    let parsed: Value = serde_json::from_str(&output.content).unwrap_or(Value::Null);
    let text = |k: &str| {
        parsed
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    match parsed.get("returncode") {
        Some(code) => (
            format!("{}{}{}", text("stdout"), text("stderr"), text("error")),
            code.as_i64().unwrap_or(-1),
        ),
        None => (output.content.clone(), if output.is_error { 1 } else { 0 }),
    }
}

/// The last `limit` bytes of `text` (from a character boundary), and whether it was
/// cut (ACP `outputByteLimit`: the output's beginning goes first).
fn keep_tail(text: String, limit: Option<u64>) -> (String, bool) {
    let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    if text.len() <= limit {
        return (text, false);
    }
    let mut start = text.len() - limit;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (text[start..].to_string(), true)
}

fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| RpcError::new(code::INVALID_PARAMS, e.to_string()))
}

/// The gate's view of an agent's own action: the arbor tool it stands for (its name
/// and module decide the rules), never run.
struct AskTool {
    name: String,
    module: &'static str,
}

impl AskTool {
    fn new(name: &str) -> Self {
        let module = TOOL_MODULES
            .iter()
            .find(|m| m.tools.iter().any(|t| t.name == name))
            .map_or("acp", |m| m.name);
        Self {
            name: name.to_string(),
            module,
        }
    }
}

impl Tool for AskTool {
    fn module(&self) -> &str {
        self.module
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: "an action of a hosted ACP agent".into(),
            input_schema: json!({"type": "object"}),
        }
    }

    fn call(&self, _input: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(std::future::ready(ToolOutput::error(
            "the hosted agent runs this action itself",
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_request_is_decided_as_the_tool_of_its_kind() {
        let argv = json!({"command": ["bash", "-lc", "rm -rf build"]});
        assert_eq!(
            gate_call(ToolKind::Execute, Some(&argv), None, "Run"),
            ("bash".into(), json!({"command": "rm -rf build"}))
        );
        assert_eq!(
            gate_call(
                ToolKind::Delete,
                None,
                Some(Path::new("/w/a.txt")),
                "Delete"
            ),
            ("write_file".into(), json!({"file_path": "/w/a.txt"}))
        );
        let url = json!({"url": "https://example.com"});
        assert_eq!(
            gate_call(ToolKind::Fetch, Some(&url), None, "Fetch").0,
            "web_fetch"
        );
        assert_eq!(gate_call(ToolKind::Think, None, None, "t").0, "acp_action");
    }

    #[test]
    fn a_terminals_output_keeps_its_end_within_the_limit() {
        assert_eq!(keep_tail("abcdef".into(), Some(3)), ("def".into(), true));
        assert_eq!(keep_tail("ab".into(), Some(3)), ("ab".into(), false));
        assert_eq!(keep_tail("aé".into(), Some(1)), (String::new(), true));
    }

    #[test]
    fn a_terminal_command_line_quotes_its_arguments() {
        assert_eq!(quote("plain-arg"), "plain-arg");
        assert_eq!(quote("it's here"), r"'it'\''s here'");
    }
}
