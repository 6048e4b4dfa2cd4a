//! The ACP methods and sessions of `arbor acp`: `initialize`, `session/new`,
//! `session/load` (the stored session replayed as updates), `session/prompt` (one
//! engine turn, ending with its `stopReason`) and `session/cancel` (on a root or on a
//! sub-session: its subtree).
//!
//! Owns: one [`Session`] per ACP session — its engine connection (from the
//! [`Factory`]), its [`Tree`], and a forwarding task reading the connection's one
//! ordered stream: events become `session/update`s (`approval:required` a
//! `session/request_permission`), and a command's replies go to whoever waits for them
//! — after the updates of every event before them, so a prompt's answer never overtakes
//! its last update.
//! Does not own: the payload mappings (`updates`, `permission`, `prompt`) or the
//! wire (`transport`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, SessionNotification,
    StopReason,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::transport::{Connection, RpcError, code};
use super::tree::Tree;
use super::{Factory, SessionSetup, permission, prompt, updates};
use crate::config::private::private_paths;
use crate::engine::{CommandId, EngineClient, EngineOutput, EngineReply, EngineStream};
use crate::session::{EngineCommand, Event, SessionStatus};

/// Where the forwarder hands the replies of the commands someone waits for.
type Waiting = Arc<Mutex<HashMap<CommandId, UnboundedSender<EngineReply>>>>;

/// One ACP session: a connection to an engine over its own runtime and the routing of
/// its tree.
struct Session {
    client: EngineClient,
    tree: Arc<Mutex<Tree>>,
    cwd: PathBuf,
    waiting: Waiting,
    /// One prompt at a time (ACP: a prompt turn ends before the next starts).
    turn: tokio::sync::Mutex<()>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Session {
    fn tree(&self) -> std::sync::MutexGuard<'_, Tree> {
        locked(&self.tree)
    }

    /// Submits `command`; its replies arrive on the returned receiver, each after the
    /// updates of every event before it, and it closes once the command is answered.
    fn ask(&self, command: EngineCommand) -> UnboundedReceiver<EngineReply> {
        let (tx, rx) = mpsc::unbounded_channel();
        // Held while submitting: the forwarder looks a reply up only after this.
        let mut waiting = locked(&self.waiting);
        let id = self.client.submit(command);
        waiting.insert(id, tx);
        rx
    }
}

/// The agent side of one ACP connection.
pub(super) struct Agent {
    conn: Connection,
    factory: Factory,
    /// The agent of new root sessions (`--agent`; `None`: the bundle's root agent).
    root_agent: Option<String>,
    /// The client advertised `subagents` in `initialize`.
    subagents: AtomicBool,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    next: AtomicU64,
}

fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| RpcError::new(code::INVALID_PARAMS, e.to_string()))
}

fn to_value(value: impl Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::new(code::INTERNAL, e.to_string()))
}

fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(code::INTERNAL, e.to_string())
}

/// The client's MCP servers in `config.yaml`'s `mcp_servers:` form.
fn mcp_servers(servers: &[McpServer]) -> Map<String, Value> {
    let pairs = |items: Vec<(String, String)>| -> Map<String, Value> {
        items
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect()
    };
    let mut out = Map::new();
    for server in servers {
        let (name, value) = match server {
            McpServer::Stdio(s) => (
                s.name.clone(),
                json!({
                    "command": s.command.display().to_string(),
                    "args": s.args,
                    "env": pairs(s.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect()),
                }),
            ),
            McpServer::Http(s) => (
                s.name.clone(),
                json!({
                    "url": s.url,
                    "headers": pairs(s.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect()),
                }),
            ),
            McpServer::Sse(s) => (s.name.clone(), json!({"type": "sse", "url": s.url})),
            _ => continue,
        };
        out.insert(name, value);
    }
    out
}

