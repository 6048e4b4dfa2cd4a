//! One turn of a hosted node: its agent's process started (or taken from the last
//! turn), `session/prompt` with the turn's input, and everything the agent sends
//! until the prompt's answer.
//!
//! Owns: [`drive`] — starting the agent (`acp_client`: the process in the node's
//! working directory, the handshake, loading the node's earlier ACP session — its id
//! kept in metadata `acp_session_id` — when a new process resumes it, its replayed
//! history dropped) and failing the turn with the agent's own message and stderr
//! tail when it cannot start, refuses `initialize`, does not get through the
//! handshake within [`HANDSHAKE_WAIT`] or crashes; the loop over its messages
//! (`session/update` to `record`, requests to `serve`, answered as they finish),
//! cancellation (`session/cancel`, then the agent's
//! `cancelled` answer, at most [`CANCEL_WAIT`]), a spent budget (cancel, the turn
//! `paused`), and keeping the process for the node's next turn. Does not own: the
//! turn's frame — status, closing events, checkpoints, the steers and queued
//! messages that become the next prompts (`turn`).

use std::collections::HashMap;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    ContentBlock, PromptRequest, SessionNotification, TextContent,
};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::record::Recorder;
use super::serve::{Served, Server};
use crate::acp_client::rpc::code;
use crate::acp_client::{AcpClientError, AgentProcess, Hosted, Incoming, RpcError};
use crate::config::acp_agent::AcpAgentSpec;
use crate::config::budget::BudgetState;
use crate::engine::env::TurnEnv;
use crate::engine::gate::Gate;
use crate::engine::live::LiveSession;
use crate::session::message::Message;
use crate::session::{SessionStatus, Usage};
use crate::tool::mount::ToolSet;

/// How long after `session/cancel` the agent has to answer its prompt `cancelled`
/// before its process is killed and the turn ends cancelled anyway.
pub const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// How long the agent has to get through `initialize`, `authenticate` and
/// `session/new` before the node fails (an agent waiting for a login nobody gives).
pub const HANDSHAKE_WAIT: Duration = Duration::from_secs(60);

/// How a hosted turn ended: what `turn` makes the turn's end of.
pub(crate) struct HostedEnd {
    /// `completed`, `cancelled`, `paused` (budget spent) or `failed`.
    pub status: SessionStatus,
    /// The agent's last message text: the turn's (and a `task`'s) answer.
    pub response: String,
    /// Why it failed, for people: the agent's own message, its stderr tail.
    pub error: Option<String>,
    /// Tokens the agent reported for the turn.
    pub usage: Usage,
    /// USD its cost grew by, when it reports cost.
    pub cost: Option<f64>,
}

impl HostedEnd {
    fn failed(error: String) -> Self {
        Self {
            status: SessionStatus::Failed,
            response: String::new(),
            error: Some(error),
            usage: Usage::default(),
            cost: None,
        }
    }
}

/// Runs `live`'s turn on the ACP agent of `spec`: `prompts` (the turn's new user
/// messages; none for a continue: the last user message again) as one
/// `session/prompt`, the agent's requests served with `tools` through `gate`, under
/// `token`. Never fails: a failure is the end's `error`.
pub(crate) async fn drive(
    env: &TurnEnv,
    live: &LiveSession,
    gate: &Gate<'_>,
    tools: &ToolSet,
    spec: &AcpAgentSpec,
    prompts: &[String],
    token: &CancellationToken,
) -> HostedEnd {
    let text = prompt_text(live, prompts);
    let agents = &env.hosted;
    let mut hosted = match agents.take(&live.id) {
        Some(hosted) => hosted,
        None => match start(env, live, spec, token).await {
            Ok(hosted) => hosted,
            Err(end) => return end,
        },
    };
    let mut recorder = Recorder::new(live, hosted.seen_cost);
    let mut server = Server::new(live, gate, tools, token);
    let ended = prompt(&mut hosted, &mut recorder, &mut server, live, text, token).await;
    hosted.seen_cost = recorder.seen_cost();
    let (status, error, keep) = match ended {
        Ended::Answered(result) => {
            recorder.add_prompt_usage(&result);
            let reason = result
                .get("stopReason")
                .and_then(Value::as_str)
                .unwrap_or("end_turn")
                .to_string();
            match reason.as_str() {
                "end_turn" => (SessionStatus::Completed, None, true),
                "cancelled" => (SessionStatus::Cancelled, None, true),
                other => (
                    SessionStatus::Failed,
                    Some(format!("the ACP agent stopped: {other}")),
                    true,
                ),
            }
        }
        Ended::Paused => (SessionStatus::Paused, None, true),
        Ended::Cancelled => (SessionStatus::Cancelled, None, false),
        Ended::Refused(e) => (SessionStatus::Failed, Some(e.to_string()), true),
        Ended::Crashed(e) => {
            let message = hosted.process.failure(&e).await;
            (SessionStatus::Failed, Some(message), false)
        }
    };
    let open = match status {
        SessionStatus::Completed => "the agent ended its turn without reporting this call's result",
        SessionStatus::Failed => "the agent failed before this call finished",
        _ => "cancelled: the turn was cancelled before this tool call finished",
    };
    let response = recorder.finish(open);
    if keep {
        agents.keep(&live.id, hosted);
    } else {
        hosted.process.kill().await;
    }
    HostedEnd {
        status,
        response,
        error,
        usage: recorder.usage,
        cost: recorder.cost,
    }
}

