//! `session/list` of `arbor acp` (ACP v1 schema 1.20 `ListSessionsRequest` /
//! `SessionInfo`): the root sessions the engine's `ListSessions` query gives (what
//! `arbor session list` prints: this project's, Amplifier's included, or every
//! project's when the client names no `cwd`), newest first, [`PAGE`] a page.
//!
//! Each session is `{sessionId, cwd, title, updatedAt}`: its full id (what
//! `session/load` and `session/resume` open), its stored working directory (the
//! listed one when it has none), its title (metadata `name`) and `last_updated`.
//! The cursor is opaque to the client: the `updatedAt` and id of the last session
//! sent, so a page never repeats what an earlier one held even when sessions are
//! created meanwhile.
//!
//! Owns: that mapping and the paging. Does not own: reading the store (`engine`).

use std::path::Path;

use agent_client_protocol_schema::v1::{ListSessionsResponse, SessionInfo};

use super::transport::{RpcError, code};
use crate::session::Metadata;

/// Sessions per page.
pub const PAGE: usize = 50;

/// Separates the two parts of a cursor (never in an RFC 3339 time or a session id).
const SEP: char = '\u{1f}';

/// The page of `sessions` (newest first, as listed) after `cursor`; working
/// directories default to `cwd`.
///
/// Errors: `-32602` for a cursor this agent never gave.
pub fn page(
    sessions: &[Metadata],
    cursor: Option<&str>,
    cwd: &Path,
) -> Result<ListSessionsResponse, RpcError> {
    let mut roots: Vec<&Metadata> = sessions.iter().filter(|m| m.parent_id.is_none()).collect();
    roots.sort_by(|a, b| key(b).cmp(&key(a)));
    let start = match cursor {
        None => 0,
        Some(cursor) => {
            let (updated, id) = cursor.split_once(SEP).ok_or_else(|| {
                RpcError::new(
                    code::INVALID_PARAMS,
                    format!("not a session/list cursor: {cursor}"),
                )
            })?;
            roots
                .iter()
                .position(|m| key(m) < (updated, id))
                .unwrap_or(roots.len())
        }
    };
    let shown: Vec<&Metadata> = roots.iter().skip(start).take(PAGE).copied().collect();
    let next = (start + shown.len() < roots.len())
        .then(|| {
            shown
                .last()
                .map(|m| format!("{}{SEP}{}", m.last_updated, m.session_id))
        })
        .flatten();
    let infos = shown.into_iter().map(|m| info(m, cwd)).collect();
    Ok(ListSessionsResponse::new(infos).next_cursor(next))
}

/// The order of the listing: newest `last_updated` first, then by id.
fn key(m: &Metadata) -> (&str, &str) {
    (m.last_updated.as_str(), m.session_id.as_ref())
}

/// `m` as a `SessionInfo`.
fn info(m: &Metadata, cwd: &Path) -> SessionInfo {
    let dir = m
        .working_dir
        .as_deref()
        .map(Path::new)
        .filter(|d| d.is_absolute())
        .unwrap_or(cwd);
    SessionInfo::new(m.session_id.to_string(), dir.to_path_buf())
        .title(m.name.clone())
        .updated_at(Some(m.last_updated.clone()).filter(|u| !u.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str, updated: &str) -> Metadata {
        Metadata {
            session_id: id.into(),
            last_updated: updated.into(),
            name: Some(format!("title {id}")),
            ..Default::default()
        }
    }

    #[test]
    fn pages_follow_each_other_without_repeating_and_skip_children() {
        let mut all: Vec<Metadata> = (0..(PAGE + 3))
            .map(|i| {
                meta(
                    &format!("s{i:03}"),
                    &format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60),
                )
            })
            .collect();
        let mut child = meta("s000-abc_child", "2030-01-01T00:00:00Z");
        child.parent_id = Some("s000".into());
        all.push(child);
        let first = page(&all, None, Path::new("/p")).unwrap();
        assert_eq!(first.sessions.len(), PAGE);
        assert_eq!(
            first.sessions[0].session_id.0.as_ref(),
            format!("s{:03}", PAGE + 2)
        );
        assert_eq!(
            first.sessions[0].title.as_deref(),
            Some(&*format!("title s{:03}", PAGE + 2))
        );
        let cursor = first.next_cursor.clone().unwrap();
        let second = page(&all, Some(&cursor), Path::new("/p")).unwrap();
        let ids: Vec<&str> = second
            .sessions
            .iter()
            .map(|s| s.session_id.0.as_ref())
            .collect();
        assert_eq!(ids, ["s002", "s001", "s000"]);
        assert!(second.next_cursor.is_none());
        assert_eq!(second.sessions[0].cwd, Path::new("/p"));
        assert!(page(&all, Some("bogus"), Path::new("/p")).is_err());
    }
}
