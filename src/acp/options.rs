//! The session configuration options of `arbor acp` (ACP v1 schema 1.20
//! `SessionConfigOption`, returned by `session/new`, `session/load`,
//! `session/resume` and `session/set_config_option`):
//!
//! - `model` (category `model`): a select of `PROVIDER/MODEL` values — every model
//!   each provider of the session's plan lists (through the engine's per-process
//!   model cache, as a glob choice and `arbor models` list them), the model its plan
//!   entry names, and the session's current one, which is selected; grouped by
//!   provider when there are several. Setting it switches the session's model
//!   (`EngineCommand::SetModel`, as the TUI's `/model`): the next model request names
//!   it.
//! - `agent`: the session's root agent, chosen when the session is created
//!   (`arbor acp --agent`); the only value, so a client can show it.
//! - `approvals`: how calls that need approval are answered — `ask` (a
//!   `session/request_permission` each), `allow` (allowed without asking, as
//!   `arbor run --yes`) or `reject` (refused without asking). What config denies is
//!   never asked, so no mode runs it.
//!
//! Owns: building the options and reading a chosen value. Does not own: applying a
//! choice (`agent`) or listing the models (`engine`).

use agent_client_protocol_schema::v1::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectGroup,
    SessionConfigSelectOption, SessionConfigSelectOptions,
};

use crate::engine::ProviderModels;

/// Option id of the model select.
pub const MODEL: &str = "model";
/// Option id of the agent select.
pub const AGENT: &str = "agent";
/// Option id of the approval mode select.
pub const APPROVALS: &str = "approvals";

/// How an ACP session answers calls that wait for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Approvals {
    /// Ask the client (`session/request_permission`).
    #[default]
    Ask,
    /// Allow once, without asking.
    Allow,
    /// Reject, without asking.
    Reject,
}

impl Approvals {
    const ALL: [Approvals; 3] = [Approvals::Ask, Approvals::Allow, Approvals::Reject];

    /// The option value: `ask`, `allow`, `reject`.
    pub fn id(self) -> &'static str {
        match self {
            Approvals::Ask => "ask",
            Approvals::Allow => "allow",
            Approvals::Reject => "reject",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Approvals::Ask => "Ask",
            Approvals::Allow => "Allow all",
            Approvals::Reject => "Reject all",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Approvals::Ask => "Ask before each call that needs approval",
            Approvals::Allow => "Run every call config does not deny, without asking",
            Approvals::Reject => "Refuse every call that needs approval, without asking",
        }
    }

    /// The mode whose [`Approvals::id`] is `id`.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.id() == id)
    }
}

/// What a session has now, as the options show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Current {
    /// `provider/model` (metadata `model`), when known.
    pub model: Option<String>,
    /// The root agent.
    pub agent: String,
    /// The approval mode.
    pub approvals: Approvals,
}

/// The `provider/model` values of the model select, in order: each provider's
/// configured model, then its listed ones (sorted), then `current` when none of them
/// is it; no value twice. Grouped by provider: `(provider, values)`.
pub fn model_values(
    models: &[ProviderModels],
    current: Option<&str>,
) -> Vec<(String, Vec<String>)> {
    let mut seen = std::collections::HashSet::new();
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for p in models {
        let listed = p.models.as_deref().unwrap_or_default();
        let values: Vec<String> = p
            .configured
            .iter()
            .chain(listed)
            .map(|m| format!("{}/{m}", p.provider))
            .filter(|v| seen.insert(v.clone()))
            .collect();
        groups.push((p.provider.clone(), values));
    }
    if let Some(current) = current.filter(|c| !seen.contains(*c)) {
        let provider = current.split_once('/').map_or(current, |(p, _)| p);
        match groups.iter_mut().find(|(p, _)| p == provider) {
            Some((_, values)) => values.insert(0, current.to_string()),
            None => groups.insert(0, (provider.to_string(), vec![current.to_string()])),
        }
    }
    groups.retain(|(_, values)| !values.is_empty());
    groups
}