/// Starts `spec`'s agent for `live` and opens its ACP session; the failed end (with
/// the agent's message and stderr tail) when it cannot.
async fn start(
    turn_env: &TurnEnv,
    live: &LiveSession,
    spec: &AcpAgentSpec,
    token: &CancellationToken,
) -> Result<Hosted, HostedEnd> {
    let env = agent_env(turn_env, spec);
    let mut process = AgentProcess::start(spec, &live.working_dir, &env)
        .map_err(|e| HostedEnd::failed(e.to_string()))?;
    let earlier = live
        .metadata()
        .extra
        .get(SESSION_KEY)
        .and_then(Value::as_str)
        .map(str::to_string);
    let handshake = crate::acp_client::open(
        &process.conn,
        spec,
        &live.working_dir,
        &env,
        earlier.as_deref(),
    );
    let opened = tokio::select! {
        opened = tokio::time::timeout(HANDSHAKE_WAIT, handshake) => {
            opened.unwrap_or_else(|_| Err(AcpClientError::NoAnswer(format!(
                "initialize, authenticate and session/new within {} s",
                HANDSHAKE_WAIT.as_secs()
            ))))
        }
        () = token.cancelled() => {
            process.kill().await;
            let mut end = HostedEnd::failed(String::new());
            end.status = SessionStatus::Cancelled;
            end.error = None;
            return Err(end);
        }
    };
    match opened {
        Ok(opened) => {
            let agent = opened.agent.as_deref().unwrap_or(&spec.command);
            tracing::info!(
                session = %live.id,
                agent,
                auth = ?opened.authenticated,
                "hosted ACP agent started"
            );
            // `session show` and the tree name the agent that answers, not the
            // provider the node inherited.
            let label = format!("acp/{agent}");
            let id = opened.session_id.clone();
            live.update_metadata(|m| {
                m.model = Some(label);
                m.extra.insert(SESSION_KEY.into(), Value::String(id));
            });
            if opened.loaded {
                // The history it replayed is already in the node's transcript.
                while let Ok(message) = process.incoming.try_recv() {
                    if let Incoming::Request { id, method, .. } = message {
                        let refused = format!("arbor does not serve {method} while loading");
                        process
                            .conn
                            .respond(id, Err(RpcError::new(code::INTERNAL, refused)));
                    }
                }
            }
            Ok(Hosted {
                process,
                session_id: opened.session_id,
                seen_cost: None,
            })
        }
        Err(e) => {
            let message = process.failure(&e).await;
            process.kill().await;
            Err(HostedEnd::failed(message))
        }
    }
}

/// The node's metadata key (among the keys arbor keeps as read) holding its agent's
/// ACP `sessionId`, loaded again when a later process resumes the node.
const SESSION_KEY: &str = "acp_session_id";

/// The environment the agent starts with: arbor's own, the runtime's home
/// directories over it (a test's temp home, never the real one), `acp.env` last.
fn agent_env(turn_env: &TurnEnv, spec: &AcpAgentSpec) -> HashMap<String, String> {
    let mut env: HashMap<String, String> = std::env::vars().collect();
    for key in HOME_VARS {
        if let Some(value) = (turn_env.env)(key) {
            env.insert(key.to_string(), value);
        }
    }
    env.extend(spec.env.clone());
    env
}

/// The variables naming home and config directories, taken from the runtime's
/// environment lookup.
const HOME_VARS: [&str; 5] = [
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
];

