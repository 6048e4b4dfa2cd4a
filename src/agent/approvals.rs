//! An agent file's `approvals:` by its tier (SPEC §12 "Trust").
//!
//! Owns: which [`Authority`] each [`AgentSource`] has — the user's own agents
//! (`$AMPLIFIER_HOME/agents`, `AMPLIFIER_AGENT_<NAME>`) may set anything; project and
//! bundle agent files may only tighten — and layering an agent's rules onto a policy.
//! Does not own: parsing rules or deciding calls (`config::approvals`), validating the
//! key (`validate`, which makes a bad `approvals:` an invalid agent).
//!
//! Read an agent's rules from its definition (or the overlay stored with its
//! session), never from a merged mount plan: `merge` deep-merges maps child-wins, which
//! is not the tighten-only rule.

use serde_json::Value;

use super::{AgentDef, AgentSource};
use crate::config::approvals::{ApprovalPolicy, Authority, RuleSource, Rules};

impl AgentSource {
    /// How much this tier's `approvals:` may say.
    pub fn approval_authority(self) -> Authority {
        match self {
            Self::Env | Self::User => Authority::Full,
            Self::Project | Self::Bundle => Authority::TightenOnly,
        }
    }
}

/// The rules of an agent overlay's `approvals:` (empty when absent or invalid —
/// an invalid value already makes the agent invalid, so it never runs).
pub fn overlay_rules(overlay: &Value) -> Rules {
    overlay
        .get("approvals")
        .and_then(|v| Rules::from_value(v).ok())
        .unwrap_or_default()
}

/// `base` (the config's policy) with `def`'s `approvals:` layered at its tier's
/// authority: what decides the calls of a session running `def`.
pub fn policy_for_agent(base: &ApprovalPolicy, def: &AgentDef) -> ApprovalPolicy {
    let rules = overlay_rules(&def.overlay);
    if rules.is_empty() {
        return base.clone();
    }
    base.clone().with_layer(
        RuleSource::Agent {
            name: def.name.clone(),
            tier: def.source.as_str().to_string(),
        },
        def.source.approval_authority(),
        &rules,
    )
}
