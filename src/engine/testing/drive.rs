//! [`Drive`]: a test's hands on an [`Engine`]. The engine's integration tests hold the
//! same handle every front end holds; this trait sends one command through it (as
//! [`Engine::execute`]) and waits for the whole answer, giving it back as the value
//! the test asserts on, and reads the few things inside the engine that no command or
//! query answers (which sessions run, a parked transcript, the HTTP pool).
//!
//! Owns: turning a command's replies into one result. Does not own: executing the
//! commands (`handle`), or anything a front end may use — no front end imports
//! `engine::testing` (`tests/all/front_ends.rs` fails when one does).

use std::future::Future;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::config::MountPlan;
use crate::engine::compact::{CompactError, Compacted};
use crate::engine::handle::{Engine, EngineReply, QueryReply, Replies};
use crate::engine::outcome::{EngineError, TurnOutcome};
use crate::provider::HttpPool;
use crate::routing::ResolvedModel;
use crate::session::protocol::ApprovalDecision;
use crate::session::store::ParsedTranscript;
use crate::session::{
    EngineCommand, EngineEvent, EngineQuery, LoadedSession, Message, Metadata, SessionId,
};

/// What a test does with an [`Engine`]: the commands, each awaited to its answer, and
/// what only a test reads inside the engine. Implemented for [`Engine`] only.
pub trait Drive {
    /// `Submit` of `prompt` to `session_id` (live, or resumed from disk): the turn's
    /// outcome (`TurnFinished`), or the error that kept it from running (`Failed`).
    fn run_turn(
        &self,
        session_id: &str,
        prompt: String,
    ) -> impl Future<Output = Result<TurnOutcome, EngineError>> + Send;

    /// `Continue` of the stopped session `session_id`: answered as
    /// [`Drive::run_turn`].
    fn continue_turn(
        &self,
        session_id: &str,
    ) -> impl Future<Output = Result<TurnOutcome, EngineError>> + Send;

    /// `ContinueInterrupted` of the tree under `session_id`: one result per continued
    /// session, children first (empty when none was interrupted); a tree that cannot
    /// be read is one `Err`.
    fn continue_interrupted(
        &self,
        session_id: &str,
    ) -> impl Future<Output = Vec<Result<TurnOutcome, EngineError>>> + Send;

    /// `Steer` of `session_id` with `text`: `None` when its running turn took it, the
    /// outcome of the turn it started, or why it was not sent (`NotSent`).
    fn steer(
        &self,
        session_id: &str,
        text: String,
    ) -> impl Future<Output = Result<Option<TurnOutcome>, EngineError>> + Send;

    /// `Queue` of `text` at `position` for `session_id`: answered as [`Drive::steer`].
    fn queue(
        &self,
        session_id: &str,
        text: String,
        position: Option<usize>,
    ) -> impl Future<Output = Result<Option<TurnOutcome>, EngineError>> + Send;

    /// `Unqueue` of message `id` of `session_id`: the text its `prompt:unqueued`
    /// carried (empty when the session's worker takes it back: its event comes later
    /// with the worker's), or why it no longer waits (`NotSent`).
    fn unqueue(&self, session_id: &str, id: u64) -> Result<String, EngineError>;

    /// `Cancel` of `session_id` and its descendants.
    fn cancel(&self, session_id: &str);

    /// `ResolveApproval` of tool call `tool_call_id` of `session_id`: nothing, or
    /// why it could not be answered (`Failed`).
    fn resolve_approval(
        &self,
        session_id: &str,
        tool_call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), EngineError>;

    /// `RenameSession` of `session_id` to `title`: the title stored, or the error.
    fn rename(
        &self,
        session_id: &str,
        title: &str,
    ) -> impl Future<Output = Result<String, EngineError>> + Send;

    /// `SetModel` of `session_id` to `model`: the `provider/model` now in use, or the
    /// error.
    fn set_model(
        &self,
        session_id: &str,
        model: &str,
    ) -> impl Future<Output = Result<String, EngineError>> + Send;

    /// `Compact` of `session_id` with `focus`: what compacting did, or why not.
    fn compact(
        &self,
        session_id: &str,
        focus: &str,
    ) -> impl Future<Output = Result<Compacted, CompactError>> + Send;

