//! Reading stored sessions for a front end (`EngineQuery::ResolveSession`,
//! `ListSessions`, `ShowSession`, `LoadMetadata`, `ExportSession`): what `arbor
//! session list|show|tree|export` print, read here so that no front end opens the
//! store.
//!
//! Owns: an id a person typed becoming a session id, a miss said in full
//! ([`resolve`]); the listing with its unreadable directories, across projects with
//! each session's project ([`list`], [`project_of`]); one session with its children and
//! how a resume rebuilds a root stored without `config` ([`show`]); the export as text
//! ([`export`]). Does not own: the store's reading (`session::store`), the export's
//! rendering (`session::export`), or wording any of it (`cli::session`).

use std::path::Path;

use super::super::outcome::EngineError;
use super::super::runtime::Runtime;
use crate::agent::bundle::locate;
use crate::session::ids::SessionId;
use crate::session::protocol::ExportFormat;
use crate::session::store::{Unreadable, list_all_projects};
use crate::session::tree::children_index;
use crate::session::{LoadedSession, Metadata, StoreError};

/// `ListSessions` of `EngineQuery`: the readable sessions, newest first, and the
/// directories that cannot be read (sorted by id).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionList {
    pub sessions: Vec<Metadata>,
    /// Every project's listing (`all_projects`): each session's project, in the order
    /// of `sessions` ([`project_of`]); `None` for this project's.
    pub projects: Option<Vec<String>>,
    pub unreadable: Vec<Unreadable>,
}

/// `ShowSession`: the session as stored, its children and the rebuild note.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownSession {
    /// Metadata, transcript and what loading had to skip.
    pub session: LoadedSession,
    /// Its children's ids, oldest first.
    pub children: Vec<SessionId>,
    /// For a root stored without `config` (as Amplifier writes roots): how a resume
    /// will rebuild it — from its bundle, or from the active bundle standing in (why).
    pub rebuild_note: Option<String>,
}

/// The session of this project `id` names (see `SessionStore::resolve`); a miss is
/// [`EngineError::SessionNotFound`] naming the project searched.
pub(crate) fn resolve(runtime: &Runtime, id: &str) -> Result<SessionId, EngineError> {
    let store = runtime.store();
    match store.resolve(id) {
        Ok(id) => Ok(id),
        Err(StoreError::NotFound(missing)) => Err(EngineError::SessionNotFound {
            id: missing,
            project: runtime.paths().cwd.clone(),
            sessions: store.root().to_path_buf(),
        }),
        Err(e) => Err(e.into()),
    }
}

/// This project's sessions, or with `all_projects` every project's (see
/// [`SessionList`]).
pub(crate) fn list(runtime: &Runtime, all_projects: bool) -> Result<SessionList, EngineError> {
    if !all_projects {
        let listing = runtime.store().listing()?;
        return Ok(SessionList {
            sessions: listing.sessions,
            projects: None,
            unreadable: listing.unreadable,
        });
    }
    let all = list_all_projects(&runtime.paths().projects_dir())?;
    let projects = all
        .sessions
        .iter()
        .map(|(dir, m)| project_of(dir, m))
        .collect();
    Ok(SessionList {
        sessions: all.sessions.into_iter().map(|(_, m)| m).collect(),
        projects: Some(projects),
        unreadable: all.unreadable,
    })
}

/// The project of a session stored under `sessions_dir`
/// (`<projects>/<slug>/sessions`): its working directory, else the slug (`-` when
/// there is none).
pub fn project_of(sessions_dir: &Path, m: &Metadata) -> String {
    if let Some(dir) = m.working_dir.as_deref().filter(|d| !d.is_empty()) {
        return dir.to_string();
    }
    sessions_dir
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "-".to_string())
}

/// Session `id` (a full id) in full, with its children and rebuild note.
pub(crate) fn show(runtime: &Runtime, id: &str) -> Result<ShownSession, EngineError> {
    let session = runtime.store().load(id)?;
    let children = children_index(&runtime.store().list()?)
        .remove(id)
        .unwrap_or_default();
    let rebuild_note = rebuild_note(runtime, &session.metadata);
    Ok(ShownSession {
        session,
        children,
        rebuild_note,
    })
}

/// For a root stored without `config`: how a resume will rebuild it (see
/// [`ShownSession::rebuild_note`]).
fn rebuild_note(runtime: &Runtime, m: &Metadata) -> Option<String> {
    if m.config.is_some() || m.parent_id.is_some() {
        return None;
    }
    let (_, note) = locate::bundle_for(runtime.bundle(), runtime.paths(), m.bundle.as_deref());
    let bundle = m.bundle.as_deref().unwrap_or("-");
    Some(
        note.unwrap_or_else(|| {
            format!("no stored config: resume rebuilds it from bundle {bundle}")
        }),
    )
}

/// Session `id`'s metadata (a full id).
pub(crate) fn metadata(runtime: &Runtime, id: &str) -> Result<Metadata, EngineError> {
    Ok(runtime.store().load_metadata(id)?.0)
}

/// Session `id` (a full id) and its subtree as one document in `format`.
pub(crate) fn export(
    runtime: &Runtime,
    id: &str,
    format: ExportFormat,
) -> Result<String, EngineError> {
    let store = runtime.store();
    Ok(match format {
        ExportFormat::Markdown => crate::session::export::export_markdown(store, id),
        ExportFormat::Json => crate::session::export::export_json(store, id),
    }?)
}
