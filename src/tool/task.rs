//! Module `tool-task`, tool `task`: delegation to sub-sessions (SPEC §9).
//!
//! Owns: the tool's input schema and description (the agents this session may delegate
//! to, from the live registry filtered by the plan's `agents`), parsing and validating a
//! call (unknown agent, depth limit), the `max_parallel` bound, and the result JSON
//! `{"response","session_id","agent","status","turn_count"}` (a paused child's result
//! starts with `status: paused`, its id and spend). Does not own: creating,
//! resuming or running sessions — that is the [`TaskHost`] the engine implements
//! (`engine::spawn`), so this module never imports the engine; nor the limits
//! themselves: [`TaskConfig`] and the tighten-only rule live in `config::limits`, and
//! the tree-wide limits (sessions per tree, sub-sessions at once) are checked by the
//! host, whose refusal comes back as the call's error result.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::agent::{AgentDef, Registry};
pub use crate::config::TaskConfig;
use crate::config::budget::Budget;
use crate::config::isolation::IsolationSetting;
use crate::config::mount_plan::{AgentAccess, TASK_MODULE};
use crate::routing;
use crate::session::SessionStatus;
use crate::session::ids::SessionId;
use crate::session::protocol::{TaskInput, ToolEffect};

use super::error::ToolError;
use super::{Tool, ToolContext, ToolOutput, ToolSpec};

/// The module name in a mount plan's `tools[]`.
pub const MODULE: &str = TASK_MODULE;
/// The tool name offered to the model.
pub const TOOL_NAME: &str = "task";

/// How much of the parent's transcript prefixes the child's first message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextDepth {
    #[default]
    None,
    /// The last `context_turns` turns.
    Recent,
    All,
}

/// One parsed `task` call.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRequest {
    /// The agent to spawn (required unless `session_id` is given).
    pub agent: Option<String>,
    pub instruction: String,
    /// Resume this sub-session instead of spawning.
    pub session_id: Option<SessionId>,
    /// A role name or list of roles (validated); resolved against the routing matrix
    /// at spawn, or on resume to re-route the sub-session.
    pub model_role: Option<Value>,
    /// `[{provider, model, config?}]` (validated); outranks every other model setting.
    pub provider_preferences: Option<Value>,
    pub context_depth: ContextDepth,
    /// Turns of context for `ContextDepth::Recent` (default 5).
    pub context_turns: usize,
    /// The call's `budget` for a spawned child (only tightens the agent's own;
    /// ignored on resume).
    pub budget: Option<Budget>,
    /// The call's `isolation` (`worktree` | `none`, or `{mode, merge}`) for a spawned
    /// child: outranks its agent's frontmatter and the config (ignored on resume).
    pub isolation: Option<IsolationSetting>,
}

pub use crate::session::protocol::TaskResult;

/// The lines a `paused` task result starts with: its status, the session id, the
/// spend, and how to continue (`status: paused`, `session_id: …`, `spent: …`).
pub fn paused_preamble(result: &TaskResult) -> String {
    format!(
        "status: paused\nsession_id: {}\nspent: {}\nThe sub-session stopped at its budget \
         with everything kept. Call task with session_id \"{}\" to resume it with one more \
         budget of the same size.\n",
        result.session_id,
        result.budget.as_deref().unwrap_or("its budget"),
        result.session_id
    )
}

/// The output of a delegation that ran: the result JSON (after [`paused_preamble`]
/// for a paused child), an error unless the child completed or paused, and the result
/// as its effect.
pub fn output_of(result: TaskResult) -> ToolOutput {
    let failed = !matches!(
        result.status,
        SessionStatus::Completed | SessionStatus::Paused
    );
    let mut content = serde_json::to_string(&result)
        .unwrap_or_else(|e| format!("cannot encode the task result: {e}"));
    if result.status == SessionStatus::Paused {
        content = format!("{}{content}", paused_preamble(&result));
    }
    ToolOutput {
        content,
        is_error: failed,
        effect: Some(ToolEffect::Task(result)),
    }
}