impl Agent {
    pub(super) fn new(conn: Connection, factory: Factory, root_agent: Option<String>) -> Self {
        Self {
            conn,
            factory,
            root_agent,
            subagents: AtomicBool::new(false),
            sessions: Mutex::default(),
            next: AtomicU64::new(1),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answers request `method`.
    pub(super) async fn request(&self, method: &str, p: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => to_value(self.initialize(params(p)?)),
            "session/new" => to_value(self.new_session(params(p)?)?),
            "session/load" => to_value(self.load_session(params(p)?).await?),
            "session/prompt" => to_value(self.prompt(params(p)?).await?),
            "authenticate" => Ok(json!({})),
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("arbor acp has no method {method}"),
            )),
        }
    }

    /// Handles notification `method` (`session/cancel`; others are ignored).
    pub(super) fn notification(&self, method: &str, p: Value) {
        if method != "session/cancel" {
            tracing::debug!("acp: notification {method} ignored");
            return;
        }
        let Ok(cancel) = params::<CancelNotification>(p) else {
            tracing::warn!("acp: unreadable session/cancel");
            return;
        };
        let id = cancel.session_id.0.to_string();
        let sessions: Vec<Arc<Session>> = self.sessions().values().cloned().collect();
        for session in sessions {
            let target = session.tree().arbor_session(&id);
            if let Some(target) = target {
                session
                    .client
                    .submit(EngineCommand::Cancel { session_id: target });
            }
        }
    }

    /// Cancels every running turn (the client closed the connection).
    pub(super) async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = self.sessions().drain().map(|(_, s)| s).collect();
        for session in sessions {
            session
                .client
                .engine()
                .shutdown(Duration::from_secs(2))
                .await;
        }
    }

    fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        self.subagents.store(
            request.client_capabilities.subagents.is_some(),
            Ordering::Relaxed,
        );
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
            .mcp_capabilities(McpCapabilities::new().http(true));
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(
                Implementation::new("arbor", env!("CARGO_PKG_VERSION")).title("arbor".to_string()),
            )
    }

    /// A session for ACP id `acp_id` over `setup`, with its forwarder running.
    fn open_session(&self, acp_id: String, setup: SessionSetup) -> Result<Arc<Session>, RpcError> {
        let cwd = setup.cwd.clone();
        let engine = (self.factory)(setup).map_err(internal)?;
        let (client, stream) = engine.connect();
        let tree = Arc::new(Mutex::new(Tree::new(
            acp_id.clone(),
            self.subagents.load(Ordering::Relaxed),
            cwd.clone(),
        )));
        let waiting = Waiting::default();
        let session = Arc::new(Session {
            client: client.clone(),
            tree: tree.clone(),
            cwd: cwd.clone(),
            waiting: waiting.clone(),
            turn: tokio::sync::Mutex::new(()),
        });
        let forwarder = Forwarder {
            conn: self.conn.clone(),
            client,
            tree,
            cwd,
            waiting,
        };
        tokio::spawn(forwarder.run(stream));
        self.sessions().insert(acp_id, session.clone());
        Ok(session)
    }

    fn new_session(&self, request: NewSessionRequest) -> Result<NewSessionResponse, RpcError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let acp_id = format!("acp-{}-{n}", std::process::id());
        let setup = SessionSetup {
            cwd: request.cwd,
            mcp_servers: mcp_servers(&request.mcp_servers),
        };
        self.open_session(acp_id.clone(), setup)?;
        Ok(NewSessionResponse::new(acp_id))
    }

    /// Opens a stored session (any arbor or Amplifier session of the project) and
    /// replays its transcript as updates before answering.
    async fn load_session(
        &self,
        request: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, RpcError> {
        let acp_id = request.session_id.0.to_string();
        let setup = SessionSetup {
            cwd: request.cwd,
            mcp_servers: mcp_servers(&request.mcp_servers),
        };
        let session = self.open_session(acp_id.clone(), setup)?;
        // An unknown id is said as the CLI says it: which project was searched.
        let query = crate::session::EngineQuery::ResolveSession { id: acp_id.clone() };
        if let crate::engine::QueryReply::ResolveSession(Err(e)) =
            session.client.engine().ask(query).await
        {
            self.sessions().remove(&acp_id);
            return Err(RpcError::new(code::INVALID_PARAMS, e.to_string()));
        }
        let mut rx = session.ask(EngineCommand::LoadTranscript {
            session_id: acp_id.clone().into(),
        });
        let (loaded, earlier) = match rx.recv().await {
            Some(EngineReply::Opened {
                session: loaded,
                earlier,
                ..
            }) => (loaded, earlier),
            Some(EngineReply::OpenFailed { error, .. }) => {
                self.sessions().remove(&acp_id);
                return Err(RpcError::new(code::INVALID_PARAMS, error.to_string()));
            }
            other => return Err(internal(format!("unexpected engine reply: {other:?}"))),
        };
        session.tree().root = Some(loaded.metadata.session_id.clone());
        let mut messages = Vec::new();
        if earlier.is_some() {
            while let Some(reply) = rx.recv().await {
                if let EngineReply::Earlier { result, .. } = reply {
                    messages.extend(result.map_err(internal)?.messages().iter().cloned());
                    break;
                }
            }
        }
        // Read once: the stored session is not followed.
        session.client.engine().stop_following();
        drop(rx);
        messages.extend(loaded.transcript.iter().cloned());
        for message in &messages {
            for update in updates::replay(message, &session.cwd) {
                self.conn.notify(
                    "session/update",
                    &SessionNotification::new(acp_id.clone(), update),
                );
            }
        }
        Ok(LoadSessionResponse::new())
    }

    /// Runs one turn of the session (creating its root on the first prompt).
    async fn prompt(&self, request: PromptRequest) -> Result<PromptResponse, RpcError> {
        let acp_id = request.session_id.0.to_string();
        let session =
            self.sessions().get(&acp_id).cloned().ok_or_else(|| {
                RpcError::new(code::INVALID_PARAMS, format!("no session {acp_id}"))
            })?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let private = private_paths(&crate::paths::Paths::from_env(), home.as_deref());
        let text = prompt::prompt_text(&request.prompt, &session.cwd, &private)?;
        let _turn = session.turn.lock().await;
        let root = session.tree().root.clone();
        let mut rx = session.ask(EngineCommand::Submit {
            agent: root.is_none().then(|| self.root_agent.clone()).flatten(),
            session_id: root,
            prompt: text,
            cleared: false,
        });
        let mut finished = None;
        while let Some(reply) = rx.recv().await {
            match reply {
                EngineReply::SessionCreated { session_id } => {
                    session.tree().root.get_or_insert(session_id);
                }
                EngineReply::TurnFinished(outcome) => finished = Some(Ok(outcome)),
                EngineReply::Failed { error, .. } => finished = Some(Err(error)),
                other => tracing::debug!("acp: reply not used: {other:?}"),
            }
        }
        let outcome = match finished {
            Some(Ok(outcome)) => outcome,
            Some(Err(error)) => return Err(internal(error)),
            None => return Err(internal("the engine ended the turn without an answer")),
        };
        let stop = match outcome.status {
            SessionStatus::Cancelled => StopReason::Cancelled,
            SessionStatus::Paused => StopReason::MaxTurnRequests,
            SessionStatus::Failed => {
                let why = outcome
                    .error
                    .map_or_else(|| "the turn failed".to_string(), |e| e.to_string());
                return Err(internal(why));
            }
            _ => StopReason::EndTurn,
        };
        Ok(PromptResponse::new(stop))
    }
}

