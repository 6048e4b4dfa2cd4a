//! `arbor session list [--all-projects] [--json]`: the engine's `ListSessions` query,
//! printed as the table (`table`) or as JSON (an array of [`summary_json`] objects,
//! then one `{session_id, status: "unreadable", error}` per directory that cannot be
//! read).
//!
//! Owns: the JSON objects of `list` (and `show`'s base object). Does not own: which
//! sessions are listed (`engine::handle::sessions`), the table's text (`table`).

use color_eyre::Result;
use serde_json::{Value, json};

use super::table;
use crate::cli::call::unexpected;
use crate::engine::{Engine, QueryReply};
use crate::outln;
use crate::session::store::Unreadable;
use crate::session::tree::children_index;
use crate::session::{EngineQuery, Metadata, SessionId};

/// Runs `session list`. Exit 0; a store that cannot be listed is an error.
pub async fn run(engine: &Engine, all_projects: bool, json: bool) -> Result<i32> {
    let listed = match engine.ask(EngineQuery::ListSessions { all_projects }).await {
        QueryReply::ListSessions(result) => result,
        other => Err(unexpected(other)),
    }?;
    if json {
        let children = children_index(&listed.sessions);
        let all: Vec<Value> = listed
            .sessions
            .iter()
            .map(|m| {
                let of = children.get(&m.session_id).map(Vec::as_slice);
                summary_json(m, of.unwrap_or_default())
            })
            .chain(listed.unreadable.iter().map(unreadable_json))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&all)?)?;
    } else {
        table::print(
            &listed.sessions,
            listed.projects.as_deref(),
            &listed.unreadable,
        )?;
    }
    Ok(0)
}

/// The `session list --json` / `session show --json` object of `m` with its
/// `children`. `active_agent` is the agent of its `sub_agents` tree that handles the
/// next message (SPEC §11), else `agent_name`.
pub fn summary_json(m: &Metadata, children: &[SessionId]) -> Value {
    json!({
        "session_id": m.session_id,
        "name": m.name,
        "parent_id": m.parent_id,
        "agent_name": m.agent_name,
        "active_agent": m.arbor.active_agent.as_deref().or(m.agent_name.as_deref()),
        "status": m.status,
        "depth": m.depth,
        "turn_count": m.turn_count,
        "created": m.created,
        "last_updated": m.last_updated,
        "children": children,
        "work": crate::isolation::Standing::of(m).map(|s| s.to_string()),
    })
}

/// A `session list --json` entry for a directory that cannot be read:
/// `{"session_id", "status": "unreadable", "error"}`.
fn unreadable_json(u: &Unreadable) -> Value {
    json!({
        "session_id": u.session_id,
        "status": "unreadable",
        "error": u.reason,
    })
}