    /// `ResolveProviderLabel`: the label, or (when none resolves and the command
    /// answers nothing) [`Engine::provider_label`]'s error.
    fn resolve_provider_label(&self) -> impl Future<Output = Result<String, EngineError>> + Send;

    /// `ListSessions`: this project's stored sessions, newest first, or the store's
    /// error.
    fn list_sessions(&self) -> impl Future<Output = Result<Vec<Metadata>, EngineError>> + Send;

    /// `ListMcpServers`: every MCP server of the engine with its state, as the
    /// project stands now (a trusted project's `.mcp.json` included).
    fn mcp_status(&self) -> impl Future<Output = Vec<crate::tool::mcp::McpServerStatus>> + Send;

    /// The stored session `session_id` as the `ShowSession` query reads it.
    fn load_session(
        &self,
        session_id: &str,
    ) -> impl Future<Output = Result<LoadedSession, EngineError>> + Send;

    /// The `AgentPlan` query of `agent`: its routed plan and model.
    fn routed_child_mount_plan(
        &self,
        agent: &str,
    ) -> impl Future<Output = Result<(MountPlan, ResolvedModel), EngineError>> + Send;

    /// The model of the `AgentPlan` query of `agent`.
    fn resolve_child_model(
        &self,
        agent: &str,
    ) -> impl Future<Output = Result<ResolvedModel, EngineError>> + Send;

    // ---- inside the engine: what no command or query answers ---------------------

    /// Creates a root session with `agent` on the plan's first provider, running
    /// nothing (`Submit` creates one only with its first turn).
    fn create_root(&self, agent: Option<&str>) -> Result<SessionId, EngineError>;

    /// The mount plan a new root session with `agent` would get, secrets redacted.
    fn root_mount_plan(&self, agent: Option<&str>) -> Result<MountPlan, EngineError>;

    /// Whether `session_id` has a turn running now.
    fn is_running(&self, session_id: &str) -> bool;

    /// Whether `session_id` runs on an `arbor worker` now.
    fn is_remote(&self, session_id: &str) -> bool;

    /// How many late writes of workers the epoch fence refused so far.
    fn refused_remote_writes(&self) -> u64;

    /// Ids of the sessions loaded in this process, unordered.
    fn live_session_ids(&self) -> Vec<SessionId>;

    /// How many tool calls of `session_id` wait for an approval now.
    fn waiting_approvals(&self, session_id: &str) -> usize;

    /// Hands over a viewer's parse of session `id`'s transcript for its next resume.
    fn park_transcript(&self, id: &str, transcript: ParsedTranscript);

    /// The id of the session whose transcript is parked, if any.
    fn parked_transcript(&self) -> Option<String>;

    /// The engine's own transcript of `id` when it is live here.
    fn transcript_snapshot(&self, id: &str) -> Option<Arc<Vec<Message>>>;

    /// The HTTP clients the engine's providers share.
    fn http_pool(&self) -> &HttpPool;
}

impl Drive for Engine {
    fn run_turn(
        &self,
        session_id: &str,
        prompt: String,
    ) -> impl Future<Output = Result<TurnOutcome, EngineError>> + Send {
        let command = EngineCommand::Submit {
            session_id: Some(session_id.into()),
            agent: None,
            prompt,
            cleared: false,
        };
        let answers = answers(self.clone(), command);
        async move { turn_result(answers.await) }
    }

    fn continue_turn(
        &self,
        session_id: &str,
    ) -> impl Future<Output = Result<TurnOutcome, EngineError>> + Send {
        let session_id = session_id.into();
        let answers = answers(self.clone(), EngineCommand::Continue { session_id });
        async move { turn_result(answers.await) }
    }

    fn continue_interrupted(
        &self,
        session_id: &str,
    ) -> impl Future<Output = Vec<Result<TurnOutcome, EngineError>>> + Send {
        let session_id = session_id.into();
        let command = EngineCommand::ContinueInterrupted { session_id };
        let answers = answers(self.clone(), command);
        async move {
            let replies = answers.await;
            replies.into_iter().map(|r| turn_result(vec![r])).collect()
        }
    }

    fn steer(
        &self,
        session_id: &str,
        text: String,
    ) -> impl Future<Output = Result<Option<TurnOutcome>, EngineError>> + Send {
        let session_id = session_id.into();
        let answers = answers(self.clone(), EngineCommand::Steer { session_id, text });
        async move { offer_result(answers.await) }
    }

