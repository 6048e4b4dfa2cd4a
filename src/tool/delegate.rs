//! Module `tool-delegate`, tool `delegate`: Amplifier's current delegation tool
//! (foundation d0d96f7 `modules/tool-delegate`), on arbor's spawn engine.
//!
//! Owns: the tool's name, description and input schema as foundation's `DelegateTool`
//! writes them (its base text, the enabled features, then `Available agents:` with
//! each agent's whole description — `  - name: description`), and its result shape
//! `{"response","session_id","agent","turn_count","status","metadata"}` (`status`
//! `success` for a completed turn, else arbor's status). Everything else — routing a
//! call to spawn or resume, the allowed agents, depth and parallel limits, context —
//! is the [`TaskTool`] it wraps, so `task` and `delegate` behave alike.
//!
//! Differences from foundation, deliberate: `agent="self"` and bundle paths as agents
//! are not offered (arbor spawns registry agents only), so the description leaves
//! those lines out and says so; `context_scope` is accepted and ignored (arbor passes
//! conversation text, foundation's default scope); the depth limit is the task tool's
//! `max_recursion_depth` (foundation bounds only self-delegation).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::task::{TaskResult, TaskTool};
use super::{Tool, ToolContext, ToolOutput, ToolSpec};
use crate::agent::AgentDef;
use crate::session::SessionStatus;
use crate::session::protocol::ToolEffect;

/// The module name in a mount plan's `tools[]`.
pub const MODULE: &str = crate::config::modules::DELEGATE.name;
/// The tool name offered to the model.
pub const TOOL_NAME: &str = "delegate";

/// Foundation's base description, less the `agent="…"` special values arbor does
/// not support.
const BASE: &str = "Spawn a specialized agent to handle tasks autonomously.

CRITICAL: Delegation is your PRIMARY operating mode, not an optimization.

ALWAYS use this tool when:
- Task requires reading more than 2 files
- Task requires exploration or investigation
- Task matches any agent's specialty (check Available agents below)
- Task would benefit from specialized context or tools
- You're about to use grep, glob, or read_file more than twice
- User asks you to \"look into\", \"investigate\", \"explore\", or \"analyze\" something

Why delegate: Every tool call YOU make consumes YOUR context window permanently.
Agents absorb that cost and return only summaries (~500 tokens vs ~20,000 tokens).
Delegation = longer, more effective sessions.

- Use session_id to resume an existing agent session (must be full session_id from previous delegate call)
Context control (two independent parameters):
- context_depth: HOW MUCH context - \"none\" (clean slate), \"recent\" (last N turns), \"all\" (full history)
- context_scope: WHICH content - \"conversation\" (text only), \"agents\" (+ agent results), \"full\" (+ all tools)
- Use provider_preferences to specify model/provider for the agent

Agent usage notes:
- Launch multiple agents concurrently when tasks are independent
- When an agent completes, it returns a single message back to you
- Each agent invocation is stateless - provide complete context in your instruction
- DEFAULT TO DELEGATION - only do simple single-step work yourself";

/// The description: [`BASE`], then `Available agents:` with `  - name: description`
/// (whole descriptions, sorted by name as given), or foundation's note when none.
pub fn describe(agents: &[(String, String)]) -> String {
    if agents.is_empty() {
        return format!("{BASE}\n\nNo agents currently registered.");
    }
    let list: Vec<String> = agents
        .iter()
        .map(|(name, description)| format!("  - {name}: {description}"))
        .collect();
    format!("{BASE}\n\nAvailable agents:\n{}", list.join("\n"))
}

/// The name the model calls an agent by: `ns:name` for a namespaced bundle agent
/// (foundation's agents are `foundation:explorer`), else its name.
pub fn call_name(def: &AgentDef) -> String {
    match def.namespace.as_deref() {
        Some(ns) if ns != "arbor" => format!("{ns}:{}", def.name),
        _ => def.name.clone(),
    }
}

/// The description as the file wrote it (a YAML `|` block keeps its last line
/// break; foundation lists it untrimmed), else the registry's trimmed one.
pub fn raw_description(def: &AgentDef) -> String {
    def.overlay
        .pointer("/meta/description")
        .and_then(Value::as_str)
        .map_or_else(|| def.description.clone(), str::to_string)
}

