//! Delegation: the runtime side of the task tool (SPEC §9).
//!
//! Owns: [`Host`], the [`TaskHost`] the task tool calls — spawning a sub-session
//! (merged mount plan, child id, depth, metadata with `model_role` /
//! `provider_preferences` of the call in `extra`, `session:fork` on the child,
//! `task:agent_spawned` on the parent), resuming one by id (`task:agent_resumed`),
//! running the child's turn under a child token of the caller's turn, and
//! `task:agent_completed`. Does not own: validating the call (`tool::task`), the turn
//! itself (`turn`).

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::context::with_context;
use super::live::LiveSession;
use super::runtime::{Runtime, TurnOutcome};
use super::turn;
use crate::agent::{AgentDef, Registry};
use crate::config::merge::merge_for_spawn;
use crate::session::events::names;
use crate::session::ids;
use crate::session::message::now_rfc3339;
use crate::session::{Metadata, SessionStatus};
use crate::tool::ToolContext;
use crate::tool::task::{TaskHost, TaskRequest, TaskResult};

/// The task tool's handle on the runtime (weak: tools never keep the runtime alive).
pub(crate) struct Host {
    runtime: Weak<Runtime>,
}

impl Host {
    pub fn new(runtime: Weak<Runtime>) -> Self {
        Self { runtime }
    }

    fn runtime(&self) -> Result<Arc<Runtime>, String> {
        self.runtime
            .upgrade()
            .ok_or_else(|| "the runtime is shutting down".to_string())
    }
}

impl TaskHost for Host {
    fn registry(&self) -> Arc<Registry> {
        self.runtime
            .upgrade()
            .map(|rt| rt.registry())
            .unwrap_or_default()
    }

    fn spawn(
        &self,
        agent: AgentDef,
        request: TaskRequest,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<TaskResult, String>> {
        let runtime = self.runtime();
        Box::pin(async move { spawn_child(runtime?, agent, request, ctx).await })
    }

    fn resume(
        &self,
        request: TaskRequest,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<TaskResult, String>> {
        let runtime = self.runtime();
        Box::pin(async move { resume_child(runtime?, request, ctx).await })
    }
}

fn caller(rt: &Runtime, ctx: &ToolContext) -> Result<Arc<LiveSession>, String> {
    rt.live(&ctx.session_id)
        .ok_or_else(|| format!("the calling session '{}' is not loaded", ctx.session_id))
}

async fn spawn_child(
    rt: Arc<Runtime>,
    agent: AgentDef,
    request: TaskRequest,
    ctx: ToolContext,
) -> Result<TaskResult, String> {
    let parent = caller(&rt, &ctx)?;
    let child_id = ctx
        .sub_session_id
        .clone()
        .unwrap_or_else(|| ids::new_child_id(&parent.id, &agent.name));
    let calling_spawn = parent
        .agent_overlay
        .get("spawn")
        .cloned()
        .unwrap_or(Value::Null);
    let plan = merge_for_spawn(&parent.plan, &agent.overlay, &calling_spawn);
    let parent_meta = parent.metadata();
    let now = now_rfc3339();
    let mut metadata = Metadata {
        session_id: child_id.clone(),
        parent_id: Some(parent.id.clone()),
        agent_name: Some(agent.name.clone()),
        created: now.clone(),
        last_updated: now,
        turn_count: 0,
        working_dir: Some(parent.working_dir.display().to_string()),
        bundle: parent_meta.bundle.clone(),
        model: parent_meta.model.clone(),
        status: SessionStatus::Idle,
        depth: parent.depth + 1,
        config: Some(plan.0.clone()),
        agent_overlay: agent.overlay.clone(),
        ..Default::default()
    };
    if let Some(role) = &request.model_role {
        metadata.extra.insert("model_role".into(), role.clone());
    }
    if let Some(prefs) = &request.provider_preferences {
        metadata
            .extra
            .insert("provider_preferences".into(), prefs.clone());
    }
    let child = rt
        .register(metadata, plan, Vec::new())
        .map_err(|e| e.to_string())?;
    child.emit(
        names::SESSION_FORK,
        json!({"parent": parent.id, "agent": agent.name, "depth": child.depth}),
    );
    child.set_status(SessionStatus::Idle);
    parent.emit(
        names::TASK_AGENT_SPAWNED,
        json!({
            "agent": agent.name,
            "sub_session_id": child.id,
            "tool_call_id": ctx.tool_call_id,
            "depth": child.depth,
        }),
    );
    run_child(rt, &parent, child, &request, &ctx).await
}

async fn resume_child(
    rt: Arc<Runtime>,
    request: TaskRequest,
    ctx: ToolContext,
) -> Result<TaskResult, String> {
    let parent = caller(&rt, &ctx)?;
    let id = request.session_id.clone().unwrap_or_default();
    let child = rt.live_or_resume(&id).map_err(|e| e.to_string())?;
    parent.emit(
        names::TASK_AGENT_RESUMED,
        json!({
            "agent": child.agent_name,
            "sub_session_id": child.id,
            "tool_call_id": ctx.tool_call_id,
            "depth": child.depth,
        }),
    );
    run_child(rt, &parent, child, &request, &ctx).await
}

async fn run_child(
    rt: Arc<Runtime>,
    parent: &LiveSession,
    child: Arc<LiveSession>,
    request: &TaskRequest,
    ctx: &ToolContext,
) -> Result<TaskResult, String> {
    let instruction = with_context(
        &parent.transcript(),
        request.context_depth,
        request.context_turns,
        &request.instruction,
    );
    let outcome: TurnOutcome = turn::run(rt, child.clone(), instruction, Some(ctx.cancel.clone()))
        .await
        .map_err(|e| e.to_string())?;
    parent.emit(
        names::TASK_AGENT_COMPLETED,
        json!({
            "agent": outcome.agent,
            "sub_session_id": outcome.session_id,
            "tool_call_id": ctx.tool_call_id,
            "status": outcome.status.as_str(),
            "turn_count": outcome.turn_count,
        }),
    );
    Ok(TaskResult {
        response: outcome.response,
        session_id: outcome.session_id,
        agent: outcome.agent,
        status: outcome.status,
        turn_count: outcome.turn_count,
        error: outcome.error,
    })
}
