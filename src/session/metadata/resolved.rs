//! The model a session resolved (SPEC §9 precedence), as stored in its metadata under
//! `resolved_model`: [`ResolvedModel`] and [`Via`]. Made by `routing`; carried by the
//! `session:fork` and `task:agent_*` events (`session::protocol` re-exports them).
//!
//! Owns: the record's shape and its JSON form. Does not own: resolving a model
//! (`routing`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a sub-session's model came from (SPEC §9 precedence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Via {
    /// The task call's `provider_preferences`.
    #[serde(rename = "call preferences")]
    CallPreferences,
    /// The task call's `model_role`.
    #[serde(rename = "call role")]
    CallRole,
    /// The agent's `provider_preferences`.
    #[serde(rename = "agent preferences")]
    AgentPreferences,
    /// The agent's `model_role`.
    #[serde(rename = "agent role")]
    AgentRole,
    /// Nothing applied: the parent's provider and model.
    #[serde(rename = "parent")]
    Parent,
    /// The person chose it (`--model`, or switching the open session's model):
    /// arbor's own, outside SPEC §9's precedence.
    #[serde(rename = "user")]
    User,
}

impl Via {
    /// The label used in metadata and reasons (`call preferences`, …, `parent`).
    pub fn as_str(self) -> &'static str {
        match self {
            Via::CallPreferences => "call preferences",
            Via::CallRole => "call role",
            Via::AgentPreferences => "agent preferences",
            Via::AgentRole => "agent role",
            Via::Parent => "parent",
            Via::User => "user",
        }
    }
}

/// The model a session resolved, as stored in its metadata under `resolved_model` and
/// carried by `session:fork` / `task:agent_spawned` / `task:agent_resumed`:
/// `{provider, model, via, role?, reason?}`. `provider` is the mount name (provider id)
/// in the session's plan; `role` the model role that resolved (role tiers); `reason`
/// explains fallbacks ("role reasoning: no candidate available (…); used role general").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedModel {
    /// Provider id (mount name).
    pub provider: String,
    /// Exact model id; empty when the provider's default is used.
    pub model: String,
    /// Which precedence tier chose it.
    pub via: Via,
    /// The model role that resolved (role tiers only; omitted otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Why a tier fell through (omitted when none did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ResolvedModel {
    /// The record as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// `provider/model` for display (`provider` alone when the model is unknown).
    pub fn label(&self) -> String {
        if self.model.is_empty() {
            self.provider.clone()
        } else {
            format!("{}/{}", self.provider, self.model)
        }
    }

    /// Reads a record from JSON (a `session:fork` event's, a test's); `None` when
    /// malformed.
    pub fn from_value(v: &Value) -> Option<Self> {
        serde_json::from_value(v.clone()).ok()
    }
}
