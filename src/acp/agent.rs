//! The ACP methods and sessions of `arbor acp`: `initialize`, `session/new`,
//! `session/load` (the stored session replayed as updates), `session/prompt` (one
//! engine turn, ending with its `stopReason`) and `session/cancel` (on a root or on a
//! sub-session: its subtree).
//!
//! Owns: one [`Session`] per ACP session — its engine (from the [`Factory`]), its
//! [`Tree`], and a forwarding task turning the engine's bus events into
//! `session/update`s and its `approval:required` into `session/request_permission`.
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
use tokio::sync::mpsc::{self, UnboundedReceiver};
use tokio::sync::oneshot;

use super::transport::{Connection, RpcError, code};
use super::tree::Tree;
use super::{Factory, SessionSetup, permission, prompt, updates};
use crate::config::private::private_paths;
use crate::engine::{Engine, EngineReply, Replies};
use crate::session::{EngineCommand, EngineEvent, Event, SessionStatus};

/// One ACP session: an engine over its own runtime and the routing of its tree.
struct Session {
    engine: Engine,
    tree: Arc<Mutex<Tree>>,
    cwd: PathBuf,
    /// Asks the forwarder to send every event published so far, then answer.
    flush: mpsc::UnboundedSender<oneshot::Sender<()>>,
    /// One prompt at a time (ACP: a prompt turn ends before the next starts).
    turn: tokio::sync::Mutex<()>,
}

impl Session {
    fn tree(&self) -> std::sync::MutexGuard<'_, Tree> {
        self.tree.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the updates of every event published so far were sent.
    async fn flushed(&self) {
        let (tx, rx) = oneshot::channel();
        if self.flush.send(tx).is_ok() {
            let _ = rx.await;
        }
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
                session.engine.execute(
                    EngineCommand::Cancel { session_id: target },
                    Replies::new(|_| true),
                );
            }
        }
    }

    /// Cancels every running turn (the client closed the connection).
    pub(super) async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = self.sessions().drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.engine.shutdown(Duration::from_secs(2)).await;
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
        let events = engine.subscribe();
        let tree = Arc::new(Mutex::new(Tree::new(
            acp_id.clone(),
            self.subagents.load(Ordering::Relaxed),
            cwd.clone(),
        )));
        let (flush, flushes) = mpsc::unbounded_channel();
        let session = Arc::new(Session {
            engine: engine.clone(),
            tree: tree.clone(),
            cwd: cwd.clone(),
            flush,
            turn: tokio::sync::Mutex::new(()),
        });
        let forwarder = Forwarder {
            conn: self.conn.clone(),
            engine,
            tree,
            cwd,
            inputs: HashMap::new(),
        };
        tokio::spawn(forwarder.run(events, flushes));
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
        let (tx, mut rx) = mpsc::unbounded_channel();
        session.engine.open(acp_id.clone(), Replies::channel(tx));
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
        // Dropping the receiver stops following the stored session.
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
        let (tx, mut rx) = mpsc::unbounded_channel();
        session.engine.execute(
            EngineCommand::Submit {
                agent: root.is_none().then(|| self.root_agent.clone()).flatten(),
                session_id: root,
                prompt: text,
            },
            Replies::channel(tx),
        );
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
        session.flushed().await;
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

/// Turns one session's bus events into `session/update`s, in order, and asks the
/// client about each call that waits for approval.
struct Forwarder {
    conn: Connection,
    engine: Engine,
    tree: Arc<Mutex<Tree>>,
    cwd: PathBuf,
    /// Tool inputs by call id (for the permission request's diff and locations).
    inputs: HashMap<String, Value>,
}

impl Forwarder {
    async fn run(
        mut self,
        mut events: UnboundedReceiver<Arc<Event>>,
        mut flushes: UnboundedReceiver<oneshot::Sender<()>>,
    ) {
        loop {
            tokio::select! {
                biased;
                event = events.recv() => match event {
                    Some(event) => self.event(&event),
                    None => break,
                },
                flush = flushes.recv() => match flush {
                    Some(done) => {
                        while let Ok(event) = events.try_recv() {
                            self.event(&event);
                        }
                        let _ = done.send(());
                    }
                    None => break,
                },
            }
        }
    }

    fn event(&mut self, event: &Event) {
        let (routed, asked_on) = {
            let mut tree = self.tree.lock().unwrap_or_else(|p| p.into_inner());
            let routed = tree.route(event);
            // Without `subagents`, a child's approval is asked on the root.
            let asked_on = tree.acp_session(&event.session_id).or_else(|| {
                tree.contains(&event.session_id)
                    .then(|| tree.acp_id.clone())
            });
            (routed, asked_on)
        };
        for (session_id, update) in routed {
            self.conn.notify(
                "session/update",
                &SessionNotification::new(session_id, update),
            );
        }
        match &event.msg {
            EngineEvent::ToolPre(pre) => {
                self.inputs
                    .insert(pre.tool_call_id.to_string(), pre.tool_input.clone());
            }
            EngineEvent::ApprovalRequired(required) => {
                let Some(on) = asked_on else { return };
                let input = self.inputs.get(&*required.tool_call_id).cloned();
                let request = permission::request(&on, required, input.as_ref(), &self.cwd);
                let conn = self.conn.clone();
                let engine = self.engine.clone();
                let required = required.clone();
                let session_id = event.session_id.clone();
                tokio::spawn(async move {
                    let decision = match conn.request("session/request_permission", &request).await
                    {
                        Ok(answer) => permission::decision(&required, &answer),
                        Err(e) => {
                            tracing::warn!("acp: permission request failed: {e}");
                            permission::decision(&required, &Value::Null)
                        }
                    };
                    engine.execute(
                        EngineCommand::ResolveApproval {
                            session_id,
                            tool_call_id: required.tool_call_id.clone(),
                            decision,
                        },
                        Replies::new(|reply| {
                            tracing::debug!("acp: approval not resolved: {reply:?}");
                            true
                        }),
                    );
                });
            }
            _ => {}
        }
    }
}