    fn queue(
        &self,
        session_id: &str,
        text: String,
        position: Option<usize>,
    ) -> impl Future<Output = Result<Option<TurnOutcome>, EngineError>> + Send {
        let command = EngineCommand::Queue {
            session_id: session_id.into(),
            text,
            position,
        };
        let answers = answers(self.clone(), command);
        async move { offer_result(answers.await) }
    }

    fn unqueue(&self, session_id: &str, id: u64) -> Result<String, EngineError> {
        let mut events = self.subscribe();
        let command = EngineCommand::Unqueue {
            session_id: session_id.into(),
            id,
        };
        for reply in answers_now(self, command) {
            if let EngineReply::NotSent { error, .. } = reply {
                return Err(error);
            }
        }
        while let Ok(event) = events.try_recv() {
            if let EngineEvent::PromptUnqueued(e) = &event.msg
                && e.id == id
                && event.session_id == session_id
            {
                return Ok(e.prompt.clone());
            }
        }
        Ok(String::new())
    }

    fn cancel(&self, session_id: &str) {
        let session_id = session_id.into();
        answers_now(self, EngineCommand::Cancel { session_id });
    }

    fn resolve_approval(
        &self,
        session_id: &str,
        tool_call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), EngineError> {
        let command = EngineCommand::ResolveApproval {
            session_id: session_id.into(),
            tool_call_id: tool_call_id.into(),
            decision,
        };
        match answers_now(self, command).into_iter().next() {
            Some(EngineReply::Failed { error, .. }) => Err(error),
            Some(other) => panic!("ResolveApproval answered {other:?}"),
            None => Ok(()),
        }
    }

    fn rename(
        &self,
        session_id: &str,
        title: &str,
    ) -> impl Future<Output = Result<String, EngineError>> + Send {
        let command = EngineCommand::RenameSession {
            session_id: session_id.into(),
            title: title.to_string(),
        };
        let answers = answers(self.clone(), command);
        async move {
            match answers.await.pop() {
                Some(EngineReply::SessionRenamed { result, .. }) => result,
                other => panic!("RenameSession answered {other:?}"),
            }
        }
    }

    fn set_model(
        &self,
        session_id: &str,
        model: &str,
    ) -> impl Future<Output = Result<String, EngineError>> + Send {
        let command = EngineCommand::SetModel {
            session_id: Some(session_id.into()),
            model: model.to_string(),
        };
        let answers = answers(self.clone(), command);
        async move {
            match answers.await.pop() {
                Some(EngineReply::ModelSwitched { result, .. }) => result,
                other => panic!("SetModel answered {other:?}"),
            }
        }
    }

    fn compact(
        &self,
        session_id: &str,
        focus: &str,
    ) -> impl Future<Output = Result<Compacted, CompactError>> + Send {
        let command = EngineCommand::Compact {
            session_id: session_id.into(),
            focus: focus.to_string(),
        };
        let answers = answers(self.clone(), command);
        async move {
            match answers.await.pop() {
                Some(EngineReply::Compacted { result, .. }) => result,
                other => panic!("Compact answered {other:?}"),
            }
        }
    }

    fn resolve_provider_label(&self) -> impl Future<Output = Result<String, EngineError>> + Send {
        let engine = self.clone();
        let answers = answers(self.clone(), EngineCommand::ResolveProviderLabel);
        async move {
            match answers.await.pop() {
                Some(EngineReply::ProviderLabel(label)) => Ok(label),
                Some(other) => panic!("ResolveProviderLabel answered {other:?}"),
                None => engine.provider_label(),
            }
        }
    }

    fn list_sessions(&self) -> impl Future<Output = Result<Vec<Metadata>, EngineError>> + Send {
        let answers = answers(self.clone(), EngineCommand::ListSessions);
        async move {
            match answers.await.pop() {
                Some(EngineReply::SessionsListed(listed)) => listed,
                other => panic!("ListSessions answered {other:?}"),
            }
        }
    }

    fn mcp_status(&self) -> impl Future<Output = Vec<crate::tool::mcp::McpServerStatus>> + Send {
        let answers = answers(self.clone(), EngineCommand::ListMcpServers);
        async move {
            match answers.await.pop() {
                Some(EngineReply::McpServers(servers)) => servers,
                other => panic!("ListMcpServers answered {other:?}"),
            }
        }
    }