/// Foundation's input schema (`_static_input_schema`), `instruction` required.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "Agent to delegate to (e.g., 'foundation:explorer')."},
            "instruction": {"type": "string", "description": "Clear instruction for the agent"},
            "session_id": {"type": "string", "description": "Resume existing agent session (use full session_id from previous delegate call)"},
            "context_depth": {"type": "string", "enum": ["none", "recent", "all"], "description": "HOW MUCH context: 'none' (clean slate), 'recent' (last N turns), 'all' (full history)"},
            "context_turns": {"type": "integer", "description": "Number of turns when context_depth is 'recent' (default: 5)"},
            "context_scope": {"type": "string", "enum": ["conversation", "agents", "full"], "description": "WHICH content: 'conversation' (user/assistant text), 'agents' (+ delegate results), 'full' (+ all tool results)"},
            "provider_preferences": {
                "type": "array",
                "description": "Ordered list of provider/model preferences with glob pattern support",
                "items": {
                    "type": "object",
                    "properties": {
                        "provider": {"type": "string", "description": "Provider name (e.g., 'anthropic', 'openai')"},
                        "model": {"type": "string", "description": "Model name or glob pattern (e.g., 'claude-haiku-*')"}
                    },
                    "required": ["provider", "model"]
                }
            },
            "model_role": {"type": "string", "description": "Override the agent's default model role for this delegation. Use when the task requires a different capability than the agent's default (e.g., 'vision' for image-related work, 'reasoning' for architecture). Available roles are shown in the session context."}
        },
        "required": ["instruction"]
    })
}

/// A delegation's result in foundation's `delegate` output shape: the task tool's
/// keys with `status` `completed` → `success` and `metadata` `{}` added,
/// `error`/`budget` kept.
pub fn shape(result: &TaskResult) -> String {
    let mut task = match serde_json::to_value(result) {
        Ok(Value::Object(task)) => task,
        _ => return "cannot encode the task result".to_string(),
    };
    let mut out = serde_json::Map::new();
    for key in ["response", "session_id", "agent", "turn_count"] {
        if let Some(v) = task.shift_remove(key) {
            out.insert(key.into(), v);
        }
    }
    let status = match task.shift_remove("status") {
        Some(Value::String(s)) if s == "completed" => Value::String("success".into()),
        Some(other) => other,
        None => Value::String("success".into()),
    };
    out.insert("status".into(), status);
    out.insert("metadata".into(), json!({}));
    out.extend(task);
    Value::Object(out).to_string()
}

/// The `delegate` tool of one session: a [`TaskTool`] under foundation's name,
/// description, schema and result shape.
pub struct DelegateTool {
    task: Arc<TaskTool>,
}

impl DelegateTool {
    /// Wraps the session's task tool.
    pub fn new(task: Arc<TaskTool>) -> Self {
        Self { task }
    }
}

impl Tool for DelegateTool {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        let agents: Vec<(String, String)> = self
            .task
            .allowed()
            .iter()
            .map(|def| (call_name(def), raw_description(def)))
            .collect();
        let mut agents = agents;
        agents.sort();
        ToolSpec {
            name: TOOL_NAME.into(),
            description: describe(&agents),
            input_schema: input_schema(),
        }
    }

    fn prepare(&self, input: &Value, ctx: &mut ToolContext) {
        self.task.prepare(input, ctx);
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let call = self.task.call(input, ctx);
        Box::pin(async move {
            let mut output = call.await;
            // A paused result keeps its preamble and the task tool's JSON.
            if let Some(ToolEffect::Task(result)) = &output.effect
                && result.status != SessionStatus::Paused
            {
                output.content = shape(result);
            }
            output
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_take_foundations_shape() {
        let mut result = TaskResult {
            response: "done".into(),
            session_id: "s_x".into(),
            agent: "explorer".into(),
            status: SessionStatus::Completed,
            turn_count: 2,
            error: None,
            budget: None,
            isolation: None,
        };
        let text = shape(&result);
        assert_eq!(
            text,
            r#"{"response":"done","session_id":"s_x","agent":"explorer","turn_count":2,"status":"success","metadata":{}}"#
        );
        // Read back (a stored transcript) as the same result.
        assert_eq!(
            crate::tool::task::result_of_text(&text),
            Some(result.clone())
        );
        result.status = SessionStatus::Failed;
        result.error = Some("boom".into());
        let out: Value = serde_json::from_str(&shape(&result)).unwrap();
        assert_eq!(
            (out["status"].as_str(), out["error"].as_str()),
            (Some("failed"), Some("boom"))
        );
    }

    #[test]
    fn the_description_lists_whole_descriptions() {
        let agents = vec![
            (
                "foundation:explorer".to_string(),
                "Line one.\nLine two.".to_string(),
            ),
            ("zen".to_string(), "Z.".to_string()),
        ];
        let text = describe(&agents);
        assert!(text.starts_with("Spawn a specialized agent to handle tasks autonomously."));
        assert!(text.ends_with(
            "Available agents:\n  - foundation:explorer: Line one.\nLine two.\n  - zen: Z."
        ));
        assert!(describe(&[]).ends_with("No agents currently registered."));
    }
}