/// How the prompt's loop ended.
enum Ended {
    /// The agent answered the prompt (the raw result: `stopReason`, maybe `usage`).
    Answered(Value),
    /// The node's budget was spent: cancelled, and the agent answered.
    Paused,
    /// Cancelled and the agent did not answer in time (its process is ended).
    Cancelled,
    /// The agent answered the prompt with an error (it keeps running).
    Refused(AcpClientError),
    /// The agent exited or answered what is not ACP.
    Crashed(AcpClientError),
}

/// Sends the prompt and serves the agent until it answers it.
async fn prompt(
    hosted: &mut Hosted,
    recorder: &mut Recorder<'_>,
    server: &mut Server<'_>,
    live: &LiveSession,
    text: String,
    token: &CancellationToken,
) -> Ended {
    let conn = hosted.process.conn.clone();
    let session_id = hosted.session_id.clone();
    let request = PromptRequest::new(
        session_id.clone(),
        vec![ContentBlock::Text(TextContent::new(text))],
    );
    let asked = conn.clone();
    let mut answer =
        Box::pin(async move { asked.request::<Value>("session/prompt", &request).await });
    let mut pending = FuturesUnordered::new();
    let mut cancelled = false;
    let mut paused = false;
    let mut open = true;
    let cancel_wait = tokio::time::sleep(Duration::MAX);
    tokio::pin!(cancel_wait);
    let ended = loop {
        tokio::select! {
            biased;
            message = hosted.process.incoming.recv(), if open => match message {
                None => open = false,
                Some(Incoming::Notification { method, params }) => {
                    note(recorder, &method, params, &session_id);
                    if !cancelled && budget_spent(live) {
                        paused = true;
                        cancelled = true;
                        conn.notify("session/cancel", &json!({"sessionId": session_id}));
                        cancel_wait.as_mut().reset(tokio::time::Instant::now() + CANCEL_WAIT);
                    }
                }
                Some(Incoming::Request { id, method, params }) => {
                    pending.extend(server.handle(id, &method, params));
                }
            },
            Some(served) = pending.next(), if !pending.is_empty() => match served {
                Served::Answer(id, result) => conn.respond(id, result),
                Served::Exited(terminal, output) => {
                    for (id, result) in server.exited(&terminal, output) {
                        conn.respond(id, Ok(result));
                    }
                }
            },
            result = &mut answer => break match result {
                Ok(_) if paused => Ended::Paused,
                Ok(value) => Ended::Answered(value),
                Err(_) if cancelled => Ended::Answered(json!({"stopReason": "cancelled"})),
                Err(e @ AcpClientError::Rpc(_)) => Ended::Refused(e),
                Err(e) => Ended::Crashed(e),
            },
            () = token.cancelled(), if !cancelled => {
                cancelled = true;
                conn.notify("session/cancel", &json!({"sessionId": session_id}));
                cancel_wait.as_mut().reset(tokio::time::Instant::now() + CANCEL_WAIT);
            }
            () = &mut cancel_wait, if cancelled => break Ended::Cancelled,
        }
    };
    // Updates sent before the answer are already queued: record them.
    while let Ok(message) = hosted.process.incoming.try_recv() {
        if let Incoming::Notification { method, params } = message {
            note(recorder, &method, params, &session_id);
        }
    }
    ended
}

/// Records a `session/update` of the node's ACP session; other notifications are
/// logged.
fn note(recorder: &mut Recorder<'_>, method: &str, params: Value, session_id: &str) {
    if method != "session/update" {
        tracing::debug!("hosted ACP agent sent {method}");
        return;
    }
    match serde_json::from_value::<SessionNotification>(params) {
        Ok(n) if *n.session_id.0 == *session_id => recorder.apply(n.update),
        Ok(_) => {}
        Err(e) => tracing::warn!("hosted ACP agent sent an unreadable session/update: {e}"),
    }
}

/// Whether the node's budget is spent.
fn budget_spent(live: &LiveSession) -> bool {
    let metadata = live.metadata();
    BudgetState::of(&metadata).is_some_and(|b| b.exhausted(&metadata))
}

/// The text of the turn's prompt: its new messages, else the last user message.
fn prompt_text(live: &LiveSession, prompts: &[String]) -> String {
    if !prompts.is_empty() {
        return prompts.join("\n\n");
    }
    live.transcript_snapshot()
        .iter()
        .rev()
        .find(|m| matches!(m, Message::User(_)))
        .map(Message::text)
        .unwrap_or_default()
}