    fn load_session(
        &self,
        session_id: &str,
    ) -> impl Future<Output = Result<LoadedSession, EngineError>> + Send {
        let engine = self.clone();
        let session_id = SessionId::from(session_id);
        async move {
            match engine.ask(EngineQuery::ShowSession { session_id }).await {
                QueryReply::ShowSession(shown) => shown.map(|s| s.session),
                other => panic!("ShowSession answered {other:?}"),
            }
        }
    }

    fn routed_child_mount_plan(
        &self,
        agent: &str,
    ) -> impl Future<Output = Result<(MountPlan, ResolvedModel), EngineError>> + Send {
        let engine = self.clone();
        let agent = agent.to_string();
        async move {
            match engine.ask(EngineQuery::AgentPlan { agent }).await {
                QueryReply::AgentPlan(plan) => plan.map(|p| (p.plan, p.model)),
                other => panic!("AgentPlan answered {other:?}"),
            }
        }
    }

    fn resolve_child_model(
        &self,
        agent: &str,
    ) -> impl Future<Output = Result<ResolvedModel, EngineError>> + Send {
        let plan = self.routed_child_mount_plan(agent);
        async move { plan.await.map(|(_, model)| model) }
    }

    fn create_root(&self, agent: Option<&str>) -> Result<SessionId, EngineError> {
        self.runtime().create_root(agent)
    }

    fn root_mount_plan(&self, agent: Option<&str>) -> Result<MountPlan, EngineError> {
        self.runtime().root_mount_plan(agent)
    }

    fn is_running(&self, session_id: &str) -> bool {
        self.runtime().is_running(session_id)
    }

    fn is_remote(&self, session_id: &str) -> bool {
        self.runtime().is_remote(session_id)
    }

    fn refused_remote_writes(&self) -> u64 {
        self.runtime().refused_remote_writes()
    }

    fn live_session_ids(&self) -> Vec<SessionId> {
        self.runtime().live_session_ids()
    }

    fn waiting_approvals(&self, session_id: &str) -> usize {
        self.runtime().approvals().waiting_in(session_id)
    }

    fn park_transcript(&self, id: &str, transcript: ParsedTranscript) {
        self.runtime().park_transcript(id, transcript);
    }

    fn parked_transcript(&self) -> Option<String> {
        self.runtime().parked_transcript()
    }

    fn transcript_snapshot(&self, id: &str) -> Option<Arc<Vec<Message>>> {
        self.runtime().transcript_snapshot(id)
    }

    fn http_pool(&self) -> &HttpPool {
        self.runtime().http_pool()
    }
}

/// Every reply of `command`, once the engine has answered it in full (its reply sink
/// dropped). Runs it when first polled, as an `async fn` of the runtime would.
async fn answers(engine: Engine, command: EngineCommand) -> Vec<EngineReply> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    engine.execute(command, Replies::channel(tx));
    let mut replies = Vec::new();
    while let Some(reply) = rx.recv().await {
        replies.push(reply);
    }
    replies
}

/// The replies of a command the engine answers before `execute` returns (`Cancel`,
/// `ResolveApproval`, `Unqueue`).
fn answers_now(engine: &Engine, command: EngineCommand) -> Vec<EngineReply> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    engine.execute(command, Replies::channel(tx));
    let mut replies = Vec::new();
    while let Ok(reply) = rx.try_recv() {
        replies.push(reply);
    }
    replies
}

/// A turn's answer: its outcome, or the error that kept it from running.
fn turn_result(mut replies: Vec<EngineReply>) -> Result<TurnOutcome, EngineError> {
    match replies.pop() {
        Some(EngineReply::TurnFinished(outcome)) => Ok(outcome),
        Some(EngineReply::Failed { error, .. }) => Err(error),
        other => panic!("a turn answered {other:?}"),
    }
}

/// A steer's or queue's answer: the turn it started, nothing, or why it was not sent.
fn offer_result(mut replies: Vec<EngineReply>) -> Result<Option<TurnOutcome>, EngineError> {
    match replies.pop() {
        Some(EngineReply::TurnFinished(outcome)) => Ok(Some(outcome)),
        Some(EngineReply::NotSent { error, .. }) => Err(error),
        None => Ok(None),
        other => panic!("a steer or queue answered {other:?}"),
    }
}
