//! [`EngineQuery`]: what a front end asks to read through the engine handle (issue 36
//! item 4: `arbor session list|show|tree|diff|export` and `arbor agent show --merged`
//! read nothing around it). Each query is answered once, with the typed
//! `engine::QueryReply` of the same name (`engine::Engine::ask`).
//!
//! Queries change nothing; what changes a session is an
//! [`EngineCommand`](super::EngineCommand). They are a type of their own, beside the
//! commands, because every front end answers each `EngineReply` exhaustively: a
//! reply to a read-only question only `arbor session` asks would be one more arm in
//! each of them.
//!
//! Owns: the queries. Does not own: answering them (`engine::handle::query`), or
//! wording the answers (`cli::session`, `cli::agent`).

use crate::session::ids::SessionId;

/// A read-only question to the engine; answered with one `engine::QueryReply`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineQuery {
    /// The session of this project `id` names (a full id, an unambiguous prefix, a
    /// root's 8-character UUID prefix, a sub-session's 8-character span, `#`
    /// optional: `SessionStore::resolve`). A miss is `EngineError::SessionNotFound`,
    /// saying what was looked for, in which project, and how to look in every one.
    ResolveSession { id: String },
    /// The stored sessions (newest first) and the directories that cannot be read:
    /// this project's, or with `all_projects` every project's under
    /// `$AMPLIFIER_HOME/projects`, each with its project.
    ListSessions { all_projects: bool },
    /// One stored session in full (metadata, transcript, load warnings), its
    /// children's ids and, for a root stored without `config`, how a resume rebuilds
    /// it.
    ShowSession { session_id: SessionId },
    /// One stored session's metadata (`SessionStore::load_metadata`).
    LoadMetadata { session_id: SessionId },
    /// What `session_id` changed, with `subtree` its descendants' changes too: an
    /// active worktree session's `git diff` against its base when asked alone, else
    /// the diffs rebuilt from the transcripts (`engine::handle::diff` decides).
    LoadChanges {
        session_id: SessionId,
        subtree: bool,
    },
    /// `session_id` and its whole subtree as one document in `format`
    /// (`session::export`), as text: nothing is written.
    ExportSession {
        session_id: SessionId,
        format: ExportFormat,
    },
    /// The models each provider of session `session_id`'s plan lists (`arbor acp`'s
    /// model option; `engine::model_choice::plan_models`), cached per process.
    ListModels { session_id: SessionId },
    /// The mount plan agent `agent` would run with as a sub-session here, routed
    /// (`Runtime::routed_child_mount_plan`), with the model its routing picked.
    AgentPlan { agent: String },
}

/// The document [`EngineQuery::ExportSession`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// `session::export::export_markdown`.
    Markdown,
    /// `session::export::export_json` (pretty-printed).
    Json,
}
