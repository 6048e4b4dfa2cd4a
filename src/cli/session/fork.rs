//! `arbor session fork ID [--at-turn N] [--name NAME] [--json]` (issue 25 item 5): a
//! new session beside the original in Amplifier's layout (`session::fork`), resumable
//! at once by arbor and Amplifier.
//!
//! Prints `forked … at turn N` and how to resume it, or with `--json`
//! `{session_id, parent_id, forked_from_turn}`. A turn out of range names the valid
//! range (exit 1, nothing written). Does not own: the fork itself (`engine::handle::undo::fork`, over `session::fork`),
//! shared with the TUI's "rewind here".

use color_eyre::Result;

use crate::engine::handle::undo;
use crate::outln;
use crate::session::SessionStore;

/// Runs the fork of `id` (resolved). Exit 0 forked, 1 refused.
pub fn run(
    store: &SessionStore,
    id: &str,
    at_turn: Option<u64>,
    name: Option<&str>,
    json: bool,
) -> Result<i32> {
    let forked = match undo::fork(store, id, at_turn, name, false) {
        Ok((f, _)) => f,
        Err(e) => return super::fail(&e),
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&forked)?)?;
    } else {
        outln!(
            "forked {} from {} at turn {} ({} messages, {} events)",
            forked.session_id,
            forked.parent_id,
            forked.forked_from_turn,
            forked.message_count,
            forked.events_count
        )?;
        outln!(
            "resume with: arbor session resume {} \"…\"",
            forked.session_id.short()
        )?;
    }
    Ok(0)
}
