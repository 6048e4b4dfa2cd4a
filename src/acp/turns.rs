//! `session/prompt` of `arbor acp` (ACP v1): one engine turn of the session's root,
//! ending with its `stopReason`, or one of the slash commands of `commands` — a
//! built-in answered with one `agent_message_chunk` and `end_turn` (`/model NAME`
//! then a `config_option_update` with every option as it is now), a custom one sent
//! as the prompt it expands to.
//!
//! Owns: running a prompt. Does not own: the prompt's content (`prompt`), the
//! commands' list (`commands`), or the session (`session`).

use std::path::PathBuf;

use agent_client_protocol_schema::v1::{
    ConfigOptionUpdate, PromptRequest, PromptResponse, SessionUpdate, StopReason,
};

use super::agent::{Agent, internal, invalid, metadata};
use super::commands::{self, Parsed};
use super::session::{Session, notify};
use super::transport::RpcError;
use super::{prompt, updates};
use crate::config::private::private_paths;
use crate::engine::EngineReply;
use crate::session::protocol::DeltaKind;
use crate::session::{EngineCommand, SessionStatus};

impl Agent {
    /// Runs one prompt of the session (ACP v1 `session/prompt`).
    pub(super) async fn prompt(&self, request: PromptRequest) -> Result<PromptResponse, RpcError> {
        let acp_id = request.session_id.0.to_string();
        let session = self.session(&acp_id)?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let private = private_paths(&crate::paths::Paths::from_env(), home.as_deref());
        let text = prompt::prompt_text(&request.prompt, &session.cwd, &private)?;
        let _turn = session.turn.lock().await;
        let text = match commands::parse(&text, &commands::paths(&session.cwd)) {
            Parsed::Text => text,
            Parsed::Custom(expanded) => expanded,
            command => {
                let switched = matches!(&command, Parsed::Model(m) if !m.is_empty());
                let said = self.command(&session, command).await?;
                notify(&self.conn, &acp_id, updates::chunk(DeltaKind::Text, &said));
                if switched {
                    // The client's model picker follows the switch.
                    let options = self.config_options(&session).await?;
                    let update =
                        SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options));
                    notify(&self.conn, &acp_id, update);
                }
                return Ok(PromptResponse::new(StopReason::EndTurn));
            }
        };
        let root = session.root();
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

    /// Runs built-in `command`; returns what to tell the person. Errors: `-32602`
    /// with the engine's refusal (a bad model, an empty title, …).
    async fn command(&self, session: &Session, command: Parsed) -> Result<String, RpcError> {
        let root = session
            .root()
            .ok_or_else(|| internal("the session has no root"))?;
        let reply = match command {
            Parsed::Model(name) if name.is_empty() => {
                let model = metadata(session, &root).await?.model;
                return Ok(format!("model: {}", model.as_deref().unwrap_or("unknown")));
            }
            Parsed::Model(model) => {
                let command = EngineCommand::SetModel {
                    session_id: Some(root),
                    model,
                };
                session.ask_once(command).await
            }
            Parsed::Rename(title) => {
                let command = EngineCommand::RenameSession {
                    session_id: root,
                    title,
                };
                session.ask_once(command).await
            }
            Parsed::Compact(focus) => {
                let command = EngineCommand::Compact {
                    session_id: root,
                    focus,
                };
                session.ask_once(command).await
            }
            Parsed::Custom(_) | Parsed::Text => return Ok(String::new()),
        };
        match reply {
            Some(EngineReply::ModelSwitched {
                result, warning, ..
            }) => {
                let label = result.map_err(invalid)?;
                Ok(match warning {
                    Some(warning) => format!("model: {label} ({warning})"),
                    None => format!("model: {label}"),
                })
            }
            Some(EngineReply::SessionRenamed { result, .. }) => {
                Ok(format!("renamed: {}", result.map_err(invalid)?))
            }
            Some(EngineReply::Compacted { result, .. }) => {
                use crate::engine::compact::Compacted;
                Ok(match result.map_err(invalid)? {
                    Compacted::Now(event) => event.note(),
                    Compacted::BeforeNextCall => "compacting before the next model call".into(),
                    Compacted::Nothing => "nothing to compact".into(),
                    Compacted::NotSmaller { tokens, compacted } => format!(
                        "not compacted: it would take {compacted} tokens, the context takes {tokens}"
                    ),
                })
            }
            Some(EngineReply::Failed { error, .. }) => Err(invalid(error)),
            other => Err(internal(format!("unexpected engine reply: {other:?}"))),
        }
    }
}
