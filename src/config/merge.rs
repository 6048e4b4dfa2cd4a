//! Agent overlay merge (SPEC §6). CONTRACT STUB — the config helper replaces the bodies.

use serde_json::Value;

use super::mount_plan::MountPlan;

/// `child = merge(parent_mount_plan, agent_overlay)` with the spawn tool policy from the
/// parent's `spawn` and the calling agent's own `spawn` (`calling_agent_spawn`, may be
/// null), `agents` access control, and the overlay's `instruction` as the child's.
pub fn merge_for_spawn(parent: &MountPlan, overlay: &Value, calling_agent_spawn: &Value) -> MountPlan {
    let _ = (parent, overlay, calling_agent_spawn);
    todo!("config helper")
}
