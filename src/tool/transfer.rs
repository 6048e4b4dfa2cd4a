//! The `transfer_to_agent` tool (SPEC §11; google-adk 2.13.0
//! `tools/transfer_to_agent_tool.py`, `TransferToAgentTool`).
//!
//! Owns: the tool's spec — `{agent_name}` restricted by an `enum` to the allowed
//! targets, whose names and descriptions its description lists — and checking a call's
//! target. Does not own: which targets an agent has (`agent::tree`) or switching the
//! agent that answers (`engine::turn`, which reads the successful call's effect,
//! [`ToolEffect::Transfer`]).

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use crate::session::protocol::ToolEffect;

/// The tool's name, as the model calls it.
pub const TOOL_NAME: &str = "transfer_to_agent";

/// The module id the tool reports (it is mounted by the engine for agents in a tree,
/// never from a plan's `tools`).
pub const MODULE: &str = crate::config::modules::TRANSFER.name;

/// One agent a transfer may target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    /// The first line of its description (may be empty).
    pub description: String,
}

/// `transfer_to_agent` for one agent and its allowed targets.
#[derive(Debug, Clone)]
pub struct TransferTool {
    targets: Vec<Target>,
}

impl TransferTool {
    /// The tool offering `targets` (in the given order).
    pub fn new(targets: Vec<Target>) -> Self {
        Self { targets }
    }

    /// The target named by a call's input, or [`ToolError::Input`] (its text is what
    /// the model reads): no `agent_name`, or one that is not a target.
    pub fn target_of(&self, input: &Value) -> Result<&Target, ToolError> {
        let name = input
            .get("agent_name")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ToolError::Input(format!("agent_name is required: one of {}", self.names()))
            })?;
        self.targets.iter().find(|t| t.name == name).ok_or_else(|| {
            ToolError::Input(format!(
                "cannot transfer to '{name}': not an allowed target of this agent; allowed: {}",
                self.names()
            ))
        })
    }

    fn names(&self) -> String {
        self.targets
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Tool for TransferTool {
    fn module(&self) -> &str {
        MODULE
    }

    fn spec(&self) -> ToolSpec {
        let mut description = String::from(
            "Transfer the query to another agent.\n\nUse this tool to hand off control to \
             another agent that is more suitable to answer the user's query according to \
             the agent's description. The agent you transfer to answers the user next, in \
             this same conversation.\n\nAgents you can transfer to:",
        );
        for t in &self.targets {
            if t.description.is_empty() {
                description.push_str(&format!("\n- {}", t.name));
            } else {
                description.push_str(&format!("\n- {}: {}", t.name, t.description));
            }
        }
        let names: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
        ToolSpec {
            name: TOOL_NAME.into(),
            description,
            input_schema: json!({
                "type": "object",
                "properties": {
                    "agent_name": {
                        "type": "string",
                        "description": "the agent name to transfer to.",
                        "enum": names,
                    }
                },
                "required": ["agent_name"],
            }),
        }
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let output = match self.target_of(&input) {
            Ok(t) => ToolOutput::ok(format!("Transferred to agent '{}'.", t.name))
                .with_effect(ToolEffect::Transfer(t.name.clone())),
            Err(e) => ToolOutput::error(e.to_string()),
        };
        async move { output }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> TransferTool {
        TransferTool::new(vec![
            Target {
                name: "billing".into(),
                description: "Invoices and payments".into(),
            },
            Target {
                name: "tech".into(),
                description: String::new(),
            },
        ])
    }

    #[test]
    fn the_schema_lists_the_targets_and_their_descriptions() {
        let spec = tool().spec();
        assert_eq!(spec.name, "transfer_to_agent");
        assert!(
            spec.description
                .ends_with("\n- billing: Invoices and payments\n- tech"),
            "{}",
            spec.description
        );
        assert_eq!(
            spec.input_schema["properties"]["agent_name"]["enum"],
            json!(["billing", "tech"])
        );
    }

    #[tokio::test]
    async fn only_allowed_targets_transfer() {
        let dir = tempfile::tempdir().unwrap();
        let ok = tool()
            .call(
                json!({"agent_name": "tech"}),
                ToolContext::in_dir(dir.path()),
            )
            .await;
        assert!(!ok.is_error, "{}", ok.content);
        assert_eq!(ok.effect, Some(ToolEffect::Transfer("tech".into())));
        let bad = tool()
            .call(
                json!({"agent_name": "sales"}),
                ToolContext::in_dir(dir.path()),
            )
            .await;
        assert!(bad.is_error && bad.effect.is_none());
        assert!(
            bad.content.contains("allowed: billing, tech"),
            "{}",
            bad.content
        );
        let missing = tool()
            .call(json!({}), ToolContext::in_dir(dir.path()))
            .await;
        assert!(missing.is_error);
    }
}
