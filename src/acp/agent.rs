//! The ACP methods of `arbor acp` (ACP v1, schema 1.20): `initialize`, `session/new`
//! (a stored arbor root is created at once: its id is the ACP session id, so any
//! later `arbor acp` process or `arbor --resume ID` opens it), `session/load` (the
//! stored session replayed as updates), `session/resume` (opened without replay),
//! `session/close`, `session/list` (`listing`), `session/set_config_option`
//! (`options`), `session/prompt` (`turns`) and `session/cancel` (on a root or on a
//! sub-session: its subtree).
//!
//! Owns: the open ACP sessions by id and what each method does with them. Does not
//! own: a session's engine connection and forwarding (`session`), the payload
//! mappings (`updates`, `permission`, `listing`, `options`, `commands`) or the wire
//! (`transport`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, CloseSessionResponse,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, ResumeSessionRequest,
    ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities, SessionConfigOption,
    SessionListCapabilities, SessionResumeCapabilities, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::options::{self, Approvals, Current};
use super::session::{Session, locked, notify};
use super::transport::{Connection, RpcError, code};
use super::tree::Tree;
use super::{Factory, SessionSetup, commands, listing, updates};
use crate::engine::{EngineReply, ProviderModels, QueryReply};
use crate::session::{EngineCommand, EngineQuery, Metadata, SessionId};

/// The agent side of one ACP connection.
pub(super) struct Agent {
    pub(super) conn: Connection,
    factory: Factory,
    /// The agent of new root sessions (`--agent`; `None`: the bundle's root agent).
    pub(super) root_agent: Option<String>,
    /// The client advertised `subagents` in `initialize`.
    subagents: AtomicBool,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| RpcError::new(code::INVALID_PARAMS, e.to_string()))
}

fn to_value(value: impl Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::new(code::INTERNAL, e.to_string()))
}

pub(super) fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(code::INTERNAL, e.to_string())
}

