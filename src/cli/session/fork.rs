//! `arbor session fork ID [--at-turn N] [--name NAME] [--json]` (issue 25 item 5): a
//! new session beside the original in Amplifier's layout (`session::fork`), resumable
//! at once by arbor and Amplifier.
//!
//! Prints `forked … at turn N` and how to resume it, or with `--json`
//! `{session_id, parent_id, forked_from_turn}`. A turn out of range names the valid
//! range (exit 1, nothing written). Does not own: the fork itself (the engine's
//! `ForkSession` / `ForkSessionAs`: `engine::handle::undo::fork`, over
//! `session::fork`), shared with the TUI's "rewind here".

use color_eyre::Result;

use super::fail;
use super::isolation::undone;
use crate::cli::call::unexpected;
use crate::engine::Engine;
use crate::engine::handle::undo::UndoDone;
use crate::outln;
use crate::session::EngineCommand;

/// Runs the fork of `id`. Exit 0 forked, 1 refused.
pub async fn run(
    engine: &Engine,
    id: &str,
    at_turn: Option<u64>,
    name: Option<String>,
    json: bool,
) -> Result<i32> {
    let command = |session_id| match name {
        Some(title) => EngineCommand::ForkSessionAs {
            session_id,
            at_turn,
            title,
        },
        None => EngineCommand::ForkSession {
            session_id,
            at_turn,
            rewind: false,
        },
    };
    let forked = match undone(engine, id, command).await {
        Some(UndoDone::Forked { forked, .. }) => forked,
        Some(other) => return fail(&unexpected(other)),
        None => return Ok(1),
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
