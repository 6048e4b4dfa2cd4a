//! Agent transfer inside one session (SPEC §11): the agent of a `sub_agents` tree that
//! answers, and what it answers with.
//!
//! Owns: a session's tree ([`session_tree`], rooted at the session's agent), the agent
//! that handles the next message ([`next_agent`], `agent::select` over the transcript),
//! and setting an agent up to answer ([`activate`]): its instruction, tools (plus
//! `transfer_to_agent` with its targets) and model — the session's own plan and provider
//! for the session's agent; for another agent of the tree the plan a root started with
//! it would get (bundle plan + its overlay), routed by its `provider_preferences` /
//! `model_role` with the session's provider as the fallback. Does not own: the turn
//! loop that switches agents (`turn`) or the selection rule (`agent::select`).

use std::sync::Arc;

use serde_json::Value;

use super::env::TurnEnv;
use super::live::LiveSession;
use super::outcome::EngineError;
use super::providers;
use super::root_plan;
use crate::agent::select::{find_agent_to_run, transcript_events};
use crate::agent::tree::AgentTree;
use crate::config::MountPlan;
use crate::provider::Provider;
use crate::routing::ModelRequest;
use crate::routing::prefs::apply_resolved;
use crate::tool::mount::ToolSet;
use crate::tool::transfer::{Target, TransferTool};

/// The agent answering in a session's turn, with what it answers with.
pub(crate) struct Active {
    pub name: String,
    /// Its instruction opens the system prompt.
    pub plan: MountPlan,
    pub provider: Arc<dyn Provider>,
    pub provider_config: Value,
    pub tools: ToolSet,
}

/// The tree of `live`'s agent when it has sub-agents (else `None`: no transfers).
/// Invalid agents are left out (they cannot run).
pub(crate) fn session_tree(env: &TurnEnv, live: &LiveSession) -> Option<AgentTree> {
    let registry = env.registry();
    let valid = |n: &str| registry.get(n).filter(|d| d.is_valid());
    let tree = AgentTree::from_agents(&valid, &live.agent_name);
    tree.has_transfers().then_some(tree)
}

/// The agent of `tree` that handles the next message of `live` (its transcript as it
/// is now; a new user message must already be appended).
pub(crate) fn next_agent(tree: &AgentTree, live: &LiveSession) -> String {
    let events = transcript_events(&live.transcript_snapshot(), &live.agent_name);
    find_agent_to_run(tree, &events, false).to_string()
}

/// Sets agent `name` of `live`'s tree up to answer (see the module docs). The
/// session's own agent never fails here beyond its provider; another agent fails with
/// `UnknownAgent` / `InvalidAgent` when the registry lost it, or `NoProvider`.
pub(crate) async fn activate(
    env: &TurnEnv,
    live: &LiveSession,
    tree: Option<&AgentTree>,
    name: &str,
) -> Result<Active, EngineError> {
    let (plan, provider, provider_config) = if name == live.agent_name {
        let (provider, config) = providers::provider_for(env, live)?;
        (live.plan.clone(), provider, config)
    } else {
        let (session_provider, _) = providers::provider_for(env, live)?;
        let (plan, overlay) = root_plan::build(env, Some(name))?;
        let request = ModelRequest::default().with_agent(&overlay);
        let parent = (session_provider.id(), session_provider.default_model());
        let routed = providers::route(env, &plan, &request, parent).await;
        let plan = match &routed.choice {
            Some(choice) => MountPlan::from_value(apply_resolved(&plan.to_value(), choice)),
            None => plan,
        };
        let (provider, config) = providers::select_provider(env, &plan)?;
        (plan, provider, config)
    };
    let mut tools = env.mount_tools(live, &plan).await;
    if let Some(tree) = tree {
        let targets = transfer_targets(tree, name);
        if !targets.is_empty() {
            tools.extend([Arc::new(TransferTool::new(targets)) as Arc<dyn crate::tool::Tool>]);
        }
    }
    Ok(Active {
        name: name.to_string(),
        plan,
        provider,
        provider_config,
        tools,
    })
}

/// The transfer targets of `name` in `tree`, with their descriptions.
pub(crate) fn transfer_targets(tree: &AgentTree, name: &str) -> Vec<Target> {
    let Some(index) = tree.find(name) else {
        return Vec::new();
    };
    tree.transfer_targets(index)
        .into_iter()
        .filter_map(|i| tree.get(i))
        .map(|a| Target {
            name: a.name.clone(),
            description: a.description.clone(),
        })
        .collect()
}