/// The result a delegation's stored output text holds (a transcript read back, which
/// keeps no effect): the task tool's result JSON or `delegate`'s shape of it (`status:
/// success` for a completed turn). `None` for any other text: an error before the
/// child ran, a paused result (its preamble first), text a hook appended.
pub fn result_of_text(content: &str) -> Option<TaskResult> {
    let mut value: Value = serde_json::from_str(content).ok()?;
    if value.get("status").and_then(Value::as_str) == Some("success") {
        value["status"] = json!("completed");
    }
    serde_json::from_value(value).ok()
}

/// What the task tool needs from the runtime. Errors ([`ToolError::Failed`]) carry the
/// text the calling model sees (e.g. "Sub-session 'x' not found. …").
pub trait TaskHost: Send + Sync {
    /// The live agent registry.
    fn registry(&self) -> Arc<Registry>;
    /// Spawns a sub-session of `ctx.session_id` (id `ctx.sub_session_id`, else a new
    /// one) running `agent`, runs its first turn with the request, returns its outcome.
    fn spawn(
        &self,
        agent: AgentDef,
        request: TaskRequest,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<TaskResult, ToolError>>;
    /// Runs a turn of the existing session `request.session_id` with the instruction.
    fn resume(
        &self,
        request: TaskRequest,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<TaskResult, ToolError>>;
}

/// The agents a session may delegate to: valid registry agents filtered by the plan's
/// `agents` (`all`/absent → all, `none` → none, a list or `{include: […]}` → those
/// names, `ns:name` matching a bundle agent), sorted by name.
pub fn allowed_agents<'r>(
    agents: &'r [AgentDef],
    plan_agents: Option<&AgentAccess>,
) -> Vec<&'r AgentDef> {
    let names = plan_agents.and_then(AgentAccess::names);
    let mut agents: Vec<&AgentDef> = agents
        .iter()
        .filter(|a| a.is_valid())
        .filter(|a| match &names {
            None => true,
            Some(names) => names.iter().any(|n| agent_matches(a, n)),
        })
        .collect();
    agents.sort_by(|a, b| a.name.cmp(&b.name));
    agents
}

fn agent_matches(agent: &AgentDef, name: &str) -> bool {
    match name.split_once(':') {
        Some((ns, short)) => agent.namespace.as_deref() == Some(ns) && agent.name == short,
        None => agent.name == name,
    }
}

/// The tool description: what it does, then `- name: first line of description` per
/// allowed agent, or a note that delegation is unavailable.
pub fn describe(agents: &[&AgentDef]) -> String {
    let mut text = String::from(
        "Delegate a sub-task to a specialised agent. The agent works in its own \
         sub-session and returns its final answer as JSON {response, session_id, agent, \
         status, turn_count}. Pass `session_id` (from an earlier result) instead of \
         `agent` to continue that sub-session.\n\n",
    );
    if agents.is_empty() {
        text.push_str("Delegation is unavailable: no agents are available to this session.");
    } else {
        text.push_str("Available agents:\n");
        for agent in agents {
            text.push_str(&format!("- {}: {}\n", agent.name, agent.summary()));
        }
    }
    text
}

/// The `task` tool of one session (mounted per turn).
pub struct TaskTool {
    host: Arc<dyn TaskHost>,
    /// The calling session's plan `agents` value.
    plan_agents: Option<AgentAccess>,
    config: TaskConfig,
    permits: Arc<Semaphore>,
}

impl TaskTool {
    /// A task tool for a session whose plan has `agents` = `plan_agents`.
    pub fn new(
        host: Arc<dyn TaskHost>,
        plan_agents: Option<AgentAccess>,
        config: TaskConfig,
    ) -> Self {
        Self {
            host,
            plan_agents,
            config,
            permits: Arc::new(Semaphore::new(config.max_parallel)),
        }
    }