pub(super) fn invalid(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(code::INVALID_PARAMS, e.to_string())
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

/// What a request leaves to do once it is answered: the ACP session whose
/// `available_commands_update` follows the answer (new, loaded, resumed sessions).
pub(super) type Then = Option<String>;

impl Agent {
    pub(super) fn new(conn: Connection, factory: Factory, root_agent: Option<String>) -> Self {
        Self {
            conn,
            factory,
            root_agent,
            subagents: AtomicBool::new(false),
            sessions: Mutex::default(),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        locked(&self.sessions)
    }

    /// The open session `acp_id`. Errors: `-32602` naming it.
    pub(super) fn session(&self, acp_id: &str) -> Result<Arc<Session>, RpcError> {
        self.sessions()
            .get(acp_id)
            .cloned()
            .ok_or_else(|| invalid(format!("no open session {acp_id}")))
    }

    /// Answers request `method`, with what is left to do after the answer.
    pub(super) async fn request(&self, method: &str, p: Value) -> (Result<Value, RpcError>, Then) {
        match self.answer(method, p).await {
            Ok((value, then)) => (Ok(value), then),
            Err(e) => (Err(e), None),
        }
    }

    async fn answer(&self, method: &str, p: Value) -> Result<(Value, Then), RpcError> {
        let done = |value| Ok((value, None));
        match method {
            "initialize" => done(to_value(self.initialize(params(p)?))?),
            "session/new" => {
                let answer = self.new_session(params(p)?).await?;
                let id = answer.session_id.0.to_string();
                Ok((to_value(answer)?, Some(id)))
            }
            "session/load" => {
                let request: LoadSessionRequest = params(p)?;
                let id = request.session_id.0.to_string();
                Ok((to_value(self.load_session(request).await?)?, Some(id)))
            }
            "session/resume" => {
                let request: ResumeSessionRequest = params(p)?;
                let id = request.session_id.0.to_string();
                Ok((to_value(self.resume_session(request).await?)?, Some(id)))
            }
            "session/close" => done(to_value(self.close(params(p)?).await?)?),
            "session/list" => done(to_value(self.list(params(p)?).await?)?),
            "session/set_config_option" => {
                done(to_value(self.set_config_option(params(p)?).await?)?)
            }
            "session/prompt" => done(to_value(self.prompt(params(p)?).await?)?),
            "authenticate" => done(json!({})),
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("arbor acp has no method {method}"),
            )),
        }
    }

    /// After the answer to a request that opened ACP session `acp_id`: its commands.
    pub(super) fn answered(&self, then: Then) {
        let Some(acp_id) = then else { return };
        let Ok(session) = self.session(&acp_id) else {
            return;
        };
        let commands = commands::available(&commands::paths(&session.cwd));
        notify(&self.conn, acp_id, commands);
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
        let sessions = SessionCapabilities::new()
            .list(SessionListCapabilities::new())
            .resume(SessionResumeCapabilities::new())
            .close(SessionCloseCapabilities::new());
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
            .mcp_capabilities(McpCapabilities::new().http(true))
            .session_capabilities(sessions);
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(
                Implementation::new("arbor", env!("CARGO_PKG_VERSION")).title("arbor".to_string()),
            )
    }

    /// A session over a new engine for `setup`, known to the client as `acp_id`, its
    /// forwarder running (not yet registered).
    fn start(&self, acp_id: String, setup: SessionSetup) -> Result<Arc<Session>, RpcError> {
        let cwd = setup.cwd.clone();
        let engine = (self.factory)(setup).map_err(internal)?;
        let subagents = self.subagents.load(Ordering::Relaxed);
        let tree = Tree::new(acp_id, subagents, cwd.clone());
        Ok(Session::start(
            self.conn.clone(),
            engine.connect(),
            tree,
            cwd,
        ))
    }

    /// A new stored root session (ACP v1 `session/new`): its arbor id is the ACP id.
    async fn new_session(
        &self,
        request: NewSessionRequest,
    ) -> Result<NewSessionResponse, RpcError> {
        let setup = SessionSetup {
            cwd: request.cwd,
            mcp_servers: mcp_servers(&request.mcp_servers),
        };
        let session = self.start(String::new(), setup)?;
        let created = session
            .ask_once(EngineCommand::CreateSession {
                agent: self.root_agent.clone(),
            })
            .await;
        let id = match created {
            Some(EngineReply::SessionCreated { session_id }) => session_id,
            other => {
                discard(&session).await;
                return Err(match other {
                    Some(EngineReply::Failed { error, .. }) => internal(error),
                    other => internal(format!("unexpected engine reply: {other:?}")),
                });
            }
        };
        {
            let mut tree = session.tree();
            tree.acp_id = id.to_string();
            tree.root = Some(id.clone());
        }
        self.sessions().insert(id.to_string(), session.clone());
        let options = self.config_options(&session).await?;
        Ok(NewSessionResponse::new(id.to_string()).config_options(options))
    }

    /// Opens stored session `acp_id` (any arbor or Amplifier session of the `cwd`'s
    /// project, an id or what `arbor session` accepts for one) and registers it:
    /// the session and its metadata. A session that recorded its context use says it
    /// first (`usage_update` with its stored tokens, limit and cost). An unknown id
    /// is said as the CLI says it (which project was searched).
    async fn open_stored(
        &self,
        acp_id: &str,
        setup: SessionSetup,
    ) -> Result<(Arc<Session>, Metadata), RpcError> {
        let session = self.start(acp_id.to_string(), setup)?;
        let engine = session.client.engine();
        let query = EngineQuery::ResolveSession {
            id: acp_id.to_string(),
        };
        let resolved = match engine.ask(query).await {
            QueryReply::ResolveSession(Ok(id)) => metadata(&session, &id).await.map(|m| (id, m)),
            QueryReply::ResolveSession(Err(e)) => Err(invalid(e)),
            other => Err(internal(format!("unexpected engine reply: {other:?}"))),
        };
        let (id, metadata) = match resolved {
            Ok(found) => found,
            Err(e) => {
                discard(&session).await;
                return Err(e);
            }
        };
        {
            let mut tree = session.tree();
            tree.root = Some(id);
            let limit = metadata.arbor.context.as_ref().map(|c| c.max_tokens);
            tree.seed_usage(metadata.usage.cost, limit);
        }
        // The editor's context meter starts where the stored session left it.
        if let Some(context) = &metadata.arbor.context {
            let usage = updates::usage(context.tokens, context.max_tokens, metadata.usage.cost);
            notify(&self.conn, acp_id, usage);
        }
        if let Some(old) = self.sessions().insert(acp_id.to_string(), session.clone()) {
            tokio::spawn(async move { old.client.engine().shutdown(Duration::from_secs(2)).await });
        }
        Ok((session, metadata))
    }

    /// ACP v1 `session/load`: the stored session, its transcript replayed as updates
    /// before the answer.
    async fn load_session(
        &self,
        request: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, RpcError> {
        let acp_id = request.session_id.0.to_string();
        let setup = SessionSetup {
            cwd: request.cwd,
            mcp_servers: mcp_servers(&request.mcp_servers),
        };
        let (session, metadata) = self.open_stored(&acp_id, setup).await?;
        let root = metadata.session_id.clone();
        let mut rx = session.ask(EngineCommand::LoadTranscript {
            session_id: root.clone(),
        });
        // The stored compactions come first; an editor replays the transcript only.
        let first = loop {
            match rx.recv().await {
                Some(EngineReply::Compactions { .. }) => continue,
                other => break other,
            }
        };
        let (loaded, earlier) = match first {
            Some(EngineReply::Opened {
                session: loaded,
                earlier,
                ..
            }) => (loaded, earlier),
            Some(EngineReply::OpenFailed { error, .. }) => {
                self.sessions().remove(&acp_id);
                discard(&session).await;
                return Err(invalid(error));
            }
            other => return Err(internal(format!("unexpected engine reply: {other:?}"))),
        };
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
                notify(&self.conn, acp_id.clone(), update);
            }
        }
        let options = self.config_options(&session).await?;
        Ok(LoadSessionResponse::new().config_options(options))
    }

    /// ACP v1 `session/resume`: the stored session, opened without replay.
    async fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse, RpcError> {
        let acp_id = request.session_id.0.to_string();
        let setup = SessionSetup {
            cwd: request.cwd,
            mcp_servers: mcp_servers(&request.mcp_servers),
        };
        let (session, _) = self.open_stored(&acp_id, setup).await?;
        let options = self.config_options(&session).await?;
        Ok(ResumeSessionResponse::new().config_options(options))
    }

    /// ACP v1 `session/close`: the session's running turns are cancelled, its engine
    /// shut down (its MCP servers stopped) and its id forgotten here; it stays
    /// stored, to load or resume later. Errors: `-32602` for a session not open.
    async fn close(&self, request: CloseSessionRequest) -> Result<CloseSessionResponse, RpcError> {
        let acp_id = request.session_id.0.to_string();
        let session = self
            .sessions()
            .remove(&acp_id)
            .ok_or_else(|| invalid(format!("no open session {acp_id}")))?;
        if let Some(root) = session.root() {
            session
                .client
                .submit(EngineCommand::Cancel { session_id: root });
        }
        discard(&session).await;
        Ok(CloseSessionResponse::new())
    }

    /// ACP v1 `session/list` (see `listing`): with a `cwd`, its project's sessions;
    /// without, every project's.
    async fn list(&self, request: ListSessionsRequest) -> Result<ListSessionsResponse, RpcError> {
        let all_projects = request.cwd.is_none();
        let cwd = match request.cwd {
            Some(cwd) if cwd.is_absolute() => cwd,
            Some(cwd) => return Err(invalid(format!("cwd must be absolute: {}", cwd.display()))),
            None => std::env::current_dir().map_err(internal)?,
        };
        let open = self.sessions().values().find(|s| s.cwd == cwd).cloned();
        let engine = match open {
            Some(session) => session.client.engine().clone(),
            None => (self.factory)(SessionSetup {
                cwd: cwd.clone(),
                mcp_servers: Map::new(),
            })
            .map_err(internal)?,
        };
        let listed = match engine.ask(EngineQuery::ListSessions { all_projects }).await {
            QueryReply::ListSessions(result) => result.map_err(internal)?,
            other => return Err(internal(format!("unexpected engine reply: {other:?}"))),
        };
        listing::page(&listed.sessions, request.cursor.as_deref(), &cwd)
    }

    /// ACP v1 `session/set_config_option` (see `options`): answers with every option
    /// as it is now. Errors: `-32602` for an unknown session, option or value, or a
    /// model the session's provider cannot take.
    async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, RpcError> {
        let session = self.session(&request.session_id.0)?;
        let value = match request.value.as_value_id() {
            Some(value) => value.0.to_string(),
            None => return Err(invalid("every option of arbor acp takes a value id")),
        };
        let root = session
            .root()
            .ok_or_else(|| internal("the session has no root"))?;
        match &*request.config_id.0 {
            options::MODEL => {
                let (current, models) = self.current(&session).await?;
                let offered = options::model_values(&models, current.model.as_deref());
                if !offered.iter().any(|(_, values)| values.contains(&value)) {
                    return Err(invalid(format!(
                        "{value} is none of the models this session offers"
                    )));
                }
                let reply = session
                    .ask_once(EngineCommand::SetModel {
                        session_id: Some(root),
                        model: value,
                    })
                    .await;
                match reply {
                    Some(EngineReply::ModelSwitched { result, .. }) => {
                        result.map_err(invalid)?;
                    }
                    other => return Err(internal(format!("unexpected engine reply: {other:?}"))),
                }
            }
            options::APPROVALS => {
                let mode = Approvals::from_id(&value).ok_or_else(|| {
                    invalid(format!("no approval mode {value}: ask, allow or reject"))
                })?;
                session.set_approvals(mode);
            }
            options::AGENT => {
                let current = metadata(&session, &root)
                    .await?
                    .agent_name
                    .unwrap_or_default();
                if value != current {
                    return Err(invalid(format!(
                        "the agent of a session is chosen when it is created (arbor acp --agent {value}); this one runs {current}"
                    )));
                }
            }
            other => return Err(invalid(format!("no config option {other}"))),
        }
        let options = self.config_options(&session).await?;
        Ok(SetSessionConfigOptionResponse::new(options))
    }

    /// The config options of `session` as it is now.
    pub(super) async fn config_options(
        &self,
        session: &Session,
    ) -> Result<Vec<SessionConfigOption>, RpcError> {
        let (current, models) = self.current(session).await?;
        Ok(options::options(&current, &models))
    }

    /// What `session` has now, and the models its providers list.
    async fn current(&self, session: &Session) -> Result<(Current, Vec<ProviderModels>), RpcError> {
        let root = session
            .root()
            .ok_or_else(|| internal("the session has no root"))?;
        let metadata = metadata(session, &root).await?;
        let engine = session.client.engine();
        let models = match engine
            .ask(EngineQuery::ListModels { session_id: root })
            .await
        {
            QueryReply::ListModels(result) => result.map_err(internal)?,
            other => return Err(internal(format!("unexpected engine reply: {other:?}"))),
        };
        session.tree().providers(
            models
                .iter()
                .map(|p| (p.provider.clone(), p.module.clone())),
        );
        let current = Current {
            model: metadata.model.clone(),
            agent: metadata.agent_name.clone().unwrap_or_default(),
            approvals: session.approvals(),
        };
        Ok((current, models))
    }
}

/// Shuts `session`'s engine down (its turns cancelled, its MCP servers stopped): it
/// was closed, or failed to open.
async fn discard(session: &Session) {
    session
        .client
        .engine()
        .shutdown(Duration::from_secs(2))
        .await;
}

/// Session `id`'s stored metadata. Errors: `-32603` with the store's error.
pub(super) async fn metadata(session: &Session, id: &SessionId) -> Result<Metadata, RpcError> {
    let query = EngineQuery::LoadMetadata {
        session_id: id.clone(),
    };
    match session.client.engine().ask(query).await {
        QueryReply::LoadMetadata(result) => Ok(*result.map_err(internal)?),
        other => Err(internal(format!("unexpected engine reply: {other:?}"))),
    }
}