/// Reads one session's ordered stream: events become `session/update`s, in order,
/// and the client is asked about each call that waits for approval; a reply goes to
/// whoever waits for its command.
struct Forwarder {
    conn: Connection,
    client: EngineClient,
    tree: Arc<Mutex<Tree>>,
    cwd: PathBuf,
    waiting: Waiting,
}

impl Forwarder {
    async fn run(mut self, mut stream: EngineStream) {
        while let Some(output) = stream.next().await {
            match output {
                EngineOutput::Event(event) => self.event(&event),
                EngineOutput::Reply { command, reply } => {
                    match locked(&self.waiting).get(&command) {
                        Some(waiter) => {
                            let _ = waiter.send(reply);
                        }
                        None => tracing::debug!("acp: reply not waited for: {reply:?}"),
                    }
                }
                EngineOutput::Answered { command } => {
                    locked(&self.waiting).remove(&command);
                }
            }
        }
    }

    fn event(&mut self, event: &Event) {
        let routing = locked(&self.tree).route(event);
        for (session_id, update) in routing.updates {
            self.conn.notify(
                "session/update",
                &SessionNotification::new(session_id, update),
            );
        }
        let Some(ask) = routing.ask else {
            return;
        };
        let request = permission::request(&ask.on, &ask.required, ask.input.as_ref(), &self.cwd);
        let conn = self.conn.clone();
        let client = self.client.clone();
        let required = ask.required;
        let session_id = event.session_id.clone();
        tokio::spawn(async move {
            let decision = match conn.request("session/request_permission", &request).await {
                Ok(answer) => permission::decision(&required, &answer),
                Err(e) => {
                    tracing::warn!("acp: permission request failed: {e}");
                    permission::decision(&required, &Value::Null)
                }
            };
            client.submit(EngineCommand::ResolveApproval {
                session_id,
                tool_call_id: required.tool_call_id.clone(),
                decision,
            });
        });
    }
}