    /// The agents this session may delegate to now (the live registry filtered by the
    /// plan's `agents`), sorted by name.
    pub fn allowed(&self) -> Vec<AgentDef> {
        let registry = self.host.registry();
        allowed_agents(registry.agents(), self.plan_agents.as_ref())
            .into_iter()
            .cloned()
            .collect()
    }

    /// Checks a call: the agent must be allowed and the depth limit not exceeded.
    /// Returns the agent to spawn (`None` for a resume).
    fn route(
        &self,
        request: &TaskRequest,
        ctx: &ToolContext,
    ) -> Result<Option<AgentDef>, ToolError> {
        if request.session_id.is_some() {
            return Ok(None);
        }
        let registry = self.host.registry();
        let allowed = allowed_agents(registry.agents(), self.plan_agents.as_ref());
        let valid = || {
            if allowed.is_empty() {
                "none (delegation is unavailable to this session)".to_string()
            } else {
                allowed
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let Some(name) = request.agent.as_deref() else {
            return Err(ToolError::Input(format!(
                "task needs 'agent' (or 'session_id' to resume). Valid agents: {}",
                valid()
            )));
        };
        let def = registry
            .get(name)
            .filter(|d| allowed.iter().any(|a| a.name == d.name));
        let Some(def) = def else {
            if let Some(invalid) = registry.get(name).filter(|d| !d.is_valid()) {
                let reasons: Vec<String> = invalid.errors.iter().map(ToString::to_string).collect();
                return Err(ToolError::Input(format!(
                    "agent '{name}' is invalid: {}. Valid agents: {}",
                    reasons.join("; "),
                    valid()
                )));
            }
            return Err(ToolError::Input(format!(
                "Unknown agent '{name}'. Valid agents: {}",
                valid()
            )));
        };
        if ctx.depth + 1 > self.config.max_recursion_depth {
            return Err(ToolError::Failed(format!(
                "Delegation depth limit reached: a sub-session of this session would be at depth {} \
                 but max_recursion_depth is {}.",
                ctx.depth + 1,
                self.config.max_recursion_depth
            )));
        }
        Ok(Some(def.clone()))
    }
}

/// Parses the call input (`instruction` required; `agent`, `session_id`, `model_role`
/// (a role or list of roles), `provider_preferences` (`[{provider, model, config?}]`),
/// `context_depth` none|recent|all, `context_turns` ≥ 0).
pub fn parse_request(input: &Value) -> Result<TaskRequest, ToolError> {
    if !input.is_object() {
        return Err(ToolError::Input(
            "task expects an object like {\"agent\": \"…\", \"instruction\": \"…\"}".into(),
        ));
    }
    let TaskInput {
        agent,
        instruction,
        session_id,
    } = TaskInput::parse(input).map_err(|e| ToolError::Input(e.to_string()))?;
    let instruction =
        instruction.ok_or_else(|| ToolError::Input("task needs 'instruction'".into()))?;
    let context_depth = match input.get("context_depth") {
        None | Some(Value::Null) => ContextDepth::None,
        Some(Value::String(s)) => match s.trim() {
            "" | "none" => ContextDepth::None,
            "recent" => ContextDepth::Recent,
            "all" => ContextDepth::All,
            other => {
                return Err(ToolError::Input(format!(
                    "'context_depth' must be none, recent or all, got '{other}'"
                )));
            }
        },
        Some(other) => {
            return Err(ToolError::Input(format!(
                "'context_depth' must be a string, got {other}"
            )));
        }
    };
    let context_turns = match input.get("context_turns") {
        None | Some(Value::Null) => 5,
        Some(v) => v
            .as_u64()
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .ok_or_else(|| {
                ToolError::Input(format!(
                    "'context_turns' must be a non-negative integer, got {v}"
                ))
            })?,
    };
    let present = |key: &str| input.get(key).filter(|v| !v.is_null()).cloned();
    let model_role = present("model_role");
    if let Some(role) = &model_role {
        routing::parse_roles(role)?;
    }
    let budget = Budget::parse(input.get("budget"))?;
    let isolation = IsolationSetting::parse(input.get("isolation"))
        .map_err(|e| ToolError::Input(e.to_string()))?;
    let provider_preferences = present("provider_preferences");
    if let Some(prefs) = &provider_preferences {
        routing::parse_preferences(prefs)?;
    }
    Ok(TaskRequest {
        agent,
        instruction,
        session_id,
        model_role,
        provider_preferences,
        context_depth,
        context_turns,
        budget,
        isolation,
    })
}

impl Tool for TaskTool {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        let registry = self.host.registry();
        let agents = allowed_agents(registry.agents(), self.plan_agents.as_ref());
        ToolSpec {
            name: TOOL_NAME.into(),
            description: describe(&agents),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "agent": {"type": "string", "description": "The agent to delegate to (required unless session_id is given)."},
                    "instruction": {"type": "string", "description": "What the agent should do; include everything it needs."},
                    "session_id": {"type": "string", "description": "Continue this earlier sub-session instead of spawning a new one."},
                    "model_role": {
                        "description": "Model role(s) for the sub-session, tried in order, e.g. \"fast\" or [\"reasoning\", \"general\"]. Roles: general, fast, coding, ui-coding, security-audit, reasoning, critique, creative, writing, research, vision, image-gen, critical-ops.",
                        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
                    },
                    "provider_preferences": {
                        "type": "array",
                        "description": "Ordered provider/model preferences for the sub-session.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "provider": {"type": "string", "description": "Provider id or module, e.g. anthropic, openai, ollama."},
                                "model": {"type": "string", "description": "Exact model id or a glob such as claude-sonnet-* (newest match wins)."},
                                "config": {"type": "object", "description": "Model parameters, e.g. {\"reasoning_effort\": \"high\"}."}
                            },
                            "required": ["provider", "model"]
                        }
                    },
                    "context_depth": {"type": "string", "enum": ["none", "recent", "all"], "description": "How much of this conversation to pass along (default none)."},
                    "context_turns": {"type": "integer", "minimum": 0, "description": "Turns passed with context_depth=recent (default 5)."},
                    "budget": {
                        "type": "object",
                        "description": "Spending limit for a new sub-session (never more than its agent's own budget). When it is reached the sub-session pauses; resume it with session_id to grant one more.",
                        "properties": {
                            "tokens": {"type": "integer", "minimum": 1, "description": "Input + output tokens."},
                            "cost_usd": {"type": "number", "exclusiveMinimum": 0, "description": "Cost in USD."}
                        }
                    },
                    "isolation": {
                        "description": "worktree (default for agents that write, in a git repository): the sub-session works in its own git worktree and branch, merged into this working directory when it finishes (merge: auto, the default; review or manual leave it for a person); none: it writes in this working directory.",
                        "anyOf": [
                            {"type": "string", "enum": ["worktree", "none"]},
                            {"type": "object", "properties": {
                                "mode": {"type": "string", "enum": ["worktree", "none"]},
                                "merge": {"type": "string", "enum": ["auto", "review", "manual"]}
                            }}
                        ]
                    }
                },
                "required": ["instruction"]
            }),
        }
    }

    fn prepare(&self, input: &Value, ctx: &mut ToolContext) {
        let parsed = parse_request(input).map_err(Arc::new);
        if let Ok(request) = &parsed {
            if let Some(id) = &request.session_id {
                ctx.sub_session_id = Some(id.clone());
            } else if let Ok(Some(agent)) = self.route(request, ctx) {
                ctx.sub_session_id = Some(ctx.child_id(&agent.name));
            }
        }
        ctx.task = Some(parsed);
    }

    fn call(&self, input: Value, mut ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        // Parsed once, by `prepare`, when the turn loop ran it.
        let parsed = match ctx.task.take() {
            Some(parsed) => parsed,
            None => parse_request(&input).map_err(Arc::new),
        };
        let routed = parsed.and_then(|r| self.route(&r, &ctx).map(|a| (r, a)).map_err(Arc::new));
        let host = self.host.clone();
        let permits = self.permits.clone();
        Box::pin(async move {
            let (request, agent) = match routed {
                Ok(ok) => ok,
                Err(e) => return ToolOutput::error(e.to_string()),
            };
            let _permit = tokio::select! {
                permit = permits.acquire_owned() => match permit {
                    Ok(p) => p,
                    Err(_) => return ToolOutput::error("the task tool is shutting down"),
                },
                _ = ctx.cancel.cancelled() => {
                    return ToolOutput::error("cancelled before the sub-session started");
                }
            };
            let result = match agent {
                Some(agent) => host.spawn(agent, request, ctx).await,
                None => host.resume(request, ctx).await,
            };
            match result {
                Ok(result) => output_of(result),
                Err(e) => ToolOutput::error(e.to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentSource;

    fn def(name: &str, ns: Option<&str>, description: &str, valid: bool) -> AgentDef {
        AgentDef {
            name: name.into(),
            namespace: ns.map(str::to_string),
            source: AgentSource::Bundle,
            path: None,
            description: description.into(),
            instruction: format!("You are {name}."),
            overlay: json!({"meta": {"name": name}}),
            errors: if valid {
                Vec::new()
            } else {
                vec![crate::agent::AgentIssue {
                    path: "x.md".into(),
                    line: 2,
                    column: 1,
                    message: "bad".into(),
                }]
            },
            warnings: Vec::new(),
            shadows: Vec::new(),
        }
    }

    fn agents() -> Vec<AgentDef> {
        vec![
            def("zen", None, "Architect.\nMore lines.", true),
            def("explorer", Some("foundation"), "Explores code", true),
            def("broken", None, "Broken", false),
        ]
    }

    fn names(list: &[&AgentDef]) -> Vec<String> {
        list.iter().map(|a| a.name.clone()).collect()
    }

    #[test]
    fn agents_filter_follows_the_plan() {
        let all = agents();
        assert_eq!(names(&allowed_agents(&all, None)), ["explorer", "zen"]);
        assert_eq!(
            names(&allowed_agents(
                &all,
                Some(&AgentAccess::from_value(json!("all")))
            )),
            ["explorer", "zen"]
        );
        assert!(allowed_agents(&all, Some(&AgentAccess::from_value(json!("none")))).is_empty());
        assert_eq!(
            names(&allowed_agents(
                &all,
                Some(&AgentAccess::from_value(json!(["zen", "broken"])))
            )),
            ["zen"]
        );
        assert_eq!(
            names(&allowed_agents(
                &all,
                Some(&AgentAccess::from_value(
                    json!({"include": ["foundation:explorer"]})
                ))
            )),
            ["explorer"]
        );
        assert!(
            allowed_agents(
                &all,
                Some(&AgentAccess::from_value(json!(["other:explorer"])))
            )
            .is_empty()
        );
    }

    #[test]
    fn description_lists_first_lines_sorted_or_says_unavailable() {
        let all = agents();
        let text = describe(&allowed_agents(&all, None));
        assert!(
            text.ends_with("Available agents:\n- explorer: Explores code\n- zen: Architect.\n"),
            "{text}"
        );
        let none = describe(&[]);
        assert!(none.contains("Delegation is unavailable"));
    }

    #[test]
    fn parses_calls_and_reports_bad_input() {
        let r = parse_request(&json!({"agent": "zen", "instruction": " do it ", "context_depth": "recent", "context_turns": 2, "model_role": "fast"})).unwrap();
        assert_eq!(r.agent.as_deref(), Some("zen"));
        assert_eq!(r.instruction, "do it");
        assert_eq!(r.context_depth, ContextDepth::Recent);
        assert_eq!(r.context_turns, 2);
        assert_eq!(r.model_role, Some(json!("fast")));
        let r = parse_request(&json!({"session_id": "abc", "instruction": "more"})).unwrap();
        assert_eq!(
            (r.session_id.as_deref(), r.context_depth, r.context_turns),
            (Some("abc"), ContextDepth::None, 5)
        );
        assert!(
            parse_request(&json!({"agent": "zen"}))
                .unwrap_err()
                .to_string()
                .contains("needs 'instruction'")
        );
        assert!(
            parse_request(&json!({"instruction": "x", "context_depth": "some"}))
                .unwrap_err()
                .to_string()
                .contains("none, recent or all")
        );
        assert!(
            parse_request(&json!({"instruction": 3}))
                .unwrap_err()
                .to_string()
                .contains("must be a string")
        );
        assert!(parse_request(&json!([1])).is_err());
        let e = parse_request(
            &json!({"instruction": "x", "provider_preferences": [{"provider": "openai"}]}),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("requires 'model' key"), "{e}");
        let e = parse_request(&json!({"instruction": "x", "model_role": 3}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("model_role must be"), "{e}");
        let r = parse_request(&json!({"instruction": "x", "model_role": ["reasoning", "general"]}))
            .unwrap();
        assert_eq!(r.model_role, Some(json!(["reasoning", "general"])));
    }

    /// A host that records what it was asked to spawn and completes at once.
    struct Recording(std::sync::Mutex<Vec<TaskRequest>>);

    impl TaskHost for Recording {
        fn registry(&self) -> Arc<Registry> {
            Arc::new(Registry::from_defs(agents()))
        }

        fn spawn(
            &self,
            agent: AgentDef,
            request: TaskRequest,
            ctx: ToolContext,
        ) -> BoxFuture<'static, Result<TaskResult, ToolError>> {
            self.0.lock().unwrap().push(request.clone());
            let result = TaskResult {
                response: request.instruction,
                session_id: ctx.child_id(&agent.name),
                agent: agent.name,
                status: SessionStatus::Completed,
                turn_count: 1,
                error: None,
                budget: None,
                isolation: None,
            };
            Box::pin(async move { Ok(result) })
        }

        fn resume(
            &self,
            _: TaskRequest,
            _: ToolContext,
        ) -> BoxFuture<'static, Result<TaskResult, ToolError>> {
            Box::pin(async { Err(ToolError::Failed("no resume here".into())) })
        }
    }

    /// `prepare` parses the input once: the call runs the request it parsed (and
    /// names the child it decided), and its output's effect is the typed result.
    #[tokio::test]
    async fn the_input_is_parsed_once_by_prepare() {
        let host = Arc::new(Recording(std::sync::Mutex::new(Vec::new())));
        let tool = TaskTool::new(host.clone(), None, TaskConfig::default());
        let mut ctx = ToolContext::in_dir(std::path::Path::new("/tmp"));
        tool.prepare(&json!({"agent": "zen", "instruction": "first"}), &mut ctx);
        let child = ctx.sub_session_id.clone().unwrap();
        assert!(matches!(&ctx.task, Some(Ok(r)) if r.instruction == "first"));
        // The call is given other input: what runs is what `prepare` parsed.
        let out = tool.call(json!({"instruction": 3}), ctx).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(host.0.lock().unwrap()[0].instruction, "first");
        let Some(ToolEffect::Task(result)) = out.effect else {
            panic!("{:?}", out.effect)
        };
        assert_eq!(
            (result.response.as_str(), &result.session_id),
            ("first", &child)
        );
        // Bad input: `prepare` keeps the error the call returns.
        let mut ctx = ToolContext::in_dir(std::path::Path::new("/tmp"));
        tool.prepare(&json!({"agent": "zen"}), &mut ctx);
        let out = tool
            .call(json!({"agent": "zen", "instruction": "x"}), ctx)
            .await;
        assert!(
            out.is_error && out.content.contains("needs 'instruction'"),
            "{}",
            out.content
        );
        assert_eq!(host.0.lock().unwrap().len(), 1);
    }
}
