//! Hosted nodes (issue 37 item 3): a session whose agent file names an external ACP
//! agent (`acp:` frontmatter) runs its turns on that agent's process, arbor being its
//! ACP client, instead of on arbor's own model loop.
//!
//! Where it plugs in: `turn::one_turn` frames every turn the same way (status,
//! `prompt:submit`, hooks, checkpoints and worktree, the closing events, steers and
//! queued messages chained as the next turns); for a hosted node it calls [`drive`]
//! where arbor's own sessions call the model loop. So a `task` to such an agent (its
//! sub-session spawned, budgeted and isolated by `spawn` like any child) and a root
//! opened with it get the same tree, store, events and task result as arbor's own.
//!
//! Owns: the turn on the agent (`drive`), what its updates leave in the node
//! (`record`), and the node's side of its requests — permissions through the approval
//! gate, confined fs, terminals as `bash` calls (`serve`). Does not own: the process
//! and the wire (`acp_client`), the frontmatter (`config::acp_agent`), the turn's
//! frame (`turn`), arbor's ACP server (`acp`).

mod drive;
mod record;
mod serve;

pub(crate) use drive::{HostedEnd, drive};

use super::live::LiveSession;
use crate::config::acp_agent::AcpAgentSpec;

/// The external ACP agent `live`'s agent names (`acp:`), if it names one.
pub(crate) fn spec_of(live: &LiveSession) -> Option<AcpAgentSpec> {
    AcpAgentSpec::of_overlay(&live.agent_overlay)
}