/// The options of a session with `current`, its providers listing `models`.
pub fn options(current: &Current, models: &[ProviderModels]) -> Vec<SessionConfigOption> {
    let mut out = Vec::new();
    let groups = model_values(models, current.model.as_deref());
    let selected = current
        .model
        .clone()
        .or_else(|| groups.first().and_then(|(_, v)| v.first().cloned()));
    if let Some(selected) = selected {
        let choices = |values: &[String]| -> Vec<SessionConfigSelectOption> {
            values
                .iter()
                .map(|v| {
                    let name = v.split_once('/').map_or(v.as_str(), |(_, m)| m);
                    SessionConfigSelectOption::new(v.clone(), name)
                })
                .collect()
        };
        let select: SessionConfigSelectOptions = if groups.len() > 1 {
            groups
                .iter()
                .map(|(p, v)| SessionConfigSelectGroup::new(p.clone(), p.clone(), choices(v)))
                .collect::<Vec<_>>()
                .into()
        } else {
            choices(groups.first().map_or(&[][..], |(_, v)| v)).into()
        };
        out.push(
            SessionConfigOption::select(MODEL, "Model", selected, select)
                .category(SessionConfigOptionCategory::Model)
                .description("The model of the session's next requests".to_string()),
        );
    }
    let agent = SessionConfigSelectOption::new(current.agent.clone(), current.agent.clone());
    out.push(
        SessionConfigOption::select(AGENT, "Agent", current.agent.clone(), vec![agent])
            .description(
                "The session's root agent (chosen when it is created: arbor acp --agent)"
                    .to_string(),
            ),
    );
    let modes: Vec<SessionConfigSelectOption> = Approvals::ALL
        .into_iter()
        .map(|m| {
            SessionConfigSelectOption::new(m.id(), m.name())
                .description(m.description().to_string())
        })
        .collect();
    out.push(
        SessionConfigOption::select(APPROVALS, "Approvals", current.approvals.id(), modes)
            .category(SessionConfigOptionCategory::Mode)
            .description("How tool calls that need approval are answered".to_string()),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(provider: &str, configured: Option<&str>, models: &[&str]) -> ProviderModels {
        ProviderModels {
            provider: provider.into(),
            module: format!("provider-{provider}"),
            configured: configured.map(String::from),
            models: Ok(models.iter().map(|m| m.to_string()).collect()),
        }
    }

    #[test]
    fn model_values_put_configured_first_and_never_repeat() {
        let models = [listed("openai", Some("b"), &["a", "b"])];
        assert_eq!(
            model_values(&models, Some("openai/b")),
            [(
                "openai".to_string(),
                vec!["openai/b".to_string(), "openai/a".to_string()]
            )]
        );
    }

    #[test]
    fn an_unlisted_current_model_is_still_offered_and_selected() {
        let models = [listed("openai", None, &["a"])];
        let current = Current {
            model: Some("openai/custom".into()),
            agent: "root".into(),
            approvals: Approvals::Ask,
        };
        let json = serde_json::to_value(options(&current, &models)).unwrap();
        assert_eq!(json[0]["id"], "model");
        assert_eq!(json[0]["category"], "model");
        assert_eq!(json[0]["currentValue"], "openai/custom");
        assert_eq!(json[0]["options"][0]["value"], "openai/custom");
        assert_eq!(json[0]["options"][1]["value"], "openai/a");
        assert_eq!(json[2]["id"], "approvals");
        assert_eq!(json[2]["currentValue"], "ask");
    }

    #[test]
    fn several_providers_are_grouped() {
        let models = [
            listed("openai", None, &["a"]),
            listed("local", None, &["m"]),
        ];
        let current = Current {
            model: Some("openai/a".into()),
            agent: "root".into(),
            approvals: Approvals::Allow,
        };
        let json = serde_json::to_value(options(&current, &models)).unwrap();
        assert_eq!(json[0]["options"][1]["group"], "local");
        assert_eq!(json[0]["options"][1]["options"][0]["value"], "local/m");
    }
}
