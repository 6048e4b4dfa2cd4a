//! One ACP session of `arbor acp`: its engine connection, its [`Tree`], how its
//! approvals are answered, and the forwarding task that reads the connection's one
//! ordered stream.
//!
//! Owns: [`Session`] (asking the engine and waiting for a command's replies) and the
//! [`Forwarder`]: events become `session/update`s (`approval:required` a
//! `session/request_permission`, or an answer of the session's approval mode without
//! asking), and a command's replies go to whoever waits for them — after the updates
//! of every event before them, so a prompt's answer never overtakes its last update.
//! Does not own: the methods (`agent`), the payload mappings (`updates`,
//! `permission`), or the approval modes' words (`options`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{SessionNotification, SessionUpdate};
use serde_json::{Value, json};
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::options::Approvals;
use super::permission;
use super::transport::Connection;
use super::tree::Tree;
use crate::engine::{CommandId, EngineClient, EngineOutput, EngineReply, EngineStream};
use crate::session::{EngineCommand, Event, SessionId};

/// Where the forwarder hands the replies of the commands someone waits for.
type Waiting = Arc<Mutex<HashMap<CommandId, UnboundedSender<EngineReply>>>>;

/// `m` locked, a poisoned lock taken as it is (the state stays usable).
pub(super) fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One ACP session: a connection to an engine over its own runtime and the routing of
/// its tree.
pub(super) struct Session {
    pub(super) client: EngineClient,
    tree: Arc<Mutex<Tree>>,
    /// The working directory the client gave.
    pub(super) cwd: PathBuf,
    waiting: Waiting,
    /// How calls waiting for approval are answered (`session/set_config_option`).
    approvals: Arc<Mutex<Approvals>>,
    /// One prompt at a time (ACP: a prompt turn ends before the next starts).
    pub(super) turn: tokio::sync::Mutex<()>,
}

impl Session {
    /// A session over `client` / `stream` with its forwarder running; its updates go
    /// out on `conn` under the tree's ACP id.
    pub(super) fn start(
        conn: Connection,
        (client, stream): (EngineClient, EngineStream),
        tree: Tree,
        cwd: PathBuf,
    ) -> Arc<Self> {
        let tree = Arc::new(Mutex::new(tree));
        let waiting = Waiting::default();
        let approvals = Arc::new(Mutex::new(Approvals::Ask));
        let forwarder = Forwarder {
            conn,
            client: client.clone(),
            tree: tree.clone(),
            cwd: cwd.clone(),
            waiting: waiting.clone(),
            approvals: approvals.clone(),
        };
        tokio::spawn(forwarder.run(stream));
        Arc::new(Self {
            client,
            tree,
            cwd,
            waiting,
            approvals,
            turn: tokio::sync::Mutex::new(()),
        })
    }

    /// The routing state of the session's tree.
    pub(super) fn tree(&self) -> std::sync::MutexGuard<'_, Tree> {
        locked(&self.tree)
    }

    /// The arbor root of the session, once known.
    pub(super) fn root(&self) -> Option<SessionId> {
        self.tree().root.clone()
    }

    /// How calls waiting for approval are answered now.
    pub(super) fn approvals(&self) -> Approvals {
        *locked(&self.approvals)
    }

    /// Answers calls waiting for approval with `mode` from now on.
    pub(super) fn set_approvals(&self, mode: Approvals) {
        *locked(&self.approvals) = mode;
    }

    /// Submits `command`; its replies arrive on the returned receiver, each after the
    /// updates of every event before it, and it closes once the command is answered.
    pub(super) fn ask(&self, command: EngineCommand) -> UnboundedReceiver<EngineReply> {
        let (tx, rx) = mpsc::unbounded_channel();
        // Held while submitting: the forwarder looks a reply up only after this.
        let mut waiting = locked(&self.waiting);
        let id = self.client.submit(command);
        waiting.insert(id, tx);
        rx
    }

    /// The first reply to `command`, `None` when it was answered with none.
    pub(super) async fn ask_once(&self, command: EngineCommand) -> Option<EngineReply> {
        self.ask(command).recv().await
    }
}

/// Reads one session's ordered stream: events become `session/update`s, in order,
/// and each call that waits for approval is asked (or answered by the session's
/// approval mode); a reply goes to whoever waits for its command.
struct Forwarder {
    conn: Connection,
    client: EngineClient,
    tree: Arc<Mutex<Tree>>,
    cwd: PathBuf,
    waiting: Waiting,
    approvals: Arc<Mutex<Approvals>>,
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
            notify(&self.conn, session_id, update);
        }
        let Some(ask) = routing.ask else {
            return;
        };
        let required = ask.required;
        let session_id = event.session_id.clone();
        let answer = match *locked(&self.approvals) {
            Approvals::Ask => None,
            Approvals::Allow => Some(chosen(permission::ALLOW_ONCE)),
            Approvals::Reject => Some(chosen(permission::REJECT)),
        };
        if let Some(answer) = answer {
            self.client.submit(EngineCommand::ResolveApproval {
                session_id,
                tool_call_id: required.tool_call_id.clone(),
                decision: permission::decision(&required, &answer),
            });
            return;
        }
        let request = permission::request(&ask.on, &required, ask.input.as_ref(), &self.cwd);
        let conn = self.conn.clone();
        let client = self.client.clone();
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

/// A `session/request_permission` answer choosing `option` (as a client's would be).
fn chosen(option: &str) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option}})
}

/// Sends `update` as a `session/update` of ACP session `session_id`.
pub(super) fn notify(conn: &Connection, session_id: impl ToString, update: SessionUpdate) {
    let session_id = session_id.to_string();
    conn.notify(
        "session/update",
        &SessionNotification::new(session_id, update),
    );
}
