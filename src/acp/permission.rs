//! arbor's approvals (SPEC §12) as ACP `session/request_permission`: an
//! `approval:required` becomes a request with the options allow-once, allow-always
//! (when "always" can apply: a tool, or a `bash` command with a safe prefix) and
//! reject; the client's answer becomes the [`ApprovalDecision`] that resolves the
//! engine's gate.
//!
//! Owns: that mapping. Does not own: whether a call needs asking (the policy and
//! trust: a call config denies never gets here, so a client cannot allow it) or
//! sending (`agent`).

use std::path::Path;

use agent_client_protocol_schema::v1::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use serde_json::{Value, json};

use super::updates;
use crate::config::approvals::pattern::suggest_prefix;
use crate::config::modules::describe;
use crate::session::protocol::{AllowScope, ApprovalDecision, ApprovalRequiredEvent};

/// Option id: run this call.
pub const ALLOW_ONCE: &str = "allow-once";
/// Option id: run this call and every later one it covers in this tree.
pub const ALLOW_ALWAYS: &str = "allow-always";
/// Option id: do not run it.
pub const REJECT: &str = "reject";

/// What "always" allows for `required` (the TUI's rule): the tool, unless it takes
/// command patterns (its descriptor has a command field: `bash`); then the command's
/// safe prefix, `None` when it has none.
fn always(required: &ApprovalRequiredEvent) -> Option<AllowScope> {
    if describe(&required.tool_name).command_field.is_none() {
        return Some(AllowScope::AlwaysTool);
    }
    suggest_prefix(required.command.as_deref().unwrap_or_default()).map(AllowScope::AlwaysPrefix)
}

/// The request for `required`, asked on ACP session `session_id` (`cwd`: for the
/// call's absolute locations).
pub fn request(
    session_id: &str,
    required: &ApprovalRequiredEvent,
    input: Option<&Value>,
    cwd: &Path,
) -> RequestPermissionRequest {
    let input = input.cloned().unwrap_or_else(|| match &required.command {
        Some(command) => json!({"command": command}),
        None => json!({}),
    });
    let call = updates::tool_call(
        &required.tool_call_id,
        &required.tool_name,
        &input,
        ToolCallStatus::Pending,
        cwd,
    );
    let mut content = call.content.clone();
    if content.is_empty()
        && let Some(diff) = &required.diff
    {
        content.push(ToolCallContent::from(updates::text(diff.clone())));
    }
    if let Some(sandbox) = &required.sandbox {
        content.push(ToolCallContent::from(updates::text(sandbox.clone())));
    }
    let fields = ToolCallUpdateFields::new()
        .title(required.summary.clone())
        .kind(call.kind)
        .status(ToolCallStatus::Pending)
        .locations(call.locations)
        .content(content)
        .raw_input(input);
    let mut options = vec![PermissionOption::new(
        ALLOW_ONCE,
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    // A run once more with network (escalation) is yes once or no.
    if required.escalation.is_none() && always(required).is_some() {
        options.push(PermissionOption::new(
            ALLOW_ALWAYS,
            "Always allow",
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    RequestPermissionRequest::new(
        session_id.to_string(),
        ToolCallUpdate::new(required.tool_call_id.to_string(), fields),
        options,
    )
}

/// The decision the client's `answer` makes (a cancelled request, an unknown option
/// or an unreadable answer deny the call).
pub fn decision(required: &ApprovalRequiredEvent, answer: &Value) -> ApprovalDecision {
    let deny = |reason: &str| ApprovalDecision::Deny {
        reason: Some(reason.to_string()),
    };
    let Ok(response) = serde_json::from_value::<RequestPermissionResponse>(answer.clone()) else {
        return deny("the editor's answer could not be read");
    };
    match response.outcome {
        RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
            ALLOW_ONCE => ApprovalDecision::Allow {
                scope: AllowScope::Once,
            },
            ALLOW_ALWAYS => ApprovalDecision::Allow {
                scope: always(required).unwrap_or(AllowScope::Once),
            },
            _ => deny("rejected in the editor"),
        },
        _ => deny("the prompt was cancelled in the editor"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(command: &str) -> ApprovalRequiredEvent {
        ApprovalRequiredEvent {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            agent: "root".into(),
            summary: command.into(),
            command: Some(command.into()),
            ..Default::default()
        }
    }

    /// A run once more with network (escalation) offers the editor yes once or no.
    #[test]
    fn an_escalation_is_allow_once_or_reject() {
        let mut required = bash("curl -s http://example.test");
        required.escalation = Some("the sandbox blocked the network for this command".into());
        let wire = serde_json::to_value(request("s", &required, None, Path::new("/p"))).unwrap();
        let ids: Vec<&str> = wire["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["optionId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [ALLOW_ONCE, REJECT]);
    }

    #[test]
    fn options_and_answers_map_to_decisions() {
        let required = bash("cargo test --lib");
        let wire = serde_json::to_value(request("s", &required, None, Path::new("/p"))).unwrap();
        let ids: Vec<&str> = wire["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["optionId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [ALLOW_ONCE, ALLOW_ALWAYS, REJECT]);
        assert_eq!(wire["toolCall"]["kind"], "execute");
        let pick = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        assert_eq!(
            decision(&required, &pick(ALLOW_ALWAYS)),
            ApprovalDecision::Allow {
                scope: AllowScope::AlwaysPrefix("cargo test".into())
            }
        );
        assert!(matches!(
            decision(&required, &pick(REJECT)),
            ApprovalDecision::Deny { .. }
        ));
        assert!(matches!(
            decision(&required, &json!({"outcome": {"outcome": "cancelled"}})),
            ApprovalDecision::Deny { .. }
        ));
        // A chain has no safe prefix: it can only be allowed once.
        let chain = bash("make && rm -rf x");
        let wire = serde_json::to_value(request("s", &chain, None, Path::new("/p"))).unwrap();
        assert_eq!(wire["options"].as_array().unwrap().len(), 2);
    }
}
