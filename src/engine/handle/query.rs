//! Answering an [`EngineQuery`] ([`Engine::ask`]): each query once, with the
//! [`QueryReply`] of the same name — read on a blocking thread (a panic there is
//! answered as [`EngineError::Panicked`]), the agent's routed plan on the caller's task.
//!
//! Owns: the reply type and which reader answers which query. Does not own: the
//! reading (`sessions`, `diff`, the runtime's plans) or wording the answers (the
//! front ends).

use std::sync::Arc;

use super::super::model_choice::ProviderModels;
use super::super::outcome::EngineError;
use super::super::runtime::Runtime;
use super::sessions::{self, SessionList, ShownSession};
use super::{Engine, diff, guarded};
use crate::config::mount_plan::MountPlan;
use crate::session::ids::SessionId;
use crate::session::protocol::ResolvedModel;
use crate::session::{EngineQuery, Metadata};

/// The engine's answer to an [`EngineQuery`]: one variant per query, of the same name.
#[derive(Debug)]
pub enum QueryReply {
    /// The full id, or why none: `SessionNotFound` (said in full), or the store's
    /// error (invalid id, ambiguous prefix).
    ResolveSession(Result<SessionId, EngineError>),
    /// The listing, or the store's error.
    ListSessions(Result<SessionList, EngineError>),
    /// The session with its children and rebuild note, or the store's error.
    ShowSession(Result<Box<ShownSession>, EngineError>),
    /// The session's metadata, or the store's error.
    LoadMetadata(Result<Box<Metadata>, EngineError>),
    /// What the session changed, or the store's or git's error.
    LoadChanges(Result<diff::SessionChanges, EngineError>),
    /// The document, or the store's error.
    ExportSession(Result<String, EngineError>),
    /// The agent's routed plan (secrets redacted) and model, or why there is none
    /// (`UnknownAgent`, `InvalidAgent`, `NoProvider`).
    AgentPlan(Result<Box<AgentPlan>, EngineError>),
    /// Each provider of the session's plan with its models, or why the session
    /// cannot be read.
    ListModels(Result<Vec<ProviderModels>, EngineError>),
}

/// What `EngineQuery::AgentPlan` answers: what a sub-session of the agent spawned
/// from a new root session here would run with.
#[derive(Debug, Clone)]
pub struct AgentPlan {
    /// Its mount plan, routed, secrets redacted.
    pub plan: MountPlan,
    /// The model its routing picked, with the reason for any fallback.
    pub model: ResolvedModel,
}

impl Engine {
    /// Answers `query` (see [`QueryReply`]). Call it inside a tokio runtime: the store
    /// is read on a blocking thread.
    pub async fn ask(&self, query: EngineQuery) -> QueryReply {
        let runtime = self.runtime.clone();
        match query {
            EngineQuery::ResolveSession { id } => QueryReply::ResolveSession(
                read(runtime, "resolving a session id", move |rt| {
                    sessions::resolve(rt, &id)
                })
                .await,
            ),
            EngineQuery::ListSessions { all_projects } => QueryReply::ListSessions(
                read(runtime, "listing sessions", move |rt| {
                    sessions::list(rt, all_projects)
                })
                .await,
            ),
            EngineQuery::ShowSession { session_id } => QueryReply::ShowSession(
                read(runtime, "reading a session", move |rt| {
                    sessions::show(rt, &session_id).map(Box::new)
                })
                .await,
            ),
            EngineQuery::LoadMetadata { session_id } => QueryReply::LoadMetadata(
                read(runtime, "reading a session's metadata", move |rt| {
                    sessions::metadata(rt, &session_id).map(Box::new)
                })
                .await,
            ),
            EngineQuery::LoadChanges {
                session_id,
                subtree,
            } => QueryReply::LoadChanges(
                read(runtime, "reading a session's changes", move |rt| {
                    diff::changes(rt.store(), &session_id, subtree)
                })
                .await,
            ),
            EngineQuery::ExportSession { session_id, format } => QueryReply::ExportSession(
                read(runtime, "exporting a session", move |rt| {
                    sessions::export(rt, &session_id, format)
                })
                .await,
            ),
            EngineQuery::AgentPlan { agent } => QueryReply::AgentPlan(
                runtime
                    .routed_child_mount_plan(&agent)
                    .await
                    .map(|(plan, model)| Box::new(AgentPlan { plan, model })),
            ),
            EngineQuery::ListModels { session_id } => {
                QueryReply::ListModels(runtime.session_models(&session_id).await)
            }
        }
    }
}

/// Runs `work` over `runtime` on a blocking thread, [`guarded`] as `what`.
async fn read<T: Send + 'static>(
    runtime: Arc<Runtime>,
    what: &'static str,
    work: impl FnOnce(&Runtime) -> Result<T, EngineError> + Send + 'static,
) -> Result<T, EngineError> {
    tokio::task::spawn_blocking(move || guarded(what, || work(&runtime)))
        .await
        .unwrap_or_else(|e| {
            Err(EngineError::TaskFailed {
                what,
                message: e.to_string(),
            })
        })
}
